"""Difficulty bucketing: avg@k of the base model per problem, and the Easy/Hard problem sets built from it.

The study defines its problem sets by the base model's own avg@16, so difficulty is always relative to
the model being trained. Scoring is sharded over problems. Sets are
drawn from one seeded order of the pool with a validation reserve (`validation_reserve`), so no training
problem of any set is a validation problem of any set, and each set is built on its own.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from isocompute.errors import IsoComputeError
from isocompute.sampling.generation import Sampler, score_problems
from isocompute.study.specs import Bucket, ProblemSetSpec


class BucketTooSmallError(IsoComputeError, ValueError):
    """A problem set asks for more problems than its avg@k range holds; names the config key."""


def shard_of(table: pd.DataFrame, shard: int, shards: int) -> pd.DataFrame:
    """Rows of one shard: every `shards`-th problem, so shards are balanced whatever the order."""
    return table.iloc[shard::shards]


def score_difficulty(problems: pd.DataFrame, sampler: Sampler, samples: int, checker: str) -> pd.DataFrame:
    """Per problem: the base model's `generation.score_problems` counts, with `n_samples` and avg@`samples`
    (the difficulty the buckets select on) beside them."""
    counts = score_problems(sampler, problems, samples, checker)
    return counts.assign(n_samples=samples, **{f"avg@{samples}": counts["n_correct"] / samples})[
        ["id", "n_correct", "n_samples", f"avg@{samples}", "mean_response_tokens"]
    ]


def _split(total: int, shares: list[float]) -> list[int]:
    """`total` split by `shares` (largest remainder), so the counts sum to `total` exactly."""
    exact = [total * share for share in shares]
    counts = [int(np.floor(value)) for value in exact]
    for index in sorted(range(len(shares)), key=lambda i: counts[i] - exact[i])[: total - sum(counts)]:
        counts[index] += 1
    return counts


def validation_reserve(difficulty: pd.DataFrame, seed: int, validation_share: float) -> tuple[pd.DataFrame, np.ndarray]:
    """The pool in one seeded order, and which problems are reserved for validation (the first
    `validation_share` of that order).

    Every set draws its validation problems from the reserve and its training problems from the rest, in
    this order: so every train set is disjoint from every validation set, a set's contents depend only on
    its own settings (adding a set changes no other), and the training problems of one bucket taken at
    growing sizes are nested.
    """
    table = difficulty.sort_values("id", ignore_index=True)
    order = table.iloc[np.random.default_rng(seed).permutation(len(table))].reset_index(drop=True)
    reserved = np.arange(len(order)) < round(validation_share * len(order))
    return order, reserved


def in_bucket(table: pd.DataFrame, bucket: Bucket, pass_rates: Mapping[int, pd.DataFrame] | None = None) -> np.ndarray:
    """Which problems of `table` fall in `bucket`: by avg@k of bucketing, or by staged pass@k."""
    if bucket.pass_k is None:
        (avg_column,) = [c for c in table.columns if c.startswith("avg@")]
        return table[avg_column].between(bucket.low, bucket.high).to_numpy()
    if not pass_rates or bucket.pass_k not in pass_rates:
        raise ValueError(f"{bucket.condition()} needs the staged pass@{bucket.pass_k} table")
    rates = pass_rates[bucket.pass_k].set_index("id")[f"pass@{bucket.pass_k}"]
    return (rates.reindex(table["id"]).to_numpy() <= bucket.pass_max)


def build_problem_set(
    difficulty: pd.DataFrame,
    spec: ProblemSetSpec,
    seed: int,
    validation_share: float,
    pass_rates: Mapping[int, pd.DataFrame] | None = None,
) -> dict[str, list[str]]:
    """Draw one set's train and validation ids from its buckets (`validation_reserve`).

    Each bucket of a mixture gives its share of train_size and of val_size (largest remainder); a problem
    is taken once even where buckets overlap. A bucket that cannot supply its part raises
    `BucketTooSmallError` naming the set's config key.
    """
    order, reserved = validation_reserve(difficulty, seed, validation_share)
    shares = [share for _, share in spec.parts]
    chosen: dict[str, list[str]] = {"train": [], "val": []}
    for part, wanted_counts in (("train", _split(spec.train_size, shares)), ("val", _split(spec.val_size, shares))):
        pool = order[~reserved] if part == "train" else order[reserved]
        for (bucket, share), wanted in zip(spec.parts, wanted_counts):
            taken = set(chosen[part])
            free = [pid for pid in pool["id"][in_bucket(pool, bucket, pass_rates)] if pid not in taken]
            if len(free) < wanted:
                where = "in the validation reserve" if part == "val" else "outside the validation reserve"
                raise BucketTooSmallError(
                    f"{spec.key or 'problem_sets.' + spec.name}: {bucket.condition()} holds {len(free)} problems "
                    f"{where}, fewer than the {wanted} its {part} set needs "
                    f"({part}_size {spec.train_size if part == 'train' else spec.val_size} x share {share:g}); "
                    f"widen the bucket, lower the size, change difficulty.validation_share or enlarge the pool"
                )
            chosen[part] += free[:wanted]
    return chosen


def bucket_sizes(
    difficulty: pd.DataFrame, spec: ProblemSetSpec, pass_rates: Mapping[int, pd.DataFrame] | None = None
) -> dict[str, int]:
    """How many problems of the pool fall in each of the set's buckets."""
    return {bucket.condition(): int(in_bucket(difficulty, bucket, pass_rates).sum()) for bucket, _ in spec.parts}


# Rollouts per problem at each stage of staged pass@k sampling: doubling from the bucketing samples.
def pass_at_stages(first: int, k: int) -> list[int]:
    """Cumulative rollouts per still-unsolved problem after each stage: first, 2 first, ..., k."""
    stages = [first]
    while stages[-1] < k:
        stages.append(min(k, 2 * stages[-1]))
    return stages


def staged_pass_at(
    difficulty: pd.DataFrame,
    problems: pd.DataFrame,
    sampler: Sampler,
    k: int,
    checker: str,
) -> tuple[pd.DataFrame, dict[str, int]]:
    """pass@k of every problem (1: at least one of k rollouts correct), sampling only what decides it.

    The bucketing rollouts (`difficulty.n_samples` per problem) are the first stage; each further stage
    doubles the rollouts of the problems still all wrong, up to k, and a problem leaves as soon as one
    rollout is correct. pass@k = 0 needs all k wrong, so the answer is the same as sampling k for every
    problem, at a fraction of the rollouts; the summary says how many were sampled and saved.
    """
    table = difficulty.sort_values("id", ignore_index=True)
    first = int(table["n_samples"].iloc[0])
    if k <= first:
        raise ValueError(f"pass@{k} needs more rollouts than the {first} of bucketing")
    rollouts = np.full(len(table), first, dtype=int)
    correct = table["n_correct"].to_numpy() > 0
    texts = problems.set_index("id").loc[table["id"]].reset_index()
    stages = pass_at_stages(first, k)
    per_stage = []
    for before, after in zip(stages, stages[1:]):
        open_ = np.flatnonzero(~correct)
        per_stage.append(len(open_))
        if len(open_):
            counts = score_problems(sampler, texts.iloc[open_], after - before, checker)
            rollouts[open_] += after - before
            correct[open_] = counts["n_correct"].to_numpy() > 0
    result = pd.DataFrame({"id": table["id"], "rollouts": rollouts, f"pass@{k}": correct.astype(float)})
    summary = {
        "k": k,
        "problems": len(table),
        "stages": stages,
        "problems_sampled_per_stage": per_stage,
        "rollouts_sampled": int(rollouts.sum()),
        "rollouts_beyond_bucketing": int(rollouts.sum() - first * len(table)),
        "rollouts_k_for_all": int(k * len(table)),
        "rollouts_saved": int(k * len(table) - rollouts.sum()),
        f"pass@{k}_zero": int((~correct).sum()),
    }
    return result, summary


def select(problems: pd.DataFrame, ids: list[str], difficulty: pd.DataFrame) -> pd.DataFrame:
    """The problem rows for `ids`, in that order, with their base-model difficulty attached."""
    indexed = problems.set_index("id").join(difficulty.set_index("id").drop(columns=["mean_response_tokens"]))
    return indexed.loc[ids].reset_index()
