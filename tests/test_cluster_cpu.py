"""The cluster's code path on a CPU, for real: config/presets/cluster_cpu.yaml through the real Snakefile in
the environment `.ci/install-cluster-cpu` makes (`.venv-cluster-cpu`: DeepSpeed, vLLM's CPU build, the
cluster's pins). Each run trains as two processes under `accelerate launch` with the project's ZeRO-3
config and a vLLM engine colocated on each rank (TRL's colocate mode, truncated importance sampling);
bucketing and evaluation sample with vLLM from the thinned checkpoints.

The tests check what only running shows: vLLM samples from the trainer's current weights (TRL's logged
log-probability difference stays at bf16 rounding, far below what a vLLM left on the base weights would
show), the importance-sampling ratios are finite, older compute points are thinned to gathered weights
that evaluation read, a `kill -9` of the training job resumes at the same world size to the
uninterrupted run's training table, a resume on another number of processes is refused before any
process starts and a finished run never is. They skip, naming the script, where the environment is
missing.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pandas as pd
import pytest
import torch
from conftest import REPO, copy_of_study, live_processes
from test_slurm import TEST_FLAGS, _queue, cluster  # noqa: F401 (cluster: the test cluster fixture)
from test_workflow import scratch_workflow
from transformers import AutoModelForCausalLM, AutoTokenizer

from isocompute.training.checkpoints import checkpoint_problem, is_weights_only, saved_world_size, weights_problem
from isocompute.training.progress import read_events

ENV = REPO / ".venv-cluster-cpu"
PRESET = "config/presets/cluster_cpu.yaml"
RESULTS = Path("results_cluster_cpu")
RUNS = ("bp4_n2_seed0", "bp4_n4_seed0")
# The run killed and resumed: B = 8, 8 steps, compute points at steps 2, 4 and 8.
KILLED = RESULTS / "train/easy/bp4_n2_seed0"
TARGET = str(KILLED / "train_log.parquet")
ONE_PROCESS = "training:\n  processes: 1\n"
WAIT = 900  # seconds, for a loaded 2-core machine
# TRL's mean |log p_trainer - log p_vLLM| over the sampled tokens of a step. vLLM's CPU build runs the fp32
# model in bf16, which alone gives about 0.003 (measured: 0.0025-0.006 per step).
SYNCED = 0.02

pytestmark = [
    pytest.mark.skipif(
        not (ENV / "bin" / "snakemake").exists(), reason=".venv-cluster-cpu is missing (run .ci/install-cluster-cpu)"
    ),
    pytest.mark.slow,
    pytest.mark.heavy,
]


def in_env(workdir: Path, *args: str, configfiles: tuple[str, ...] = (PRESET,)) -> subprocess.CompletedProcess[str]:
    """Snakemake of the cluster environment in `workdir`, on this checkout's src/."""
    return subprocess.run(
        [*snakemake_command(*args), "--configfile", *configfiles],
        cwd=workdir,
        capture_output=True,
        text=True,
        timeout=2 * WAIT,
        env=environment(),
    )


def snakemake_command(*args: str) -> list[str]:
    return [str(ENV / "bin" / "snakemake"), "--cores", "2", *args]


def environment() -> dict[str, str]:
    return {**os.environ, "PATH": f"{ENV / 'bin'}:{os.environ['PATH']}", "PYTHONPATH": str(REPO / "src")}


@pytest.fixture(scope="module")
def cluster_study(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The preset's whole study, run once in a scratch copy of the workflow."""
    workdir = scratch_workflow(tmp_path_factory.mktemp("cluster_cpu"))
    started = time.monotonic()
    result = in_env(workdir)
    assert result.returncode == 0, result.stderr[-5000:]
    print(f"cluster_cpu preset: {time.monotonic() - started:.0f} s")
    return workdir


def test_the_runs_trained_as_two_zero3_processes_with_vllm_colocated(cluster_study: Path) -> None:
    for run in RUNS:
        manifest = json.loads((cluster_study / RESULTS / f"train/easy/{run}/checkpoints.json").read_text())
        newest = cluster_study / RESULTS / f"train/easy/{run}" / manifest[-1]["path"]
        # DeepSpeed's own record of the world size: one optimizer shard per rank, in the folder `latest` names
        assert saved_world_size(newest) == 2
        args = torch.load(newest / "training_args.bin", weights_only=False)
        assert (args.use_vllm, args.vllm_mode, args.vllm_importance_sampling_correction) == (True, "colocate", True)
        assert args.world_size == 2 and not args.bf16
    figures = list((cluster_study / RESULTS / "figures").rglob("*.png"))
    assert figures and (cluster_study / RESULTS / "fits").is_dir()


def _stale_divergence(study: Path, run: str, checkpoint: str) -> float:
    """Mean |log p_checkpoint - log p_base| over tokens the checkpoint samples from training prompts: what
    TRL's logged difference would read at that step had vLLM kept the base model's weights."""
    torch.manual_seed(0)
    base_path = study / RESULTS / "base_model/model"
    tokenizer = AutoTokenizer.from_pretrained(base_path)
    base = AutoModelForCausalLM.from_pretrained(base_path).eval()
    trained = AutoModelForCausalLM.from_pretrained(study / RESULTS / f"train/easy/{run}" / checkpoint).eval()
    prompts = pd.read_parquet(study / RESULTS / "problem_sets/easy/train.parquet")["prompt"].tolist()
    differences = []
    with torch.no_grad():
        for prompt in prompts:
            ids = tokenizer(prompt, return_tensors="pt")["input_ids"]
            sequence = trained.generate(ids, do_sample=True, max_new_tokens=4, pad_token_id=tokenizer.pad_token_id)
            completion = sequence[:, ids.size(1) :]
            if not completion.numel():
                continue

            def logps(model: torch.nn.Module) -> torch.Tensor:
                logits = model(sequence).logits[:, ids.size(1) - 1 : -1].float()
                return torch.log_softmax(logits, -1).gather(-1, completion.unsqueeze(-1)).flatten()

            differences.append((logps(trained) - logps(base)).abs())
    return float(torch.cat(differences).mean())


def test_vllm_samples_from_the_trainers_weights_and_importance_ratios_are_finite(cluster_study: Path) -> None:
    for run in RUNS:
        table = pd.read_parquet(cluster_study / RESULTS / f"train/easy/{run}/train_log.parquet")
        assert table["sampling_logp_diff_mean"].notna().all()
        assert (table["sampling_logp_diff_mean"] < SYNCED).all(), table["sampling_logp_diff_mean"].tolist()
        ratios = table[["is_ratio_min", "is_ratio_max"]].to_numpy()
        assert torch.isfinite(torch.tensor(ratios)).all() and (ratios > 0).all() and (ratios <= 2.0).all()
        # The check could fail: a vLLM that kept the base weights would differ far more by the last step.
        manifest = json.loads((cluster_study / RESULTS / f"train/easy/{run}/checkpoints.json").read_text())
        stale = _stale_divergence(cluster_study, run, manifest[-1]["path"])
        last = float(table["sampling_logp_diff_mean"].iloc[-1])
        print(f"{run}: logged sampling log-prob difference {table['sampling_logp_diff_mean'].round(4).tolist()}, "
              f"stale weights would give {stale:.4f} at step {len(table)}")
        assert stale > 4 * max(last, SYNCED / 4)


def test_older_compute_points_are_thinned_to_weights_that_vllm_evaluation_read(cluster_study: Path) -> None:
    for run in RUNS:
        run_dir = cluster_study / RESULTS / f"train/easy/{run}"
        manifest = json.loads((run_dir / "checkpoints.json").read_text())
        paths = [run_dir / entry["path"] for entry in manifest]
        assert len(paths) == 3
        for path in paths[:-1]:
            assert is_weights_only(path) and weights_problem(path) is None
            assert not list(path.glob("global_step*")) and not (path / "latest").exists()
            assert not list(path.glob("rng_state*")) and not list(path.glob("zero_to_*.py"))
        assert checkpoint_problem(paths[-1]) is None and list(paths[-1].glob("global_step*"))
        evals = pd.read_parquet(cluster_study / RESULTS / f"evaluation/easy/{run}/evals.parquet")
        assert sorted(evals["step"]) == [entry["step"] for entry in manifest]
        log = (cluster_study / f"logs/results_cluster_cpu/evaluate_run/easy/{run}.log").read_text()
        assert "vllm" in log.lower()


def _children() -> dict[int, list[int]]:
    """Every live process's children, from /proc."""
    children: dict[int, list[int]] = {}
    for pid, parent, _ in live_processes():
        children.setdefault(parent, []).append(pid)
    return children


def kill_tree(root: int) -> None:
    """`kill -9` of a process and all its descendants, as a lost node ends a job. Its process group is not
    enough: torch's elastic agent (under `accelerate launch`) starts each rank in a session of its own, and
    ranks that outlive a killed group go on training (seen: they finished the run). The tree is stopped
    first, so that nothing forks between finding it and killing it."""
    stopped: set[int] = set()
    while True:
        children, todo, found = _children(), [root], []
        while todo:
            pid = todo.pop()
            found.append(pid)
            todo += children.get(pid, [])
        new = [pid for pid in found if pid not in stopped]
        if not new:
            break
        for pid in new:
            _signal(pid, signal.SIGSTOP)
        stopped.update(new)
    for pid in stopped:
        _signal(pid, signal.SIGKILL)


def _signal(pid: int, signum: int) -> None:
    try:
        os.kill(pid, signum)
    except ProcessLookupError:
        pass


@pytest.fixture(scope="module")
def killed_and_resumed(cluster_study: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """One run of a copy of the finished study trained again: killed with `kill -9` of its whole process
    group after its first compute point, refused on one process, then resumed on two; then, finished,
    written again on one process."""
    workdir = copy_of_study(cluster_study, tmp_path_factory.mktemp("killed") / "workdir")
    run = workdir / KILLED
    shutil.rmtree(run)
    seen: dict[str, object] = {}
    with open(workdir / "killed.log", "w") as log:
        study = subprocess.Popen(
            [*snakemake_command(TARGET), "--configfile", PRESET],
            cwd=workdir, env=environment(), stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip

    def step_past_first_compute_point() -> bool:
        steps = [e["step"] for e in read_events(run) if e["event"] == "step"] if run.is_dir() else []
        return bool(steps) and steps[-1] >= 3

    deadline = time.monotonic() + WAIT
    while not step_past_first_compute_point():
        assert study.poll() is None, "the training job ended before it was killed"
        assert time.monotonic() < deadline, f"no step 3 after {WAIT} s"
        time.sleep(0.05)
    kill_tree(study.pid)
    study.wait()
    seen["killed_at"] = [e["step"] for e in read_events(run) if e["event"] == "step"][-1]
    seen["checkpoints_after_kill"] = sorted(p.name for p in run.glob("checkpoint-*"))
    assert not (run / "train_log.parquet").exists()
    assert in_env(workdir, "--unlock").returncode == 0

    (workdir / "one.yaml").write_text(ONE_PROCESS)
    events = read_events(run)
    refused = in_env(workdir, TARGET, configfiles=(PRESET, "one.yaml"))
    seen["refused"] = refused
    seen["events_unchanged_by_refusal"] = read_events(run) == events
    log_path = workdir / "logs/results_cluster_cpu/train_grpo/easy/bp4_n2_seed0.log"
    seen["refusal_log"] = log_path.read_text()

    resumed = in_env(workdir, TARGET)
    assert resumed.returncode == 0, resumed.stderr[-5000:]
    seen["resume_log"] = log_path.read_text()
    seen["table"] = pd.read_parquet(run / "train_log.parquet")
    seen["starts"] = [e for e in read_events(run) if e["event"] == "start"]

    finished = in_env(workdir, TARGET, "--forcerun", "train_grpo", configfiles=(PRESET, "one.yaml"))
    seen["finished"] = finished
    seen["finished_log"] = log_path.read_text()
    seen["finished_table"] = pd.read_parquet(run / "train_log.parquet") if finished.returncode == 0 else None
    return seen


def test_kill_9_of_the_training_job_then_the_same_command_resumes_at_the_same_world_size(
    cluster_study: Path, killed_and_resumed: dict[str, object]
) -> None:
    seen = killed_and_resumed
    print(f"killed after step {seen['killed_at']}, checkpoints left: {seen['checkpoints_after_kill']}")
    print(*[line for line in seen["resume_log"].splitlines() if "resuming from" in line], sep="\n")
    assert 3 <= seen["killed_at"] < 8 and "checkpoint-2" in seen["checkpoints_after_kill"]
    resumed_from = seen["starts"][-1]["resume_from"]
    assert resumed_from is not None and resumed_from.startswith("checkpoint-")
    assert f"resuming from {KILLED}/{resumed_from}" in seen["resume_log"]
    # The uninterrupted run's table, exactly: DeepSpeed's state, TRL's RNG states and vLLM's sampling (in the
    # rank's own process, from torch's global generator that the checkpoint restores) all resume.
    uninterrupted = pd.read_parquet(cluster_study / TARGET)
    pd.testing.assert_frame_equal(seen["table"], uninterrupted)


def test_a_resume_on_one_process_is_refused_before_any_process_starts_and_a_finished_run_never_is(
    killed_and_resumed: dict[str, object],
) -> None:
    seen = killed_and_resumed
    refused = seen["refused"]
    assert refused.returncode != 0
    log = seen["refusal_log"]
    print(*[line for line in log.splitlines() if "was saved by DeepSpeed" in line], sep="\n")
    assert "was saved by DeepSpeed on 2 training processes" in log and "training.processes=1" in log
    assert "[rank" not in log  # no training process wrote to the job's log
    assert seen["events_unchanged_by_refusal"]  # no attempt started
    finished = seen["finished"]
    assert finished.returncode == 0, finished.stderr[-5000:]
    assert "was saved by DeepSpeed" not in seen["finished_log"]
    pd.testing.assert_frame_equal(seen["finished_table"], seen["table"])


# The training job of one run of the finished study again, through the repository's SLURM profile on the test
# cluster (tests/slurm/cluster.py, two fake GPUs), asking for both.
SLURM_GPUS = "resources:\n  train_grpo:\n    gpu: 2\n"
SLURM_RUN = RESULTS / "train/easy/bp4_n4_seed0"


@pytest.fixture(scope="module")
def through_slurm(cluster, cluster_study: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """(snakemake's output, the SLURM jobs of its run) for the preset's bp4_n4 run trained again as a SLURM
    job with `--gpus=2`."""
    workdir = copy_of_study(cluster_study, tmp_path_factory.mktemp("slurm") / "workdir")
    shutil.copytree(REPO / "slurm", workdir / "slurm")
    shutil.rmtree(workdir / SLURM_RUN)
    (workdir / "gpus.yaml").write_text(SLURM_GPUS)
    env = {**cluster.env, "PATH": f"{ENV / 'bin'}:{cluster.env['PATH']}", "PYTHONPATH": str(REPO / "src")}
    command = ["timeout", "-s", "INT", "-k", "60", str(WAIT), str(ENV / "bin" / "snakemake"), "--profile", "slurm"]
    result = subprocess.run(
        [*command, str(SLURM_RUN / "train_log.parquet"), "--configfile", PRESET, "gpus.yaml", *TEST_FLAGS],
        cwd=workdir, env=env, capture_output=True, text=True, timeout=WAIT + 120,
    )  # fmt: skip
    output = result.stdout + result.stderr
    assert result.returncode == 0, f"{output[-6000:]}\n{cluster.logs()}"
    run_id = re.search(r"SLURM run ID: (\S+)", output).group(1)
    return {"output": output, "jobs": _queue(cluster, run_id), "workdir": workdir}


def test_the_training_job_through_slurm_asks_for_two_gpus_and_trains_as_before(
    through_slurm: dict[str, object], cluster_study: Path
) -> None:
    jobs = through_slurm["jobs"]
    print(f"SLURM jobs: {jobs}")
    assert [job["comment"].split("_wildcards")[0] for job in jobs] == ["rule_train_grpo"], jobs
    assert jobs[0]["tres"] == "gres:gpu:2" and jobs[0]["state"] == "COMPLETED", jobs
    workdir = through_slurm["workdir"]
    job_file = json.loads((workdir / SLURM_RUN / "job.json").read_text())
    assert job_file["job"]["run"]["launch"]["processes"] == 2
    start = [e for e in read_events(workdir / SLURM_RUN) if e["event"] == "start"][-1]
    assert start["gpus"] == 2 and start["slurm_job_id"] == jobs[0]["id"], start
    pd.testing.assert_frame_equal(
        pd.read_parquet(workdir / SLURM_RUN / "train_log.parquet"),
        pd.read_parquet(cluster_study / SLURM_RUN / "train_log.parquet"),
    )
