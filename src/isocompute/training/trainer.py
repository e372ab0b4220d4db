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
(`resume_point`; docs/guide/upgrading.md).

`train_run` trains in the calling process; `isocompute.training.launch` runs the same `run_training` under
`accelerate launch` when a run spans several processes.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import pandas as pd
import torch
from datasets import Dataset
from transformers import TrainerCallback, TrainerControl, TrainerState, TrainingArguments
from trl import GRPOConfig, GRPOTrainer

from isocompute.files import write_json, write_table, write_text
from isocompute.sampling.answers import reward_function
from isocompute.sampling.prompts import trl_prompt
from isocompute.study.grid import GridPoint, batch_split, checkpoint_steps, learning_rate, total_steps
from isocompute.study.layout import without_layout
from isocompute.study.specs import LaunchSpec, Recipe, RolloutEngine, TrainingSpec
from isocompute.study.upgrades import changed_settings
from isocompute.training.checkpoints import checkpoints_of, keep_newest_whole, last_good_checkpoint, step_of
from isocompute.training.progress import append_event
from isocompute.training.selective_grpo import LossSelection, SelectiveGRPOTrainer
from isocompute.training.timelimit import StopBeforeTimeLimit, TimeLimitReached, any_rank
from isocompute.training.tracking import (
    TrackedRunConfig,
    tracked_run_id,
    tracked_run_name,
    tracking_environment,
)

LOG = logging.getLogger(__name__)

RUN_SETTINGS = "run_settings.json"
# TRL's own defaults for the vLLM server's HTTP port and its weight-sync group port; a launched run
# replaces them with free ports of its node.
TRL_VLLM_PORTS = (8000, 51216)

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
# TRL's log of its rollouts from vLLM with importance sampling, kept in the table where a run logs them: how
# far the sampler's log-probabilities of the sampled tokens lie from the trainer's (small while vLLM holds
# the trainer's weights; it grows with every step vLLM's weights fall behind) and the ratios' range.
VLLM_LOG_COLUMNS = {
    "sampling/sampling_logp_difference/mean": "sampling_logp_diff_mean",
    "sampling/sampling_logp_difference/max": "sampling_logp_diff_max",
    "sampling/importance_sampling_ratio/min": "is_ratio_min",
    "sampling/importance_sampling_ratio/max": "is_ratio_max",
}


def _restore_on_indexed_cpu(storage: Any, location: str) -> Any:
    """torch's deserializer for storage mapped to an indexed CPU device ("cpu:1"), which torch itself does
    not restore. transformers 5.17's Trainer resumes a run of several CPU processes (gloo; the tests' and a
    laptop's launched runs) by loading the optimizer state with map_location=args.device, "cpu:<rank>", and
    fails; later releases map it to "cpu". A CPU storage is already where it belongs. GPUs are unaffected."""
    return storage if location.startswith("cpu:") else None


# Priority 99: after torch's own deserializers (cpu 10, cuda 20, ...), which return None for "cpu:<n>".
torch.serialization.register_package(99, lambda storage: None, _restore_on_indexed_cpu)

# One process holding the whole batch: the layout of `train_run` and of the CPU default.
SINGLE_PROCESS = LaunchSpec(
    processes=1,
    per_device_batch_max=1 << 30,
    activation_checkpointing=False,
    accelerate_config=None,
)


@dataclass(frozen=True)
class RunSpec:
    """One grid point's run: the model it starts from, what it computes, where it lives, how it is laid out."""

    model_path: str
    point: GridPoint
    spec: TrainingSpec
    recipe: Recipe
    run_dir: str
    checker: str = "exact"
    launch: LaunchSpec = SINGLE_PROCESS
    # Where a rung of an adaptive sweep stops the run (a checkpoint step; None: the run's end). Not part of
    # what the run computes: the next rung goes on from this checkpoint as an uninterrupted run would.
    until_step: int | None = None


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


class SaveAtComputePoints(TrainerCallback):
    """Save exactly at the steps that realize the study's log-spaced compute points and, once
    `resume_every_minutes` of wall-clock time have passed since the last save, a resume checkpoint.

    Compute-point checkpoints are what evaluation reads; resume checkpoints only bound the work a
    preempted job or a lost node loses. Once a save is whole, the older compute points keep only their
    weights and older resume checkpoints go (`checkpoints.keep_newest_whole`): one checkpoint of the run
    holds optimizer state. An interval in minutes rather than steps keeps the loss bounded in time whatever
    a step costs (seconds at small B, many minutes at B = 65,536). `resume_every_steps` is the deprecated
    step-count interval, still honoured where a config sets it.
    """

    def __init__(
        self,
        steps: list[int],
        resume_every_minutes: float | None = None,
        resume_every_steps: int | None = None,
    ) -> None:
        self.steps = set(steps)
        self.resume_every_seconds = None if resume_every_minutes is None else 60 * resume_every_minutes
        self.resume_every_steps = resume_every_steps
        self.last_save = time.monotonic()

    def on_train_begin(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **_: object
    ) -> None:
        self.last_save = time.monotonic()

    def on_step_end(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **_: object
    ) -> TrainerControl:
        step = state.global_step
        due = bool(self.resume_every_steps and step % self.resume_every_steps == 0)
        if self.resume_every_seconds is not None:
            # Each rank reads its own clock; they vote, so that all of them save the same step.
            due = any_rank(due or time.monotonic() - self.last_save >= self.resume_every_seconds, args)
        if step in self.steps or due:
            control.should_save = True
        return control

    def on_save(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **_: object
    ) -> None:
        self.last_save = time.monotonic()
        # Every rank writes its own part of a checkpoint (its RNG state, its ZeRO shards): rank 0 judges
        # the new checkpoint whole only once all of them are done.
        if torch.distributed.is_available() and torch.distributed.is_initialized():
            torch.distributed.barrier()
        if state.is_world_process_zero:
            keep_newest_whole(args.output_dir, self.steps)


class ReplayShuffles(TrainerCallback):
    """Puts the order of the training problems where an uninterrupted run would have it, on resume.

    TRL's `RepeatSampler` shuffles the problems once per epoch from a generator of its own, seeded when
    the trainer is built and not saved in checkpoints; transformers fast-forwards only the batches of the
    current epoch. A run resumed after its first epoch would therefore see the problems in another order
    than the uninterrupted run (measured: the training tables part 1 step after resuming at step 203 of a
    60-problem set, 15 steps per epoch). Drawing the earlier epochs' permutations again restores it.
    """

    def on_train_begin(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs: object
    ) -> None:
        epochs = int(state.epoch or 0) if state.global_step else 0
        sampler = _shuffling_sampler(kwargs.get("train_dataloader"))
        if sampler is None or not epochs:
            return
        for _ in range(epochs):  # RepeatSampler.__iter__ draws one permutation per epoch
            torch.randperm(sampler.num_samples, generator=sampler.generator)


def _shuffling_sampler(loader: object) -> Any:
    """The sampler with its own shuffling generator behind a (possibly accelerate-wrapped) data loader."""
    todo, seen = [loader], set()
    while todo:
        current = todo.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        shuffles = isinstance(getattr(current, "generator", None), torch.Generator)
        if shuffles and hasattr(current, "num_samples"):
            return current
        todo += [getattr(current, name, None) for name in ("batch_sampler", "sampler")]
    return None


class ProgressLog(TrainerCallback):
    """Appends a `step` event to the run's progress file for every logged optimizer step (rank 0 only)."""

    def __init__(self, run_dir: str | Path, batch: int) -> None:
        self.run_dir = run_dir
        self.batch = batch

    def on_log(
        self,
        args: TrainingArguments,
        state: TrainerState,
        control: TrainerControl,
        logs: dict[str, float] | None = None,
        **_: object,
    ) -> None:
        if not state.is_world_process_zero or not logs or "reward" not in logs:
            return
        append_event(
            self.run_dir,
            "step",
            step=state.global_step,
            max_steps=state.max_steps,
            reward=logs["reward"],
            compute_rollouts=state.global_step * self.batch,
            # the step's mean completion length: what `isocompute plan --pilot` fits step times against
            completion_tokens=logs.get("completions/mean_length"),
        )


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


def run_settings(run: RunSpec, train_problems: pd.DataFrame) -> dict[str, object]:
    """Everything that changes what a run computes, and how far it goes; saved as `run_settings.json`.

    The layout is not among them (`run.launch`, and the vLLM engine's own layout: `study.layout.is_layout`), so a
    run resumes across a change of it; under DeepSpeed ZeRO, on its saved world size only
    (`launch.check_world_size`). Of these, `EXTENT` only says where the run stops and which steps it keeps:
    a run resumes across changes of it.
    """
    return without_layout(
        {
            "model": str(run.model_path),
            "problems": train_problems["id"].tolist(),
            "point": dataclasses.asdict(run.point),
            "spec": dataclasses.asdict(run.spec),
            "recipe": dataclasses.asdict(run.recipe),
            "checker": run.checker,
        }
    )


# The settings that set how far a run goes and where it saves, not what any of its steps computes: with
# a warm-up then a constant learning rate, a run raised to a larger compute_max goes on from its last
# checkpoint exactly as an uninterrupted run to that compute would.
EXTENT = ("spec.compute_min", "spec.compute_max", "spec.checkpoint_points")
SUPERSEDED = "superseded-"


def resume_point(run: RunSpec, train_problems: pd.DataFrame) -> str | None:
    """The checkpoint the run goes on from, or None to start; no checkpoint is ever deleted unannounced.

    A run whose settings changed what it computes (any key but `EXTENT`; `isocompute.study.upgrades` passes
    over fields an upgrade added at their neutral value) cannot use its checkpoints: they move, with the
    old `run_settings.json`, to `superseded-<time>/` in the run folder, the log names every differing key,
    and the run starts afresh. Otherwise the run goes on from its newest whole checkpoint at or below its
    last step below which every compute point it saves at is on disk: a raised compute_max extends it, a
    lowered one cuts it at a checkpoint it has (or trains up to the new end from an earlier one).
    Checkpoints beyond that point, or at compute points the run no longer saves at, move aside as well,
    named in the log. Incomplete checkpoints (a job killed while saving) are logged and removed. The
    compute points below the resume point keep only their weights (`checkpoints.keep_newest_whole`).
    """
    run_dir = Path(run.run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    settings = json.loads(json.dumps(run_settings(run, train_problems)))
    settings_file = run_dir / RUN_SETTINGS
    changed = _changed_computation(settings_file, settings)
    if changed:
        old = [path for _, path in checkpoints_of(run_dir)]
        reason = "its settings changed what it computes: " + "; ".join(changed)
        supersede(run_dir, [*old, *([settings_file] if settings_file.exists() else [])], reason)
    write_text(json.dumps(settings, indent=2, sort_keys=True), settings_file)
    point, spec = run.point, run.spec
    save_steps = checkpoint_steps(point.batch, spec.compute_min, spec.compute_max, spec.checkpoint_points)
    resume = last_good_checkpoint(run_dir, total_steps(point.batch, spec.compute_max), save_steps)
    resume_step = step_of(resume) if resume else 0
    unused = [
        path
        for step, path in checkpoints_of(run_dir)
        if step > resume_step or (step < resume_step and step not in save_steps)
    ]
    if unused:
        start = f"step {resume_step}" if resume else "the start"
        reason = f"the run saves at steps {save_steps}, going on from {start}: these lie beyond or off them"
        supersede(run_dir, unused, reason)
    # Finishes a thinning a kill cut short, and thins checkpoints saved whole before thinning existed.
    keep_newest_whole(run_dir, save_steps)
    LOG.info(
        "%s: %s", run_dir, f"resuming from {resume}" if resume else "no checkpoint to go on from, starting"
    )
    return resume


def _changed_computation(settings_file: Path, settings: dict[str, object]) -> list[str]:
    """`old -> new` of each key (but `EXTENT`) that differs from the saved settings; a run folder with
    checkpoints but no readable settings file counts as changed."""
    if not settings_file.exists():
        return ["run_settings.json: (absent)"] if checkpoints_of(settings_file.parent) else []
    try:
        saved = json.loads(settings_file.read_text())
    except ValueError:
        return ["run_settings.json: (unreadable)"]
    changed = changed_settings(without_layout(saved), settings)  # settings saved with their layout before
    return [
        f"{key}: {_shown(old)} -> {_shown(new)}" for key, (old, new) in changed.items() if key not in EXTENT
    ]


def _shown(value: object) -> str:
    """A settings value for the log: a long list (the training problems' ids) by its length."""
    return f"[{len(value)} items]" if isinstance(value, list) and len(value) > 8 else repr(value)


def supersede(run_dir: Path, paths: Sequence[Path], reason: str) -> Path:
    """Move `paths` (checkpoints, an old settings file) to a new `superseded-<UTC time>/` of the run folder,
    with the reason in its `reason.txt`, and log where they went and why."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    target = run_dir / f"{SUPERSEDED}{stamp}"
    suffix = 1
    while target.exists():
        suffix += 1
        target = run_dir / f"{SUPERSEDED}{stamp}-{suffix}"
    target.mkdir()
    (target / "reason.txt").write_text(reason + "\n")
    for path in paths:
        path.rename(target / path.name)
    LOG.warning("%s: %s moved to %s: %s", run_dir, ", ".join(p.name for p in paths), target.name, reason)
    return target


def training_table(log_history: list[dict[str, float]], batch: int) -> pd.DataFrame:
    """One row per optimizer step with compute in rollouts and in sampled completion tokens (and, where TRL
    sampled with vLLM under importance sampling, `VLLM_LOG_COLUMNS`)."""
    logged = [entry for entry in log_history if "reward" in entry]
    columns = {**LOG_COLUMNS, **{k: v for k, v in VLLM_LOG_COLUMNS.items() if any(k in e for e in logged)}}
    rows = [{"step": int(entry["step"]), **{name: entry.get(key) for key, name in columns.items()}} for entry in logged]
    table = pd.DataFrame(rows).drop_duplicates("step", keep="last").sort_values("step", ignore_index=True)
    table["compute_rollouts"] = table["step"] * batch
    table["compute_tokens"] = (table["response_length"] * batch).cumsum()
    return table


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


def write_outputs(
    table: pd.DataFrame, manifest: list[dict[str, object]], log_table: str | Path, checkpoints: str | Path
) -> None:
    """The run's training table and checkpoint manifest, each written under a temporary name, then renamed."""
    write_table(table, log_table)
    write_json(manifest, checkpoints)
