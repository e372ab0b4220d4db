"""`isocompute status`: where every grid point of a study stands, read from the files alone.

A weeks-long study is watched from a login node while its jobs run elsewhere, so this reads only what the
jobs leave on the shared file system, and asks SLURM nothing: the configured grid (loaded the way
`snakemake` loads it, as `isocompute plan` does), each run's progress file (`progress.jsonl`: its
attempts and logged steps), its lock file's heartbeat, its training table and its evaluation, and the
per-job records in `benchmarks/`.

States: `waiting` (no attempt yet), `training` (an attempt is alive: at step k of M, with the compute so
far and the time left at its pace), `stopped` (the last attempt ended before the last step: time limit,
preemption or a kill; the next run resumes it), `failed` (the last attempt failed), `trained`, `evaluated`.
GPU-hours: attempts still running or ended without a benchmark record from their progress files (GPUs
the job saw x its time), finished jobs from `benchmarks/` (wall seconds x the rule's configured GPUs), for
every rule that can hold GPUs (`isocompute.study.cluster_rules.CLUSTER_RULES`): a grid point's row has its
training and evaluations, the total adds the jobs of no grid point (pre-training, bucketing, pass@k, the
base model's evaluations). An adaptive sweep's run is trained and evaluated rung by rung: each rung job has
its own benchmark record, so only its attempts that did not finish are read from the progress file.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from isocompute.pipeline.config import Config, grid_points, output_roots, rule_resources
from isocompute.study.cluster_rules import CLUSTER_RULES
from isocompute.study.grid import GridPoint, total_steps
from isocompute.training.progress import Attempt, attempts, read_events
from isocompute.training.runlock import trainer_alive

COLUMNS = [
    "problem_set",
    "run",
    "state",
    "step",
    "steps",
    "compute_rollouts",
    "seconds_left",
    "reward",
    "val_metric",
    "gpu_hours",
]
STATES = ("evaluated", "trained", "training", "stopped", "failed", "waiting")
# Rules whose jobs belong to no grid point: counted in the study's total only.
SHARED_RULES = tuple(name for name, rule in CLUSTER_RULES.items() if not rule.per_point)
# Rules with one job per grid point (per evaluation set or rung, for some) besides training, which has attempts.
POINT_RULES = tuple(name for name, rule in CLUSTER_RULES.items() if rule.per_point and name != "train_grpo")


def status(
    configfiles: Sequence[str | Path] = (),
    snakefile: str | Path | None = None,
    directory: str | Path = ".",
    now: float | None = None,
) -> tuple[pd.DataFrame, float]:
    """One row per grid point of the configured study, and the study's GPU-hours so far (all jobs)."""
    from isocompute.plan.requests import loaded_config

    directory = Path(directory).resolve()
    config = loaded_config(configfiles, snakefile, directory)
    return study_status(config, directory, time.time() if now is None else now)


def study_status(config: Config, directory: Path, now: float) -> tuple[pd.DataFrame, float]:
    """`status` for an already loaded config."""
    rows = [point_status(config, directory, point, now) for point in grid_points(config)]
    table = pd.DataFrame(rows, columns=COLUMNS)
    table.attrs["metric"] = config["fits"]["metric"]
    benchmarks = directory / output_roots(config)["benchmarks"]
    shared = sum(
        _benchmark_hours(path, config, rule)
        for rule in SHARED_RULES
        for path in [benchmarks / f"{rule}.tsv", *sorted((benchmarks / rule).rglob("*.tsv"))]
    )
    return table, float(table["gpu_hours"].sum()) + shared


def point_status(config: Config, directory: Path, point: GridPoint, now: float) -> dict[str, Any]:
    """The row of one grid point."""
    roots = output_roots(config)
    run_dir = directory / roots["results"] / "train" / point.problem_set / point.run
    eval_dir = directory / roots["results"] / "evaluation" / point.problem_set / point.run
    bench = f"{point.problem_set}/{point.run}.tsv"
    steps = total_steps(point.batch, int(config["training"]["compute_max"]))
    tried = attempts(read_events(run_dir))
    trained = (run_dir / "train_log.parquet").is_file() and (run_dir / "checkpoints.json").is_file()
    live = bool(tried) and tried[-1].outcome is None and trainer_alive(run_dir)
    # the step of the last attempt (a restarted run's earlier attempts may have gone further)
    last = tried[-1] if tried else None
    step = last.steps[-1]["step"] if last and last.steps else (last.start.get("resume_step", 0) if last else 0)
    logged = [event for attempt in tried for event in attempt.steps]
    reward = logged[-1]["reward"] if logged else None
    if trained and not logged:
        table = pd.read_parquet(run_dir / "train_log.parquet", columns=["step", "reward"])
        step, reward = int(table["step"].iloc[-1]), float(table["reward"].iloc[-1])
    seconds_left = None
    if (eval_dir / "evals.parquet").is_file():
        state = "evaluated"
    elif trained:
        state = "trained"
    elif live:
        state = "training"
        pace = tried[-1].seconds_per_step()
        seconds_left = pace * (steps - step) if pace is not None else None
    elif tried and tried[-1].outcome == "failed":
        state = "failed"
    elif tried:
        state = "stopped"
    else:
        state = "waiting"
    metric = config["fits"]["metric"]
    val = None
    if state == "evaluated":
        evals = pd.read_parquet(eval_dir / "evals.parquet")
        val = float(evals[metric].iloc[-1]) if metric in evals.columns and len(evals) else None
    benchmarks = directory / roots["benchmarks"]
    if (benchmarks / "train_grpo_rung" / point.problem_set / point.run).is_dir():
        # an adaptive sweep's run: every finished rung job has its benchmark record (counted with POINT_RULES)
        tried = [attempt for attempt in tried if attempt.outcome != "finished"]  # a live one stays last
    gpu_hours = _attempt_hours(tried, trained, benchmarks / "train_grpo" / bench, now, live)
    gpu_hours += _benchmark_hours(benchmarks / "train_grpo" / bench, config, "train_grpo", tried)
    for rule in POINT_RULES:
        per_point = benchmarks / rule / point.problem_set
        for path in [per_point / f"{point.run}.tsv", *sorted((per_point / point.run).glob("*.tsv"))]:
            gpu_hours += _benchmark_hours(path, config, rule)
    return {
        "problem_set": point.problem_set,
        "run": point.run,
        "state": state,
        "step": int(step),
        "steps": steps,
        "compute_rollouts": int(step) * point.batch,
        "seconds_left": seconds_left,
        "reward": reward,
        "val_metric": val,
        "gpu_hours": gpu_hours,
    }


def _attempt_hours(tried: list[Attempt], trained: bool, benchmark: Path, now: float, live: bool) -> float:
    """GPU-hours of the attempts no benchmark records: all but a finished run's last, which has one."""
    recorded = trained and benchmark.is_file() and bool(tried) and tried[-1].outcome == "finished"
    hours = 0.0
    for attempt in tried[:-1] if recorded else tried:
        end = now if live and attempt is tried[-1] else attempt.last_time
        hours += max(end - attempt.start["time"], 0.0) * attempt.start.get("gpus", 0) / 3600
    return hours


def _benchmark_hours(path: Path, config: Config, rule: str, tried: list[Attempt] | None = None) -> float:
    """A finished job's GPU-hours from its benchmark record: wall seconds x GPUs (those its attempt saw,
    or the rule's configured ones)."""
    if not path.is_file():
        return 0.0
    seconds = float(pd.read_csv(path, sep="\t")["s"].sum())
    if tried and tried[-1].outcome == "finished":
        gpus = tried[-1].start.get("gpus", 0)
    else:
        gpus = rule_resources(config, rule).get("gpu", 0)
    return seconds * gpus / 3600


def format_status(table: pd.DataFrame, total_gpu_hours: float) -> str:
    """The status as a plain-text table with the study's GPU-hours below it."""
    metric = table.attrs.get("metric", "avg@4")
    header = ["set", "run", "state", "step", "compute", "time left", "reward", f"val {metric}", "GPU-hours"]
    lines = [
        [
            r.problem_set,
            r.run,
            r.state,
            f"{r.step:,} / {r.steps:,}",
            f"{r.compute_rollouts:,}",
            _duration(r.seconds_left),
            _number(r.reward),
            _number(r.val_metric),
            f"{r.gpu_hours:,.2f}",
        ]
        for r in table.itertuples()
    ]
    widths = [max(len(line[i]) for line in [header, *lines]) for i in range(len(header))]

    def render(cells: list[str]) -> str:
        return "  ".join(
            cell.ljust(width) if i < 3 else cell.rjust(width)
            for i, (cell, width) in enumerate(zip(cells, widths))
        ).rstrip()

    counts = table["state"].value_counts()
    summary = ", ".join(f"{counts[state]} {state}" for state in STATES if state in counts)
    return "\n".join(
        [
            render(header),
            "  ".join("-" * width for width in widths),
            *map(render, lines),
            "",
            f"{len(table)} runs: {summary}; GPU-hours so far (every job): {total_gpu_hours:,.2f}",
        ]
    )


def _duration(seconds: float | None) -> str:
    if seconds is None or (isinstance(seconds, float) and math.isnan(seconds)):
        return "-"
    seconds = int(round(seconds))
    hours, rest = divmod(seconds, 3600)
    return f"{hours}h {rest // 60:02d}m" if hours else f"{rest // 60}m {rest % 60:02d}s"


def _number(value: float | None) -> str:
    return "-" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.3f}"
