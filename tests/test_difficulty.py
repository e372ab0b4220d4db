import numpy as np
import pandas as pd
import pytest

from isocompute.difficulty import BucketTooSmallError, build_problem_sets, select, shard_of
from isocompute.specs import ProblemSetSpec


def difficulty_table(size: int = 400, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    n_correct = rng.integers(0, 17, size=size)
    return pd.DataFrame(
        {
            "id": [f"p{i}" for i in range(size)],
            "n_correct": n_correct,
            "n_samples": 16,
            "avg@16": n_correct / 16,
            "mean_response_tokens": 4.0,
        }
    )


SPECS = [
    ProblemSetSpec("easy", 0.3, 0.6, train_size=40, val_size=20),
    ProblemSetSpec("hard", 0.0, 0.0625, train_size=20, val_size=10),
]


def test_sets_respect_bounds_sizes_and_are_disjoint() -> None:
    table = difficulty_table()
    sets = build_problem_sets(table, SPECS, seed=0)
    avg = table.set_index("id")["avg@16"]
    all_ids = []
    for spec in SPECS:
        train, val = sets[spec.name]["train"], sets[spec.name]["val"]
        assert len(train) == spec.train_size and len(val) == spec.val_size
        assert avg[train + val].between(spec.low, spec.high).all()
        all_ids += train + val
    assert len(all_ids) == len(set(all_ids))


def test_overlapping_buckets_still_give_disjoint_sets() -> None:
    specs = [ProblemSetSpec("a", 0.0, 1.0, 100, 50), ProblemSetSpec("b", 0.0, 1.0, 100, 50)]
    sets = build_problem_sets(difficulty_table(), specs, seed=1)
    ids = [i for parts in sets.values() for part in parts.values() for i in part]
    assert len(ids) == len(set(ids)) == 300


def test_split_is_seeded() -> None:
    table = difficulty_table()
    assert build_problem_sets(table, SPECS, seed=3) == build_problem_sets(table, SPECS, seed=3)
    assert build_problem_sets(table, SPECS, seed=3) != build_problem_sets(table, SPECS, seed=4)


def test_a_bucket_too_small_names_the_set_key() -> None:
    specs = [ProblemSetSpec("hard", 0.0, 0.0625, train_size=5000, val_size=300)]
    with pytest.raises(BucketTooSmallError, match=r"problem_sets\.hard: avg@16 in \[0\.0, 0\.0625\] holds \d+"):
        build_problem_sets(difficulty_table(), specs, seed=0)


def test_shards_partition_the_pool() -> None:
    table = difficulty_table(size=101)
    shards = [shard_of(table, shard, 4) for shard in range(4)]
    ids = [i for shard in shards for i in shard["id"]]
    assert sorted(ids) == sorted(table["id"]) and len(ids) == 101


def test_select_keeps_order_and_attaches_difficulty() -> None:
    table = difficulty_table(size=10)
    problems = pd.DataFrame({"id": table["id"], "prompt": [f"{i}+1=" for i in range(10)], "answer": "x"})
    chosen = select(problems, ["p7", "p2"], table)
    assert chosen["id"].tolist() == ["p7", "p2"]
    assert chosen["avg@16"].tolist() == table.set_index("id").loc[["p7", "p2"], "avg@16"].tolist()
