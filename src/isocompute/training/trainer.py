"""GRPO training of one grid point with TRL's `GRPOTrainer`, on the study's recipe.

The recipe (from the paper): fully on-policy, one optimizer step per B = B_problem * n rollouts, the
learning-rate rule (square root in the study) with a 10-step warm-up then constant, KL + entropy on Easy
and neither on Hard, rollouts from vLLM corrected by truncated importance sampling where vLLM is on. A
recipe with the zero-variance filter, a grid point with a decoupled baseline, or a step split over
processes or micro-batches (grouped by completion length there) trains with
`isocompute.training.selective_grpo.SelectiveGRPOTrainer` instead of TRL's own (`loss_selection`). Each run trains to
the study's compute_max and saves at compute points spaced evenly in log C, so one run yields its whole
reward-vs-compute curve. A run resumes from its last checkpoint when its job is restarted (on any number
of devices, but under DeepSpeed on the number it saved at), goes on from it when only its compute_max
changed, and starts afresh, its old checkpoints set aside, when a setting changed what it computes
(`resume.resume_point`; docs/guide/upgrading.md). This module holds the run itself: the trainer built on a
run's problems with its callbacks (`callbacks`), its TRL arguments (`trl_args`) and its loss, the training
from a resume point, and the training table and manifest it returns (`table`).

`train_run` trains in the calling process; `isocompute.training.launch` runs the same `run_training` under
`accelerate launch` when a run spans several processes.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import pandas as pd
import torch
from datasets import Dataset
from transformers import TrainerCallback
from trl import GRPOConfig, GRPOTrainer

from isocompute.sampling.answers import reward_function
from isocompute.sampling.prompts import trl_prompt
from isocompute.study.grid import batch_split, checkpoint_steps
from isocompute.study.specs import LaunchSpec
from isocompute.training.callbacks import ProgressLog, ReplayShuffles, SaveAtComputePoints
from isocompute.training.checkpoints import step_of
from isocompute.training.progress import append_event
from isocompute.training.resume import resume_point, run_settings
from isocompute.training.run_spec import SINGLE_PROCESS, RunSpec
from isocompute.training.selective_grpo import LossSelection, SelectiveGRPOTrainer
from isocompute.training.table import training_table
from isocompute.training.timelimit import StopBeforeTimeLimit, TimeLimitReached
from isocompute.training.tracking import TrackedRunConfig, tracked_run_id, tracking_environment
from isocompute.training.trl_args import TRL_VLLM_PORTS, grpo_args

def _restore_on_indexed_cpu(storage: Any, location: str) -> Any:
    """torch's deserializer for storage mapped to an indexed CPU device ("cpu:1"), which torch itself does
    not restore. transformers 5.17's Trainer resumes a run of several CPU processes (gloo; the tests' and a
    laptop's launched runs) by loading the optimizer state with map_location=args.device, "cpu:<rank>", and
    fails; later releases map it to "cpu". A CPU storage is already where it belongs. GPUs are unaffected."""
    return storage if location.startswith("cpu:") else None


# Priority 99: after torch's own deserializers (cpu 10, cuda 20, ...), which return None for "cpu:<n>".
torch.serialization.register_package(99, lambda storage: None, _restore_on_indexed_cpu)


def keep_cpu_vllm_weights_writable() -> None:
    """Lets TRL's weight sync reach a vLLM engine colocated on a CPU (vLLM's CPU build), in this process.

    After loading, that build prepacks each linear layer's weight for oneDNN (or AMX) kernels and drops the
    layer's own weight (`dispatch_cpu_unquantized_gemm` with `remove_weight=True`; the LM head keeps its
    weight but computes from the prepacked copy). TRL's sync (`load_weights` into the engine's model) then
    fails ("'Parameter' object has no attribute 'weight_loader'"), and a head it could reach would go on
    sampling from the weights it started with. Here every layer computes with torch's linear on its own
    weight, which each sync overwrites in place. Only the colocated engine of a training process is
    affected; bucketing and evaluation load their weights once and keep vLLM's kernels."""
    from vllm.model_executor.layers import utils

    def plain_linear(layer: torch.nn.Module, remove_weight: bool) -> None:
        layer.cpu_linear = lambda x, weight, bias: torch.nn.functional.linear(x, weight, bias)

    utils.dispatch_cpu_unquantized_gemm = plain_linear


def build_trainer(
    model_path: str,
    train_problems: pd.DataFrame,
    args: GRPOConfig,
    save_steps: list[int],
    reward_func: Callable[..., list[float]],
    chat_template: bool = False,
    launch: LaunchSpec = SINGLE_PROCESS,
    callbacks: Sequence[TrainerCallback] = (),
    selection: LossSelection | None = None,
) -> GRPOTrainer:
    """A `GRPOTrainer` on the problem table's `prompt` and `answer` columns, saving at `save_steps` and at
    the launch's resume interval; with a `selection`, the subclass that puts only the selected
    completions into the loss."""
    table = train_problems.loc[:, ["id", "prompt", "answer"]]
    dataset = Dataset.from_dict(
        {
            "id": table["id"].tolist(),
            "prompt": [trl_prompt(p, chat_template) for p in table["prompt"]],
            "answer": table["answer"].tolist(),
        }
    )
    if args.use_vllm and args.vllm_mode == "colocate" and not torch.cuda.is_available():
        keep_cpu_vllm_weights_writable()
    trainer = GRPOTrainer if selection is None else partial(SelectiveGRPOTrainer, selection=selection)
    return trainer(
        model=model_path,
        reward_funcs=reward_func,
        args=args,
        train_dataset=dataset,
        callbacks=[
            SaveAtComputePoints(save_steps, launch.resume_every_minutes, launch.resume_every_steps),
            *callbacks,
        ],
    )


def loss_selection(run: RunSpec) -> LossSelection | None:
    """The zero-variance filter of the run's recipe and its decoupled baseline; None for TRL's own trainer.

    TRL's own trains a run whose step is one micro-batch on one process (the CPU default). A step split
    over processes or micro-batches takes the project's trainer even without a filter: its loss is the
    one-batch loss whatever the split (TRL averages the entropy bonus per micro-batch), which lets it group
    micro-batches by completion length (`isocompute.training.selective_grpo`).
    """
    split = batch_split(run.point.batch, run.launch.processes, run.launch.per_device_batch_max)
    whole = run.launch.processes == 1 and split.accumulation == 1
    if run.recipe.zero_variance_filter is None and run.point.n_baseline is None:
        return None if whole else LossSelection()
    n_update = run.point.n if run.point.n_baseline is not None else None
    return LossSelection(run.recipe.zero_variance_filter, n_update, run.point.seed)


def train_run(
    run: RunSpec, train_problems: pd.DataFrame, deadline: float | None = None
) -> tuple[pd.DataFrame, list[dict[str, object]]]:
    """Train one grid point in this process; return its per-step table and the manifest of its checkpoints."""
    resume = resume_point(run, train_problems)
    return run_training(run, train_problems, resume, deadline=deadline)


def run_training(
    run: RunSpec,
    train_problems: pd.DataFrame,
    resume: str | None,
    ports: tuple[int, int] = TRL_VLLM_PORTS,
    deadline: float | None = None,
) -> tuple[pd.DataFrame, list[dict[str, object]]]:
    """The training itself, from `resume` (a checkpoint path) or from the start, on this process's share.

    With a `deadline` (the job's time limit, seconds since the epoch) it saves and raises
    `TimeLimitReached` when the rest of the run would not fit before it.
    """
    point, spec = run.point, run.spec
    save_steps = checkpoint_steps(point.batch, spec.compute_min, spec.compute_max, spec.checkpoint_points)
    args = grpo_args(point, spec, run.recipe, run.run_dir, run.launch, ports, run.until_step)
    if resume is not None and step_of(resume) >= args.max_steps:
        # The run ends at its checkpoint (a lowered compute_max, a rung the run has already passed, or a job
        # stopped between its last save and its outputs): nothing is left to train, and TRL's trainer
        # would take one step beyond the end.
        history = json.loads((Path(resume) / "trainer_state.json").read_text())["log_history"]
    else:
        history = _train(run, train_problems, resume, args, save_steps, deadline)
    save_steps = [step for step in save_steps if step <= args.max_steps]
    table = training_table(history, point.batch)
    table = table[table["step"] <= args.max_steps].reset_index(drop=True)
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


def _train(
    run: RunSpec,
    train_problems: pd.DataFrame,
    resume: str | None,
    args: GRPOConfig,
    save_steps: list[int],
    deadline: float | None,
) -> list[dict[str, float]]:
    """TRL's trainer from `resume` to the run's end; its log history. Raises `TimeLimitReached` (saved)."""
    stop = StopBeforeTimeLimit(deadline, run.launch.time_limit_margin)
    tracked_run = tracked_run_id(run.run_dir, run_settings(run, train_problems))
    with tracking_environment(run.launch.report_to, run.run_dir, tracked_run):
        trainer = build_trainer(
            run.model_path,
            train_problems,
            args,
            save_steps,
            reward_function(run.checker),
            run.spec.sampling.chat_template,
            run.launch,
            callbacks=[ReplayShuffles(), ProgressLog(run.run_dir, run.point.batch), stop],
            selection=loss_selection(run),
        )
        if run.launch.report_to:
            config = {"grid_point": dataclasses.asdict(run.point), "recipe": dataclasses.asdict(run.recipe)}
            trainer.add_callback(TrackedRunConfig(config, trainer.callback_handler.callbacks))
        trainer.train(resume_from_checkpoint=resume)
    if stop.stopped_at is not None:
        if trainer.is_world_process_zero():
            checkpoint = f"checkpoint-{stop.stopped_at}"
            append_event(run.run_dir, "time_limit", step=stop.stopped_at, checkpoint=checkpoint)
        raise TimeLimitReached.saved(run.run_dir, stop.stopped_at, args.max_steps)
    return trainer.state.log_history
