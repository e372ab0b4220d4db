"""The adaptive sweep: after each rung, which arms of a study extend and which stop; and its replay.

Arms are the study's n; rungs are compute caps spaced by a constant factor down from C_max, each arm's
cap taken on its own checkpoint grid. Successive halving, ASHA and Hyperband drop arms by their rank at
equal compute, but here curves cross (a large n loses at low compute and wins at high compute), so such
pruning cuts the runs that own the high-compute frontier and biases n*(C) down. This policy never ranks:
an arm stops only when its whole remaining compute range is confidently below the frontier.

- Reward curves only rise (the sigmoid is monotone, and every arm on the frontier at the top of the
  reached range, C_top, keeps running), so the frontier at any compute beyond C_top is at least its
  value at C_top: the lower edge of its bootstrap band there (2.5 %) bounds the frontier over every
  remaining compute from below.
- An arm's future reward is at most its ceiling A. Where its fit identifies A (`ceiling_bound`: the curve
  has saturated, its last point holding `fitting.SATURATED_SHARE` of the fitted gain, with nothing else
  left undetermined) the upper edge of A's bootstrap band (97.5 %) bounds the arm's future from above.
  An unsaturated curve's ceiling is not determined by its data: a sigmoid fitted to its rising part can
  put A anywhere, so the only bound on its future is the metric's maximum, 1, and it stays a candidate.

An arm stops when its bound lies below the frontier's, and never before `min_steps` optimizer steps.
It also stops when it is *left behind a rising frontier*: the study's data show n* rising (two material
points whose leader sets are apart upwards, none apart downwards) and the arm lies `BEHIND_DOUBLINGS`
doublings or more below every leader at the last material point. This is the one rank the policy reads,
and only downwards: where n* rises, a curve overtakes a smaller n's for good (the larger n has the later
midpoint and the higher ceiling), so an arm the frontier has left far below does not return; a larger n
that loses at low compute is never stopped for its rank. An unsaturated curve whose ceiling the data
leave open is otherwise never ruled out, so without it a sweep of close curves runs nearly every arm to C_max.
Past half its run (in linear compute) an arm also stops where the upper edge of its forecast at its end
(`adaptive.extrapolation`: its own sigmoid, the interval of a new evaluation) lies below the frontier's lower
edge by more than the fits' tolerance (`below_by_forecast`); before half its run the forecast's intervals did
not cover the truth on every known-truth family (docs/log/adaptive-extrapolation.md), so it is not read there.
Where arms tie no band separates them, and none of these stops fires: past a quarter of its run an arm that leads
at C_top and whose forecast the forecasts cannot tell from the frontier's arm's stops as *tied*
(`tied_to_frontier`). It is judged level, not behind, so the fits read it as censored beyond its stop, where it may
lead (`CENSORED_STOPS`): where it may lead a point is no evidence of n*, so the arms left running make no law there.
An arm stopped above the data's own plateau (or by a prior) resumes when the reason no longer holds, except at the
last decision (`last_decision`: only the grid's last rung is left, so a resume buys the arm's whole remaining run
with no later look): there an arm that is no guard stays stopped and is read as censored beyond its stop
(`held_at_last`, `CENSORED_STOPS`): it may lead there, so the cost of not resuming is evidence, never a false law.
Guards: the frontier's arm at C_top and its neighbours on the grid (n*/2 and 2 n*) continue, but for the lower
guard a rising frontier has left behind at two looks in a row (`guard_behind`, read as behind's stop), and for
a neighbour tied with the frontier's arm while no point tells any arm apart (`tie_guards`: no frontier to guard
yet). One audit arm, the first stopped (the closest call of that round), runs `audit_rungs` rungs past its stop and
is then decided again, so the cost of stopping is measured rather than assumed.

`replay` runs the policy on a complete evaluation table as if each arm had been extended rung by rung,
each decision fitted only to the rows it could have seen, and reports the rollouts spent against the full
grid's with the fits of the data the adaptive sweep kept (`study_fit.fit_study`'s schema). Its bands come
from the per-problem counts where the table has them, else from the residual bootstrap `isocompute fit` uses
without counts (a tracker's log keeps none), and the replay says which. Its table checks and rung grid
(`replay_grid`) and its account of what was kept (`kept_outcome`) are shared with the rule's peers
(`adaptive.peers`), so that every policy's share and law are measured one way.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd

from isocompute.adaptive.extrapolation import SEEN_FROM, SHARE, Forecast, forecast_arms
from isocompute.adaptive.prior import Prior, contradiction, material_points, prior_of_law, prior_stop
from isocompute.adaptive.rungs import (
    CAP_SLACK,
    PILOT_RULES,
    RULES,
    AdaptiveError,
    AdaptiveSettings,
    guard_arms,
    reached_rungs,
    rung_caps,
    rung_step,
)
from isocompute.errors import plain
from isocompute.fits.bootstrap import resample_evals
from isocompute.fits.curves import FitOptions
from isocompute.fits.forms import Key, RewardFit, reward_fit_from_json
from isocompute.fits.frontier import Settled
from isocompute.fits.leaders import RESOLVED_SHARE
from isocompute.fits.study_fit import fit_study

# The metric's largest value (avg@k, best@k and worst@k are shares): the only bound on an unsaturated curve.
REWARD_MAX = 1.0
# How far below every leader at the last material point an arm must lie before a rising frontier has left it
# behind: two doublings, so the arm is below n*/2 (a guard, which keeps a fall back measured). Chosen over
# three on the known truth (docs/log/adaptive-prior.md): every negative stayed refused and
# `close_not_monotone` kept its verdicts, while the realistic tables spent 48-60 % instead of 58-72 %.
BEHIND_DOUBLINGS = 2
# What each decision's bands resample (the fits' `bootstrap.kind`), as the replay's JSON and command say it.
BANDS = {
    "problems": "bootstrap of the validation problems, from per-problem counts",
    "residuals": "residual bootstrap of each curve, no per-problem counts",
}
# What each stop rule's judgement rests on: an arm it stopped is behind beyond its stop on this assumption, so
# the fits of the sweep's data read it as no candidate there (`settled_arms`), where a run that merely ended is
# censored. The bound's is the study's own form; the others add the form of the law of n*.
STOP_ASSUMPTIONS = {
    "bound": "curves only rise, and its identified ceiling's upper band lies below the frontier's lower edge",
    "behind": "n* rises as the data showed, so a larger n that overtook it stays ahead",
    "plateau": "the data's identified law keeps its plateau below it (it resumes if the law or the frontier moves)",
    "prior": "the new model's law stays in the prior's band, as it did at every material point measured",
    "extrapolate": "its forecast from half its run, whose interval covered the known truth from that fraction on, "
    "holds: its upper edge lies more than the tolerance below the frontier's lower edge",
    "guard_behind": "n* rises as the data showed, so a larger n that overtook it stays ahead",
}
# The stop rules whose arms the fits read as censored, not settled (`settled_arms`), with why: a tied arm is judged
# to stay level with the frontier, not behind it, so beyond its stop it may lead. That is what censored says (a run
# not measured there that may lead), and a point where a censored run leads is no evidence of n*
# (`fits.leaders`): the arms left running make no law where it may lead, so a tie cut on noise costs evidence.
# Settled, the tied arm would be no candidate, and the large n left running after the small n stop would read as
# a rising n*.
CENSORED_STOPS = {
    "tie": "tied with the frontier's arm: it may lead beyond its stop, so it is censored there, not settled",
    "last_resume": "held at the last decision, where a resume buys its whole remaining run: the rule that stopped "
    "it no longer holds, so it may lead beyond its stop; censored there, not settled",
}
# The resumes the `last_resume` part holds at the last decision (`held_at_last`), by the rule that resumes: the plateau
# part's and a contradicted prior's fallback (the pilot's V2, adopted); the pilot's V1, `last_resume_plateau` (a
# replay may name it, `rungs.PILOT_RULES`), the plateau part's only (docs/log/adaptive-peers.md).
LATE_RESUMES = {
    "last_resume_plateau": ("plateau resume",),
    "last_resume": ("plateau resume", "prior fallback"),
}
# From this fraction of an arm's run (in linear compute) a tie is read off its forecast (`tied_to_frontier`). It is
# below the fraction from which the forecast's intervals covered the truth (`SEEN_FROM`, a half): a tie stop
# rests on no bound, since its arm stays censored, so a miscalibrated interval costs evidence, which the positives'
# recovery measures (no law lost on 36 draws, none made on 18 with no law to find). From half a run no tie rule can save what a peer saves
# (docs/log/adaptive-peers.md, setting T1: 91 % of the grid on the negatives against the median pruner's 77 %).
TIE_FROM = 1 / 4
# The pilot part `forecast_frontier` reads an arm's forecast against the frontier's arm's at this many compute
# values, log-evenly spaced from C_top to the arm's end: both curves rise, so a grid this fine checks the range.
AHEAD_POINTS = 4


@dataclass(frozen=True)
class Decision:
    """Extend or stop one arm after a rung, with the reason in words and the numbers behind it."""

    n: int
    action: str
    reason: str
    numbers: dict[str, Any]


def ceiling_bound(curve: Mapping[str, Any], resamples: int) -> tuple[float, str]:
    """An upper bound on the arm's reward at any larger compute, and why it holds.

    The upper edge of the ceiling A's bootstrap band where the fit identifies A; otherwise the metric's
    maximum. A is identified where the fit has no flag (its bend lies inside the data, it has saturated,
    no parameter is at a bound) or where the only flag is a midpoint below the first point (a curve
    measured on its plateau only), and where the curve has clearly risen (A's band above the base
    model's): a curve still at the base model's value fits a noise "plateau" as well as a rise to come,
    and a step at the last points (a slope at its bound) fits a false plateau, so neither is a ceiling.
    """
    fit = reward_fit_from_json(curve)
    if not isinstance(fit, RewardFit):
        return REWARD_MAX, f"no curve fit ({fit.kind}): its future reward is bounded only by {REWARD_MAX:g}"
    below = fit.log10_c_mid < np.log10(curve["range"][0])
    unidentified = [flag for flag in fit.flags if not (below and flag.startswith("C_mid"))]
    if unidentified:
        return REWARD_MAX, (
            f"its ceiling is not identified ({'; '.join(unidentified)}), so its future reward is bounded only "
            f"by {REWARD_MAX:g}"
        )
    intervals = curve.get("intervals", {})
    fitted = curve.get("replicas_fitted", 0)
    if fitted < RESOLVED_SHARE * resamples or "a" not in intervals:
        return REWARD_MAX, f"only {fitted} of {resamples} bootstrap replicas fitted the curve: no band on its ceiling"
    base_high = intervals["r0"][1] if "r0" in intervals else fit.r0
    if intervals["a"][0] <= base_high:
        return REWARD_MAX, (
            f"not yet risen (A's band reaches down to {intervals['a'][0]:.3f}, the base model's to {base_high:.3f}): "
            f"its ceiling is not identified, so its future reward is bounded only by {REWARD_MAX:g}"
        )
    return float(intervals["a"][1]), "its ceiling identified: the upper edge (97.5 %) of A's bootstrap band"


def guards(fit: Mapping[str, Any], arms: Sequence[int]) -> dict[int, str]:
    """The arms that run on whatever their bands say, with why: the frontier's arm at the top of the reached
    range and its neighbours on the grid (n*/2 and 2 n*); `decide` stops the lower one only by `guard_behind`."""
    if fit["optimum_at_max_compute"] is None:
        return {}
    n_top = int(fit["optimum_at_max_compute"]["n"])
    return {
        n: "the frontier's arm at the top of the reached range" if n == n_top
        else f"a neighbour of the frontier's arm n* = {n_top} at the top of the reached range"
        for n in guard_arms(arms, n_top)
    }  # fmt: skip


def last_material(fit: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The highest-compute optimum point whose leaders are evidence (`status` material), or None."""
    material = material_points(fit["optimum_points"])
    return material[-1] if material else None


def rising_in_data(fit: Mapping[str, Any]) -> bool:
    """Whether the data show n* rising: two material points whose leader sets are apart upwards, and no two
    apart downwards (the verdict's own reading of the leaders, `fits.law`)."""
    sets = [point["leaders"]["n"] for point in material_points(fit["optimum_points"])]
    pairs = [(first, second) for i, first in enumerate(sets) for second in sets[i + 1 :]]
    up = any(min(second) > max(first) for first, second in pairs)
    down = any(max(second) < min(first) for first, second in pairs)
    return up and not down


def decide(
    fit: Mapping[str, Any],
    steps: Mapping[int, int],
    active: Sequence[int],
    settings: AdaptiveSettings,
    rules: Sequence[str] = RULES,
    previous: Mapping[str, Any] | None = None,
) -> list[Decision]:
    """Extend or stop each active arm, given the fit (`fit_study`'s JSON, with a bootstrap) of what is measured,
    by the bound and behind parts of `rules`.

    `steps` holds every arm's optimizer steps reached, stopped arms included (the arm list gives the
    neighbours of the frontier's arm). With `second_look` in `rules` the bound stops an arm only where it also
    held at the `previous` round's look (`bound_held_before`); with `young_look`, only a young arm's (`young_arms`).
    With `guard_behind` the lower guard n*/2 stops where n* rises on the data and it lies below every
    leader of the last material point at this look and at the `previous` round's (`guard_behind_before`).
    """
    resamples = fit["bootstrap"]["resamples"]
    if resamples == 0:
        raise AdaptiveError(
            "the adaptive sweep needs bootstrap replicas (of problems or of residuals): no band, no stop"
        )
    top = fit["frontier"][-1] if fit["frontier"] else None
    c_top = None if top is None else float(top["compute"])
    low = None if top is None or top.get("reward_low") is None else float(top["reward_low"])
    n_top = None if fit["optimum_at_max_compute"] is None else int(fit["optimum_at_max_compute"]["n"])
    guarded = guards(fit, sorted(steps))
    # Where n* rises on the data, the leaders of the last material point: the `behind` part stops an arm two doublings
    # below all of them; the `guard_behind` part records each arm's place under them (`below_leaders`) so that the
    # next round can ask whether the lower guard lay behind at two looks in a row.
    behind, behind_guard = "behind" in rules, "guard_behind" in rules
    reference = last_material(fit) if (behind or behind_guard) and rising_in_data(fit) else None
    lowest = None if reference is None else min(reference["leaders"]["n"])
    curves = {int(curve["key"]["n"]): curve for curve in fit["curves"]}
    if "second_look" in rules:
        second = set(active)
    else:
        second = young_arms(previous, active, settings.min_steps) if "young_look" in rules else set()
    held_before = bound_held_before(previous) if second else set()
    lower_guard = lower_guard_arm(sorted(steps), n_top) if behind_guard else None
    behind_before = guard_behind_before(previous) if behind_guard else set()
    decisions = []
    for n in active:
        numbers: dict[str, Any] = {"steps": steps[n], "c_top": c_top, "n_top": n_top, "frontier_low": low}
        if steps[n] < settings.min_steps:
            decisions.append(Decision(n, "extend", f"{steps[n]} steps, under sweep.min_steps={settings.min_steps}", numbers))
            continue
        upper, why = ceiling_bound(curves[n], resamples) if n in curves else (REWARD_MAX, "no curve: not yet measured")
        numbers.update(upper=upper, margin=None if low is None else low - upper)
        if behind_guard:
            numbers.update(below_leaders=lowest is not None and n < lowest)
        bounded = "bound" in rules and low is not None and upper < low
        if n == lower_guard and numbers["below_leaders"] and n in behind_before:
            below = float(np.log2(lowest / n))
            decisions.append(Decision(n, "stop", (
                f"the lower guard left behind a rising frontier: n* rises on the data (leader sets apart upwards, never "
                f"downwards) and n lies below every leader at C = {reference['compute']:.4g} ({reference['leaders']['n']}) at "
                f"this look and at the look before: it can no longer retake the lead, so its future changes neither "
                f"the frontier nor the law"),
                {**numbers, "rule": "guard_behind", "doublings_below": below}))  # fmt: skip
        elif n in guarded:
            decisions.append(Decision(n, "extend", guarded[n], numbers))
        elif bounded and n in second and n not in held_before:
            decisions.append(Decision(n, "extend", (
                f"its bound {upper:.3f} ({why}) lies below the frontier's lower edge {low:.3f} at this look only: a "
                f"ceiling fitted to a young curve moves, so the bound stops it only at a second look in a row"), numbers))  # fmt: skip
        elif bounded:
            decisions.append(Decision(n, "stop", (
                f"confidently below the frontier over its whole remaining range: its reward stays under {upper:.3f} "
                f"({why}), the frontier stays above {low:.3f} (lower edge, 2.5 %, of its band at C = {c_top:.4g}; "
                f"curves only rise)"), numbers))  # fmt: skip
        elif behind and lowest is not None and np.log2(lowest / n) >= BEHIND_DOUBLINGS:
            below = float(np.log2(lowest / n))
            decisions.append(Decision(n, "stop", (
                f"left behind a rising frontier: n* rises on the data (leader sets apart upwards, never downwards) "
                f"and n lies {below:g} doublings below every leader at C = {reference['compute']:.4g} "
                f"({reference['leaders']['n']}): a larger n overtakes it for good"),
                {**numbers, "rule": "behind", "doublings_below": below}))  # fmt: skip
        elif low is None:
            decisions.append(Decision(n, "extend", "no bootstrap band on the frontier at the top of the reached range", numbers))
        else:
            decisions.append(Decision(n, "extend", f"its bound {upper:.3f} ({why}) reaches the frontier's lower edge {low:.3f}", numbers))
    return decisions


def lower_guard_arm(arms: Sequence[int], n_top: int | None) -> int | None:
    """The lower guard: the arm below the frontier's arm `n_top` on the sorted grid `arms` (n*/2), or None where
    there is no frontier's arm or it is the smallest arm."""
    if n_top is None or n_top not in arms:
        return None
    below = guard_arms(arms, n_top)[0]
    return int(below) if below != n_top else None


def guard_behind_before(previous: Mapping[str, Any] | None) -> set[int]:
    """The arms that lay below every leader of the last material point under a rising n* at the `previous` round's
    look (its record's `below_leaders`, which the `guard_behind` part writes), whatever that round decided for them.
    The part stops the lower guard n*/2 only where this held at two looks in a row: a stop read off one early look is
    fragile (docs/log/adaptive-peers.md, "The bound on young ceilings"). A round file written before the part has no
    `below_leaders`, so the first round after an upgrade stops no guard by it."""
    looks = [(d["n"], d["numbers"].get("below_leaders")) for d in (previous or {}).get("decisions", [])]
    return {n for n, below in looks if below}


def bound_held_before(previous: Mapping[str, Any] | None) -> set[int]:
    """The arms whose bound lay below the frontier at the `previous` round's look (its record: an identified
    ceiling's upper edge `upper` under the frontier's lower edge `frontier_low`), whatever that round decided
    for them. The bound's ceiling is identified on a curve fitted as saturated; on an arm's first few points a
    short rise fits as saturated as well as the start of a longer one (docs/log/adaptive-peers.md, "The bound on
    young ceilings"), and the next rung's points tell them apart: where the ceiling held at two looks in a row,
    the bound stops the arm (the rule's `young_look` part for a young arm, `young_arms`; the `second_look` pilot,
    `rungs.PILOT_RULES`, for every arm)."""
    looks = [(d["n"], d["numbers"].get("upper"), d["numbers"].get("frontier_low")) for d in (previous or {}).get("decisions", [])]
    return {n for n, upper, low in looks if upper is not None and low is not None and upper < low}


def young_arms(previous: Mapping[str, Any] | None, active: Sequence[int], min_steps: int) -> set[int]:
    """The `active` arms whose ceiling the data have seen on one rung at most: at the `previous` round's look
    (its record) each had fewer than `min_steps` optimizer steps, or had no look (round 0). The bound cannot stop
    an arm under `min_steps`, so this round is its first chance, and its ceiling a fit of the short rise its first
    rung past `min_steps` shows; on the known-truth draws every bound stop later reversed was such an arm's
    (docs/log/adaptive-peers.md, "The bound on young ceilings"). The rule's `young_look` part asks the second
    look (`bound_held_before`) of these arms only, and lets the bound stop an arm with more data at its first look
    (the `second_look` pilot, asking it of every arm, cost a round of compute on every genuine stop)."""
    before = {d["n"]: d["numbers"].get("steps") for d in (previous or {}).get("decisions", [])}
    return {n for n in active if before.get(n) is None or before[n] < min_steps}


def follow_prior(
    fit: Mapping[str, Any],
    decisions: list[Decision],
    steps: Mapping[int, int],
    prior: Prior,
    state: Mapping[str, Any] | None,
    index: int,
    compute_max: float,
) -> tuple[list[Decision], dict[str, Any]]:
    """The plain rule's decisions with the prior's (`adaptive.prior`): while the prior holds at every material
    point, arms above its plateau or left below its law stop (`prior.prior_stop`), and an arm it stopped
    resumes when it becomes a guard; at the first point that contradicts it, the sweep falls back to the plain
    rule and every arm the prior stopped resumes. Returns the decisions and the prior's state to carry into
    the next round (`status`, the arms it stopped, the fallback)."""
    state = {**prior.to_json(), "status": "followed", "stopped": [], "fallback": None, **(state or {})}
    if state["status"] == "fallen back":
        return decisions, state
    against = contradiction(prior, fit["optimum_points"])
    if against is not None:
        reason = (f"the prior is contradicted at C = {against['compute']:.4g}: the leaders there ({against['leaders']}) "
                  f"lie outside its band [{against['band'][0]:.3g}, {against['band'][1]:.3g}]; the plain rule decides "
                  f"from this round on")  # fmt: skip
        state = {**state, "status": "fallen back", "fallback": {"round": index, **against, "reason": reason}}
        running = {d.n for d in decisions}  # an arm the audit kept running needs no resume
        resumed = [Decision(n, "resume", f"stopped by the prior, which is now contradicted: {reason}",
                            {"steps": steps[n], "rule": "prior fallback"}) for n in state["stopped"] if n not in running]  # fmt: skip
        return decisions + resumed, state
    guarded = guards(fit, sorted(steps))
    reference = last_material(fit)
    top_leaders = None if reference is None else reference["leaders"]["n"]
    c_ref = None if reference is None else float(reference["compute"])
    running = {d.n for d in decisions}
    reached = [n for n in state["stopped"] if n in guarded and n not in running]
    resumed = [Decision(n, "resume", f"stopped by the prior; now {guarded[n]}: it runs on", {"steps": steps[n], "rule": "prior guard"})
               for n in reached]  # fmt: skip
    result, stopped = resumed, [n for n in state["stopped"] if n not in reached and n not in running]
    for decision in decisions:
        n = decision.n
        why = None
        if decision.action == "extend" and n not in guarded:
            # min_steps guards a stop read off an arm's own data; the prior's stops read the frontier's.
            why = prior_stop(prior, n, c_ref if c_ref is not None else compute_max, compute_max, top_leaders)
        if why is None:
            result.append(decision)
            continue
        below = None if top_leaders is None else float(np.log2(min(top_leaders) / n))
        result.append(Decision(n, "stop", f"prior ({prior.source}): {why}",
                               {**decision.numbers, "rule": "prior", "doublings_below": below}))  # fmt: skip
        stopped.append(n)
    return result, {**state, "stopped": stopped}


def above_own_plateau(
    fit: Mapping[str, Any], decisions: list[Decision], steps: Mapping[int, int], state: Mapping[str, Any] | None
) -> tuple[list[Decision], dict[str, Any] | None]:
    """The plain rule's use of what the data already say: where the round's own law of n* is identified (a
    plateau inside the reached range, `fits.law`), an arm above the plateau's band (its replicas' 97.5 %)
    that is no guard stops, as a prior's arm above its plateau does. It resumes, from where it stopped, the
    round it becomes a guard (the frontier climbed to it), the law stops being identified, or the plateau's
    band reaches it: nothing is decided without it. Returns the decisions and the rule's state (the arms it
    holds stopped), None while it has stopped nothing."""
    held = list((state or {}).get("stopped", []))
    law = fit["optimum"]["n"]
    identified = law["ok"] and law.get("identified") == "identified" and law["L"] > 0
    own = prior_of_law(law, "the data's own law so far") if identified else None
    guarded = guards(fit, sorted(steps))
    c_top = float(fit["frontier"][-1]["compute"]) if fit["frontier"] else None
    result = []
    running = {d.n for d in decisions}
    held = [n for n in held if n not in running]  # an arm the audit kept running is decided as any other
    for n in list(held):
        why = guarded.get(n) or (None if own is not None and c_top and prior_stop(own, n, c_top, c_top, None) else
                                 "the data's own law no longer puts its plateau below it")  # fmt: skip
        if why is not None:
            held.remove(n)
            result.append(Decision(n, "resume", f"stopped above the plateau of the data's own law; now {why}: it runs on",
                                   {"steps": steps[n], "rule": "plateau resume"}))  # fmt: skip
    for decision in decisions:
        why = None
        if own is not None and c_top is not None and decision.action == "extend" and decision.n not in guarded:
            why = prior_stop(own, decision.n, c_top, c_top, None)
        if why is None:
            result.append(decision)
            continue
        held.append(decision.n)
        result.append(Decision(decision.n, "stop", why,
                               {**decision.numbers, "rule": "plateau"}))  # fmt: skip
    return result, ({"stopped": held} if held or state is not None else None)


def last_decision(cap: float, compute_max: float | None, settings: AdaptiveSettings) -> bool:
    """Whether the round after the rung of cap `cap` is the sweep's last decision: the only rung left is the
    grid's last (`compute_max`, the last rung's cap; caps lie `settings.rung_factor` apart, `rungs.rung_caps`), so
    an arm resumed there runs to the end of its run with no later look. Unknown (False) without `compute_max`."""
    return compute_max is not None and cap * settings.rung_factor * CAP_SLACK >= compute_max


def held_at_last(
    fit: Mapping[str, Any], decisions: list[Decision], steps: Mapping[int, int], resumes: Sequence[str]
) -> list[Decision]:
    """The rule's `last_resume` part (and its pilot variant `last_resume_plateau`), at the last decision (`last_decision`): a resume by a
    rule in `resumes` (`LATE_RESUMES`: the plateau part's, and the prior's fallback) of an arm that is no guard
    (n*, n*/2, 2 n* at C_top) is held instead: there a resume buys the arm's whole remaining run to C_max. The arm
    stays stopped, and its stop becomes `last_resume`, censored (`CENSORED_STOPS`): the rule that stopped it no
    longer holds, so beyond its stop it may lead, and a point where it may lead is no evidence of n*. The cost of
    not resuming is evidence, never a false law. A guard resumes as before."""
    guarded = guards(fit, sorted(steps))
    result = []
    for decision in decisions:
        held_by = decision.numbers.get("rule")
        if decision.action != "resume" or held_by not in resumes or decision.n in guarded:
            result.append(decision)
            continue
        result.append(Decision(decision.n, "hold", (
            f"{decision.reason}; but this is the last decision, where a resume runs the arm to the end of its run with "
            f"no later look, and it is no guard: it stays stopped, censored beyond its stop (it may lead there)"),
            {**decision.numbers, "rule": "last_resume", "held": held_by}))  # fmt: skip
    return result


def run_seen(fit: Mapping[str, Any], ends: Mapping[int, float]) -> dict[int, float]:
    """The share of its run (in linear compute, its end in `ends`) each measured arm has reached: both forecast
    parts of the rule read an arm's forecast only from a fraction of its run on."""
    return {int(curve["key"]["n"]): float(curve["range"][1]) * CAP_SLACK / ends[int(curve["key"]["n"])]
            for curve in fit["curves"]}  # fmt: skip


def below_by_forecast(
    fit: Mapping[str, Any],
    decisions: list[Decision],
    steps: Mapping[int, int],
    ends: Mapping[int, float],
    settings: AdaptiveSettings,
    seed: int,
    against_arm: bool = False,
) -> list[Decision]:
    """The forecast's part of the rule (`adaptive.extrapolation`), used only as far as its intervals were
    measured to cover the truth: an arm the round extends, not the frontier's at C_top, past `min_steps` and
    past `SEEN_FROM` of its run (its end in `ends`), stops where the upper edge of its forecast at its end lies
    below the frontier's lower edge at C_top by more than `fits.tolerance`: curves only rise, so the frontier
    stays above that edge, and the arm cannot lead anywhere in its remaining range. The neighbours of the
    frontier's arm are guarded against a frontier that falls back, which an arm that cannot reach it cannot
    make, so they stop by it too (docs/log/adaptive-extrapolation.md). With `against_arm` (the pilot part
    `forecast_frontier`) it also stops where, at `AHEAD_POINTS` compute values up to its end, its upper edge lies
    below the frontier's arm's own forecast's lower edge there (where that arm is past `SEEN_FROM` of its run;
    the frontier's lower edge at C_top where higher) by more than the tolerance: over that range the frontier is
    at least that arm's curve."""
    top = fit["frontier"][-1] if fit["frontier"] else None
    if top is None or top.get("reward_low") is None or fit["optimum_at_max_compute"] is None:
        return decisions
    low, n_top, c_top = float(top["reward_low"]), int(fit["optimum_at_max_compute"]["n"]), float(top["compute"])
    seen = run_seen(fit, ends)
    candidates = [d.n for d in decisions if d.action == "extend" and d.n != n_top and d.n in seen
                  and steps[d.n] >= settings.min_steps and seen[d.n] >= SEEN_FROM]  # fmt: skip
    measured = pd.DataFrame(fit["measured"])
    forecasts = forecast_arms(measured, fit["metric"], fit["compute"], {n: [ends[n]] for n in candidates},
                              fit["base_reward"], fit["bootstrap"]["resamples"], seed, SHARE)  # fmt: skip
    # The pilot's reading: each candidate over its remaining range, and the frontier's arm where it reaches.
    ahead = against_arm and seen.get(n_top, 0.0) >= SEEN_FROM
    at = {n: list(np.geomspace(c_top, ends[n], AHEAD_POINTS + 1)[1:]) for n in candidates} if ahead else {}
    frontier_at = sorted({c for targets in at.values() for c in targets if c <= ends[n_top] * CAP_SLACK})
    ranged = forecast_arms(measured, fit["metric"], fit["compute"], {**at, n_top: frontier_at}, fit["base_reward"],
                           fit["bootstrap"]["resamples"], seed, SHARE) if frontier_at else {}  # fmt: skip
    frontier_arm = ranged.get(n_top)
    tolerance = fit["tolerance"]
    result = []
    for decision in decisions:
        forecast = forecasts.get(decision.n)
        if not isinstance(forecast, Forecast):
            result.append(decision)
            continue
        read = {"forecast_upper": forecast.upper, "seen": seen[decision.n], "forecast_margin": low - forecast.upper}
        if forecast.upper < low - tolerance:
            result.append(Decision(decision.n, "stop", (
                f"its forecast stays below the frontier: from {seen[decision.n]:.0%} of its run its reward at C = "
                f"{ends[decision.n]:.4g} is at most {forecast.upper:.3f} (upper edge of the forecast's interval), more "
                f"than the tolerance {tolerance:g} under the frontier's lower edge {low:.3f} at C = {c_top:.4g}"),
                {**decision.numbers, **read, "rule": "extrapolate", "margin": low - forecast.upper}))  # fmt: skip
            continue
        over = ranged.get(decision.n)
        if isinstance(frontier_arm, Forecast) and isinstance(over, Forecast):
            floor = [max(low, float(frontier_arm.low[frontier_at.index(c)])) if c in frontier_at else low
                     for c in at[decision.n]]  # fmt: skip
            margins = [edge - float(high) for edge, high in zip(floor, over.high)]
            read["frontier_arm_margin"] = min(margins)
            if min(margins) > tolerance:
                result.append(Decision(decision.n, "stop", (
                    f"its forecast stays below the frontier's arm's: from {seen[decision.n]:.0%} of its run, at every "
                    f"one of {len(margins)} compute values from C_top = {c_top:.4g} to its end {ends[decision.n]:.4g}, "
                    f"the upper edge of its forecast lies more than the tolerance {tolerance:g} under the lower edge of "
                    f"the forecast of the frontier's arm n = {n_top} (or the frontier's lower edge {low:.3f}, where "
                    f"higher): by {min(margins):.3f} at the least. The frontier is at least that arm's curve"),
                    {**decision.numbers, **read, "rule": "extrapolate", "margin": min(margins)}))  # fmt: skip
                continue
        # Kept running: the round's record says by how much its forecast missed stopping it.
        result.append(Decision(decision.n, decision.action, decision.reason, {**decision.numbers, **read}))
    return result


def tied_to_frontier(
    fit: Mapping[str, Any],
    decisions: list[Decision],
    steps: Mapping[int, int],
    ends: Mapping[int, float],
    settings: AdaptiveSettings,
    seed: int,
    guard_ties: bool = False,
) -> list[Decision]:
    """The tie's part of the rule: where no band separates close curves, no other part stops an arm level with
    the frontier, and a sweep of tied arms runs nearly every arm to C_max. An arm the round extends stops as
    *tied* where it is no guard (the frontier's arm at C_top and its neighbours keep measuring the frontier), is
    past `min_steps` and `TIE_FROM` of its run (its end in `ends`), leads at the top of the reached range (the data
    cannot place it behind now), and its forecast at its end (`adaptive.extrapolation`) cannot be told from the
    frontier's arm's at that compute: its interval meets the frontier's arm's widened by `fits.tolerance` on each
    side (the gap between them, if any, is one no user would act on). The fits read it as censored beyond its
    stop (`CENSORED_STOPS`): where it may lead a point is no evidence of n*, so a tie cut on noise costs evidence;
    only where its fitted curve beyond the stop falls materially behind does a point count it among the values
    it tells apart. With `guard_ties` (the rule's part `tie_guards`), where no point of the fit is material the
    neighbours n*/2 and 2 n* are no guards here: no point tells any arm apart, so the frontier's arm is a pick among
    tied arms and there is no frontier whose move they would measure; the frontier's arm at C_top still runs."""
    top = fit["frontier"][-1] if fit["frontier"] else None
    points = fit["optimum_points"]
    if top is None or not points or fit["optimum_at_max_compute"] is None:
        return decisions
    n_top = int(fit["optimum_at_max_compute"]["n"])
    leading = set(points[-1]["leaders"]["n"])
    guarded = guards(fit, sorted(steps))
    lapsed = set(guarded) - {n_top} if guard_ties and not material_points(points) else set()
    guarded = {n: why for n, why in guarded.items() if n not in lapsed}
    seen = run_seen(fit, ends)
    candidates = [d.n for d in decisions if d.action == "extend" and d.n not in guarded and d.n in leading
                  and d.n in seen and steps[d.n] >= settings.min_steps and seen[d.n] >= TIE_FROM]  # fmt: skip
    if not candidates or n_top not in seen:
        return decisions
    at = {n: min(ends[n], ends[n_top]) for n in candidates}
    targets = sorted(set(at.values()))
    forecasts = forecast_arms(pd.DataFrame(fit["measured"]), fit["metric"], fit["compute"],
                              {**{n: [c] for n, c in at.items()}, n_top: targets}, fit["base_reward"],
                              fit["bootstrap"]["resamples"], seed, SHARE)  # fmt: skip
    frontier_arm = forecasts[n_top]
    if not isinstance(frontier_arm, Forecast):
        return decisions
    tolerance = fit["tolerance"]
    result = []
    for decision in decisions:
        forecast = forecasts.get(decision.n) if decision.n in candidates else None
        if not isinstance(forecast, Forecast):
            result.append(decision)
            continue
        i = targets.index(at[decision.n])
        low, high = float(frontier_arm.low[i]) - tolerance, float(frontier_arm.high[i]) + tolerance
        if forecast.high[0] < low or forecast.low[0] > high:
            result.append(decision)
            continue
        result.append(Decision(decision.n, "stop", (
            f"tied with the frontier: it leads at C = {points[-1]['compute']:.4g} and, from {seen[decision.n]:.0%} of its "
            f"run, its forecast at C = {at[decision.n]:.4g} ({forecast.low[0]:.3f}-{forecast.high[0]:.3f}) meets the "
            f"frontier's arm n = {n_top}'s ({low + tolerance:.3f}-{high - tolerance:.3f}) widened by the tolerance "
            f"{tolerance:g}: censored beyond its stop, where it may lead"
            + ("; no compute point tells any arm apart yet, so as a neighbour of the frontier's arm it guards no "
               "frontier" if decision.n in lapsed else "")),
            {**decision.numbers, "rule": "tie", "seen": seen[decision.n], "forecast": [float(forecast.low[0]),
             float(forecast.high[0])], "frontier_forecast": [low + tolerance, high - tolerance]}))  # fmt: skip
    return result


def replay(
    evals: pd.DataFrame,
    counts: pd.DataFrame | None,
    options: FitOptions,
    k: int,
    bootstrap: int,
    seed: int = 0,
    settings: AdaptiveSettings | None = None,
    base_counts: pd.DataFrame | None = None,
    holdout_decades: float = 0.5,
    frontier_points: int = 60,
    prior: Prior | None = None,
    rules: Sequence[str] = RULES,
) -> dict[str, Any]:
    """Run the policy on a complete table of a fixed-B_problem study as if its arms were extended rung by rung.

    Each round fits only the rows its decision could have seen (every arm up to the step it had reached,
    with the bootstrap drawn from those rows' per-problem counts, or without `counts` from each of their
    curves' residuals, as `isocompute fit` does without counts). Returns the rollouts spent and the full
    grid's, the decisions per round, per arm how far it ran and why, the audit, `bootstrap` (what the bands
    resample: `BANDS`), with `prior` the prior's state (followed, or where it fell back), and `fits`: the
    fits of the kept data (`fit_study`'s JSON).
    A resumed arm runs from where it stopped, as its run would. `rules` leaves parts of the plain rule out
    (`RULES`), to show what each saves; the workflow always applies every one.
    """
    unknown = sorted(set(rules) - set(RULES) - set(PILOT_RULES))
    if unknown:
        raise AdaptiveError(f"unknown rules {unknown}: the plain rule's parts are {list(RULES)}, its pilots {list(PILOT_RULES)}")
    settings = settings or AdaptiveSettings()
    checkpoints, caps = replay_grid(evals, counts, options, bootstrap, base_counts, settings)
    arms = sorted(checkpoints)
    compute_max = caps[-1]
    steps = dict.fromkeys(arms, 0)
    active = list(arms)
    stopped: dict[int, dict[str, Any]] = {}
    audit: dict[str, Any] | None = None
    rounds: list[dict[str, Any]] = []
    for index, cap in enumerate(caps):
        last = index == len(caps) - 1
        for n in active:
            steps[n] = rung_step(checkpoints[n], cap, last)
        if last:
            break
        fit = fit_seen(evals, counts, steps, options, k, bootstrap, seed, base_counts, 0.0, frontier_points,
                       settled_arms(stopped, {n: _compute_at(checkpoints[n], steps[n]) for n in stopped}))  # fmt: skip
        record, audit = decide_round(
            fit, steps, active, settings, audit, index, cap, prior, rounds[-1] if rounds else None, compute_max, rules,
            {n: max(c for _, c in checkpoints[n]) for n in arms},
        )
        stopped = stopped_after(stopped, record["decisions"], index, cap)
        active = [n for n in arms if n not in stopped]
        rounds.append(record)
    outcome = kept_outcome(evals, counts, checkpoints, steps, stopped, options, k, bootstrap, seed, base_counts,
                           holdout_decades, frontier_points,
                           settled_arms(stopped, {n: _compute_at(checkpoints[n], steps[n]) for n in stopped}))  # fmt: skip
    return {
        "policy": "isocompute",
        "settings": asdict(settings),
        "rules": list(rules),
        "rungs": caps,
        **outcome,
        "audit": _audit_outcome(audit, outcome["fits"]),
        **({"prior": rounds[-1]["prior"]} if prior is not None and rounds else {}),
        "rounds": rounds,
    }


def replay_grid(
    evals: pd.DataFrame,
    counts: pd.DataFrame | None,
    options: FitOptions,
    bootstrap: int,
    base_counts: pd.DataFrame | None,
    settings: AdaptiveSettings,
) -> tuple[dict[int, list[tuple[int, float]]], list[float]]:
    """What every policy's replay runs on, checked once for all of them: each arm's checkpoints (step and
    compute, the mean over seeds) and the rungs' caps (`rungs.rung_caps` from the table's first compute to
    the arms' common C_max), so the rule and its peers stop arms on the same grid."""
    if options.by != ("n",) or options.compute != "compute_rollouts":
        raise AdaptiveError("the adaptive sweep replays a fixed-B_problem study: curves by n, compute in rollouts")
    if evals["b_problem"].nunique() != 1:
        raise AdaptiveError(f"the evaluations hold b_problem values {plain(sorted(evals['b_problem'].unique()))}: keep one")
    if bootstrap < 1:
        raise AdaptiveError("the adaptive sweep needs bootstrap replicas (--bootstrap >= 1): no band, no stop")
    if counts is None and base_counts is not None:
        raise AdaptiveError("the base model's counts are resampled with the runs' counts: give both")
    checkpoints = {
        int(n): [(int(step), float(compute)) for step, compute in group.groupby("step")["compute_rollouts"].mean().items()]
        for n, group in evals.groupby("n")
    }
    arms = sorted(checkpoints)
    if len(arms) < 3:
        raise AdaptiveError(f"the evaluations hold {len(arms)} arm(s) (n = {arms}): an adaptive sweep needs at least three")
    compute_max = min(max(c for _, c in points) for points in checkpoints.values())
    caps = rung_caps(float(evals["compute_rollouts"].min()), compute_max, settings.rung_factor)
    if len(caps) < 2:
        raise AdaptiveError(f"sweep.rung_factor={settings.rung_factor} leaves {len(caps)} rung over the measured range")
    return checkpoints, caps


def kept_outcome(
    evals: pd.DataFrame,
    counts: pd.DataFrame | None,
    checkpoints: Mapping[int, Sequence[tuple[int, float]]],
    steps: Mapping[int, int],
    stopped: Mapping[int, Mapping[str, Any]],
    options: FitOptions,
    k: int,
    bootstrap: int,
    seed: int,
    base_counts: pd.DataFrame | None,
    holdout_decades: float,
    frontier_points: int,
    settled: Mapping[Key, Settled],
) -> dict[str, Any]:
    """What a replay reports of the run a policy kept (each arm to `steps`, `stopped` saying where and why),
    one definition for the rule and its peers so that their shares and laws compare: the rollouts spent
    against the full grid's, what the bands resample, per arm its steps and compute reached, and `fits`,
    the kept rows fitted as the rule's replay fits them (`fit_seen`, with the held-out check), the arms in
    `settled` no candidates beyond their stops (the policy's judgement), every other stopped arm censored."""
    arms = sorted(checkpoints)
    kept = fit_seen(evals, counts, steps, options, k, bootstrap, seed, base_counts, holdout_decades,
                    frontier_points, settled)  # fmt: skip
    spent = _rollouts(evals, steps)
    full = _rollouts(evals, {n: max(s for s, _ in checkpoints[n]) for n in arms})
    kind = kept["bootstrap"]["kind"]
    return {
        "rollouts_spent": spent,
        "rollouts_full_grid": full,
        "share_of_full_grid": spent / full,
        "bootstrap": {"kind": kind, "resamples": bootstrap, "bands": BANDS[kind]},
        "arms": [
            {
                "n": n,
                "steps": steps[n],
                "compute_reached": _compute_at(checkpoints[n], steps[n]),
                "compute_full": max(c for _, c in checkpoints[n]),
                **({"stopped": dict(stopped[n])} if n in stopped else {}),
            }
            for n in arms
        ],
        "fits": kept,
    }


def decide_round(
    fit: Mapping[str, Any],
    steps: Mapping[int, int],
    active: Sequence[int],
    settings: AdaptiveSettings,
    audit: dict[str, Any] | None,
    index: int,
    cap: float,
    prior: Prior | None = None,
    previous: Mapping[str, Any] | None = None,
    compute_max: float | None = None,
    rules: Sequence[str] = RULES,
    ends: Mapping[int, float] | None = None,
) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """One round after rung `index` (its compute cap `cap`): every active arm decided on `fit` (the study
    fit of what the arms had measured, with a bootstrap); with a prior, its rules and check (`follow_prior`;
    `compute_max` the last rung's cap); without one, once it fell back, or beside a leaders prior (no law),
    the plateau of the data's own law (`above_own_plateau`); each rule's state carried from the `previous`
    round's record; the audit carried on. Returns the round's record (its cap, n* at the top of the reached range, the law's verdict, every
    decision with its numbers, the prior's and the plateau rule's states) and the audit to carry into the
    next round; the replay and the workflow's rounds both decide through it (the workflow with every rule).
    With `ends` (each arm's last compute) the forecast's stops apply too (`below_by_forecast`)."""
    previous = previous or {}
    decisions = decide(fit, steps, active, settings, rules, previous)
    state = None
    if prior is not None:
        decisions, state = follow_prior(fit, decisions, steps, prior, previous.get("prior"), index, compute_max or cap)
    plateau = previous.get("plateau")
    # A leaders prior (a refused law's sets, no law of its own) does not stand in for the data's own law.
    if "plateau" in rules and (prior is None or prior.law is None or state is None or state["status"] == "fallen back"):
        decisions, plateau = above_own_plateau(fit, decisions, steps, plateau)
    if "extrapolate" in rules and ends is not None:
        decisions = below_by_forecast(fit, decisions, steps, ends, settings, index, "forecast_frontier" in rules)
    if "tie" in rules and ends is not None:
        decisions = tied_to_frontier(fit, decisions, steps, ends, settings, index, "tie_guards" in rules)
    audit, decisions = _audit(audit, decisions, index, cap, settings)
    late = {resume for rule, resumes in LATE_RESUMES.items() if rule in rules for resume in resumes}
    if late and last_decision(cap, compute_max, settings):
        decisions = held_at_last(fit, decisions, steps, sorted(late))
    law = fit["optimum"]["n"]
    top = fit["optimum_at_max_compute"]
    record = {
        "round": index, "cap": cap, "n_top": None if top is None else top["n"],
        "frontier_top": fit["frontier"][-1] if fit["frontier"] else None,
        "law": {"ok": law["ok"], "kind": law.get("kind"), "identified": law.get("identified")},
        "decisions": [asdict(d) for d in decisions],
        **({"prior": state} if state is not None else {}),
        **({"plateau": plateau} if plateau is not None else {}),
    }  # fmt: skip
    return record, audit


def fit_round(
    evals: pd.DataFrame,
    counts: pd.DataFrame,
    base: Mapping[str, float],
    fits: Mapping[str, Any],
    k: int,
    seed: int,
    base_counts: pd.DataFrame | None = None,
    settled: Mapping[Key, Settled] | None = None,
) -> dict[str, Any]:
    """The fit a workflow round decides on: the headline metric (`fits.metric`) of a fixed-B_problem
    study's evaluations so far, in rollouts, with `fits.bootstrap` replicas of its per-problem counts and
    the study's own fit options (`fits:`), the arms the rule stopped `settled` (`settled_of_rounds`), so a
    round sees what the study's final fit would see."""
    options = FitOptions.from_config(
        fits, fits["metric"], "compute_rollouts", ("n",), float(base[fits["metric"]]) if fits["anchor_r0"] else None
    )
    kept = evals[evals["compute_rollouts"] >= fits["min_compute"]]
    kept_counts = counts[counts["compute_rollouts"] >= fits["min_compute"]]
    replicas = resample_evals(kept_counts, k, fits["bootstrap"], seed, ("n",), base_counts)
    return fit_study(
        kept, options, min_compute=fits["min_compute"], frontier_points=fits["frontier_points"], replicas=replicas,
        holdout_decades=0.0, settled=settled,
    )  # fmt: skip


def fit_seen(
    evals: pd.DataFrame,
    counts: pd.DataFrame | None,
    steps: Mapping[int, int],
    options: FitOptions,
    k: int,
    bootstrap: int,
    seed: int,
    base_counts: pd.DataFrame | None,
    holdout_decades: float,
    frontier_points: int,
    settled: Mapping[Key, Settled] | None = None,
) -> dict[str, Any]:
    """The study fit of the rows each arm had reached, bootstrapped from those rows' counts, or without
    counts from those rows' residuals (`fit_study`'s own residual bootstrap, `isocompute fit`'s); the arms in
    `settled` (`settled_arms`) are no candidates beyond their stops."""
    seen = evals[evals["step"] <= evals["n"].map(steps)]
    if counts is None:
        return fit_study(seen, options, frontier_points=frontier_points, holdout_decades=holdout_decades,
                         resamples=bootstrap, seed=seed, settled=settled)  # fmt: skip
    seen_counts = counts[counts["step"] <= counts["n"].map(steps)]
    replicas = resample_evals(seen_counts, k, bootstrap, seed, ("n",), base_counts)
    return fit_study(seen, options, frontier_points=frontier_points, replicas=replicas, holdout_decades=holdout_decades,
                     settled=settled)  # fmt: skip


def stop_rule(decision: Mapping[str, Any]) -> str:
    """The rule behind a stop decision (a `Decision` as JSON): its `rule` number, the ceiling bound's where none."""
    return str(decision["numbers"].get("rule", "bound"))


def stopped_after(
    stopped: Mapping[int, Mapping[str, Any]],
    decisions: Sequence[Mapping[str, Any]],
    round_: int,
    cap: float | None = None,
) -> dict[int, dict[str, Any]]:
    """The stopped arms (n to the round, rule and reason of its stop) after round `round_`'s `decisions` (each a
    `Decision` as JSON), from those before it (`stopped`, left as it is): the one account of the replay's arms,
    the workflow's round files (`round_state`) and the sweep's summary (`adaptive_summary`).

    A stop starts an arm's record; a resume clears it (the arm runs on); a hold (`held_at_last`: a late resume
    held at the last decision) keeps the arm stopped where it stopped, so its record keeps the stop's round (and
    cap) and takes the hold's rule and reason: `last_resume`, which the fits read as censored (`CENSORED_STOPS`).
    A hold of an arm with no record (a round file written before stops were carried) starts one at this round.
    Each record is in its file's schema: with `cap` (the round's) the replay's and summary's, round, cap, reason
    and rule; without, the round files', round, rule and reason."""
    result = {n: dict(record) for n, record in stopped.items()}
    for decision in decisions:
        n, action = decision["n"], decision["action"]
        if action == "resume":
            result.pop(n, None)
        elif action == "stop" or (action == "hold" and n not in result):
            result[n] = ({"round": round_, "rule": stop_rule(decision), "reason": decision["reason"]} if cap is None else
                         {"round": round_, "cap": cap, "reason": decision["reason"], "rule": stop_rule(decision)})  # fmt: skip
        elif action == "hold":
            result[n].update(reason=decision["reason"], rule=stop_rule(decision))
    return result


def settled_arms(stopped: Mapping[int, Mapping[str, Any]], reached: Mapping[int, float]) -> dict[Key, Settled]:
    """The arms the rule stopped (`stopped`: n to why and by which `rule`), each settled at the compute it
    reached (`reached`): the rule judged it behind beyond its stop, on the assumption `STOP_ASSUMPTIONS` names,
    so the fits read it as no candidate there rather than as a run that merely ended (censored). An arm stopped
    as tied (`CENSORED_STOPS`) is judged level, not behind: it stays censored."""
    return {
        (n,): Settled(float(reached[n]), record["rule"],
                      f"{record['reason']} (on the assumption that {STOP_ASSUMPTIONS.get(record['rule'], 'its rule holds')})")
        for n, record in stopped.items()
        if record["rule"] not in CENSORED_STOPS
    }  # fmt: skip


def _audit(
    audit: dict[str, Any] | None, decisions: list[Decision], index: int, cap: float, settings: AdaptiveSettings
) -> tuple[dict[str, Any] | None, list[Decision]]:
    """Keep the audit arm running for `audit_rungs` rungs past its stop, then let the rule decide it again.

    The first round that stops an arm makes the closest of its stops (smallest margin) the audit.
    """
    if settings.audit_rungs == 0:
        return audit, decisions
    if audit is None:
        stops = [d for d in decisions if d.action == "stop"]
        if not stops:
            return audit, decisions
        first = min(stops, key=_closeness)
        audit = {"n": first.n, "stopped_round": index, "stopped_cap": cap, "stopped_by": asdict(first), "rounds": []}
    if audit.get("outcome") is not None:
        return audit, decisions
    result = []
    for decision in decisions:
        if decision.n != audit["n"]:
            result.append(decision)
            continue
        past = index - audit["stopped_round"]
        if past < settings.audit_rungs:
            audit["rounds"].append({"round": index, "rule": asdict(decision)})
            reason = (f"audit: the rule stops it at round {audit['stopped_round']}; it runs {settings.audit_rungs} "
                      f"rung(s) past its stop so the cost of stopping is measured")  # fmt: skip
            result.append(Decision(decision.n, "extend", reason, decision.numbers))
        else:
            audit["outcome"] = "stop confirmed" if decision.action == "stop" else "stop reversed: the arm continues"
            audit["decided_again"] = asdict(decision)
            result.append(decision)
    return audit, result


def _closeness(decision: Decision) -> tuple[bool, float]:
    """How close a stop was, for the audit's pick: a bound's margin first (smallest), then the doublings
    below the frontier's leaders (fewest)."""
    margin = decision.numbers.get("margin")
    if decision.numbers.get("rule") is None and margin is not None:
        return (False, float(margin))
    below = decision.numbers.get("doublings_below")
    return (True, float("inf") if below is None else float(below))


def _audit_outcome(audit: dict[str, Any] | None, kept: Mapping[str, Any]) -> dict[str, Any] | None:
    """The audit with what the kept data say: where the audited arm was the frontier's beyond its stop."""
    if audit is None:
        return None
    n, after = audit["n"], audit["stopped_cap"] * CAP_SLACK
    won = [row["compute"] for row in kept["optimum_points"] if row["n"] == n and row["compute"] > after]
    return {**audit, "outcome": audit.get("outcome", "ran to the end of the grid"),
            "frontier_points_won_after_stop": won}  # fmt: skip


def _compute_at(checkpoints: Sequence[tuple[int, float]], step: int) -> float:
    return float(dict(checkpoints).get(step, 0.0))


def _rollouts(evals: pd.DataFrame, steps: Mapping[int, int]) -> float:
    """Training rollouts of every run (each n and seed) up to the step its arm reached."""
    reached = evals[evals["step"] <= evals["n"].map(steps)]
    return float(reached.groupby(["n", "seed"] if "seed" in reached else ["n"])["compute_rollouts"].max().sum())



def round_state(
    record: Mapping[str, Any],
    reached: Mapping[int, int],
    rung_steps: Mapping[int, Sequence[int]],
    previous: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A workflow round's record with each arm's state after it (`arms`: the rung and steps it reached and
    whether it runs on; a stopped arm also the round, rule and reason of its stop, carried from the `previous`
    round's state while it stays stopped), the form the next round, the study's fit and the adaptive sweep's
    summary read (`rungs.reached_rungs`, `settled_of_rounds`)."""
    kept_stopped = {d["n"] for d in record["decisions"] if d["action"] in ("stop", "hold")}
    active = {d["n"] for d in record["decisions"]} - kept_stopped
    earlier = {int(n): arm["stopped"] for n, arm in (previous["arms"] if previous else {}).items() if "stopped" in arm}
    stopped = stopped_after(earlier, record["decisions"], record["round"])
    arms = {}
    for n, rung in reached.items():
        arms[str(n)] = {"rung": rung, "steps": rung_steps[n][rung], "active": n in active}
        if n not in active and n in stopped:
            arms[str(n)]["stopped"] = stopped[n]
    return {**record, "arms": arms}


def settled_of_rounds(state: Mapping[str, Any] | None, evals: pd.DataFrame) -> dict[Key, Settled]:
    """The arms a workflow round's state (`round_state`) holds stopped by the rule, settled at the compute of
    their last evaluation in `evals` (`settled_arms`); a round file written before stops were carried in it
    (no `stopped` entry) settles nothing, and its arms stay censored."""
    stopped = {int(n): arm["stopped"] for n, arm in (state or {}).get("arms", {}).items() if "stopped" in arm}
    reached = evals[evals["n"].isin(list(stopped))].groupby("n")["compute_rollouts"].max()
    return settled_arms({n: record for n, record in stopped.items() if n in reached.index},
                        {int(n): float(c) for n, c in reached.items()})  # fmt: skip


def adaptive_summary(
    rounds: Sequence[Mapping[str, Any]],
    audit: Mapping[str, Any] | None,
    settings: AdaptiveSettings,
    caps: Sequence[float],
    arms: Mapping[int, Mapping[str, Any]],
) -> dict[str, Any]:
    """What an adaptive sweep spent and why each arm stopped where it did: `rollouts_spent` against
    `rollouts_full_grid` (training rollouts of every run, each to the step its arm reached, against each
    to its last step), per arm its runs, steps and compute reached and full, and the round that stopped it
    with the reason (from the rounds' records), in replay's schema."""
    stopped: dict[int, dict[str, Any]] = {}
    for r in rounds:
        stopped = stopped_after(stopped, r["decisions"], r["round"], r["cap"])
    spent = sum(arm["compute_reached"] * arm["runs"] for arm in arms.values())
    full = sum(arm["compute_full"] * arm["runs"] for arm in arms.values())
    return {
        "settings": asdict(settings),
        "rungs": list(caps),
        "rollouts_spent": spent,
        "rollouts_full_grid": full,
        "share_of_full_grid": spent / full,
        "arms": [{"n": n, **arm, **({"stopped": stopped[n]} if n in stopped else {})} for n, arm in sorted(arms.items())],
        "audit": audit,
        **({"prior": rounds[-1]["prior"]} if rounds and "prior" in rounds[-1] else {}),
        "rounds": list(rounds),
    }


def workflow_round(
    evals: pd.DataFrame,
    counts: pd.DataFrame,
    base: Mapping[str, float],
    base_counts: pd.DataFrame | None,
    fits: Mapping[str, Any],
    k: int,
    seed: int,
    settings: AdaptiveSettings,
    caps: Sequence[float],
    rung_steps: Mapping[int, Sequence[int]],
    previous: Mapping[str, Any] | None,
    rung: int,
    prior: Prior | None = None,
) -> dict[str, Any]:
    """The workflow's round after rung `rung`: the arms' evaluations so far (`evals`, `counts`: every arm up
    to the rung it reached) fitted as the study's final fit would be, each arm the previous round kept
    active decided, the audit and the prior's state carried on; the record with each arm's state after it
    (`round_state`). An arm the round resumes trains its missed rungs at the next one, as one run."""
    arms = sorted(rung_steps)
    reached = reached_rungs(arms, previous, rung)
    steps = {n: rung_steps[n][reached[n]] for n in arms}
    active = [n for n in arms if previous is None or previous["arms"][str(n)]["active"]]
    fit = fit_round(evals, counts, base, fits, k, seed, base_counts, settled_of_rounds(previous, evals))
    record, audit = decide_round(
        fit, steps, active, settings, previous["audit"] if previous else None, rung, caps[rung], prior, previous, caps[-1],
        ends=dict.fromkeys(arms, caps[-1]),
    )  # fmt: skip
    return round_state({**record, "audit": audit}, reached, rung_steps, previous)
