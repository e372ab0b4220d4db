"""What a study needs, as opposed to what its jobs request: GPU-hours from step times, the attempts each
training job needs, the runs that cannot finish, and the disk their checkpoints take.

`isocompute.plan.requests` sums what Snakemake would ask SLURM for (GPUs x `runtime` per job); that says nothing
about whether a run finishes. Here a run's cost is its M = ceil(C_max / B) optimizer steps times the
seconds one step takes, from a step model:

    seconds per step = overhead_s + gpu_seconds_per_token * B * completion_tokens / gpus

The model assumes that a step costs a fixed part (the longest completion's decode, which no batch size
shortens, the weight sync to vLLM, the optimizer step) plus a part proportional to the tokens the step
generates and trains on, spread evenly over the run's GPUs (data parallel, no loss to padding: TRL's
padding to the longest completion breaks this unless micro-batches are grouped by length); that the mean
completion length stays at its pilot (or assumed) value for the whole run (RL lengthens or shortens
completions as it trains); and that saves, evaluation and queueing cost nothing. It comes either from a
pilot, the `progress.jsonl` files runs write (`fit_step_model`), or from a file of stated assumptions
(`read_step_model`; the paper preset's is `config/step_models/qwen2.5-7b-h100.yaml`).

A training job of `runtime` minutes does `runtime * 60 - time_limit_margin - startup_s` seconds of
steps (`timelimit` stops it a margin before its limit), and SLURM runs it `retries + 1` times at most (the
profile's `retries`); a run needing more attempts than that cannot finish.

Disk: each run keeps its newest checkpoint whole (weights + optimizer state) and its other compute points
as weights only (`checkpoints.keep_newest_whole`); while a save is written the previous whole checkpoint
is still there. So a run holds at most 2 whole checkpoints and (compute points - 1) weights-only ones.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from isocompute.errors import IsoComputeError
from isocompute.pipeline.config import grid_points, rule_resources, training_gpus
from isocompute.study.grid import checkpoint_steps, total_steps
from isocompute.training.progress import PROGRESS_FILE, attempts, read_event_file

GB = 1e9
# bf16 weights; fp32 master weights and Adam's two fp32 moments (ZeRO-3's optimizer state).
WEIGHT_BYTES_PER_PARAM = 2
OPTIMIZER_BYTES_PER_PARAM = 12


class BudgetError(IsoComputeError, ValueError):
    """A pilot or step-model file that cannot give a step model; the message names the file."""


@dataclass(frozen=True)
class StepModel:
    """Seconds per optimizer step against B and completion length (module docstring), a job's startup,
    and the model size that sets the checkpoints' bytes (None: disk not planned)."""

    overhead_s: float
    gpu_seconds_per_token: float
    completion_tokens: float
    startup_s: float
    source: str
    model_params: float | None = None

    def seconds_per_step(self, batch: int, gpus: int) -> float:
        return self.overhead_s + self.gpu_seconds_per_token * batch * self.completion_tokens / gpus


STEP_MODEL_KEYS = ("overhead_s", "gpu_seconds_per_token", "completion_tokens", "startup_s")


def read_step_model(path: str | Path) -> StepModel:
    """A step model of stated assumptions: a YAML file with `STEP_MODEL_KEYS` and optional `model_params`."""
    try:
        data = yaml.safe_load(Path(path).read_text())
    except (OSError, yaml.YAMLError) as error:
        raise BudgetError(f"--step-model {path}: cannot read it ({error})") from None
    if not isinstance(data, dict):
        raise BudgetError(f"--step-model {path}: not a mapping of {', '.join(STEP_MODEL_KEYS)}")
    missing = [key for key in STEP_MODEL_KEYS if key not in data]
    if missing:
        raise BudgetError(f"--step-model {path}: missing {missing}")
    values = {}
    for key in (*STEP_MODEL_KEYS, "model_params"):
        if data.get(key) is None:
            continue
        try:
            values[key] = float(data[key])  # YAML 1.1 reads 7.6e9 (no sign) as text
        except (TypeError, ValueError):
            values[key] = -1.0
        if values[key] < 0:
            raise BudgetError(f"--step-model {path}: {key}={data[key]!r} is not a non-negative number")
    return StepModel(**values, source=f"assumptions in {path}")


@dataclass(frozen=True)
class PilotStep:
    """One optimizer step of a pilot: its run's B and GPUs, its seconds, its mean completion length."""

    batch: int
    gpus: int
    seconds: float
    completion_tokens: float


def pilot_steps(paths: Iterable[str | Path]) -> tuple[list[PilotStep], list[float]]:
    """The timed steps of pilot runs' progress files (or run folders holding one), and each attempt's
    startup (start to first step).

    A step is timed from the previous step's event within one attempt; the first step of an attempt
    (model loading, compilation) counts as startup instead. A file with no completion lengths (written
    before they were logged) is refused, naming it.
    """
    steps, startups = [], []
    for path in paths:
        file = Path(path) / PROGRESS_FILE if Path(path).is_dir() else Path(path)
        found = attempts(read_event_file(file))
        if not any(attempt.steps for attempt in found):
            raise BudgetError(f"--pilot {path}: no logged steps in {file}")
        for attempt in found:
            if not attempt.steps:
                continue
            if "completion_tokens" not in attempt.steps[0]:
                raise BudgetError(
                    f"--pilot {path}: its step events carry no completion_tokens (written before they were "
                    "logged); run the pilot again"
                )
            batch, gpus = int(attempt.start["batch"]), max(int(attempt.start["gpus"]), 1)
            startups.append(attempt.steps[0]["time"] - attempt.start["time"])
            for before, step in zip(attempt.steps, attempt.steps[1:]):
                if step["step"] == before["step"] + 1:
                    seconds = step["time"] - before["time"]
                    steps.append(PilotStep(batch, gpus, seconds, step["completion_tokens"]))
    return steps, startups


def fit_step_model(paths: Sequence[str | Path], model_params: float | None = None) -> StepModel:
    """The step model fitted to pilot runs' progress files.

    Per (B, GPUs) the median step time and the median tokens per GPU per step (medians: a step that also
    saved a checkpoint is an outlier, not the rule); then least squares of time on tokens per GPU through
    those medians: the intercept is the fixed part, the slope the GPU-seconds per token. It needs at least
    two distinct B (or lengths) to tell the two apart. The completion length is the pilot's mean.
    """
    steps, startups = pilot_steps(paths)
    groups: dict[tuple[int, int], list[PilotStep]] = {}
    for step in steps:
        groups.setdefault((step.batch, step.gpus), []).append(step)
    tokens = [statistics.median(s.batch * s.completion_tokens / s.gpus for s in g) for g in groups.values()]
    seconds = [statistics.median(s.seconds for s in g) for g in groups.values()]
    if len(set(tokens)) < 2:
        raise BudgetError(
            f"--pilot: the runs given ({', '.join(map(str, paths))}) have one B and GPU count only "
            f"({sorted(groups)}): give pilots at two or more B to separate a step's fixed time from the "
            "tokens' time"
        )
    slope, intercept = np.polyfit(tokens, seconds, 1)
    if slope <= 0:
        raise BudgetError(f"--pilot: step time does not grow with tokens per GPU (slope {slope:.3g} s/token)")
    if intercept < 0:  # no fixed part measurable: a line through the origin
        slope, intercept = float(np.dot(tokens, seconds) / np.dot(tokens, tokens)), 0.0
    return StepModel(
        overhead_s=float(intercept),
        gpu_seconds_per_token=float(slope),
        completion_tokens=statistics.fmean(s.completion_tokens for s in steps),
        startup_s=statistics.median(startups),
        source=f"a fit to {len(steps)} steps at B x GPUs {sorted(groups)} of {len(paths)} pilot file(s)",
        model_params=model_params,
    )


@dataclass(frozen=True)
class RunNeed:
    """One run's need under a step model, and what its training job allows."""

    problem_set: str
    run: str
    batch: int
    steps: int
    gpus: int
    seconds_per_step: float
    attempts_needed: int | None  # at the configured runtime per attempt; None: no number of them would do
    attempts_allowed: int  # retries + 1
    runtime_needed_min: float  # per attempt, to finish within attempts_allowed
    checkpoints: int

    @property
    def hours(self) -> float:
        return self.steps * self.seconds_per_step / 3600

    @property
    def gpu_hours(self) -> float:
        return self.hours * self.gpus

    @property
    def finishes(self) -> bool:
        return self.attempts_needed is not None and self.attempts_needed <= self.attempts_allowed


def run_needs(config: Mapping[str, Any], model: StepModel, retries: int) -> list[RunNeed]:
    """Every training run of the config (an adaptive sweep's arms all to C_max, the worst case)."""
    training = config["training"]
    gpus = training_gpus(training)
    margin = float(training["time_limit_margin"])
    runtime = rule_resources(config, "train_grpo").get("runtime", 0)
    allowed = retries + 1
    extent = (training["compute_min"], training["compute_max"], training["checkpoint_points"])
    needs = []
    for point in grid_points(config):
        steps = total_steps(point.batch, training["compute_max"])
        per_step = model.seconds_per_step(point.batch, gpus)
        work = steps * per_step
        needs.append(
            RunNeed(
                problem_set=point.problem_set,
                run=point.run,
                batch=point.batch,
                steps=steps,
                gpus=gpus,
                seconds_per_step=per_step,
                attempts_needed=_attempts(work, runtime, margin + model.startup_s),
                attempts_allowed=allowed,
                runtime_needed_min=(work / allowed + margin + model.startup_s) / 60,
                checkpoints=len(checkpoint_steps(point.batch, *extent)),
            )
        )
    return needs


def _attempts(work_s: float, runtime: Any, lost_s: float, most: int = 10_000) -> int | None:
    """Attempts of a job of `runtime` minutes (a number, or Snakemake's per-attempt callable) that `work_s`
    seconds of steps take, each losing `lost_s` to startup and the time-limit margin; None where even
    `most` attempts would not do."""
    done = 0.0
    for attempt in range(1, most + 1):
        minutes = runtime(None, attempt) if callable(runtime) else runtime
        done += max(float(minutes) * 60 - lost_s, 0.0)
        if done >= work_s:
            return attempt
    return None


@dataclass(frozen=True)
class Disk:
    """Checkpoint bytes of a study: at its peak (every run at its last save at once, an upper bound), at
    rest once every run finished, and as the code before thinning kept them (every checkpoint whole)."""

    peak: float
    at_rest: float
    all_whole: float


def checkpoint_disk(needs: Iterable[RunNeed], model_params: float) -> Disk:
    weights = model_params * WEIGHT_BYTES_PER_PARAM
    whole = weights + model_params * OPTIMIZER_BYTES_PER_PARAM
    needs = list(needs)
    return Disk(
        peak=sum(2 * whole + (n.checkpoints - 1) * weights for n in needs),
        at_rest=sum(whole + (n.checkpoints - 1) * weights for n in needs),
        # every compute point whole, plus one rolling resume checkpoint while the run trained
        all_whole=sum((n.checkpoints + 1) * whole for n in needs),
    )


def read_retries(profile: str | Path) -> int:
    """The `retries` of a Snakemake profile folder's config.yaml (0 where it sets none or is absent)."""
    path = Path(profile) / "config.yaml"
    if not path.is_file():
        return 0
    return int((yaml.safe_load(path.read_text()) or {}).get("retries", 0))


def format_needs(needs: Sequence[RunNeed], model: StepModel, requested_gpu_hours: float) -> str:
    """The runs' needs as a table, then the study's totals beside what its jobs request."""
    header = ["set", "run", "B", "steps", "s/step", "hours", "GPU-hours", "attempts", "runtime/attempt"]
    rows = [
        [
            n.problem_set,
            n.run,
            f"{n.batch:,}",
            f"{n.steps:,}",
            f"{n.seconds_per_step:,.1f}",
            f"{n.hours:,.1f}",
            f"{n.gpu_hours:,.0f}",
            f"{n.attempts_needed:,} of {n.attempts_allowed}" if n.attempts_needed else "never",
            f"{n.runtime_needed_min / 60:,.1f} h",
        ]
        for n in needs
    ]
    widths = [max(len(line[i]) for line in [header, *rows]) for i in range(len(header))]

    def render(cells: list[str]) -> str:
        return "  ".join(c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths)))

    failing = [n for n in needs if not n.finishes]
    total = sum(n.gpu_hours for n in needs)
    model_line = (
        f"step model: {model.overhead_s:,.1f} s + {model.gpu_seconds_per_token:.3g} GPU-s/token x B x "
        f"{model.completion_tokens:,.0f} completion tokens / GPUs; job startup "
        f"{model.startup_s / 60:,.1f} min ({model.source})"
    )
    shown = [f"{n.problem_set}/{n.run}" for n in failing[:8]] + (["..."] if len(failing) > 8 else [])
    named = f" ({', '.join(shown)})" if failing else ""
    lines = [
        model_line,
        render(header),
        "  ".join("-" * w for w in widths),
        *map(render, rows),
        (
            f"training: {total:,.0f} GPU-hours needed by the step model, against {requested_gpu_hours:,.0f} "
            "GPU-hours its jobs request (gpus x runtime, one attempt each)"
        ),
        f"runs that cannot finish within runtime x (retries + 1): {len(failing)} of {len(needs)}{named}",
        (
            "attempts: needed at the configured runtime, of retries + 1; runtime/attempt: what would finish "
            "the run within retries + 1 attempts"
        ),
    ]
    if model.model_params:
        disk = checkpoint_disk(needs, model.model_params)
        weights = model.model_params * WEIGHT_BYTES_PER_PARAM / GB
        whole = weights + model.model_params * OPTIMIZER_BYTES_PER_PARAM / GB
        lines.append(
            f"checkpoint disk ({model.model_params / 1e9:.2f}B parameters: {weights:,.1f} GB weights-only, "
            f"{whole:,.1f} GB whole): peak {disk.peak / 1e12:,.1f} TB (every run at its last save at once), "
            f"{disk.at_rest / 1e12:,.1f} TB once finished; every checkpoint whole, as before thinning: "
            f"{disk.all_whole / 1e12:,.1f} TB"
        )
    else:
        lines.append("checkpoint disk: not planned (give the model's parameter count: --model-params)")
    return "\n".join(lines)
