"""The adaptive sweep's rungs: its settings, the compute caps, and the step each arm runs to at a cap.

Kept apart from the policy (`isocompute.adaptive.decisions`, which fits) so that the config check and the workflow,
which need only the caps and steps, do not import the fits.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from isocompute.errors import IsoComputeError
from isocompute.fits.frontier import SAME_COMPUTE_DECADES
from isocompute.study.grid import checkpoint_steps

# A rung reaches a checkpoint this close above its cap: steps are rounded, so a target lands a little over.
CAP_SLACK = 10**SAME_COMPUTE_DECADES

# The plain rule's parts, each of which `replay` can leave out to show what it saves: the bound on a saturated
# arm's ceiling (the first rule), an arm left behind a rising frontier, an arm above the data's own plateau, an
# arm whose forecast future (`adaptive.extrapolation`, where calibrated) stays below the frontier, an arm tied with
# the frontier's (its forecast inside the frontier's arm's, where every arm may lead: read as censored, not settled),
# a second look before the bound stops a young arm (one at its first rung past `min_steps`, whose ceiling is a fit
# of a short rise: `decisions.young_arms`; the bound stops it only where it held at the look before too), and a late
# resume held (`last_resume`: at the last decision, the round after which only the grid's last rung is left, an arm
# that is no guard and that the plateau part or a contradicted prior would resume stays stopped, censored beyond its
# stop: `decisions.held_at_last`), and the lower guard left behind (`guard_behind`: the lower guard n*/2, only it,
# past `min_steps` stops where the data show n* rising and it lies below every leader of the last material point at
# this look and at the previous round's, `decisions.guard_behind_before`; settled under behind's assumption, and it
# stays stopped if it becomes a guard again, as behind's stops do), and ties among guards where no point is material
# (`tie_guards`: where no compute point so far tells any arm from another, the frontier's arm at C_top is a pick
# among tied arms, so the tie part exempts it alone, not its neighbours n*/2 and 2 n*).
RULES = ("bound", "behind", "plateau", "extrapolate", "tie", "young_look", "last_resume", "guard_behind",
         "tie_guards")  # fmt: skip
# Parts a replay may add to the rule (`--rules`) that it does not apply: a pilot measured and not adopted
# (docs/log/adaptive-peers.md). `second_look`: the bound stops every arm, not only a young one, only where its
# ceiling was identified and below the frontier at two consecutive rounds.
# `last_resume_plateau`: the `last_resume` pilot's variant V1, which holds the plateau part's late resumes only (V2,
# which holds a contradicted prior's too, was adopted as `last_resume`).
# `forecast_frontier`: the forecast's part also reads an arm against the frontier's arm's own forecast over its
# remaining range (Pilot F).
PILOT_RULES = ("second_look", "last_resume_plateau", "forecast_frontier")


class AdaptiveError(IsoComputeError, ValueError):
    """An adaptive sweep that cannot run as asked; the message names the setting or the table."""


@dataclass(frozen=True)
class AdaptiveSettings:
    """An adaptive sweep's settings (the config's `sweep` block): rung spacing, the steps an arm runs before it
    may stop, the audit's extra rungs.

    Rungs 2x apart by default: on the known-truth replays (docs/log/adaptive-sweep-measurements.md) they never spent more
    than 4x, met the 60 % target on every paper-like seed (4x: two of three) and kept the full grid's
    verdict on all 33 replays, for twice the rounds."""

    rung_factor: float = 2.0
    min_steps: int = 10
    audit_rungs: int = 1


def rung_caps(compute_min: float, compute_max: float, factor: float) -> list[float]:
    """The rungs' compute caps, ascending: C_max / factor**j for every j whose cap is at least compute_min.

    Anchored at C_max so that the last rung is the full grid's end; a factor that leaves fewer than two
    caps is no adaptive sweep (there is nothing to decide between rungs).
    """
    if factor <= 1:
        raise AdaptiveError(f"sweep.rung_factor={factor} must exceed 1")
    caps = []
    cap = float(compute_max)
    while cap >= compute_min * (1 - 1e-9):
        caps.append(cap)
        cap /= factor
    return caps[::-1]


def rung_step(checkpoints: Sequence[tuple[int, float]], cap: float, last: bool) -> int:
    """The last checkpoint step (of `(step, compute)` pairs) an arm runs to at a rung's cap; 0 where its
    first checkpoint lies beyond the cap (a large n's first step can cost more than a low rung allows)."""
    if last:
        return max(step for step, _ in checkpoints)
    return max((step for step, compute in checkpoints if compute <= cap * CAP_SLACK), default=0)


def arm_rung_steps(batch: int, compute_min: float, compute_max: float, points: int, factor: float) -> list[int]:
    """The step a run of batch B reaches at each rung, on its own checkpoint grid (the full run's, so a
    rung only ends it early): non-decreasing, 0 where its first checkpoint lies beyond the rung's cap."""
    checkpoints = [(step, step * batch) for step in checkpoint_steps(batch, int(compute_min), int(compute_max), points)]
    caps = rung_caps(compute_min, compute_max, factor)
    return [rung_step(checkpoints, cap, index == len(caps) - 1) for index, cap in enumerate(caps)]


def trained_rungs(steps: Sequence[int], reached: int) -> list[int]:
    """The rungs, up to the rung `reached`, at which an arm trains something new (its step rises): a rung
    whose cap adds no checkpoint of the arm has no job."""
    return [rung for rung in range(reached + 1) if steps[rung] > (steps[rung - 1] if rung else 0)]


def guard_arms(arms: Sequence[int], n_top: int) -> list[int]:
    """The guards, which run on whatever their bands say: the frontier's arm `n_top` and its neighbours on the
    sorted grid `arms` (n*/2 and 2 n* where they exist; the lower one may stop by `guard_behind` alone)."""
    at = list(arms).index(n_top)
    return list(arms[max(at - 1, 0) : at + 2])


def reached_rungs(arms: Sequence[int], previous: Mapping[str, Any] | None, rung: int) -> dict[int, int]:
    """The rung each arm has trained to once rung `rung` is done: every arm at rung 0; later, the arms the
    previous round (its record, `None` before round 0) kept active at `rung`, the others where they stopped."""
    if previous is None:
        return dict.fromkeys(arms, 0)
    state = previous["arms"]
    return {n: rung if state[str(n)]["active"] else state[str(n)]["rung"] for n in arms}
