"""The adaptive rule's peers in the replay: what a practitioner would reach for first, on the same table.

The reference says that pruning by rank at equal compute (successive halving, ASHA, Hyperband) biases n*(C)
down because curves cross, and that the rule does not; this module is how that is measured rather than
argued. Each peer runs on the rule's own rung grid (`replay_grid`: the caps C_max / f^j, each arm to its last
checkpoint at or below a cap, `rungs.rung_step`) and is accounted and fitted by the rule's own definitions
(`kept_outcome`: rollouts spent against the full grid's, the kept rows fitted by `fit_study` with the same
bootstrap), so that a share or a law differs only by the policy.

- `successive_halving`, `hyperband`, `median`: optuna's `SuccessiveHalvingPruner`, `HyperbandPruner` and
  `MedianPruner` (the library itself, `pip install -e '.[peers]'`), driven trial by trial as a sequential
  optuna sweep runs: each arm is a trial, in ascending n (a grid's order); at each rung it reports its metric
  at the checkpoint it reached there (`trial.report(value, step)`, the step being the rung's cap in units of
  the first cap, so that the resource is compute and every trial is compared at equal compute) and asks
  `trial.should_prune()`; a pruned arm stops there, its later rows unspent.
- `top_k`: the plain rung-based baseline, synchronous: after each rung, of the running arms measured there,
  the top half (rounded up) by the metric at the checkpoint reached run on.

Every policy obeys the replay's `min_steps` (no arm stops before that many optimizer steps), so the rule's
one guard against deciding on an arm's first noisy points binds the peers too. Beyond it a peer reads only
ranks at equal compute; it has no bands, no frontier guards and no audit, and the kept data's law is
fitted exactly as the rule's is, so what a peer's stops cost shows in its verdict and its recovery. One
difference is by design: the rule's stops are judgements that an arm stays behind over the rest of the range,
so the kept data's fit reads the rule's stopped arms as settled (no candidates beyond their stops,
`decisions.settled_arms`), while a prune says only that the arm ranked low at equal compute, where curves
cross: a pruned arm stays censored (it may lead beyond its stop, and the points where it may are no evidence).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from typing import Any

import pandas as pd

from isocompute.adaptive.decisions import kept_outcome, replay, replay_grid
from isocompute.adaptive.prior import Prior
from isocompute.adaptive.rungs import RULES, AdaptiveError, AdaptiveSettings, rung_step
from isocompute.fits.curves import FitOptions

# The optuna pruners and the settings they run with. Successive halving's rungs are put on the replay's own
# (min_resource 1, one resource unit per first cap; reduction factor 2 promotes the top half, as `top_k`
# keeps it and as the rung factor 2 spaces the caps); Hyperband and the median pruner keep the library's
# defaults (Hyperband's reduction factor 3, its brackets spanning the whole resource; the median pruner's 5
# startup trials and no warm-up): a practitioner's first try. `replay_policy`'s `pruner` overrides them.
OPTUNA_PRUNERS = {
    "successive_halving": (
        "SuccessiveHalvingPruner",
        {"min_resource": 1, "reduction_factor": 2, "min_early_stopping_rate": 0},
    ),
    "hyperband": ("HyperbandPruner", {"min_resource": 1, "reduction_factor": 3}),
    "median": ("MedianPruner", {"n_startup_trials": 5, "n_warmup_steps": 0}),
}
PEERS = (*OPTUNA_PRUNERS, "top_k")
# Every policy `isocompute replay --policy` runs: the rule itself first (the default), then its peers.
POLICIES = ("isocompute", *PEERS)


def replay_policy(
    policy: str,
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
    pruner: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The replay of one policy (`POLICIES`) on a complete table: the rule's (`decisions.replay`, with its
    prior and rules) or a peer's (`peer_replay`, with `pruner` overriding an optuna pruner's settings). Every
    result names its `policy`; an unknown name, or a prior, rules or pruner settings given to a policy that
    has none, is refused with the choices."""
    if policy not in POLICIES:
        raise AdaptiveError(f"unknown policy {policy!r}: the policies are {list(POLICIES)}")
    if policy == "isocompute":
        if pruner:
            raise AdaptiveError(
                f"pruner settings {dict(pruner)} are for optuna's pruners {list(OPTUNA_PRUNERS)}, "
                "not the rule"
            )
        return replay(evals, counts, options, k, bootstrap, seed, settings, base_counts, holdout_decades,
                      frontier_points, prior, rules)  # fmt: skip
    if prior is not None or tuple(rules) != RULES:
        raise AdaptiveError(
            f"policy {policy!r} reads no prior and has no rules: "
            "a prior and --rules are the rule's (isocompute)"
        )
    return peer_replay(policy, evals, counts, options, k, bootstrap, seed, settings, base_counts,
                       holdout_decades, frontier_points, pruner)  # fmt: skip


def peer_replay(
    policy: str,
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
    pruner: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A peer (`PEERS`) replayed on the rule's rung grid: which arms it stopped where, then the kept run
    reported as the rule's replay reports it (`kept_outcome`), with the pruner and its settings."""
    if policy not in PEERS:
        raise AdaptiveError(f"unknown peer {policy!r}: the peers are {list(PEERS)}")
    if pruner and policy not in OPTUNA_PRUNERS:
        raise AdaptiveError(
            f"pruner settings {dict(pruner)} are for optuna's pruners {list(OPTUNA_PRUNERS)}, not {policy!r}"
        )
    settings = settings or AdaptiveSettings()
    checkpoints, caps = replay_grid(evals, counts, options, bootstrap, base_counts, settings)
    values = evals.groupby(["n", "step"])[options.metric].mean()
    metric = {(int(n), int(step)): float(value) for (n, step), value in values.items()}
    if policy == "top_k":
        steps, stopped = _top_half(checkpoints, caps, metric, settings.min_steps)
        described: dict[str, Any] = {
            "name": "top_k",
            "keep": "the top half (rounded up) of the arms measured at each rung",
        }
    else:
        name, defaults = OPTUNA_PRUNERS[policy]
        chosen = {**defaults, **(pruner or {})}
        if policy == "hyperband":
            chosen.setdefault("max_resource", _resources(caps)[-1])
        steps, stopped = _optuna_sweep(name, chosen, checkpoints, caps, metric, seed, settings.min_steps)
        described = {"name": f"optuna.pruners.{name}", "settings": chosen, "order": sorted(checkpoints)}
    # A prune is a rank at equal compute, no judgement that the arm stays behind (curves cross): its run is
    # censored in the kept data's fit, as any run that ended, where the rule's stops are settled.
    outcome = kept_outcome(evals, counts, checkpoints, steps, stopped, options, k, bootstrap, seed,
                           base_counts, holdout_decades, frontier_points, settled={})  # fmt: skip
    return {"policy": policy, "pruner": described, "settings": asdict(settings), "rungs": caps, **outcome}


def _resources(caps: Sequence[float]) -> list[int]:
    """Each rung's resource for optuna: its cap in units of the first cap (1, 2, 4, ... with rung factor 2),
    an integer step on which every trial reports at the same compute."""
    return [max(1, round(cap / caps[0])) for cap in caps]


def _optuna_sweep(
    name: str,
    settings: Mapping[str, Any],
    checkpoints: Mapping[int, Sequence[tuple[int, float]]],
    caps: Sequence[float],
    metric: Mapping[tuple[int, int], float],
    seed: int,
    min_steps: int,
) -> tuple[dict[int, int], dict[int, dict[str, Any]]]:
    """A sequential optuna sweep over the arms with pruner `name`: each arm a trial reporting its metric at
    each rung it has a checkpoint for, stopped where `should_prune` says so once it has run `min_steps`
    optimizer steps (the rule's guard, which `isocompute replay --min-steps` sets for every policy). Returns
    each arm's step reached and where the pruned ones stopped. The study's name carries the seed: Hyperband
    assigns trials to brackets by a hash of it, so the seeds draw different brackets as different sweeps
    would."""
    try:
        import optuna
    except ImportError as error:
        raise AdaptiveError("the optuna peers need optuna: pip install -e '.[peers]'") from error
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(
        direction="maximize",
        pruner=getattr(optuna.pruners, name)(**settings),
        sampler=optuna.samplers.RandomSampler(seed=seed),
        study_name=f"isocompute-replay-seed{seed}",
    )
    resources = _resources(caps)
    steps: dict[int, int] = {}
    stopped: dict[int, dict[str, Any]] = {}
    for n in sorted(checkpoints):
        trial = study.ask()
        steps[n] = 0
        for index, cap in enumerate(caps):
            last = index == len(caps) - 1
            step = rung_step(checkpoints[n], cap, last)
            if step == 0:
                continue
            steps[n] = step
            trial.report(metric[(n, step)], resources[index])
            # asked at every rung, so successive halving records the arm's value there, but obeyed only past
            # min_steps, the rule's own guard
            if trial.should_prune() and not last and step >= min_steps:
                stopped[n] = {
                    "round": index,
                    "cap": cap,
                    "reason": (
                        f"pruned by optuna's {name} at resource {resources[index]} (C <= {cap:.4g}): "
                        f"its metric {metric[(n, step)]:.3f} at step {step}"
                    ),
                }
                study.tell(trial, state=optuna.trial.TrialState.PRUNED)
                break
        else:
            study.tell(trial, metric[(n, steps[n])])
    return steps, stopped


def _top_half(
    checkpoints: Mapping[int, Sequence[tuple[int, float]]],
    caps: Sequence[float],
    metric: Mapping[tuple[int, int], float],
    min_steps: int,
) -> tuple[dict[int, int], dict[int, dict[str, Any]]]:
    """Keep the top half of the running arms at each rung: of the arms measured there (an arm whose first
    checkpoint lies beyond the cap has nothing to rank and runs on), the better half by the metric at the
    checkpoint reached runs on, ties to the smaller n; an arm of the other half stops once it has run
    `min_steps` optimizer steps (the rule's guard). Returns each arm's step reached and where it stopped."""
    steps = dict.fromkeys(checkpoints, 0)
    active = sorted(checkpoints)
    stopped: dict[int, dict[str, Any]] = {}
    for index, cap in enumerate(caps):
        last = index == len(caps) - 1
        for n in active:
            steps[n] = rung_step(checkpoints[n], cap, last)
        if last:
            break
        measured = sorted((n for n in active if steps[n] > 0), key=lambda n: (-metric[(n, steps[n])], n))
        keep = math.ceil(len(measured) / 2)
        for n in [n for n in measured[keep:] if steps[n] >= min_steps]:
            active.remove(n)
            stopped[n] = {
                "round": index,
                "cap": cap,
                "reason": (
                    f"not in the top {keep} of the {len(measured)} arms measured at C <= {cap:.4g}: "
                    f"its metric {metric[(n, steps[n])]:.3f} at step {steps[n]}"
                ),
            }
    return steps, stopped
