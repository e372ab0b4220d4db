"""A run's settings as TRL's `GRPOConfig`: the study's on-policy recipe (one optimizer step per B rollouts,
one generation round per step), its learning-rate rule and warm-up, and TRL's vLLM keys with truncated
importance sampling.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from trl import GRPOConfig

from isocompute.study.grid import GridPoint, batch_split, learning_rate, total_steps
from isocompute.study.specs import LaunchSpec, Recipe, RolloutEngine, TrainingSpec
from isocompute.training.run_spec import SINGLE_PROCESS
from isocompute.training.tracking import tracked_run_name

# TRL's own defaults for the vLLM server's HTTP port and its weight-sync group port; a launched run
# replaces them with free ports of its node.
TRL_VLLM_PORTS = (8000, 51216)


def last_step(point: GridPoint, spec: TrainingSpec, until_step: int | None = None) -> int:
    """The step a job's training stops at (TRL's `max_steps`): its rung's stop, or the run's end."""
    return until_step or total_steps(point.batch, spec.compute_max)


def grpo_args(
    point: GridPoint,
    spec: TrainingSpec,
    recipe: Recipe,
    output_dir: str | Path,
    launch: LaunchSpec = SINGLE_PROCESS,
    ports: tuple[int, int] = TRL_VLLM_PORTS,
    until_step: int | None = None,
) -> GRPOConfig:
    """TRL's configuration for one grid point, on-policy with one optimizer step per B rollouts.

    TRL counts `per_device_train_batch_size` in completions; processes * accumulation micro-batches make
    one optimizer step, and one generation round (steps_per_generation = accumulation) feeds exactly those.
    A decoupled baseline samples n_baseline per problem (TRL's group) but scales the learning rate with
    the B_problem * n completions in the loss.
    """
    split = batch_split(point.batch, launch.processes, launch.per_device_batch_max)
    on_gpu = torch.cuda.is_available()
    return GRPOConfig(
        output_dir=str(output_dir),
        num_generations=point.n_sampled,
        per_device_train_batch_size=split.per_device,
        gradient_accumulation_steps=split.accumulation,
        steps_per_generation=split.accumulation,
        num_iterations=1,
        # A rung's stop only ends the run early: warm-up then a constant rate, so no step depends on it.
        max_steps=last_step(point, spec, until_step),
        learning_rate=learning_rate(point.update_batch, spec.lr_base, spec.lr_batch_ref, spec.lr_rule),
        lr_scheduler_type="constant_with_warmup",
        warmup_steps=spec.warmup_steps,
        optim="adamw_torch",
        beta=recipe.kl_coef,
        entropy_coef=recipe.entropy_coef,
        loss_type=spec.loss_type,
        temperature=spec.sampling.temperature,
        top_p=spec.sampling.top_p,
        max_completion_length=spec.sampling.max_new_tokens,
        # transformers 5.17's name; later releases (5.24) call it activation_checkpointing, this an alias.
        gradient_checkpointing=launch.activation_checkpointing,
        seed=point.seed,
        logging_steps=1,
        save_strategy="no",
        report_to=list(launch.report_to) or "none",
        run_name=tracked_run_name(point.problem_set, point.run),
        disable_tqdm=True,
        use_cpu=not on_gpu,
        bf16=on_gpu and torch.cuda.is_bf16_supported(),
        dataloader_num_workers=0,
        **rollout_engine_args(spec.rollout_engine, ports),
    )


def rollout_engine_args(engine: RolloutEngine | None, ports: tuple[int, int]) -> dict[str, Any]:
    """TRL's vLLM keys: colocated or server vLLM, with its importance-sampling correction (TIS).

    `ports` are the vLLM server's HTTP port and the port of the weight-sync group (server mode only).
    """
    if engine is None:
        return {"use_vllm": False}
    return {
        "use_vllm": True,
        "vllm_mode": engine.mode,
        "vllm_gpu_memory_utilization": engine.gpu_memory_utilization,
        "vllm_tensor_parallel_size": engine.tensor_parallel_size,
        "vllm_server_host": "127.0.0.1",
        "vllm_server_port": ports[0],
        "vllm_group_port": ports[1],
        "vllm_importance_sampling_correction": engine.importance_sampling is not None,
        "vllm_importance_sampling_mode": engine.importance_sampling or "token_truncate",
        "vllm_importance_sampling_clip_max": engine.importance_sampling_cap,
        # Colocate only (TRL passes them to its own engine); a server gets max_model_len on its command line.
        "vllm_enable_sleep_mode": engine.sleep_mode,
        "vllm_max_model_length": engine.max_model_len,
    }
