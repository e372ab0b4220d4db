"""Recipe ablations: the runs that fix the study's recipe before the grid's scaling studies, compared side
by side.

A recipe ablation study (config `ablations:`) names its own grid blocks, whose runs differ in what the scaling
study holds fixed: the recipe (paper Fig. 3: KL, entropy, the zero-variance filter), the learning-rate
anchor and rule (Fig. 4), or the decoupled baseline (Fig. 22). Its runs join the grid, keyed like every
other run, so a run that is also on the grid trains once; the scaling studies select only runs on
their set's default recipe and learning rate (`GridPoint.is_default`), so a recipe ablation enters none
of their fits. Every recipe ablation study is drawn as training health (Fig. 3's panels) and by its kind's figure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from isocompute.study.grid import GridPoint
from isocompute.study.studies import StudyError, parse_study

# The kinds of recipe ablation study, and what each compares.
KINDS = {
    "regularization": "recipes (KL, entropy, zero-variance filter) at one (B_problem, n): paper Fig. 3",
    "learning_rate": "the lr_base anchor at B = B_ref, and the rules constant, linear, sqrt at larger B: Fig. 4",
    "decoupled_baseline": "n, a larger n, and n of n_baseline rollouts in the loss: Fig. 22",
}


@dataclass(frozen=True)
class RecipeAblation:
    """One recipe ablation study on one problem set: its name (the results folder), kind and runs."""

    name: str
    kind: str
    problem_set: str
    runs: tuple[GridPoint, ...]


def configured_recipe_ablations(
    ablations: Mapping[str, Mapping[str, Any]], points: Mapping[str, Sequence[GridPoint]]
) -> list[RecipeAblation]:
    """Every recipe ablation study on each problem set its blocks name; `points[name]` are its expanded runs.

    A study needs at least two runs on each of its sets (it compares them), a name that is not one of
    the scaling studies' (`bp<B_problem>`, `batch<B>`, `joint`: they share the results folders), and a
    decoupled-baseline study a run with `n_baseline`.
    """
    result = []
    for name, spec in ablations.items():
        try:
            parse_study("", name)
        except StudyError:
            pass
        else:
            raise StudyError(f"ablations.{name}: the name is a scaling study's (bp<B>, batch<B>, joint); choose another")
        for problem_set in sorted({p.problem_set for p in points[name]}):
            runs = tuple(p for p in points[name] if p.problem_set == problem_set)
            if len(runs) < 2:
                raise StudyError(f"ablations.{name} on {problem_set} has one run; a recipe ablation compares at least two")
            if spec["kind"] == "decoupled_baseline" and not any(p.n_baseline for p in runs):
                raise StudyError(f"ablations.{name} on {problem_set}: a decoupled_baseline study needs a run with n_baseline")
            result.append(RecipeAblation(name, spec["kind"], problem_set, runs))
    return result
