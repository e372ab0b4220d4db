import math

import pytest

from isocompute.study.grid import (
    GridError,
    GridPoint,
    LearningRate,
    checkpoint_steps,
    expand_grid,
    learning_rate,
    total_steps,
)

LIMITS = {"easy": 65536, "hard": 16384}


def test_grid_is_the_union_of_blocks_without_duplicates() -> None:
    blocks = [
        {"problem_sets": ["easy"], "b_problem": [32], "n": [8, 16], "seeds": [0]},
        {"problem_sets": ["easy", "hard"], "b_problem": [32, 64], "n": [16], "seeds": [0]},
    ]
    points = expand_grid(blocks, LIMITS)
    assert GridPoint("easy", 32, 16, 0) in points
    assert len(points) == len(set(points)) == 5
    assert points == sorted(points)


def test_point_over_the_batch_limit_names_the_key() -> None:
    blocks = [{"problem_sets": ["hard"], "b_problem": [1024], "n": [32], "seeds": [0]}]
    with pytest.raises(GridError, match=r"grid\[0\].*problem_sets\.hard\.max_batch=16384"):
        expand_grid(blocks, LIMITS)


def test_unknown_problem_set_names_the_key() -> None:
    with pytest.raises(GridError, match=r"grid\[0\]\.problem_sets names 'medium'"):
        expand_grid([{"problem_sets": ["medium"], "b_problem": [8], "n": [2], "seeds": [0]}], LIMITS)


def test_run_name_and_batch() -> None:
    point = GridPoint("easy", 32, 64, 1)
    assert point.batch == 2048
    assert point.run == "bp32_n64_seed1"


def test_sqrt_learning_rate_rule_matches_the_paper() -> None:
    assert learning_rate(1024, 1e-6, 1024, "sqrt") == pytest.approx(1e-6)
    assert learning_rate(8192, 1e-6, 1024, "sqrt") == pytest.approx(1e-6 * math.sqrt(8))
    assert learning_rate(256, 1e-6, 1024, "sqrt") == pytest.approx(0.5e-6)


@pytest.mark.parametrize(("rule", "factor"), [("constant", 1.0), ("linear", 8.0), ("sqrt", math.sqrt(8))])
def test_every_rule_is_lr_base_times_f_of_b_over_b_ref(rule: str, factor: float) -> None:
    assert learning_rate(8192, 1e-6, 1024, rule) == pytest.approx(1e-6 * factor)
    assert learning_rate(1024, 1e-6, 1024, rule) == pytest.approx(1e-6)  # the anchor: every rule agrees
    assert LearningRate(rule, 1e-6, 1024).at(8192) == learning_rate(8192, 1e-6, 1024, rule)
    with pytest.raises(GridError, match="unknown learning-rate rule 'cubic'"):
        learning_rate(8192, 1e-6, 1024, "cubic")


DEFAULT_LR = LearningRate("sqrt", 1e-4, 128)
SET_RECIPES = {"easy": "kl_entropy", "hard": "unregularized"}


def test_default_points_keep_their_names_and_others_say_what_differs() -> None:
    blocks = [
        {
            "problem_sets": ["easy"],
            "b_problem": [16],
            "n": [8],
            "seeds": [0],
            "recipes": ["kl_entropy", "zv_full"],
            "lr": [{}, {"rule": "linear"}, {"base": 2.5e-4, "batch_ref": 64}],
        },
        {"problem_sets": ["easy"], "b_problem": [16], "n": [4], "n_baseline": [16], "seeds": [0]},
    ]
    points = expand_grid(blocks, LIMITS, SET_RECIPES, DEFAULT_LR)
    assert [p.run for p in points] == [
        "bp16_n4_seed0_baseline16",
        "bp16_n8_seed0",  # the set's own recipe and the default learning rate, named explicitly
        "bp16_n8_seed0_lr-linear-1e-4-ref128",
        "bp16_n8_seed0_lr-sqrt-2.5e-4-ref64",
        "bp16_n8_seed0_recipe-zv_full",
        "bp16_n8_seed0_recipe-zv_full_lr-linear-1e-4-ref128",
        "bp16_n8_seed0_recipe-zv_full_lr-sqrt-2.5e-4-ref64",
    ]
    assert len({p.run for p in points}) == len(points)
    default = next(p for p in points if p.run == "bp16_n8_seed0")
    assert default == GridPoint("easy", 16, 8, 0) and default.is_default
    assert not any(p.is_default for p in points if p is not default)


def test_decoupled_baseline_counts_sampled_rollouts_and_scales_lr_with_the_update() -> None:
    (point,) = expand_grid(
        [{"problem_sets": ["easy"], "b_problem": [128], "n": [64], "n_baseline": [256], "seeds": [0]}], LIMITS
    )
    assert (point.n_sampled, point.batch, point.update_batch) == (256, 128 * 256, 128 * 64)
    with pytest.raises(GridError, match=r"grid\[0\]: n_baseline=8 must exceed n=8"):
        expand_grid([{"problem_sets": ["easy"], "b_problem": [4], "n": [8], "n_baseline": [8], "seeds": [0]}], LIMITS)
    with pytest.raises(GridError, match=r"b_problem=128 \* n_baseline=256 = 32768 exceeds problem_sets\.hard"):
        expand_grid([{"problem_sets": ["hard"], "b_problem": [128], "n": [64], "n_baseline": [256], "seeds": [0]}], LIMITS)


def test_bad_learning_rate_settings_name_the_key() -> None:
    block = {"problem_sets": ["easy"], "b_problem": [4], "n": [8], "seeds": [0], "lr": [{"rule": "cubic"}]}
    with pytest.raises(GridError, match=r"ablations\.x\.grid\[0\]\.lr: unknown rule 'cubic'"):
        expand_grid([block], LIMITS, SET_RECIPES, DEFAULT_LR, key="ablations.x.grid")


def test_total_steps_reach_compute_max() -> None:
    assert total_steps(batch=256, compute_max=65536) == 256
    assert total_steps(batch=96, compute_max=1000) == 11  # 11 * 96 = 1056 >= 1000 > 10 * 96


def test_checkpoints_are_log_spaced_and_end_at_the_last_step() -> None:
    steps = checkpoint_steps(batch=16, compute_min=256, compute_max=16384, points=7)
    assert steps == [16, 32, 64, 128, 256, 512, 1024]
    ratios = [b / a for a, b in zip(steps, steps[1:])]
    assert all(ratio == pytest.approx(2) for ratio in ratios)


def test_checkpoints_below_one_step_collapse_to_step_one() -> None:
    steps = checkpoint_steps(batch=512, compute_min=64, compute_max=4096, points=7)
    assert steps[0] == 1 and steps[-1] == 8
    assert steps == sorted(set(steps))


def test_bad_compute_range_is_an_error() -> None:
    with pytest.raises(GridError):
        checkpoint_steps(batch=8, compute_min=100, compute_max=10, points=3)


def test_fixed_batch_blocks_derive_b_problem() -> None:
    blocks = [{"problem_sets": ["easy"], "batch": [128], "n": [2, 8, 32], "seeds": [0]}]
    points = expand_grid(blocks, LIMITS)
    assert [(p.b_problem, p.n) for p in points] == [(4, 32), (16, 8), (64, 2)]


@pytest.mark.parametrize(
    ("block", "message"),
    [
        ({"batch": [100], "n": [8]}, r"grid\[0\]: batch=100 is not divisible by n=8"),
        ({"batch": [128], "b_problem": [4], "n": [8]}, r"grid\[0\] needs exactly one of b_problem or batch"),
        ({"n": [8]}, r"grid\[0\] needs exactly one of b_problem or batch"),
    ],
)
def test_bad_blocks_name_the_key(block: dict, message: str) -> None:
    with pytest.raises(GridError, match=message):
        expand_grid([{"problem_sets": ["easy"], "seeds": [0], **block}], LIMITS)
