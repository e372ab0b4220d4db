"""The adaptive sweep's rungs: its settings, the compute caps, and the step each arm runs to at a cap.

Kept apart from the policy (`isocompute.adaptive`, which fits) so that the config check and the workflow,
which need only the caps and steps, do not import the fits.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from isocompute.frontier import SAME_COMPUTE_DECADES

# A rung reaches a checkpoint this close above its cap: steps are rounded, so a target lands a little over.
CAP_SLACK = 10**SAME_COMPUTE_DECADES


class SweepError(ValueError):
    """A sweep that cannot run as asked; the message names the setting or the table."""


@dataclass(frozen=True)
class SweepSettings:
    """The `sweep` block: rung spacing, the steps an arm runs before it may stop, the audit's extra rungs."""

    rung_factor: float = 4.0
    min_steps: int = 10
    audit_rungs: int = 1


def rung_caps(compute_min: float, compute_max: float, factor: float) -> list[float]:
    """The rungs' compute caps, ascending: C_max / factor**j for every j whose cap is at least compute_min.

    Anchored at C_max so that the last rung is the full grid's end; a factor that leaves fewer than two
    caps is no sweep (there is nothing to decide between rungs).
    """
    if factor <= 1:
        raise SweepError(f"sweep.rung_factor={factor} must exceed 1")
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
