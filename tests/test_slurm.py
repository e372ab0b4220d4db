"""The micro study through `snakemake --profile slurm` on a real single-node SLURM cluster on localhost.

tests/slurm/cluster.py starts munged, slurmctld and slurmd (Debian's packages; `.ci/install-slurm`
installs them) with two fake GPUs, and the study runs with the repository's own profile, each training
job asking for both and running as two processes under `accelerate launch` (on the CPU: gloo). Its
fixed-B_problem study is the micro config's adaptive sweep: its rungs' training and evaluation are SLURM
jobs, its round's decision a local checkpoint on the submit host. The test checks that every non-local
job went through sbatch and completed, that exactly the training jobs were given the GPUs and ran
launched, and that the study is complete afterwards. Then one longer run of the full grid trains under a
time limit shorter than its training (SLURM's shortest, one minute): the job saves before SLURM would
kill it and exits non-zero, Snakemake resubmits it with the next attempt's longer `runtime`, and it
resumes to the same training table as an uninterrupted run. It skips where the daemons are not
installed or it is not root, and always stops what it started.
"""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd
import pytest
from conftest import ONE_RUN, REPO

from isocompute.plan.status import status
from isocompute.training.progress import attempts, read_events

MICRO = ".test/config_micro/config.yaml"
WORKFLOW_PARTS = ["Snakefile", "rules", "workflow", "config", "envs", ".test", "slurm", "profiles"]
# Test-only additions to the profile: check job states often (the plugin waits this long after a
# submission and after each check that saw a job finish, 10 s more after each that saw none), read them
# with squeue (the cluster keeps no accounting database but keeps finished jobs for MinJobAge=3600 s),
# fail at once instead of retrying, and a short wait for files on this one machine.
TEST_FLAGS = [
    "--slurm-init-seconds-before-status-checks",
    "1",
    "--slurm-status-command",
    "squeue",
    "--retries",
    "0",
    "--latency-wait",
    "5",
]
# Two training processes per run, one per fake GPU: the multi-GPU path (accelerate launch) through SLURM.
GPU_CONFIG = "training:\n  processes: 2\n  per_device_batch_max: 4\nresources:\n  train_grpo:\n    gpu: 2\n"
# The micro study through SLURM: about 3 min alone on 2 cores (docs/guide/development.md), 7 to 11 min on a
# 2-core machine shared with other work.
RUN_TIMEOUT = 900
# One run of 2,000 steps as two processes (about 90 s of training here) whose first job may take one
# minute and its resubmission ten; it stops 20 s (beyond one step and one save) before its limit, the
# time a loaded machine takes to leave the job after the save.
TIME_LIMITED = "training:\n  compute_max: 16000\n  time_limit_margin: 20\n" + ONE_RUN + (
    "resources:\n  train_grpo:\n    runtime: [1, 10]\n"
)
LIMITED_RUN = Path("results/train/easy/bp4_n2_seed1")
LIMITED_CONFIGS = [MICRO, "gpu.yaml", "timelimit.yaml"]
STUDY_CONFIGS = [MICRO, ".test/config_micro/adaptive.yaml", "gpu.yaml"]
ADAPTIVE_SUMMARY = "results/sweep/easy/bp4/summary.json"


def _load_cluster_module():
    spec = importlib.util.spec_from_file_location("isocompute_test_cluster", REPO / "tests/slurm/cluster.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


cluster_module = _load_cluster_module()


def _run_profile(cluster, workdir: Path, *args: str) -> str:
    """`snakemake --profile slurm ARGS` in the workdir, stopped with SIGINT (snakemake ignores SIGTERM)
    after RUN_TIMEOUT: its output, after asserting that it exited 0."""
    command = ["timeout", "-s", "INT", "-k", "60", str(RUN_TIMEOUT), "snakemake", "--profile", "slurm", *args]
    result = subprocess.run(
        command, cwd=workdir, env=cluster.env, capture_output=True, text=True, timeout=RUN_TIMEOUT + 120
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, f"snakemake exited {result.returncode}\n{output[-6000:]}\n{cluster.logs()}"
    return output


@pytest.fixture(scope="module")
def cluster():
    """A running single-node cluster with fake GPUs; stopped (jobs cancelled, daemons ended,
    /etc/slurm restored) however the test ends."""
    reason = cluster_module.unavailable()
    if reason:
        pytest.skip(reason)
    # munged's socket path must stay short, so the state lives in a short folder of its own
    root = Path(tempfile.mkdtemp(prefix="isocompute-slurm-"))
    # two fake GPUs, one per CPU of the 2-core machine, both for each training job's two processes
    local = cluster_module.LocalCluster(root, gpus=2)
    try:
        local.start()
        yield local
    finally:
        local.stop()
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="module")
def slurm_study(cluster, tmp_path_factory: pytest.TempPathFactory):
    """The micro study run to the end through the SLURM profile: (workdir, snakemake's output)."""
    workdir = tmp_path_factory.mktemp("slurm_study")
    for part in WORKFLOW_PARTS:
        source = REPO / part
        (shutil.copytree if source.is_dir() else shutil.copy)(source, workdir / part)
    (workdir / "gpu.yaml").write_text(GPU_CONFIG)
    return workdir, _run_profile(cluster, workdir, "--configfile", *STUDY_CONFIGS, *TEST_FLAGS)


def _submitted(output: str) -> dict[str, str]:
    """The jobs snakemake submitted to SLURM, from its output: SLURM job id -> rule. (Only the plugin 2.7 and
    later also print a `rule NAME:` block for a submitted job, so those are not counted on.)"""
    pattern = r"^Job \d+ has been submitted with SLURM jobid (\d+) \(log: \S*/rule_(\w+)/"
    return dict(re.findall(pattern, output, re.M))


def _queue(cluster, run_id: str) -> list[dict[str, str]]:
    """squeue's view of the run's jobs, finished ones included (kept for MinJobAge=3600 s)."""
    fields = ["JobID", "State", "Comment", "tres-per-job", "TimeLimit", "NumTasks", "NumCPUs"]
    out = subprocess.run(
        ["squeue", "--states=all", "--noheader", "--name", run_id, "-O", ",".join(f"{f}:|" for f in fields)],
        env=cluster.env,
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    ).stdout
    return [
        dict(zip(["id", "state", "comment", "tres", "time_limit", "tasks", "cpus"], line.split("|")))
        for line in out.splitlines()
        if line.strip()
    ]


@pytest.mark.slow
@pytest.mark.heavy
def test_every_cluster_job_went_through_sbatch_and_finished(cluster, slurm_study) -> None:
    workdir, output = slurm_study
    run_id = re.search(r"SLURM run ID: (\S+)", output).group(1)
    local_jobs = re.findall(r"^local(?:rule|checkpoint) (\w+):$", output, flags=re.M)
    local = set(local_jobs)
    steps = int(re.findall(r"^\d+ of (\d+) steps \(100%\) done$", output, flags=re.M)[-1])
    submitted = _submitted(output)
    remote = list(submitted.values())
    # every job that was not a localrule was submitted, each as its own SLURM job
    assert len(submitted) == steps - len(local_jobs), output[-4000:]
    assert {
        "make_problem_pool",
        "pretrain_base_model",
        "score_difficulty",
        "train_grpo_rung",
        "evaluate_run_rung",
    } <= set(remote)
    assert {"build_problem_sets", "all"} <= local and not local & set(remote)
    # the adaptive sweep's decision ran on the submit host
    assert "decide_adaptive_round" not in remote and re.search(r"^localcheckpoint decide_adaptive_round:$", output, re.M)

    jobs = {job["id"]: job for job in _queue(cluster, run_id)}
    assert set(jobs) == set(submitted), (jobs, submitted)
    assert {job["state"] for job in jobs.values()} == {"COMPLETED"}, jobs
    for job_id, rule in submitted.items():
        assert jobs[job_id]["comment"].startswith(f"rule_{rule}"), jobs[job_id]

    # slurmctld's own record of the finished jobs (jobcomp/filetxt): each exited 0
    finished = {record["JobId"]: record for record in cluster.finished_jobs()}
    assert set(submitted) <= set(finished)
    assert {finished[job_id]["ExitCode"] for job_id in submitted} == {"0:0"}


@pytest.mark.slow
@pytest.mark.heavy
def test_only_training_jobs_got_the_gpus_and_ran_launched(cluster, slurm_study) -> None:
    workdir, output = slurm_study
    run_id = re.search(r"SLURM run ID: (\S+)", output).group(1)
    jobs = _queue(cluster, run_id)
    training = [job for job in jobs if job["comment"].startswith("rule_train_grpo")]
    submitted_training = [rule for rule in _submitted(output).values() if rule in ("train_grpo", "train_grpo_rung")]
    assert training and len(training) == len(submitted_training)
    # `resources: gpu=2` became `sbatch --gpus=2`, which SLURM records as the job's TRES request
    assert {job["tres"] for job in training} == {"gres:gpu:2"}, training
    # as one task of `cpus_per_task` (1) CPUs, whose one step runs `accelerate launch`: the SLURM plugin 2.6.1
    # (Python < 3.13) would add `--ntasks-per-gpu=1`, two tasks and two CPUs, without `tasks_per_gpu: 0`
    assert {(job["tasks"].strip(), job["cpus"].strip()) for job in training} == {("1", "1")}, training
    # each run went through `accelerate launch` with two processes (its job file records the layout of its
    # last job: an adaptive run's rungs write the same file)
    job_files = list((workdir / "results/train").glob("*/*/job.json"))
    for job_file in job_files:
        assert json.loads(job_file.read_text())["job"]["run"]["launch"]["processes"] == 2
    rungs_trained = (workdir / "results/train").glob("*/*/rung*/checkpoints.json")
    assert {path.parent for path in job_files} == {path.parent.parent for path in rungs_trained} != set()
    # CPU rules dropped gpu=0 and asked for nothing
    assert {job["tres"] for job in jobs if job not in training} == {"N/A"}, jobs


@pytest.mark.slow
@pytest.mark.heavy
def test_the_study_is_complete_after_the_cluster_run(slurm_study) -> None:
    workdir, _ = slurm_study
    assert (workdir / "results/README.md").exists()
    result = subprocess.run(
        ["snakemake", "-n", "--cores", "1", "--configfile", *STUDY_CONFIGS],
        cwd=workdir,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Nothing to be done" in result.stdout + result.stderr


@pytest.fixture(scope="module")
def time_limited(cluster, slurm_study, tmp_path_factory: pytest.TempPathFactory):
    """The time-limited run through the SLURM profile, beside the same run uninterrupted on this machine:
    (workdir, reference workdir, snakemake's output)."""
    workdir, _ = slurm_study
    (workdir / "timelimit.yaml").write_text(TIME_LIMITED)
    reference = shutil.copytree(workdir, tmp_path_factory.mktemp("reference") / "workdir")
    target = str(LIMITED_RUN / "train_log.parquet")
    uninterrupted = subprocess.Popen(
        ["snakemake", "--cores", "2", target, "--configfile", *LIMITED_CONFIGS],
        cwd=reference,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    flags = [*TEST_FLAGS[: TEST_FLAGS.index("--retries")], "--retries", "2", *TEST_FLAGS[TEST_FLAGS.index("--retries") + 2 :]]
    output = _run_profile(cluster, workdir, target, "--configfile", *LIMITED_CONFIGS, *flags)
    assert uninterrupted.wait(timeout=RUN_TIMEOUT) == 0, uninterrupted.stderr.read()[-3000:]
    return workdir, reference, output


@pytest.mark.slow
@pytest.mark.heavy
def test_a_job_saves_before_its_time_limit_and_its_resubmission_resumes(cluster, time_limited) -> None:
    workdir, reference, output = time_limited
    run_id = re.search(r"SLURM run ID: (\S+)", output).group(1)
    training = sorted(
        (job for job in _queue(cluster, run_id) if job["comment"].startswith("rule_train_grpo")),
        key=lambda job: int(job["id"]),
    )
    # the first job, given one minute, ended itself (FAILED, exit 1: not killed as TIMEOUT by SLURM);
    # Snakemake resubmitted it with the second attempt's runtime, and that one completed
    assert [(job["state"], job["time_limit"]) for job in training] == [("FAILED", "1:00"), ("COMPLETED", "10:00")]
    finished = {record["JobId"]: record for record in cluster.finished_jobs()}
    assert (finished[training[0]["id"]]["JobState"], finished[training[0]["id"]]["ExitCode"]) == ("FAILED", "1:0")
    first, second = attempts(read_events(workdir / LIMITED_RUN))
    assert first.start["slurm_job_id"] == training[0]["id"] and first.outcome == "time_limit"
    saved = first.time_limit["step"]
    assert 0 < saved < 2000 and first.steps[-1]["step"] == saved
    assert first.end_time - first.start["time"] < 60  # it stopped before the minute was up
    assert second.start["slurm_job_id"] == training[1]["id"] and second.outcome == "finished"
    assert second.start["resume_from"] == f"checkpoint-{saved}" and second.steps[0]["step"] == saved + 1
    log = (workdir / "logs/train_grpo/easy/bp4_n2_seed1.log").read_text()
    assert f"resuming from {LIMITED_RUN}/checkpoint-{saved}" in log
    # the study ends with the training table of the run that was never interrupted
    table = pd.read_parquet(workdir / LIMITED_RUN / "train_log.parquet")
    pd.testing.assert_frame_equal(table, pd.read_parquet(reference / LIMITED_RUN / "train_log.parquet"))
    assert table["step"].tolist() == list(range(1, 2001))
    # status, from the files: trained; GPU-hours of both attempts on the job's two (fake) GPUs
    rows, _ = status([workdir / c for c in LIMITED_CONFIGS], directory=workdir)
    benchmark = pd.read_csv(workdir / "benchmarks/train_grpo/easy/bp4_n2_seed1.tsv", sep="\t")["s"].sum()
    assert rows.loc[0, "state"] == "trained"
    assert rows.loc[0, "gpu_hours"] == pytest.approx(2 * ((first.end_time - first.start["time"]) + benchmark) / 3600)


@pytest.mark.slow
@pytest.mark.heavy
def test_an_adaptive_sweep_runs_its_rungs_on_the_cluster(slurm_study) -> None:
    workdir, output = slurm_study
    submitted = _submitted(output)
    # n = 2 and 4 at rung 0 (n = 8's first step costs more than its cap), then at least the two arms kept
    rules = sorted(submitted.values())
    assert rules.count("train_grpo_rung") == rules.count("evaluate_run_rung") >= 4, rules
    summary = json.loads((workdir / ADAPTIVE_SUMMARY).read_text())
    assert summary["rollouts_spent"] == sum(arm["compute_reached"] for arm in summary["arms"]) <= 3 * 64
    assert (workdir / "results/fits/easy/bp4/fits.json").exists()
