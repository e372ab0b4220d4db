import numpy as np
import pandas as pd
import pytest

from isocompute.data.difficulty import (
    BucketTooSmallError,
    build_problem_set,
    pass_at_stages,
    score_difficulty,
    select,
    shard_of,
    staged_pass_at,
)
from isocompute.sampling.generation import make_sampler
from isocompute.study.specs import Bucket, ProblemSetSpec, SamplingSpec


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


EASY = Bucket(0.3, 0.6)
HARD = Bucket(0.0, 0.0625)
SPECS = [
    ProblemSetSpec("easy", ((EASY, 1.0),), train_size=40, val_size=20),
    ProblemSetSpec("hard", ((HARD, 1.0),), train_size=20, val_size=10),
]
SHARE = 0.3


def build(spec: ProblemSetSpec, table: pd.DataFrame | None = None, seed: int = 0, **kwargs) -> dict[str, list[str]]:
    return build_problem_set(difficulty_table() if table is None else table, spec, seed, SHARE, **kwargs)


def test_sets_respect_bounds_and_sizes_and_no_train_set_meets_a_validation_set() -> None:
    table = difficulty_table()
    mix = ProblemSetSpec("mix", ((EASY, 0.5), (HARD, 0.5)), train_size=30, val_size=10)
    wide = ProblemSetSpec("wide", ((Bucket(0.0, 1.0), 1.0),), train_size=200, val_size=100)
    specs = [*SPECS, mix, wide]
    sets = {spec.name: build(spec, table) for spec in specs}
    avg = table.set_index("id")["avg@16"]
    for spec in SPECS:
        train, val = sets[spec.name]["train"], sets[spec.name]["val"]
        assert len(train) == spec.train_size and len(val) == spec.val_size
        (bucket, _), = spec.parts
        assert avg[train + val].between(bucket.low, bucket.high).all()
        assert len(set(train + val)) == len(train + val)
    trains = {i for parts in sets.values() for i in parts["train"]}
    vals = {i for parts in sets.values() for i in parts["val"]}
    assert not trains & vals
    # The wide set overlaps every bucket: its training problems include others' training problems.
    assert set(sets["easy"]["train"]) & set(sets["wide"]["train"])


def test_a_set_depends_only_on_its_own_definition() -> None:
    table = difficulty_table()
    alone = build(SPECS[1], table)
    assert alone == build(SPECS[1], table.iloc[::-1])  # whatever the row order of the bucketing table


def test_sizes_give_nested_training_sets_and_one_validation_set() -> None:
    table = difficulty_table()
    sets = [build(ProblemSetSpec(f"easy_size{n}", ((EASY, 1.0),), n, 20), table) for n in (10, 20, 40)]
    for smaller, larger in zip(sets, sets[1:]):
        assert larger["train"][: len(smaller["train"])] == smaller["train"]
        assert larger["val"] == smaller["val"]


def test_mixture_takes_its_shares_of_each_bucket() -> None:
    table = difficulty_table()
    mix = ProblemSetSpec("mix", ((EASY, 0.7), (HARD, 0.3)), train_size=50, val_size=21)
    sets = build(mix, table)
    avg = table.set_index("id")["avg@16"]
    for part, size in (("train", 50), ("val", 21)):
        ids = sets[part]
        assert len(ids) == size == len(set(ids))
        easy = avg[ids].between(0.3, 0.6).sum()
        hard = avg[ids].between(0.0, 0.0625).sum()
        assert easy + hard == size and easy == round(0.7 * size)
    # A mixture's problems of one bucket are those the bucket's own set draws first.
    assert set(sets["train"]) >= set(build(ProblemSetSpec("e", ((EASY, 1.0),), 35, 10), table)["train"])


def test_split_is_seeded() -> None:
    table = difficulty_table()
    assert build(SPECS[0], table, seed=3) == build(SPECS[0], table, seed=3)
    assert build(SPECS[0], table, seed=3) != build(SPECS[0], table, seed=4)


def test_a_bucket_too_small_names_the_set_key() -> None:
    spec = ProblemSetSpec("hard", ((HARD, 1.0),), train_size=5000, val_size=3, key="problem_sets.hard")
    with pytest.raises(BucketTooSmallError, match=r"problem_sets\.hard: avg@16 in \[0\.0, 0\.0625\] holds \d+ problems"):
        build(spec)
    sweep = ProblemSetSpec("x_size90", ((HARD, 1.0),), train_size=3, val_size=500, key="problem_sets.x.sizes")
    with pytest.raises(BucketTooSmallError, match=r"problem_sets\.x\.sizes: .* problems in the validation reserve, fewer than the 500"):
        build(sweep)


def test_pass_at_bucket_selects_by_the_staged_table() -> None:
    table = difficulty_table()
    rates = pd.DataFrame({"id": table["id"], "pass@64": (table.index % 3 == 0).astype(float)})
    spec = ProblemSetSpec("xhard", ((Bucket(pass_k=64, pass_max=0.0), 1.0),), train_size=30, val_size=10)
    sets = build(spec, table, pass_rates={64: rates})
    chosen = rates.set_index("id").loc[sets["train"] + sets["val"], "pass@64"]
    assert len(chosen) == 40 and (chosen == 0).all()
    with pytest.raises(ValueError, match="staged pass@64"):
        build(spec, table)


def test_staged_pass_at_samples_only_problems_still_all_wrong(tiny_model: str, pool: pd.DataFrame) -> None:
    generation = {"backend": "transformers", "batch_size": 256, "tensor_parallel_size": 1, "vllm_engine_kwargs": {}}
    sampling = SamplingSpec(temperature=1.0, top_p=1.0, max_new_tokens=4)
    # The tiny model solves no addition; so that some problems are solved early, some late and some never,
    # the first 60 take as their answer one of the model's own completions (sampled with another seed).
    problems = pool.iloc[:120].copy()
    drafts = make_sampler(generation, tiny_model, sampling, 99).sample(problems["prompt"].iloc[:60].tolist(), 1)
    problems.loc[problems.index[:60], "answer"] = [group[0].text.strip() for group in drafts]
    difficulty = score_difficulty(problems, make_sampler(generation, tiny_model, sampling, 0), 2, "exact")
    k = 16

    def staged(seed: int) -> tuple[pd.DataFrame, dict]:
        return staged_pass_at(difficulty, problems, make_sampler(generation, tiny_model, sampling, seed), k, "exact")

    table, summary = staged(1)
    rows = table.set_index("id")
    solved_first = difficulty.set_index("id")["n_correct"] > 0
    assert solved_first.any() and not solved_first.all()
    assert ((rows["rollouts"] > 2) & (rows["pass@16"] == 1)).any()  # solved in a later stage
    # Solved in bucketing: no more rollouts. Never solved: all k. Solved later: at the end of a stage.
    assert (rows.loc[solved_first[solved_first].index, "rollouts"] == 2).all()
    assert (rows.loc[rows["pass@16"] == 0, "rollouts"] == k).all()
    assert set(rows["rollouts"]) <= {2, 4, 8, 16} and summary["stages"] == [2, 4, 8, 16]
    assert summary["problems_sampled_per_stage"][0] == int((~solved_first).sum())
    assert summary["problems_sampled_per_stage"] == sorted(summary["problems_sampled_per_stage"], reverse=True)
    assert summary["rollouts_sampled"] == rows["rollouts"].sum() < k * len(problems) == summary["rollouts_k_for_all"]
    assert summary["rollouts_saved"] == k * len(problems) - summary["rollouts_sampled"] > 0
    assert summary["pass@16_zero"] == int((rows["pass@16"] == 0).sum())
    # Deterministic given the seed.
    assert staged(1)[0].equals(table)
    assert pass_at_stages(16, 128) == [16, 32, 64, 128] and pass_at_stages(16, 100) == [16, 32, 64, 100]


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
