"""Difficulty bucketing: avg@k of the base model per problem, and the Easy/Hard problem sets built from it.

The study defines its problem sets by the base model's own avg@16, so difficulty is always relative to
the model being trained. Scoring is sharded over problems; the split is one seeded, joint assignment so
that the sets and their validation halves never share a problem.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from isocompute.generation import Sampler, count_correct
from isocompute.specs import ProblemSetSpec


class BucketTooSmallError(ValueError):
    """A problem set asks for more problems than its avg@k range holds; names the config key."""


def shard_of(table: pd.DataFrame, shard: int, shards: int) -> pd.DataFrame:
    """Rows of one shard: every `shards`-th problem, so shards are balanced whatever the order."""
    return table.iloc[shard::shards]


def score_problems(problems: pd.DataFrame, sampler: Sampler, samples: int, checker: str) -> pd.DataFrame:
    """Per problem: correct count out of `samples` (under `checker`) and avg@`samples`."""
    n_correct, mean_tokens = count_correct(
        sampler, problems["prompt"].tolist(), problems["answer"].tolist(), samples, checker
    )
    return pd.DataFrame(
        {
            "id": problems["id"].to_numpy(),
            "n_correct": n_correct,
            "n_samples": samples,
            f"avg@{samples}": np.asarray(n_correct) / samples,
            "mean_response_tokens": mean_tokens,
        }
    )


def build_problem_sets(
    difficulty: pd.DataFrame, specs: list[ProblemSetSpec], seed: int
) -> dict[str, dict[str, list[str]]]:
    """Draw each set's train and validation ids from its bucket, without replacement across all sets.

    Sets are filled in config order from a seeded permutation; a bucket that cannot supply
    train_size + val_size unused problems raises `BucketTooSmallError` naming the set's key.
    """
    (avg_column,) = [c for c in difficulty.columns if c.startswith("avg@")]
    rng = np.random.default_rng(seed)
    order = difficulty.iloc[rng.permutation(len(difficulty))]
    used: set[str] = set()
    sets: dict[str, dict[str, list[str]]] = {}
    for spec in specs:
        in_bucket = order[(order[avg_column] >= spec.low) & (order[avg_column] <= spec.high)]
        free = [pid for pid in in_bucket["id"] if pid not in used]
        wanted = spec.train_size + spec.val_size
        if len(free) < wanted:
            raise BucketTooSmallError(
                f"problem_sets.{spec.name}: {avg_column} in [{spec.low}, {spec.high}] holds {len(free)} unused "
                f"problems, fewer than train_size + val_size = {wanted}; widen avg_range, lower the sizes or "
                f"enlarge the problem pool"
            )
        chosen = free[:wanted]
        used.update(chosen)
        sets[spec.name] = {"train": chosen[: spec.train_size], "val": chosen[spec.train_size :]}
    return sets


def select(problems: pd.DataFrame, ids: list[str], difficulty: pd.DataFrame) -> pd.DataFrame:
    """The problem rows for `ids`, in that order, with their base-model difficulty attached."""
    indexed = problems.set_index("id").join(difficulty.set_index("id").drop(columns=["mean_response_tokens"]))
    return indexed.loc[ids].reset_index()


def bucket_counts(difficulty: pd.DataFrame, specs: list[ProblemSetSpec]) -> Mapping[str, int]:
    """How many problems fall in each set's range (before the sets are made disjoint)."""
    (avg_column,) = [c for c in difficulty.columns if c.startswith("avg@")]
    return {s.name: int(difficulty[avg_column].between(s.low, s.high).sum()) for s in specs}
