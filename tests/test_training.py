"""GRPO through TRL's real GRPOTrainer on a tiny model: the batch mapping, checkpoints, resume, determinism."""

import dataclasses
import shutil
from pathlib import Path

import pandas as pd
import pytest
from transformers import AutoTokenizer, TrainerControl, TrainerState, TrainingArguments

from isocompute.pipeline.config import launch_spec
from isocompute.study.layout import without_layout
from isocompute.sampling.answers import reward_function
from isocompute.study.grid import GridError, GridPoint, batch_split, checkpoint_steps
from isocompute.study.specs import LaunchSpec, Recipe, RolloutEngine, SamplingSpec, TrainingSpec
from isocompute.training import callbacks
from isocompute.training.checkpoints import checkpoint_problem, is_weights_only, weights_problem
from isocompute.training.callbacks import SaveAtComputePoints
from isocompute.training.run_spec import SINGLE_PROCESS, RunSpec
from isocompute.training.trainer import build_trainer, train_run
from isocompute.training.trl_args import grpo_args

SAMPLING = SamplingSpec(temperature=1.0, top_p=1.0, max_new_tokens=4)
# The layout keys of a training block, as the paper preset sets them.
PAPER_TRAINING = {"processes": 8, "per_device_batch_max": 16, "activation_checkpointing": True,
                  "accelerate_config": None, "time_limit_margin": 900, "report_to": "none"}  # fmt: skip


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
    ("b_problem", "n", "processes", "per_device_max", "per_device", "accumulation"),
    [
        (32, 8, 1, 1024, 256, 1),
        (32, 8, 8, 1024, 32, 1),
        (32, 8, 4, 32, 32, 2),
        (1024, 64, 8, 512, 512, 16),
        (3, 5, 1, 4, 3, 5),
    ],
)
def test_batch_mapping_keeps_one_step_per_b_problem_times_n(
    b_problem: int, n: int, processes: int, per_device_max: int, per_device: int, accumulation: int
) -> None:
    launch = LaunchSpec(processes, per_device_max, activation_checkpointing=False, accelerate_config=None)
    args = grpo_args(GridPoint("easy", b_problem, n, 0), spec(), Recipe(0.0, 0.0), "unused", launch)
    assert (args.per_device_train_batch_size, args.gradient_accumulation_steps) == (per_device, accumulation)
    assert args.steps_per_generation == accumulation
    assert per_device * processes * accumulation == b_problem * n


def test_batch_mapping_rejects_indivisible_batches() -> None:
    with pytest.raises(GridError, match=r"B = b_problem \* n = 9 is not divisible by training.processes = 2"):
        batch_split(9, 2, 64)


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

    def recording_reward(
        prompts: list[str], completions: list[str], answer: list[str], **_: object
    ) -> list[float]:
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
    table, manifest = train_run(
        RunSpec(tiny_model, point, spec(), Recipe(0.01, 0.001), str(tmp_path / "a")), pool
    )
    steps = checkpoint_steps(point.batch, 24, 96, 3)
    assert [m["step"] for m in manifest] == steps == [3, 6, 12]
    assert all((tmp_path / "a" / m["path"] / "model.safetensors").exists() for m in manifest)
    assert table["step"].tolist() == list(range(1, 13))
    assert table["compute_rollouts"].tolist() == [8 * s for s in range(1, 13)]
    assert table["compute_tokens"].is_monotonic_increasing
    for column in ("reward", "entropy", "kl", "response_length", "frac_reward_zero_std", "lr"):
        assert table[column].notna().all(), column
    again, _ = train_run(RunSpec(tiny_model, point, spec(), Recipe(0.01, 0.001), str(tmp_path / "b")), pool)
    pd.testing.assert_frame_equal(table, again)


def test_training_resumes_from_its_last_checkpoint(
    tiny_model: str, pool: pd.DataFrame, tmp_path: Path
) -> None:
    point = GridPoint("easy", 4, 2, 0)
    full, _ = train_run(RunSpec(tiny_model, point, spec(), Recipe(0.0, 0.0), str(tmp_path / "full")), pool)
    run_dir = tmp_path / "resumed"
    train_run(RunSpec(tiny_model, point, spec(), Recipe(0.0, 0.0), str(run_dir)), pool)
    # A preempted job: the last checkpoint never got written.
    shutil.rmtree(run_dir / "checkpoint-12")
    resumed, manifest = train_run(RunSpec(tiny_model, point, spec(), Recipe(0.0, 0.0), str(run_dir)), pool)
    assert (run_dir / "checkpoint-12").exists()
    assert manifest[-1]["step"] == 12
    pd.testing.assert_frame_equal(full, resumed)


def test_vllm_rollouts_with_truncated_importance_sampling_reach_trl_config(tmp_path: Path) -> None:
    colocate = RolloutEngine("colocate", 0.35, 2, 1, "token_truncate", 2.0)
    with_vllm = TrainingSpec(1e-6, 1024, 10, 1024, 4096, 2, "grpo", SAMPLING, colocate)
    args = grpo_args(GridPoint("easy", 32, 8, 0), with_vllm, Recipe(0.0, 0.0), tmp_path, ports=(41000, 41001))
    assert args.use_vllm and args.vllm_mode == "colocate"
    assert args.vllm_gpu_memory_utilization == 0.35 and args.vllm_tensor_parallel_size == 2
    assert args.vllm_importance_sampling_correction and args.vllm_importance_sampling_mode == "token_truncate"
    assert args.vllm_importance_sampling_clip_max == 2.0
    assert (args.vllm_server_port, args.vllm_group_port) == (41000, 41001)
    assert not args.vllm_enable_sleep_mode and args.vllm_max_model_length is None
    sleeping = RolloutEngine("colocate", 0.35, 2, 1, "token_truncate", 2.0, sleep_mode=True, max_model_len=10240)
    with_sleep = TrainingSpec(1e-6, 1024, 10, 1024, 4096, 2, "grpo", SAMPLING, sleeping)
    args = grpo_args(GridPoint("easy", 32, 8, 0), with_sleep, Recipe(0.0, 0.0), tmp_path)
    assert args.vllm_enable_sleep_mode and args.vllm_max_model_length == 10240
    no_correction = TrainingSpec(
        1e-6, 1024, 10, 1024, 4096, 2, "grpo", SAMPLING, RolloutEngine("server", 0.9, 1, 1, None, 2.0)
    )
    assert not grpo_args(
        GridPoint("easy", 32, 8, 0), no_correction, Recipe(0.0, 0.0), tmp_path
    ).vllm_importance_sampling_correction
    assert not grpo_args(GridPoint("easy", 32, 8, 0), spec(), Recipe(0.0, 0.0), tmp_path).use_vllm


def test_chat_prompts_reach_trl_as_conversations(tiny_model: str, pool: pd.DataFrame, tmp_path: Path) -> None:
    model = tmp_path / "chat_model"
    shutil.copytree(tiny_model, model)
    tokenizer = AutoTokenizer.from_pretrained(model)
    tokenizer.chat_template = "{% for m in messages %}{{ m['content'] }}{% endfor %}"
    tokenizer.save_pretrained(model)
    seen: list[tuple[object, object]] = []
    reward = reward_function("exact")

    def recording_reward(
        prompts: list[object], completions: list[object], answer: list[str], **_: object
    ) -> list[float]:
        seen.append((prompts[0], completions[0]))
        return reward(completions, answer=answer)

    chat = TrainingSpec(1e-4, 64, 2, 8, 16, 2, "grpo", SamplingSpec(1.0, 1.0, 4, chat_template=True))
    args = grpo_args(GridPoint("easy", 4, 2, 0), chat, Recipe(0.0, 0.0), tmp_path / "run")
    trainer = build_trainer(str(model), pool, args, [], recording_reward, chat_template=True)
    trainer.train()
    prompt, completion = seen[0]
    assert (
        isinstance(prompt, list)
        and prompt[0]["role"] == "user"
        and prompt[0]["content"] in set(pool["prompt"])
    )
    assert isinstance(completion, list) and completion[0]["role"] == "assistant"


def test_resume_checkpoints_roll_while_compute_points_keep_their_weights(
    tiny_model: str, pool: pd.DataFrame, tmp_path: Path
) -> None:
    point = GridPoint("easy", 4, 2, 0)
    args = grpo_args(point, spec(), Recipe(0.0, 0.0), tmp_path)
    # The deprecated step-count interval, still honoured.
    launch = dataclasses.replace(SINGLE_PROCESS, resume_every_steps=5)
    trainer = build_trainer(tiny_model, pool, args, [3, 6], reward_function("exact"), launch=launch)
    trainer.train()
    # Saved at 3, 5, 6 and 10 of 12 steps; the resume checkpoint of step 5 gave way to that of step 10, and
    # the compute points before it keep their weights only.
    checkpoints = sorted(tmp_path.glob("checkpoint-*"), key=lambda p: int(p.name.split("-")[1]))
    assert [p.name for p in checkpoints] == ["checkpoint-3", "checkpoint-6", "checkpoint-10"]
    assert [is_weights_only(p) for p in checkpoints] == [True, True, False]
    assert all(weights_problem(p) is None for p in checkpoints)
    assert checkpoint_problem(checkpoints[-1]) is None
    assert not (checkpoints[0] / "optimizer.pt").exists() and (checkpoints[-1] / "optimizer.pt").exists()


class Clock:
    """Monotonic time that the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now


def test_resume_checkpoints_follow_the_wall_clock(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    clock = Clock()
    monkeypatch.setattr(callbacks, "time", clock)
    monkeypatch.setattr(callbacks, "keep_newest_whole", lambda *_: None)
    save = SaveAtComputePoints([4], resume_every_minutes=1.0)
    args = TrainingArguments(output_dir=str(tmp_path), use_cpu=True, report_to="none")
    state = TrainerState(max_steps=12)
    save.on_train_begin(args, state, TrainerControl())
    saved = []
    for step, seconds in enumerate([20, 20, 20, 20, 20, 20, 20, 70, 5, 5, 5, 5], start=1):
        clock.now += seconds
        state.global_step = step
        control = save.on_step_end(args, state, TrainerControl())
        if control.should_save:
            saved.append(step)
            save.on_save(args, state, control)
    # 60 s after the start (step 3); step 4 is a compute point and restarts the clock; 60 s later is step 7;
    # the 70 s step 8 alone; then 20 s pass by step 12.
    assert saved == [3, 4, 7, 8]
    # The interval (and the deprecated step count) is layout: out of what a run computes, so no run reruns.
    layout = {"resume_every_minutes": 60, "resume_every_steps": 50}
    assert without_layout({"lr_base": 1e-6, **layout}, "training") == {"lr_base": 1e-6}
    assert launch_spec({**PAPER_TRAINING, **layout}).resume_every_minutes == 60


def test_a_run_resumed_after_its_first_epoch_sees_the_problems_in_the_same_order(
    tiny_model: str, pool: pd.DataFrame, tmp_path: Path
) -> None:
    # 12 problems at B_problem = 4: 3 steps per epoch, so checkpoint-6 lies two epochs into the run, and
    # TRL's sampler must draw the two earlier epochs' shuffles again (callbacks.ReplayShuffles)
    point, problems = GridPoint("easy", 4, 2, 0), pool.head(12)
    full, _ = train_run(RunSpec(tiny_model, point, spec(), Recipe(0.0, 0.0), str(tmp_path / "full")), problems)
    run_dir = tmp_path / "resumed"
    train_run(RunSpec(tiny_model, point, spec(), Recipe(0.0, 0.0), str(run_dir)), problems)
    shutil.rmtree(run_dir / "checkpoint-12")
    resumed, _ = train_run(RunSpec(tiny_model, point, spec(), Recipe(0.0, 0.0), str(run_dir)), problems)
    pd.testing.assert_frame_equal(full, resumed)
