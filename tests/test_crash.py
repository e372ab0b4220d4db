"""A hard kill, tried as a new user would: `kill -9` of a running study's whole process group in the middle
of training, the same command (which stops on Snakemake's stale lock), `snakemake --unlock`, the same
command again. Training resumes from its last checkpoint (the job's log names it), the training table and
the evaluations equal an uninterrupted run's, and nothing is left half-written. And a new attempt refuses
to start while a trainer of an earlier one still lives."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
from conftest import ONE_RUN, live_processes
from test_workflow import MICRO, scratch_workflow, snakemake

from isocompute.files import write_table
from isocompute.plan.status import status
from isocompute.study.grid import GridPoint
from isocompute.study.specs import Recipe, SamplingSpec, TrainingSpec
from isocompute.training.checkpoints import checkpoint_problem, is_weights_only, weights_problem
from isocompute.training.launch import TrainingJob, run_job
from isocompute.training.progress import read_events
from isocompute.training.runlock import TrainerAlive, trainer_alive
from isocompute.training.run_spec import RunSpec

# One run of 2,048 steps (about 30 s on one core), checkpoints at steps 2, 20, 203 and 2,048.
LONG = "training:\n  compute_max: 16384\n" + ONE_RUN
CONFIGS = (MICRO, "long.yaml")
TARGET = "results/evaluation/easy/bp4_n2_seed1/evals.parquet"
RUN = Path("results/train/easy/bp4_n2_seed1")
COMMAND = ["snakemake", "--cores", "2", TARGET, "--configfile", *CONFIGS]
WAIT = 900  # seconds: generous, for a loaded 2-core machine


@pytest.fixture(scope="module")
def upstream(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The micro study's problem sets and base model, ready for the long run."""
    workdir = scratch_workflow(tmp_path_factory.mktemp("upstream"))
    (workdir / "long.yaml").write_text(LONG)
    result = snakemake(workdir, "results/problem_sets/easy/summary.json", configfiles=CONFIGS)
    assert result.returncode == 0, result.stderr[-3000:]
    return workdir


def _group_alive(pgid: int) -> bool:
    return any(group == pgid for _, _, group in live_processes())


def _wait_for(condition, what: str, process: subprocess.Popen | None = None) -> None:
    deadline = time.monotonic() + WAIT
    while not condition():
        assert process is None or process.poll() is None, f"the study ended before {what}"
        assert time.monotonic() < deadline, f"no {what} after {WAIT} s"
        time.sleep(0.2)


@pytest.mark.slow
def test_kill_9_mid_training_then_unlock_and_the_same_command_resumes(upstream: Path, tmp_path: Path) -> None:
    reference = shutil.copytree(upstream, tmp_path / "reference")
    killed = shutil.copytree(upstream, tmp_path / "killed")
    uninterrupted = subprocess.Popen(
        COMMAND, cwd=reference, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    with open(tmp_path / "killed.log", "w") as log:
        study = subprocess.Popen(
            COMMAND, cwd=killed, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
    run = killed / RUN

    def past_checkpoint_203() -> bool:
        steps = [e["step"] for e in read_events(run) if e["event"] == "step"]
        return bool(steps) and steps[-1] >= 210 and checkpoint_problem(run / "checkpoint-203") is None

    _wait_for(past_checkpoint_203, "training past checkpoint-203", study)
    configs = [killed / config for config in CONFIGS]
    live, _ = status(configs, directory=killed)
    assert live.loc[0, "state"] == "training" and 210 <= live.loc[0, "step"] < 2048
    os.killpg(study.pid, signal.SIGKILL)
    study.wait()
    _wait_for(lambda: not _group_alive(study.pid), "end of the killed process group")

    stopped, _ = status(configs, directory=killed)
    assert stopped.loc[0, "state"] == "stopped" and stopped.loc[0, "step"] >= 210
    assert not (run / "train_log.parquet").exists() and not (run / "checkpoints.json").exists()
    again = snakemake(killed, TARGET, configfiles=CONFIGS)
    assert again.returncode != 0 and "cannot be locked" in again.stdout + again.stderr
    assert snakemake(killed, "--unlock", configfiles=CONFIGS).returncode == 0
    resumed = snakemake(killed, TARGET, configfiles=CONFIGS)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    log = (killed / "logs/train_grpo/easy/bp4_n2_seed1.log").read_text()
    assert f"resuming from {RUN}/checkpoint-203" in log

    assert uninterrupted.wait(timeout=WAIT) == 0, uninterrupted.stderr.read()[-3000:]
    for table in [
        RUN / "train_log.parquet",
        *(RUN.parent.parent.parent / "evaluation/easy/bp4_n2_seed1").glob("*.parquet"),
    ]:
        pd.testing.assert_frame_equal(pd.read_parquet(killed / table), pd.read_parquet(reference / table))
    assert len(pd.read_parquet(killed / RUN / "train_log.parquet")) == 2048
    manifest = json.loads((run / "checkpoints.json").read_text())
    assert manifest == json.loads((reference / RUN / "checkpoints.json").read_text())
    assert [m["step"] for m in manifest] == [2, 20, 203, 2048]
    # the compute points evaluation reads keep their weights; only the newest keeps optimizer state
    assert all(weights_problem(run / m["path"]) is None for m in manifest)
    assert [is_weights_only(run / m["path"]) for m in manifest] == [True, True, True, False]
    assert checkpoint_problem(run / manifest[-1]["path"]) is None
    # nothing half-written anywhere: no temporary files left, every table readable
    assert not [p for p in (killed / "results").rglob("*.partial")]
    for path in (killed / "results").rglob("*.parquet"):
        pd.read_parquet(path)
    # the progress file tells both attempts: the killed one without an end, the resumed one finished
    starts = [e for e in read_events(run) if e["event"] == "start"]
    assert [s["resume_from"] for s in starts] == [None, "checkpoint-203"]
    assert [e["outcome"] for e in read_events(run) if e["event"] == "end"] == ["finished"]


HOLD = """import sys, time
from isocompute.training.runlock import TrainerLock
with TrainerLock(sys.argv[1]):
    print("held", flush=True)
    time.sleep(600)
"""


def test_a_new_attempt_refuses_to_start_beside_a_live_trainer_of_an_earlier_one(
    tiny_model: str, pool: pd.DataFrame, tmp_path: Path
) -> None:
    run_dir = tmp_path / "run"
    write_table(pool, tmp_path / "train.parquet")
    spec = TrainingSpec(1e-4, 64, 2, 8, 16, 2, "grpo", SamplingSpec(1.0, 1.0, 4))
    run = RunSpec(tiny_model, GridPoint("easy", 4, 2, 0), spec, Recipe(0.0, 0.0), str(run_dir))
    job = TrainingJob(
        run, str(tmp_path / "train.parquet"), str(tmp_path / "log.parquet"), str(tmp_path / "c.json")
    )
    # an orphan of an earlier attempt: a process that holds the run as a live trainer does
    orphan = subprocess.Popen([sys.executable, "-c", HOLD, str(run_dir)], stdout=subprocess.PIPE, text=True)
    try:
        assert orphan.stdout.readline() == "held\n"
        assert trainer_alive(run_dir)
        with pytest.raises(
            TrainerAlive,
            match=rf"still being written by a live trainer .*pid {orphan.pid} on {socket.gethostname()}",
        ):
            run_job(job)
        assert read_events(run_dir) == [] and not list(run_dir.glob("checkpoint-*"))
    finally:
        orphan.kill()
        orphan.wait()
    assert not trainer_alive(run_dir)
    run_job(job)
    assert len(pd.read_parquet(job.log_table)) == 2
