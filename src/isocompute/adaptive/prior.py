"""The adaptive sweep's prior: a finished study's law n*(C) (or the paper's) deciding what a new model's sweep measures.

The paper finds n*(C) a sigmoid whose values depend on the model, so a new model needs its own law; but a
law fitted on another model says which arms a new model's sweep can leave early. The prior decides only
*what to measure*: the new model's law is fitted from its own data with the usual verdict.

The prior's band: at each compute, log2 n* of the prior's law and of its bootstrap replicas (2.5 to
97.5 %), shifted by up to `SHIFT_DECADES` in compute either way (a new model learns faster or slower: the
midpoint moves) and widened by `SPREAD_DOUBLINGS` (a plateau one grid step away, a leader one step off on
close curves). While every material point the new model has measured has a leader inside the band, the
prior is *followed*, and two rules stop arms the plain rule would keep (neither ever stops the frontier's
arm, its neighbours, or an arm under `min_steps`):

- *Above the prior's plateau*: an arm above the prior's law at C_max (its replicas' 97.5 %; without the
  spread) is not needed while the new model's law is the prior's. It stops after its first rung and
  resumes, from where it stopped, the round it becomes a guard (the frontier's arm or its neighbour): a
  plateau one n higher than the prior's costs that arm's run, and nothing is decided without it.
- *Left below*: an arm below the prior's law at the last material point (however far, within
  `SHIFT_DECADES`, its midpoint moves; without the spread) and measured `PRIOR_BEHIND_DOUBLINGS` doubling or
  more below every leader there, stops: under a rising law the band only rises, so the arm never returns
  to the frontier.

A finished study whose law was refused (`noise`, `not_resolved`, `not_monotone`, `constant`, too few points)
still resolved its leaders at its material points: there its n* lay in the sets that hold at every point at
once (`band`, 95 %). Such a study is a *leaders prior* (`Prior.points`): its band at a compute is those sets
at the study's material points within `SHIFT_DECADES` of it, widened by `SPREAD_DOUBLINGS`, and nothing
where it had none (no check, no stop there). It assumes no law: the check is the same, the arms above it
stop only where the band covers the rest of the range up to C_max (`Prior.ceiling`), and no arm stops below
it (that needs a rising law). A study with no material point is no prior.

The first material point whose leaders all lie outside the band contradicts the prior (an earlier or
later midpoint than the band allows, another plateau, a flat or falling truth). From that round the
sweep *falls back* to the plain rule for the rest of the range: every arm the prior stopped resumes, and
the round's decision file says where and why. The prior can thus cost its own stops (what a wrong prior
costs is measured, not hidden) but cannot decide a compute range the new model's data contradict it on.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from isocompute.adaptive.rungs import AdaptiveError, guard_arms
from isocompute.fits.forms import optimum_curve

# The paper's laws of n* at B_problem = 32, compute in rollouts, Qwen2.5-7B-Instruct (docs/reference/recipe.md).
PAPER_LAWS: dict[str, tuple[float, float, float, float]] = {
    "paper_easy": (6.09, 4.75, 5.84, 2.73),
    "paper_hard": (4.47, 7.23, 5.84, 2.79),
}
# How far a new model's law may sit from the prior's before the prior is judged wrong: half a decade of
# compute (a factor ~3 in its midpoint, as a model that learns faster or slower moves it) and one doubling
# of n (one grid step: a plateau one n away, or a leader one step off where neighbouring curves are level).
SHIFT_DECADES = 0.5
SPREAD_DOUBLINGS = 1.0
# An arm stops below the band only where it is also this many doublings below every leader at the last
# material point: measured behind the frontier, not only predicted to be (n*/2 always runs as a guard).
PRIOR_BEHIND_DOUBLINGS = 1
# The compute shifts scanned for the band (the law is monotone, so the ends and a few between suffice).
_SHIFTS = np.linspace(-SHIFT_DECADES, SHIFT_DECADES, 11)
LAW_KEYS = ("L", "k", "log10_c0", "b")


@dataclass(frozen=True)
class Prior:
    """A law of log2 n* against log10 C (rollouts), with its bootstrap replicas' laws where it has them; or, for a
    study whose law was refused (`law` None), its material points' leader sets: per point (log10 C, log2 of the
    lowest and of the highest value that leads)."""

    source: str
    law: tuple[float, float, float, float] | None
    replicas: tuple[tuple[float, float, float, float], ...] = field(default=())
    points: tuple[tuple[float, float, float], ...] = field(default=())

    @property
    def rising(self) -> bool:
        return self.law is not None and self.law[0] > 0

    def band(self, compute: float, spread: float = SPREAD_DOUBLINGS) -> tuple[float, float]:
        """The band of log2 n* at `compute`: the prior's law and its replicas' (2.5 to 97.5 %), shifted by up to
        `SHIFT_DECADES` in compute and widened by `spread` doublings; a leaders prior's sets at its points within
        `SHIFT_DECADES`, widened alike, and (-inf, inf) where it has no point there (it says nothing)."""
        if self.law is None:
            near = [(low, high) for c, low, high in self.points if abs(c - np.log10(compute)) <= SHIFT_DECADES + 1e-9]
            if not near:
                return -np.inf, np.inf
            return min(low for low, _ in near) - spread, max(high for _, high in near) + spread
        laws = np.array([self.law, *self.replicas])
        x = np.log10(compute) + _SHIFTS
        values = np.array([optimum_curve(x, *law) for law in laws])  # (laws, shifts)
        low = np.percentile(values, 2.5, axis=0).min() if len(laws) > 1 else values.min()
        high = np.percentile(values, 97.5, axis=0).max() if len(laws) > 1 else values.max()
        return float(low - spread), float(high + spread)

    def ceiling(self, c_top: float, c_max: float) -> float:
        """log2 of the largest n* the prior allows from `c_top` to `c_max` (no spread): a rising law's at `c_max`;
        a leaders prior's highest set at its points from half a decade below `c_top` on, and inf unless it has a
        point within `SHIFT_DECADES` of `c_max` (it cannot say that n* stays below an arm where it has none)."""
        if self.law is not None:
            return self.band(c_max, spread=0.0)[1]
        ahead = [high for c, _, high in self.points if c >= np.log10(c_top) - SHIFT_DECADES]
        if not ahead or np.isinf(self.band(c_max, spread=0.0)[1]):
            return np.inf
        return max(ahead)

    def to_params(self) -> dict[str, Any]:
        """The prior as a workflow rule's params (plain lists): `from_params` reads it back. A law prior's are
        what they were before leaders priors existed, so a sweep under way keeps its rounds' params."""
        if self.law is None:
            return {"source": self.source, "law": None, "replicas": [], "points": [list(p) for p in self.points]}
        return {"source": self.source, "law": list(self.law), "replicas": [list(r) for r in self.replicas]}

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> Prior:
        law = params["law"]
        return cls(params["source"], None if law is None else tuple(law), tuple(tuple(r) for r in params["replicas"]),  # type: ignore[arg-type]
                   tuple(tuple(p) for p in params.get("points", ())))  # type: ignore[arg-type]  # fmt: skip

    def to_json(self) -> dict[str, Any]:
        what = {"leader_points": len(self.points)} if self.law is None else dict(zip(LAW_KEYS, self.law))
        return {"source": self.source, **what, "replicas": len(self.replicas),
                "shift_decades": SHIFT_DECADES, "spread_doublings": SPREAD_DOUBLINGS}  # fmt: skip


def load_prior(spec: str | Mapping[str, Any], metric: str = "avg@4") -> Prior:
    """The prior named by `spec` (the config's `sweep.prior`, `isocompute replay --prior`): the paper's law by
    name (`PAPER_LAWS`), a law {L, k, log10_c0, b}, or a JSON file holding one: a study's fits.json (its
    `metric` fit in rollouts), one study fit (`isocompute fit`'s or a replay's `fits`), or a law entry.
    A study fit whose law was refused is a leaders prior (`prior_of_fit`). Refused, naming the file and key, where
    it holds no law, or a refused law with no material point."""
    if isinstance(spec, Mapping):
        return Prior("config", _law_of(spec, "sweep.prior"))
    if spec in PAPER_LAWS:
        return Prior(spec, PAPER_LAWS[spec])
    path = Path(spec)
    if not path.is_file():
        raise AdaptiveError(f"sweep.prior={spec!r} is neither a file nor one of the paper's laws {sorted(PAPER_LAWS)}")
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as error:
        raise AdaptiveError(f"{spec}: not JSON ({error})") from None
    fit, where = _study_fit(data, metric, spec)
    if fit is None:
        return prior_of_law(data, str(spec), where)
    return prior_of_fit(fit, str(spec), where)


def prior_of_law(entry: Mapping[str, Any], source: str, where: str = "optimum.n") -> Prior:
    """The prior of a law entry of a study fit (`fit_study`'s `optimum.n`): its law and its replicas' laws
    (`samples`), refused where its verdict refused the law (`prior_of_fit` reads what such a study still says)."""
    if not entry.get("ok", True):
        raise AdaptiveError(f"{source}: the law at {where} was refused ({entry.get('kind')}): it is no prior")
    law = _law_of(entry, f"{source}: {where}")
    samples = entry.get("samples") or []
    replicas = tuple(tuple(float(v) for v in sample[:4]) for sample in samples if len(sample) >= 4)
    return Prior(source, law, replicas)  # type: ignore[arg-type]


def prior_of_fit(fit: Mapping[str, Any], source: str, where: str = "optimum.n") -> Prior:
    """The prior of a study fit (`fit_study`'s JSON): its law where its verdict reported one (`prior_of_law`);
    where it refused the law, a leaders prior of its material points, each with the sets that hold at every
    point at once (`band`, where the fit has replicas; else its leaders). Refused where it has no material
    point: it then resolved nothing about n*."""
    entry = fit["optimum"]["n"]
    if entry.get("ok", True):
        return prior_of_law(entry, source, where)
    points = tuple(
        (float(np.log10(point["compute"])), float(np.log2(min(sets))), float(np.log2(max(sets))))
        for point in material_points(fit.get("optimum_points", []))
        for sets in [(point.get("band") or point["leaders"])["n"]]
    )
    if not points:
        raise AdaptiveError(f"{source}: the law at {where} was refused ({entry.get('kind')}) and no compute point's "
                            f"leaders are material: it is no prior")  # fmt: skip
    return Prior(f"{source} (leaders: law refused, {entry.get('kind')})", None, points=points)


def _study_fit(data: Any, metric: str, spec: str) -> tuple[Mapping[str, Any] | None, str]:
    """The study fit in a fits.json, a study fit or a replay (None for a bare law), and where it was found."""
    if isinstance(data, Mapping) and "fits" in data and "optimum" not in data:
        fits = data["fits"]
        if "optimum" in fits:  # a replay's kept data
            return fits, "fits.optimum.n"
        if metric not in fits or "compute_rollouts" not in fits[metric]:
            raise AdaptiveError(f"{spec}: no {metric} fit in rollouts (fits.{metric}.compute_rollouts)")
        fit = fits[metric]["compute_rollouts"]
        if "n" not in fit["optimum"]:
            raise AdaptiveError(f"{spec}: its study fits no law of n (fits.{metric}.compute_rollouts.optimum.n)")
        return fit, f"fits.{metric}.compute_rollouts.optimum.n"
    if isinstance(data, Mapping) and "optimum" in data:
        if "n" not in data["optimum"]:
            raise AdaptiveError(f"{spec}: its study fits no law of n (optimum.n)")
        return data, "optimum.n"
    if isinstance(data, Mapping):
        return None, "the top level"
    raise AdaptiveError(f"{spec}: holds no law (a fits.json, a study fit or {{L, k, log10_c0, b}})")


def _law_of(entry: Mapping[str, Any], where: str) -> tuple[float, float, float, float]:
    missing = [key for key in LAW_KEYS if key not in entry]
    if missing:
        raise AdaptiveError(f"{where}: the law lacks {missing} (a law is {{L, k, log10_c0, b}})")
    try:
        law = tuple(float(entry[key]) for key in LAW_KEYS)
    except (TypeError, ValueError):
        raise AdaptiveError(f"{where}: the law's {list(LAW_KEYS)} must be numbers") from None
    if not all(np.isfinite(law)):
        raise AdaptiveError(f"{where}: the law's values must be finite, got {dict(zip(LAW_KEYS, law))}")
    return law  # type: ignore[return-value]


def material_points(points: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The optimum points (a study fit's `optimum_points`) whose leaders of n are evidence: `status` material."""
    return [point for point in points if point["status"]["n"] == "material"]


def contradiction(prior: Prior, points: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """The first material point (of a study fit's `optimum_points`) whose leaders all lie outside the prior's
    band, or None where the prior holds at every one."""
    for point in material_points(points):
        leaders = np.log2(point["leaders"]["n"])
        low, high = prior.band(point["compute"])
        if leaders.max() < low or leaders.min() > high:
            return {"compute": float(point["compute"]), "leaders": list(point["leaders"]["n"]),
                    "band": [float(2**low), float(2**high)]}  # fmt: skip
    return None


def prior_stop(prior: Prior, n: int, c_top: float, c_max: float, top_leaders: Sequence[int] | None) -> str | None:
    """Why the followed prior stops arm `n` (no guard; it reads the frontier, so `min_steps` does not apply), or
    None: above the prior's law at `c_max`, or, for a rising prior, below it at `c_top` and
    `PRIOR_BEHIND_DOUBLINGS` below every leader there (`top_leaders`, a material point's)."""
    high = prior.ceiling(c_top, c_max)
    if np.log2(n) > high:
        return (f"above the plateau of {prior.source} (n* <= {2**high:.3g} up to C = {c_max:.4g}, its replicas' "
                f"97.5 %): not needed unless the frontier climbs to it, when it resumes as a guard")  # fmt: skip
    if not prior.rising or top_leaders is None:
        return None
    low_at_top = prior.band(c_top, spread=0.0)[0]
    lowest = min(top_leaders)
    if np.log2(n) < low_at_top and np.log2(lowest) - np.log2(n) >= PRIOR_BEHIND_DOUBLINGS:
        return (f"below the prior's law at C = {c_top:.4g} (n* >= {2**low_at_top:.3g} however far its midpoint moves) and "
                f"{np.log2(lowest) - np.log2(n):g} doublings below every leader there ({list(top_leaders)}): "
                f"under the prior's rising law it never returns to the frontier")  # fmt: skip
    return None


def planned_reach(prior: Prior, arms: Sequence[int], caps: Sequence[float]) -> dict[int, float]:
    """The compute cap at which each arm is expected to stop (C_max: it runs to the end) if the new model's
    law is the prior's: the plan's expected case, by the rounds' own rules, with the frontier's arm at each
    cap the grid's n nearest the prior's law and the leaders that arm alone. The worst case is the full
    grid: a prior contradicted at the last round resumes every arm it stopped. A leaders prior (no law) has no
    frontier's arm to plan from: every arm to C_max, the worst case."""
    arms = sorted(arms)
    if prior.law is None:
        return dict.fromkeys(arms, caps[-1])
    law = prior.law

    def top(cap: float) -> int:
        return arms[int(np.argmin(np.abs(np.log2(arms) - optimum_curve(np.log10(cap), *law))))]

    c_max = caps[-1]
    reach = dict.fromkeys(arms, c_max)
    for n in arms:
        if n in guard_arms(arms, top(c_max)):
            continue
        for cap in caps[:-1]:
            if n not in guard_arms(arms, top(cap)) and prior_stop(prior, n, cap, c_max, [top(cap)]) is not None:
                reach[n] = cap
                break
    return reach
