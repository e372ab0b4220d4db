"""GRPO through TRL's real GRPOTrainer on a tiny model: the batch mapping, checkpoints, resume, determinism."""

import shutil
from pathlib import Path

import pandas as pd
import pytest

from isocompute.grid import GridPoint, checkpoint_steps
from isocompute.specs import Recipe, SamplingSpec, TrainingSpec
from isocompute.training import build_trainer, grpo_args, per_device_batch, train_run

SAMPLING = SamplingSpec(temperature=1.0, top_p=1.0, max_new_tokens=4)


def spec(compute_max: int = 96, points: int = 3) -> TrainingSpec:
    return TrainingSpec(
        lr_base=1e-4,
        lr_batch_ref=64,
        warmup_steps=2,
        compute_min=24,
        compute_max=compute_max,
        checkpoint_points=points,
        loss_type="grpo",
        sampling=SAMPLING,
    )


@pytest.mark.parametrize(
    ("b_problem", "n", "world", "accum", "expected"),
    [(32, 8, 1, 1, 256), (32, 8, 8, 1, 32), (32, 8, 4, 2, 32), (1024, 64, 8, 16, 512)],
)
def test_batch_mapping_keeps_one_step_per_b_problem_times_n(
    b_problem: int, n: int, world: int, accum: int, expected: int
) -> None:
    per_device = per_device_batch(b_problem, n, world, accum)
    assert per_device == expected
    assert per_device * world * accum == b_problem * n


def test_batch_mapping_rejects_indivisible_batches() -> None:
    with pytest.raises(ValueError, match="not divisible"):
        per_device_batch(3, 3, 2, 1)


def test_recipe_reaches_trl_config(tmp_path: Path) -> None:
    args = grpo_args(GridPoint("easy", 4, 8, 0), spec(compute_max=320), Recipe(0.01, 0.002), tmp_path)
    assert args.num_generations == 8 and args.per_device_train_batch_size == 32
    assert args.max_steps == 10 and args.num_iterations == 1 and args.steps_per_generation == 1
    assert args.beta == 0.01 and args.entropy_coef == 0.002
    assert args.learning_rate == pytest.approx(1e-4 * (32 / 64) ** 0.5)
    assert args.lr_scheduler_type == "constant_with_warmup" and args.warmup_steps == 2


def test_one_optimizer_step_consumes_b_problem_times_n_rollouts_from_b_problem_prompts(
    tiny_model: str, pool: pd.DataFrame, tmp_path: Path
) -> None:
    point = GridPoint("easy", 4, 3, 0)
    batches: list[list[str]] = []

    def recording_reward(prompts: list[str], completions: list[str], answer: list[str], **_: object) -> list[float]:
        batches.append(list(prompts))
        return [float(c.strip() == a) for c, a in zip(completions, answer)]

    args = grpo_args(point, spec(compute_max=36), Recipe(0.0, 0.0), tmp_path)
    trainer = build_trainer(tiny_model, pool, args, save_steps=[], reward_func=recording_reward)
    trainer.train()
    assert trainer.state.global_step == 3 == len(batches)
    for prompts in batches:
        assert len(prompts) == point.b_problem * point.n
        assert len(set(prompts)) == point.b_problem
        assert all(prompts.count(p) == point.n for p in set(prompts))


def test_run_saves_at_compute_points_logs_every_step_and_is_deterministic(
    tiny_model: str, pool: pd.DataFrame, tmp_path: Path
) -> None:
    point = GridPoint("easy", 4, 2, 0)
    table, manifest = train_run(tiny_model, pool, point, spec(), Recipe(0.01, 0.001), tmp_path / "a")
    steps = checkpoint_steps(point.batch, 24, 96, 3)
    assert [m["step"] for m in manifest] == steps == [3, 6, 12]
    assert all((tmp_path / "a" / m["path"] / "model.safetensors").exists() for m in manifest)
    assert table["step"].tolist() == list(range(1, 13))
    assert table["compute_rollouts"].tolist() == [8 * s for s in range(1, 13)]
    assert table["compute_tokens"].is_monotonic_increasing
    for column in ("reward", "entropy", "kl", "response_length", "frac_reward_zero_std", "lr"):
        assert table[column].notna().all(), column
    again, _ = train_run(tiny_model, pool, point, spec(), Recipe(0.01, 0.001), tmp_path / "b")
    pd.testing.assert_frame_equal(table, again)


def test_training_resumes_from_its_last_checkpoint(tiny_model: str, pool: pd.DataFrame, tmp_path: Path) -> None:
    point = GridPoint("easy", 4, 2, 0)
    full, _ = train_run(tiny_model, pool, point, spec(), Recipe(0.0, 0.0), tmp_path / "full")
    run_dir = tmp_path / "resumed"
    train_run(tiny_model, pool, point, spec(), Recipe(0.0, 0.0), run_dir)
    # A preempted job: the last checkpoint never got written.
    shutil.rmtree(run_dir / "checkpoint-12")
    resumed, manifest = train_run(tiny_model, pool, point, spec(), Recipe(0.0, 0.0), run_dir)
    assert (run_dir / "checkpoint-12").exists()
    assert manifest[-1]["step"] == 12
    pd.testing.assert_frame_equal(full, resumed)


def test_changed_settings_restart_instead_of_resuming(tiny_model: str, pool: pd.DataFrame, tmp_path: Path) -> None:
    point = GridPoint("easy", 4, 2, 0)
    train_run(tiny_model, pool, point, spec(), Recipe(0.0, 0.0), tmp_path)
    table, manifest = train_run(tiny_model, pool, point, spec(compute_max=48, points=2), Recipe(0.0, 0.0), tmp_path)
    assert len(table) == 6 and [m["step"] for m in manifest] == [3, 6]
    assert not (tmp_path / "checkpoint-12").exists()
