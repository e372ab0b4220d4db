"""GRPO training of one grid point with TRL's `GRPOTrainer`, on the study's recipe.

The recipe (from the paper): fully on-policy, one optimizer step per B = B_problem * n rollouts, the
square-root learning-rate rule with a 10-step warm-up then constant, KL + entropy on Easy and neither on
Hard. Each run trains to the study's compute_max and saves at compute points spaced evenly in log C, so
one run yields its whole reward-vs-compute curve. A run resumes from its last checkpoint when its job is
restarted with the same settings, and starts afresh when the settings changed.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import torch
from datasets import Dataset
from transformers import TrainerCallback, TrainerControl, TrainerState, TrainingArguments
from transformers.trainer_utils import get_last_checkpoint
from trl import GRPOConfig, GRPOTrainer

from isocompute.answers import correctness_reward
from isocompute.grid import GridPoint, checkpoint_steps, learning_rate, total_steps
from isocompute.specs import Recipe, TrainingSpec

RUN_SETTINGS = "run_settings.json"

# TRL's per-step log keys, and the names the training table gives them.
LOG_COLUMNS = {
    "reward": "reward",
    "reward_std": "reward_std",
    "entropy": "entropy",
    "kl": "kl",
    "completions/mean_length": "response_length",
    "num_tokens": "num_tokens",
    "frac_reward_zero_std": "frac_reward_zero_std",
    "learning_rate": "lr",
    "loss": "loss",
    "grad_norm": "grad_norm",
}


def per_device_batch(b_problem: int, n: int, world_size: int, grad_accum: int) -> int:
    """Completions per device per micro-step so that one optimizer step sees exactly B_problem * n rollouts.

    TRL counts `per_device_train_batch_size` in completions; world_size * grad_accum micro-batches make one
    optimizer step, and one generation round (steps_per_generation = grad_accum) feeds exactly those.
    """
    batch = b_problem * n
    if batch % (world_size * grad_accum):
        raise ValueError(
            f"B = b_problem * n = {batch} is not divisible by world_size * gradient_accumulation_steps = "
            f"{world_size * grad_accum}"
        )
    return batch // (world_size * grad_accum)


def grpo_args(
    point: GridPoint,
    spec: TrainingSpec,
    recipe: Recipe,
    output_dir: str | Path,
    world_size: int = 1,
    grad_accum: int = 1,
) -> GRPOConfig:
    """TRL's configuration for one grid point, on-policy with one optimizer step per B rollouts."""
    return GRPOConfig(
        output_dir=str(output_dir),
        num_generations=point.n,
        per_device_train_batch_size=per_device_batch(point.b_problem, point.n, world_size, grad_accum),
        gradient_accumulation_steps=grad_accum,
        steps_per_generation=grad_accum,
        num_iterations=1,
        max_steps=total_steps(point.batch, spec.compute_max),
        learning_rate=learning_rate(point.batch, spec.lr_base, spec.lr_batch_ref),
        lr_scheduler_type="constant_with_warmup",
        warmup_steps=spec.warmup_steps,
        optim="adamw_torch",
        beta=recipe.kl_coef,
        entropy_coef=recipe.entropy_coef,
        loss_type=spec.loss_type,
        temperature=spec.sampling.temperature,
        top_p=spec.sampling.top_p,
        max_completion_length=spec.sampling.max_new_tokens,
        seed=point.seed,
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        disable_tqdm=True,
        use_cpu=not torch.cuda.is_available(),
        bf16=torch.cuda.is_available() and torch.cuda.is_bf16_supported(),
        dataloader_num_workers=0,
    )


class SaveAtComputePoints(TrainerCallback):
    """Ask the trainer to save exactly at the steps that realize the study's log-spaced compute points."""

    def __init__(self, steps: list[int]) -> None:
        self.steps = set(steps)

    def on_step_end(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **_: object
    ) -> TrainerControl:
        if state.global_step in self.steps:
            control.should_save = True
        return control


def build_trainer(
    model_path: str,
    train_problems: pd.DataFrame,
    args: GRPOConfig,
    save_steps: list[int],
    reward_func: Callable[..., list[float]] = correctness_reward,
) -> GRPOTrainer:
    """A `GRPOTrainer` on the problem table's `prompt` and `answer` columns."""
    dataset = Dataset.from_pandas(train_problems.loc[:, ["id", "prompt", "answer"]], preserve_index=False)
    return GRPOTrainer(
        model=model_path,
        reward_funcs=reward_func,
        args=args,
        train_dataset=dataset,
        callbacks=[SaveAtComputePoints(save_steps)],
    )


def _resume_point(run_dir: Path, settings: dict[str, object]) -> str | None:
    """The last checkpoint when the run's settings are unchanged; otherwise clear old checkpoints."""
    settings_file = run_dir / RUN_SETTINGS
    if settings_file.exists() and json.loads(settings_file.read_text()) == settings:
        return get_last_checkpoint(str(run_dir)) if run_dir.exists() else None
    for old in run_dir.glob("checkpoint-*"):
        shutil.rmtree(old)
    run_dir.mkdir(parents=True, exist_ok=True)
    settings_file.write_text(json.dumps(settings, indent=2, sort_keys=True))
    return None


def training_table(log_history: list[dict[str, float]], batch: int) -> pd.DataFrame:
    """One row per optimizer step with compute in rollouts and in sampled completion tokens."""
    rows = [
        {"step": int(entry["step"]), **{name: entry.get(key) for key, name in LOG_COLUMNS.items()}}
        for entry in log_history
        if "reward" in entry
    ]
    table = pd.DataFrame(rows).drop_duplicates("step", keep="last").sort_values("step", ignore_index=True)
    table["compute_rollouts"] = table["step"] * batch
    table["compute_tokens"] = (table["response_length"] * batch).cumsum()
    return table


def train_run(
    model_path: str,
    train_problems: pd.DataFrame,
    point: GridPoint,
    spec: TrainingSpec,
    recipe: Recipe,
    run_dir: str | Path,
) -> tuple[pd.DataFrame, list[dict[str, object]]]:
    """Train one grid point; return its per-step table and the manifest of its checkpoints."""
    run_dir = Path(run_dir)
    save_steps = checkpoint_steps(point.batch, spec.compute_min, spec.compute_max, spec.checkpoint_points)
    settings = {
        "model": str(model_path),
        "problems": train_problems["id"].tolist(),
        "point": dataclasses.asdict(point),
        "spec": dataclasses.asdict(spec),
        "recipe": dataclasses.asdict(recipe),
    }
    resume = _resume_point(run_dir, settings)
    args = grpo_args(point, spec, recipe, run_dir)
    trainer = build_trainer(model_path, train_problems, args, save_steps)
    trainer.train(resume_from_checkpoint=resume)
    table = training_table(trainer.state.log_history, point.batch)
    by_step = table.set_index("step")
    manifest = [
        {
            "step": step,
            "path": f"checkpoint-{step}",
            "compute_rollouts": int(by_step.at[step, "compute_rollouts"]),
            "compute_tokens": float(by_step.at[step, "compute_tokens"]),
        }
        for step in save_steps
    ]
    return table, manifest
