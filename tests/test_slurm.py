"""The micro study through `snakemake --profile slurm` on a real single-node SLURM cluster on localhost.

tests/slurm/cluster.py starts munged, slurmctld and slurmd (Debian's packages; `.ci/install-slurm`
installs them) with two fake GPUs, and the study runs with the repository's own profile, each training
job asking for both and running as two processes under `accelerate launch` (on the CPU: gloo). The test
checks that every non-local job went through sbatch and completed, that exactly the training jobs were
given the GPUs and ran launched, and that the study is complete afterwards. It skips where
the daemons are not installed or it is not root, and always stops what it started.
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

import pytest

from conftest import REPO

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
RUN_TIMEOUT = 600


def _load_cluster_module():
    spec = importlib.util.spec_from_file_location("isocompute_test_cluster", REPO / "tests/slurm/cluster.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


cluster_module = _load_cluster_module()


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
    command = [
        "timeout", "-s", "INT", "-k", "60", str(RUN_TIMEOUT),  # snakemake ignores SIGTERM
        "snakemake", "--profile", "slurm", "--configfile", MICRO, "gpu.yaml", *TEST_FLAGS,
    ]  # fmt: skip
    result = subprocess.run(
        command, cwd=workdir, env=cluster.env, capture_output=True, text=True, timeout=RUN_TIMEOUT + 120
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, f"snakemake exited {result.returncode}\n{output[-6000:]}\n{cluster.logs()}"
    return workdir, output


def _queue(cluster, run_id: str) -> list[dict[str, str]]:
    """squeue's view of the run's jobs, finished ones included (kept for MinJobAge=3600 s)."""
    fields = ["JobID", "State", "Comment", "tres-per-job"]
    out = subprocess.run(
        ["squeue", "--states=all", "--noheader", "--name", run_id, "-O", ",".join(f"{f}:|" for f in fields)],
        env=cluster.env,
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    ).stdout
    return [
        dict(zip(["id", "state", "comment", "tres"], line.split("|")))
        for line in out.splitlines()
        if line.strip()
    ]


@pytest.mark.slow
def test_every_cluster_job_went_through_sbatch_and_finished(cluster, slurm_study) -> None:
    workdir, output = slurm_study
    run_id = re.search(r"SLURM run ID: (\S+)", output).group(1)
    remote = re.findall(r"^rule (\w+):$", output, flags=re.M)
    local = set(re.findall(r"^localrule (\w+):$", output, flags=re.M))
    submitted = dict(
        re.findall(r"^Job \d+ has been submitted with SLURM jobid (\d+) \(log: \S*/rule_(\w+)/", output, re.M)
    )
    # every job that was not a localrule was submitted, each as its own SLURM job
    assert len(submitted) == len(remote) and sorted(submitted.values()) == sorted(remote), output[-4000:]
    assert {
        "make_problem_pool",
        "pretrain_base_model",
        "score_difficulty",
        "train_grpo",
        "evaluate_run",
    } <= set(remote)
    assert {"build_problem_sets", "all"} <= local and not local & set(remote)

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
def test_only_training_jobs_got_the_gpus_and_ran_launched(cluster, slurm_study) -> None:
    workdir, output = slurm_study
    run_id = re.search(r"SLURM run ID: (\S+)", output).group(1)
    jobs = _queue(cluster, run_id)
    training = [job for job in jobs if job["comment"].startswith("rule_train_grpo")]
    assert training and len(training) == len(re.findall(r"^rule train_grpo:$", output, flags=re.M))
    # `resources: gpu=2` became `sbatch --gpus=2`, which SLURM records as the job's TRES request
    assert {job["tres"] for job in training} == {"gres:gpu:2"}, training
    # each run went through `accelerate launch` with two processes (its job file records the layout)
    for job_file in (workdir / "results/train").glob("*/*/job.json"):
        assert json.loads(job_file.read_text())["job"]["run"]["launch"]["processes"] == 2
    assert len(list((workdir / "results/train").glob("*/*/job.json"))) == len(training)
    # CPU rules dropped gpu=0 and asked for nothing
    assert {job["tres"] for job in jobs if job not in training} == {"N/A"}, jobs


@pytest.mark.slow
def test_the_study_is_complete_after_the_cluster_run(slurm_study) -> None:
    workdir, _ = slurm_study
    assert (workdir / "results/README.md").exists()
    result = subprocess.run(
        ["snakemake", "-n", "--cores", "1", "--configfile", MICRO, "gpu.yaml"],
        cwd=workdir,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Nothing to be done" in result.stdout + result.stderr
