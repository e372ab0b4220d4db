"""GRPO's per-rollout gradient noise scale B(n), and the group size it predicts (issue 30; docs/log/noise-scale.md).

At group size n, each problem's group gradient g_i(n) (the gradient of TRL's loss on that one group of n
rollouts) has a mean G_n and a covariance Sigma_n over problems and rollouts. A step on B_problem groups
averages them, so its noise is tr(Sigma_n) / B_problem and the number of rollouts needed per unit of
signal is

    B(n) = n tr(Sigma_n) / |G_n|^2

(McCandlish et al. 2018's B_simple, counted in rollouts rather than examples). Under Adam with the
square-root rule and batches far below B(n), training is close to invariant in rollouts, and what is left to
tell group sizes apart is B(n): the n with the smallest B(n) buys the most signal per rollout.

From N groups (rows x_i, i.i.d.: each a problem drawn at random and its n rollouts):
- tr(Sigma) is estimated by the unbiased sample trace S = (sum |x_i|^2 - N |m|^2) / (N - 1), m the mean row;
- |G|^2 by |m|^2 - S / N, because E |m|^2 = |G|^2 + tr(Sigma) / N: the plain |m|^2 overstates the signal
  by the noise of the mean, which is most of it when N is below B(n) / n groups (the simulator's case);
- the interval by a bootstrap over groups (problems), on 1 / B = |G|^2 / (n S), which stays finite when the
  resampled signal crosses zero: a replica without signal is B = infinity, not a negative number. The
  interval is the pivotal one, around the resampled population's own 1 / B = |m|^2 / (n S (N - 1) / N):
  a resample's unbiased signal is centred on |m|^2, not on |m|^2 - S / N, so the plain percentile interval
  sits too high in signal and covered the simulator's exact B(n) in 42-77 % of samples where 90 % was
  asked (300 or 100 groups; the pivotal one: 92-96 %, docs/log/noise-scale.md).
Everything is a function of the groups' Gram matrix X X^T, so the bootstrap costs N^2 per replica whatever
the number of parameters. Adam's view (the step is P g with P = 1 / (sqrt(v) + eps)) is the same
estimate on the rows x_i * P (`isocompute.mechanism.probe.preconditioner` gives P from a checkpoint's
`exp_avg_sq`).

The simulated policy's per-group gradient has exact moments (`simulated_group_moments`): the rewards of a
group are Binomial(n, p) and its wrong answers multinomial, and the logit gradient is linear in the answer
counts given the number correct. Its exact B(n) (`simulated_noise_scale`) is the known truth the estimator
is tested against.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch
from scipy.stats import binom

from isocompute.errors import IsoComputeError
from isocompute.mechanism.probe import Policy, checkpoint_second_moment, preconditioner
from isocompute.mechanism.simulated_policy import (
    STD_EPSILON,
    Channels,
    Update,
    grpo_advantages,
    log_softmax,
    logit_gradient,
    softmax,
)
from isocompute.study.grid import GridPoint
from isocompute.study.specs import SamplingSpec


class NoiseScaleError(IsoComputeError, ValueError):
    """Input the estimator cannot use; the message says which."""


@dataclass(frozen=True)
class NoiseScale:
    """B(n) at one group size from `groups` groups: the point estimate and its bootstrap interval, in rollouts.

    `trace` is the unbiased tr(Sigma_n), `signal` the unbiased |G_n|^2 (it may be negative: no signal
    measured). `noise_scale`, `low` and `high` are infinite where the signal is not positive.
    """

    n: int
    groups: int
    trace: float
    signal: float
    noise_scale: float
    low: float
    high: float
    level: float

    @property
    def width(self) -> float:
        """The interval's width as a factor, high / low: what the pilot's stop rule reads (under 2 to use)."""
        return self.high / self.low if 0 < self.low < float("inf") else float("inf")


@dataclass(frozen=True)
class Prediction:
    """The predicted n*: the n with the smallest B(n) and the n whose intervals reach the best one's."""

    n: int
    leaders: tuple[int, ...]


def gram_moments(gram: np.ndarray, weights: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Unbiased tr(Sigma) and |G|^2 from the rows' Gram matrix, for each row of bootstrap `weights`.

    A weight vector counts how often each row is drawn (summing to N); None is the sample itself.
    """
    count = gram.shape[0]
    if weights is None:
        weights = np.ones((1, count))
    squares = weights @ np.diag(gram)
    mean_square = ((weights @ gram) * weights).sum(axis=1) / count**2
    trace = (squares - count * mean_square) / (count - 1)
    return trace, mean_square - trace / count


def noise_scale(
    gradients: np.ndarray,
    n: int,
    preconditioner: np.ndarray | None = None,
    replicas: int = 1000,
    level: float = 0.9,
    seed: int = 0,
) -> NoiseScale:
    """B(n) from per-group gradients (one row per group of n rollouts), raw or under Adam's `preconditioner`
    (the diagonal P of Adam's step P g, one entry per parameter)."""
    rows = np.asarray(gradients, dtype=float)
    if rows.ndim != 2:
        raise NoiseScaleError(f"gradients: need a matrix (one row per group), got shape {rows.shape}")
    if preconditioner is not None:
        scale = np.asarray(preconditioner, dtype=float)
        if scale.shape != rows.shape[1:]:
            raise NoiseScaleError(
                f"preconditioner: shape {scale.shape}, the gradients have {rows.shape[1]} entries"
            )
        rows = rows * scale
    return gram_noise_scale(rows @ rows.T, n, replicas, level, seed)


def gram_noise_scale(
    gram: np.ndarray, n: int, replicas: int = 1000, level: float = 0.9, seed: int = 0
) -> NoiseScale:
    """B(n) from the Gram matrix of N per-group gradients, with the pivotal bootstrap interval of 1 / B(n)
    over `replicas` resamples of the groups (see the module's docstring)."""
    count = gram.shape[0]
    if gram.shape != (count, count) or count < 3:
        raise NoiseScaleError(f"gradients: need at least 3 groups, got a Gram matrix of shape {gram.shape}")
    if n < 2:
        raise NoiseScaleError(f"n = {n}: a GRPO group needs n >= 2")
    if not 0 < level < 1:
        raise NoiseScaleError(f"level = {level}: must lie in (0, 1)")
    trace, signal = gram_moments(gram)
    if trace[0] <= 0:  # every group's gradient the same (all zero where no group varied): nothing to resample
        exact = 0.0 if signal[0] > 0 else float("inf")
        return NoiseScale(n, count, float(trace[0]), float(signal[0]), exact, exact, exact, level)
    rng = np.random.default_rng(seed)
    weights = rng.multinomial(count, np.full(count, 1.0 / count), size=replicas).astype(float)
    boot_trace, boot_signal = gram_moments(gram, weights)
    inverse = boot_signal / (n * np.maximum(boot_trace, np.finfo(float).tiny))
    estimate = float(signal[0]) / (n * float(trace[0]))
    resampled_truth = (float(signal[0]) + float(trace[0]) / count) / (
        n * float(trace[0]) * (count - 1) / count
    )
    below, above = np.quantile(inverse - resampled_truth, [(1 - level) / 2, (1 + level) / 2])
    return NoiseScale(
        n=n,
        groups=count,
        trace=float(trace[0]),
        signal=float(signal[0]),
        noise_scale=_invert(estimate),
        low=_invert(estimate - below),
        high=_invert(estimate - above),
        level=level,
    )


def _invert(inverse: float) -> float:
    """B from 1 / B: no positive signal is an infinite noise scale."""
    return 1.0 / float(inverse) if inverse > 0 else float("inf")


def predict_n(scales: Sequence[NoiseScale]) -> Prediction | None:
    """The n with the smallest finite B(n), and every n whose interval's low end lies at or below the
    best one's high end (their intervals overlap: the data cannot order them). None if no n has signal."""
    finite = [s for s in scales if np.isfinite(s.noise_scale)]
    if not finite:
        return None
    best = min(finite, key=lambda s: s.noise_scale)
    leaders = tuple(sorted(s.n for s in scales if s.low <= best.high))
    return Prediction(n=best.n, leaders=leaders)


def simulated_group_moments(
    logits: np.ndarray, ref_logits: np.ndarray, correct: int, n: int, update: Update
) -> tuple[np.ndarray, np.ndarray]:
    """Exact mean (K) and covariance (K x K) of one problem's group gradient in logit space, at group size n.

    The group gradient is `simulated_policy.logit_gradient` of the group's own loss (batch = n). Given c
    correct rollouts every rollout's weight depends only on its answer and c, so the gradient is
    L(c) counts + h with counts = c e_correct + m, m ~ Multinomial(n - c, the wrong answers' shares), and
    c ~ Binomial(n, p); the moments are summed over c exactly.
    """
    temperature = update.temperature
    logp = log_softmax(logits / temperature)
    pi = np.exp(logp)
    answers = len(pi)
    p = pi[correct]
    c = np.arange(n + 1)
    weight_c = binom.pmf(c, n, p)
    std = np.sqrt(c * (n - c) / (n * (n - 1)))
    advantage_right = (1 - c / n) / (std + STD_EPSILON)
    advantage_wrong = -(c / n) / (std + STD_EPSILON)
    is_correct = np.arange(answers) == correct
    per_answer = -np.where(is_correct, advantage_right[:, None], advantage_wrong[:, None])  # (n + 1, K)
    if update.kl_coef:
        ref_logp = log_softmax(ref_logits / temperature)
        per_answer = per_answer + update.kl_coef * (1.0 - np.exp(ref_logp - logp))
    scale = update.loss_scale(n) * temperature
    # L(c) = (diag(u) - pi u^T) / scale, one per c.
    linear = (
        np.einsum("ck,kj->ckj", per_answer, np.eye(answers)) - pi[None, :, None] * per_answer[:, None, :]
    ) / scale
    constant = np.zeros(answers)
    if update.entropy_coef:
        entropy = -(pi * logp).sum()
        constant = update.entropy_coef * pi * (logp + entropy) / temperature
    wrong = np.where(is_correct, 0.0, pi) / max(1.0 - p, np.finfo(float).tiny)
    mean_counts = c[:, None] * is_correct + (n - c)[:, None] * wrong
    cov_counts = (n - c)[:, None, None] * (np.diag(wrong) - np.outer(wrong, wrong))
    mean_c = np.einsum("ckj,cj->ck", linear, mean_counts) + constant
    cov_c = np.einsum("ckj,cjl,cml->ckm", linear, cov_counts, linear)
    mean = weight_c @ mean_c
    second = np.einsum("c,ckm->km", weight_c, cov_c + np.einsum("ck,cm->ckm", mean_c, mean_c))
    return mean, second - np.outer(mean, mean)


def simulated_noise_scale(
    means: np.ndarray, traces: np.ndarray, features: np.ndarray, channels: Channels, n: int
) -> float:
    """Exact B(n) of the simulated policy in its parameters (theta, W, b), a group drawn from a uniformly
    chosen training problem.

    Per problem i (logit-space group moments mu_i and tr C_i, features phi_i) the parameter gradient is
    private * g on theta's row i, features * g phi_i^T on W and bias * g on b. So
    |G|^2 = private^2 sum |mu_i|^2 / P^2 + features^2 |mean mu_i phi_i^T|^2 + bias^2 |mean mu_i|^2 and
    E|g|^2 = mean (private^2 + features^2 |phi_i|^2 + bias^2) (|mu_i|^2 + tr C_i); tr(Sigma) = E|g|^2 - |G|^2.
    """
    problems = len(means)
    squares = (means**2).sum(axis=1)
    signal = (
        channels.private**2 * squares.sum() / problems**2
        + channels.features**2 * float(((np.einsum("ik,id->kd", means, features) / problems) ** 2).sum())
        + channels.bias**2 * float((means.mean(axis=0) ** 2).sum())
    )
    gain = channels.private**2 + channels.features**2 * (features**2).sum(axis=1) + channels.bias**2
    second = float((gain * (squares + traces)).mean())
    return n * (second - signal) / signal if signal > 0 else float("inf")


def checkpoint_group_gradients(
    policy: Policy, problems: pd.DataFrame, n: int, seed: int, loss_type: str, batch_size: int = 1024
) -> np.ndarray:
    """One row per problem: the gradient of TRL's loss (`Policy.grpo_gradient`) on that problem's own group
    of n completions, sampled as evaluation samples them. A group whose rewards are all equal is a zero row:
    it is a group GRPO draws and learns nothing from, so it counts in N."""
    groups = policy.sample_groups(problems, n, seed, batch_size)
    return torch.stack([policy.grpo_gradient([group], loss_type) for group in groups]).double().numpy()


@dataclass(frozen=True)
class NoiseSettings:
    """How B(n) is measured at a checkpoint: the group sizes, the groups drawn per n (problems drawn with
    replacement from the table), the bootstrap, TRL's loss and the seed."""

    n_values: tuple[int, ...]
    groups: int = 1600
    replicas: int = 1000
    level: float = 0.9
    loss_type: str = "grpo"
    seed: int = 0
    max_gradient_bytes: int = 4 * 2**30


def _scale_json(scale: NoiseScale) -> dict[str, float | int]:
    return {"n": scale.n, "groups": scale.groups, "noise_scale": scale.noise_scale, "low": scale.low,
            "high": scale.high, "width": scale.width, "trace": scale.trace, "signal": scale.signal}  # fmt: skip


def _prediction_json(scales: Sequence[NoiseScale]) -> dict[str, Any] | None:
    prediction = predict_n(scales)
    return None if prediction is None else {"n": prediction.n, "leaders": list(prediction.leaders)}


def adam_preconditioner(policy: Policy, checkpoint: str | Path) -> np.ndarray | None:
    """Adam's diagonal 1 / (sqrt(v) + eps) from the checkpoint's own `exp_avg_sq`, or None where the folder
    holds no `optimizer.pt` (a base model, a checkpoint thinned to its weights)."""
    if not (Path(checkpoint) / "optimizer.pt").exists():
        return None
    second_moment, eps, _ = checkpoint_second_moment(policy, checkpoint)
    return preconditioner(second_moment, eps).double().numpy()


def measure_views(
    policy: Policy,
    problems: pd.DataFrame,
    settings: NoiseSettings,
    preconditioner: np.ndarray | None = None,
) -> tuple[dict[str, list[NoiseScale]], dict[int, float]]:
    """B(n) at every n of `settings` on one checkpoint, raw and (given Adam's diagonal `preconditioner`) as
    Adam sees it, and each n's share of silent groups (all rewards equal). The same groups serve both
    views, so they differ only by the preconditioner."""
    if not settings.n_values or min(settings.n_values) < 2:
        raise NoiseScaleError(f"n: need group sizes of at least 2, got {list(settings.n_values)}")
    needed = settings.groups * policy.size * 8
    if needed > settings.max_gradient_bytes:
        raise NoiseScaleError(
            f"{settings.groups} groups x {policy.size:,} parameters need {needed / 2**30:.1f} GiB of gradients, "
            f"above {settings.max_gradient_bytes / 2**30:.1f} GiB: measure fewer groups"
        )
    rng = np.random.default_rng(settings.seed)
    views: dict[str, list[NoiseScale]] = {"raw": [], **({"adam": []} if preconditioner is not None else {})}
    silent = {}
    for n in settings.n_values:
        chosen = problems.iloc[rng.integers(0, len(problems), settings.groups)].reset_index(drop=True)
        rows = checkpoint_group_gradients(policy, chosen, n, settings.seed + n, settings.loss_type)
        silent[n] = float((np.abs(rows).sum(axis=1) == 0).mean())
        for view, scales in views.items():
            scale = preconditioner if view == "adam" else None
            scales.append(noise_scale(rows, n, scale, settings.replicas, settings.level, settings.seed + n))
    return views, silent


def measure_checkpoint(
    policy: Policy,
    problems: pd.DataFrame,
    settings: NoiseSettings,
    preconditioner: np.ndarray | None = None,
) -> dict[str, Any]:
    """`measure_views` with the predicted n* of each view, as the JSON `isocompute noise` writes: a
    prediction from one run's checkpoint, not a fit."""
    views, silent = measure_views(policy, problems, settings, preconditioner)
    return {
        "kind": "prediction",
        "groups": settings.groups,
        "level": settings.level,
        "loss_type": settings.loss_type,
        "seed": settings.seed,
        "silent_share": {str(n): share for n, share in silent.items()},
        "noise_scale": {view: [_scale_json(s) for s in scales] for view, scales in views.items()},
        "predicted_n": {view: _prediction_json(scales) for view, scales in views.items()},
    }


def simulated_logit_gradients(
    logits: np.ndarray,
    ref_logits: np.ndarray,
    correct: np.ndarray,
    chosen: np.ndarray,
    n: int,
    update: Update,
    rng: np.random.Generator,
) -> np.ndarray:
    """One row per entry of `chosen` (indices of problems, each given by its logits, reference logits and
    correct answer): `simulated_policy.logit_gradient` of that problem's own group loss (batch = n) on n
    rollouts sampled from softmax(z / T)."""
    answers = logits.shape[1]
    z = logits[chosen]
    pi = softmax(z / update.temperature)
    samples = (rng.random((len(chosen), n, 1)) >= np.cumsum(pi, axis=-1)[:, None, :]).sum(-1)
    samples = np.minimum(samples, answers - 1)
    rewards = (samples == correct[chosen][:, None]).astype(float)
    return logit_gradient(z, ref_logits[chosen], samples, grpo_advantages(rewards), update, n)


def simulated_gram(
    logit_gradients: np.ndarray, chosen: np.ndarray, features: np.ndarray, channels: Channels
) -> np.ndarray:
    """The Gram matrix of the groups' gradients in the simulated policy's parameters, without forming them.

    A group of problem i moves theta's row i by private * g, W by features * g phi_i^T and b by bias * g
    (as `SimulatedPolicies.advance` maps the logit gradient g), so two groups' gradients have the inner
    product (g_a . g_b) (private^2 [same problem] + features^2 phi_a . phi_b + bias^2): N^2 K work where
    the parameters number problems x K + K x dim + K.
    """
    same = chosen[:, None] == chosen[None, :]
    phi = features[chosen]
    mixing = channels.private**2 * same + channels.features**2 * (phi @ phi.T) + channels.bias**2
    return (logit_gradients @ logit_gradients.T) * mixing


def agrees(predicted: int, frontier: int, frontier_leaders: Sequence[int]) -> bool:
    """The issue's agreement: the predicted n within a factor 2 of the frontier's n*, or among the
    frontier's leaders (a tie the frontier cannot break). A tie on the prediction's side does not count:
    at the default's size its leaders are often the whole grid, which would make every point agree."""
    return frontier / 2 <= predicted <= frontier * 2 or predicted in frontier_leaders


def agreement_table(
    predictions: Mapping[float, Prediction | None], optimum_points: Sequence[Mapping[str, Any]], grid: Sequence[int]
) -> tuple[pd.DataFrame, dict[str, float]]:
    """Each frontier point (`fits.json`'s `optimum_points`) beside the prediction at the checkpoint nearest
    in log compute, and the share of points where they agree: the predictor's, and every constant n's.

    The constant controls are the point: on a grid whose frontier n* stays within a factor 2 of the middle
    n, a constant agrees as often as any predictor, and agreement alone says nothing. `narrowed` says
    whether the prediction's leaders leave out any n of the grid: where they do not, the measurement could
    not tell the group sizes apart, and its argmin is noise.
    """
    trained = sorted(c for c in predictions if c > 0)
    if not trained or not optimum_points:
        raise NoiseScaleError("agreement: need predictions at trained checkpoints and the frontier's points")
    rows = []
    for point in optimum_points:
        nearest = min(trained, key=lambda c: abs(np.log(c / point["compute"])))
        predicted = predictions[nearest]
        frontier_leaders = list((point.get("leaders") or {}).get("n") or [point["n"]])
        rows.append({
            "compute": float(point["compute"]), "checkpoint_compute": nearest, "frontier_n": int(point["n"]),
            "frontier_leaders": frontier_leaders,
            "predicted_n": None if predicted is None else predicted.n,
            "predicted_leaders": None if predicted is None else list(predicted.leaders),
            "agrees": predicted is not None and agrees(predicted.n, int(point["n"]), frontier_leaders),
            "narrowed": predicted is not None and not set(grid) <= set(predicted.leaders),
        })  # fmt: skip
    table = pd.DataFrame(rows)
    shares = {"predictor": float(table["agrees"].mean()), "narrowed": float(table["narrowed"].mean())}
    for n in grid:
        shares[f"constant n={n}"] = float(
            np.mean([agrees(n, row["frontier_n"], row["frontier_leaders"]) for row in rows])
        )
    return table, shares


def measure_run(
    checkpoints: Mapping[float, str],
    problems: pd.DataFrame,
    settings: NoiseSettings,
    sampling: SamplingSpec,
    checker: str,
) -> tuple[pd.DataFrame, dict[str, dict[float, Prediction | None]]]:
    """B(n) at each of one run's checkpoints (compute -> model folder; compute 0 is the base model), raw
    and, where the checkpoint holds `optimizer.pt`, under Adam: one row per (checkpoint, view, n), and each
    view's prediction per checkpoint."""
    rows = []
    predictions: dict[str, dict[float, Prediction | None]] = {}
    for compute, folder in sorted(checkpoints.items()):
        policy = Policy(str(folder), sampling, checker)
        views, _ = measure_views(policy, problems, settings, adam_preconditioner(policy, folder))
        for view, scales in views.items():
            where = {"compute": compute, "checkpoint": str(folder), "view": view}
            rows += [{**where, **_scale_json(scale)} for scale in scales]
            predictions.setdefault(view, {})[compute] = predict_n(scales)
    return pd.DataFrame(rows), predictions


def measured_run(points: Sequence[GridPoint], run_n: int | None) -> GridPoint:
    """The run of a fixed-B_problem study whose checkpoints are measured: n = `run_n`, or the middle n of
    the study's grid (the lower of two), first seed. One run, named in the output, as the issue asks."""
    grid = sorted({p.n for p in points})
    if not grid:
        raise NoiseScaleError("noise_scale: the study has no runs")
    n = grid[(len(grid) - 1) // 2] if run_n is None else run_n
    chosen = sorted((p for p in points if p.n == n), key=lambda p: p.seed)
    if not chosen:
        raise NoiseScaleError(f"noise_scale.run_n = {run_n}: the study's runs have n in {grid}")
    return chosen[0]
