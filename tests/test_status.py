"""`isocompute status` on a study's files: every grid point's state, step, compute, time left, reward,
validation avg@4 and GPU-hours, from progress files, lock heartbeats, outputs and benchmarks alone."""

import json
import re
import time
from pathlib import Path

import pandas as pd
import pytest
from snakemake.settings.types import DAGSettings
from test_workflow import scratch_workflow

from isocompute.cli import main
from isocompute.plan.requests import _workflow_of, loaded_workflow
from isocompute.plan.status import format_status, status
from isocompute.study.cluster_rules import CLUSTER_RULES
from isocompute.training.runlock import TrainerLock

MICRO = ".test/config_micro/config.yaml"
# Four runs on Easy at B_problem = 4 (compute_max 64: M = 8, 4, 2, 1 steps); evaluation jobs get a GPU.
GRID = """grid:
  - problem_sets: [easy]
    b_problem: [4]
    n: [2, 4, 8, 16]
    seeds: [0]
studies: {fixed_b_problem: [4], fixed_batch: [], joint: false}
resources:
  evaluate_run: {gpu: 1}
"""


def _events(run_dir: Path, *events: dict) -> None:
    run_dir.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps(event) for event in events]
    (run_dir / "progress.jsonl").write_text(
        "\n".join(lines) + "\n" + '{"event": "step", "ti'
    )  # a line cut off


def _start(t: float, gpus: int, resume_step: int = 0) -> dict:
    return {"event": "start", "time": t, "gpus": gpus, "resume_step": resume_step, "host": "elsewhere"}


def _step(t: float, step: int, reward: float) -> dict:
    return {"event": "step", "time": t, "step": step, "reward": reward}


def _benchmark(path: Path, seconds: float) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"s\th:m:s\n{seconds}\t0:00:00\n")


@pytest.fixture
def study(tmp_path: Path) -> tuple[Path, float]:
    """A study in four states: evaluated after two attempts, training, stopped by a kill, waiting."""
    workdir = scratch_workflow(tmp_path)
    (workdir / "grid.yaml").write_text(GRID)
    now = time.time()
    train = workdir / "results/train/easy"
    # bp4_n2 (8 steps): stopped at its time limit after 100 s on 2 GPUs, resumed and finished (benchmark 120 s)
    done = train / "bp4_n2_seed0"
    _events(
        done,
        _start(now - 1000, 2),
        _step(now - 950, 3, 0.25),
        {"event": "time_limit", "time": now - 920, "step": 3, "checkpoint": "checkpoint-3"},
        {"event": "end", "time": now - 900, "outcome": "time_limit"},
        _start(now - 800, 2, resume_step=3),
        _step(now - 700, 8, 0.5),
        {"event": "end", "time": now - 680, "outcome": "finished"},
    )
    pd.DataFrame({"step": range(1, 9), "reward": [0.1] * 7 + [0.5]}).to_parquet(done / "train_log.parquet")
    (done / "checkpoints.json").write_text("[]")
    _benchmark(workdir / "benchmarks/train_grpo/easy/bp4_n2_seed0.tsv", 120)
    evaluated = workdir / "results/evaluation/easy/bp4_n2_seed0"
    evaluated.mkdir(parents=True)
    pd.DataFrame({"step": [4, 8], "avg@4": [0.3, 0.42]}).to_parquet(evaluated / "evals.parquet")
    _benchmark(workdir / "benchmarks/evaluate_run/easy/bp4_n2_seed0.tsv", 36)
    # bp4_n4 (4 steps): training now on 1 GPU, 10 s per step, at step 2
    _events(train / "bp4_n4_seed0", _start(now - 50, 1), _step(now - 40, 1, 0.0), _step(now - 30, 2, 0.125))
    # bp4_n8 (2 steps): its job was killed after step 1 (no end event, no live holder)
    _events(train / "bp4_n8_seed0", _start(now - 1000, 1), _step(now - 990, 1, 0.0))
    return workdir, now


def test_each_grid_point_in_its_state(study: tuple[Path, float]) -> None:
    workdir, now = study
    with TrainerLock(workdir / "results/train/easy/bp4_n4_seed0"):  # this process is the live trainer
        table, total = status([workdir / MICRO, workdir / "grid.yaml"], directory=workdir, now=now)
    rows = table.set_index("run")
    assert rows["state"].to_dict() == {
        "bp4_n2_seed0": "evaluated",
        "bp4_n4_seed0": "training",
        "bp4_n8_seed0": "stopped",
        "bp4_n16_seed0": "waiting",
    }
    assert rows.loc["bp4_n2_seed0", ["step", "steps", "compute_rollouts"]].tolist() == [8, 8, 64]
    assert rows.loc["bp4_n2_seed0", "reward"] == 0.5 and rows.loc["bp4_n2_seed0", "val_metric"] == 0.42
    assert rows.loc["bp4_n4_seed0", ["step", "steps", "compute_rollouts"]].tolist() == [2, 4, 32]
    assert rows.loc["bp4_n4_seed0", "seconds_left"] == pytest.approx(20)  # 2 steps left at 10 s each
    assert rows.loc["bp4_n8_seed0", ["step", "compute_rollouts"]].tolist() == [1, 32]
    assert rows.loc["bp4_n16_seed0", ["step", "compute_rollouts"]].tolist() == [0, 0]
    # GPU-hours: the time-limited attempt from its progress (100 s x 2), the finished one from its benchmark
    # (120 s x 2), its evaluation (36 s x 1 configured GPU); the live attempt so far (50 s x 1); the killed
    # one until its last sign of life (10 s x 1)
    hours = rows["gpu_hours"].to_dict()
    assert hours["bp4_n2_seed0"] == pytest.approx((100 * 2 + 120 * 2 + 36) / 3600)
    assert hours["bp4_n4_seed0"] == pytest.approx(50 / 3600)
    assert hours["bp4_n8_seed0"] == pytest.approx(10 / 3600)
    assert hours["bp4_n16_seed0"] == 0
    assert total == pytest.approx((100 * 2 + 120 * 2 + 36 + 50 + 10) / 3600)
    text = format_status(table, total)
    assert re.search(r"training +2 / 4 +32 +0m 20s +0.125", text) and "val avg@4" in text
    assert "4 runs: 1 evaluated, 1 training, 1 stopped, 1 waiting" in text


def test_a_dead_holder_is_not_training(study: tuple[Path, float]) -> None:
    workdir, now = study
    run_dir = workdir / "results/train/easy/bp4_n4_seed0"
    with TrainerLock(run_dir):
        pass  # the job ended without its end event (killed): its lock names a process that is gone
    info = json.loads((run_dir / ".trainer.lock").read_text())
    (run_dir / ".trainer.lock").write_text(json.dumps({**info, "process_start": "0"}))
    table, _ = status([workdir / MICRO, workdir / "grid.yaml"], directory=workdir, now=now)
    assert table.set_index("run").loc["bp4_n4_seed0", "state"] == "stopped"


def test_the_command_prints_the_table(study: tuple[Path, float], capsys: pytest.CaptureFixture[str]) -> None:
    workdir, _ = study
    code = main(
        [
            "status",
            "--configfile",
            str(workdir / MICRO),
            str(workdir / "grid.yaml"),
            "--directory",
            str(workdir),
        ]
    )
    out = capsys.readouterr().out
    assert code == 0 and "bp4_n2_seed0" in out and "evaluated" in out and "GPU-hours so far" in out
    assert main(["status", "--configfile", str(workdir / "nowhere.yaml"), "--directory", str(workdir)]) == 2


# Every kind of GPU job: a pass@k set (score_pass_at), Easy's runs also on Hard's validation set
# (evaluate_run_on), and one GPU for every rule with configured resources.
EVERY_GPU_RULE = """grid:
  - problem_sets: [easy, xhard]
    b_problem: [4]
    n: [2, 4]
    seeds: [0]
problem_sets:
  xhard: {pass_at: {k: 32, max: 0}, train_size: 20, val_size: 5}
studies: {fixed_b_problem: [4], fixed_batch: [], joint: false}
extra_evaluation: {sets: {easy: [hard]}}
resources:
  default: {gpu: 1}
"""


def test_every_gpu_job_of_the_workflow_is_counted(tmp_path: Path) -> None:
    """A benchmark record of 36 s on 1 GPU at the path of every job Snakemake would run: the study's total
    holds them all, and each run's row its training and all its evaluations."""
    workdir = scratch_workflow(tmp_path)
    (workdir / "every.yaml").write_text(EVERY_GPU_RULE)
    configfiles = [workdir / MICRO, workdir / "every.yaml"]
    with loaded_workflow(configfiles, directory=workdir) as workflow_api:
        workflow_api.dag(DAGSettings(forceall=True)).execute_workflow(executor="dryrun")
        jobs = [job for job in _workflow_of(workflow_api).dag.jobs if job.rule.name in CLUSTER_RULES]
    # a probe when configured; an adaptive sweep's rungs in the next test
    assert {job.rule.name for job in jobs} == set(CLUSTER_RULES) - {
        "probe_interference",
        "train_grpo_rung",
        "evaluate_run_rung",
    }
    assert all(job.benchmark for job in jobs), [job.rule.name for job in jobs if not job.benchmark]
    for job in jobs:
        _benchmark(workdir / str(job.benchmark), 36)
    table, total = status(configfiles, directory=workdir, now=time.time())
    assert total == pytest.approx(len(jobs) * 36 / 3600)
    per_run = {"train_grpo": 1, "evaluate_run": 1}
    hours = table.set_index(["problem_set", "run"])["gpu_hours"]
    assert hours["xhard", "bp4_n2_seed0"] == pytest.approx(sum(per_run.values()) * 36 / 3600)
    assert hours["easy", "bp4_n2_seed0"] == pytest.approx((sum(per_run.values()) + 1) * 36 / 3600)  # + on hard


def test_an_adaptive_run_counts_each_rung_job_once(tmp_path: Path) -> None:
    """An adaptive sweep's first rung, every job with a benchmark record of 36 s on 1 GPU; one arm's rung
    also had an attempt of 100 s stopped by its time limit. The finished attempt is its rung's benchmark
    record, not counted twice; the stopped one is counted from the progress file."""
    workdir = scratch_workflow(tmp_path)
    (workdir / "gpu.yaml").write_text("resources:\n  default: {gpu: 1}\n")
    configfiles = [workdir / MICRO, workdir / ".test/config_micro/adaptive.yaml", workdir / "gpu.yaml"]
    with loaded_workflow(configfiles, directory=workdir) as workflow_api:
        workflow_api.dag(DAGSettings(forceall=True)).execute_workflow(executor="dryrun")
        jobs = [job for job in _workflow_of(workflow_api).dag.jobs if job.rule.name.endswith("_rung")]
    # the first rung of n = 2 and n = 4 (n = 8's first checkpoint, 32 rollouts, lies beyond its cap of 16)
    assert {(job.rule.name, job.wildcards["run"]) for job in jobs} == {
        (rule, f"bp4_n{n}_seed0") for rule in ("train_grpo_rung", "evaluate_run_rung") for n in (2, 4)
    }
    for job in jobs:
        _benchmark(workdir / str(job.benchmark), 36)
    now = time.time()
    _events(
        workdir / "results/train/easy/bp4_n2_seed0",
        _start(now - 400, 1),
        _step(now - 350, 1, 0.5),
        {"event": "end", "time": now - 300, "outcome": "time_limit"},
        _start(now - 200, 1, resume_step=1),
        _step(now - 180, 2, 0.5),
        {"event": "end", "time": now - 164, "outcome": "finished"},
    )
    table, total = status(configfiles, directory=workdir, now=now)
    hours = table.set_index("run")["gpu_hours"]
    assert hours["bp4_n4_seed0"] == pytest.approx(2 * 36 / 3600)
    assert hours["bp4_n2_seed0"] == pytest.approx((2 * 36 + 100) / 3600)
    assert total == pytest.approx((len(jobs) * 36 + 100) / 3600)
