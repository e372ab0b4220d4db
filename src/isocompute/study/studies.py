"""The study's three questions, each a set of runs and the hyperparameters its curves are keyed by.

1. `fixed_b_problem` (paper Figs. 5-7): B_problem fixed, n traded against M; curves keyed by n.
2. `fixed_batch` (Figs. 8, 9): B = B_problem * n fixed, B_problem traded against n as M grows; curves keyed by
   (B_problem, n), compute measured in steps M.
3. `joint` (Figs. 10, 11): all three free; curves keyed by (B_problem, n).
Runs are keyed by their hyperparameters, not by the question, so a run serving two studies trains once.
Each question is asked of the runs on their problem set's own recipe and the default learning rate
only: the recipe ablations (`isocompute.study.recipe_ablations`) share the grid but enter none of these fits.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from isocompute.errors import IsoComputeError
from isocompute.study.grid import GridPoint

COMPUTE_MEASURES = ("compute_rollouts", "compute_tokens")

# The study-name grammar, its one definition: each kind's folder name, "{}" standing for its value.
NAME_FORMS = {"fixed_b_problem": "bp{}", "fixed_batch": "batch{}", "joint": "joint"}
# Any study name, as a regular expression (the workflow's {study} wildcard constraint).
NAME_PATTERN = "|".join(form.replace("{}", r"\d+") for form in NAME_FORMS.values())
_NAMES = {kind: re.compile("^" + form.replace("{}", r"(\d+)") + "$") for kind, form in NAME_FORMS.items()}


def study_name(kind: str, value: int | None = None) -> str:
    """The folder name of a study of `kind` holding `value` fixed (`bp4`, `batch8`, `joint`)."""
    return NAME_FORMS[kind].format(value)


class StudyError(IsoComputeError, ValueError):
    """A configured study without enough runs; names the config key."""


@dataclass(frozen=True)
class Study:
    """One question asked of one problem set."""

    problem_set: str
    kind: str
    value: int | None = None

    @property
    def name(self) -> str:
        """The study's folder under results/fits and results/figures."""
        return study_name(self.kind, self.value)

    @property
    def by(self) -> list[str]:
        """The hyperparameters a curve is keyed by; the frontier's optimum is fitted for each."""
        return ["n"] if self.kind == "fixed_b_problem" else ["b_problem", "n"]

    @property
    def compute_measures(self) -> tuple[str, ...]:
        """At fixed B compute is proportional to the steps M, which is what that question varies."""
        return ("step",) if self.kind == "fixed_batch" else COMPUTE_MEASURES

    @property
    def fixed(self) -> dict[str, int]:
        """What the study holds constant, for the fits' JSON and the recommendation."""
        if self.kind == "fixed_b_problem":
            return {"b_problem": int(self.value)}
        if self.kind == "fixed_batch":
            return {"batch": int(self.value)}
        return {}

    def runs(self, points: Iterable[GridPoint]) -> list[GridPoint]:
        """The grid points this study fits: its set's runs on the default recipe and learning rate."""
        mine = [p for p in points if p.problem_set == self.problem_set and p.is_default]
        if self.kind == "fixed_b_problem":
            return [p for p in mine if p.b_problem == self.value]
        if self.kind == "fixed_batch":
            return [p for p in mine if p.batch == self.value]
        return mine


def parse_study(problem_set: str, name: str) -> Study:
    """The study a results folder name stands for."""
    for kind, pattern in _NAMES.items():
        match = pattern.match(name)
        if match:
            return Study(problem_set, kind, int(match[1]) if match.groups() else None)
    raise StudyError(f"{name!r} is not a study name (bp<B_problem>, batch<B> or joint)")


def configured_studies(studies: Mapping[str, Any], points: list[GridPoint]) -> list[Study]:
    """Every study the config asks for, on each problem set where the grid has its runs.

    A study with runs on a set needs at least two curves there; a set without its runs is skipped, and so
    is the joint study of a set whose runs share one B_problem (it would repeat that fixed-B_problem study).
    """
    result = []
    for problem_set in sorted({p.problem_set for p in points}):
        wanted = [Study(problem_set, "fixed_b_problem", v) for v in studies.get("fixed_b_problem", [])]
        wanted += [Study(problem_set, "fixed_batch", v) for v in studies.get("fixed_batch", [])]
        joint = Study(problem_set, "joint")
        if studies.get("joint") and len({p.b_problem for p in joint.runs(points)}) > 1:
            wanted.append(joint)
        for study in wanted:
            curves = {(p.b_problem, p.n) for p in study.runs(points)}
            if len(curves) == 1:
                raise StudyError(
                    f"studies.{study.kind}: {study.name} on {problem_set} has one curve in the grid; "
                    f"a frontier needs at least two (add grid points or remove the study)"
                )
            if curves:
                result.append(study)
    return result
