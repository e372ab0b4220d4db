"""A run spread over several processes: the real `accelerate launch` on the CPU (gloo), and the device
layout and commands that put a run and its vLLM server on a GPU job's devices."""

import dataclasses
import json
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
import torch
from conftest import REPO

from isocompute.files import write_table
from isocompute.sampling.prompts import ContextTooShort
from isocompute.study.grid import GridPoint
from isocompute.study.specs import LaunchSpec, Recipe, RolloutEngine, SamplingSpec, TrainingSpec
from isocompute.training.checkpoints import checkpoint_problem, is_weights_only, saved_world_size
from isocompute.training.launch import (
    TrainingJob,
    WorldSizeChanged,
    accelerate_command,
    check_world_size,
    cpu_environment,
    job_from_dict,
    job_to_dict,
    needs_launcher,
    run_job,
    server_command,
    split_devices,
)
from isocompute.training.progress import attempts, read_events
from isocompute.training.timelimit import TimeLimitReached
from isocompute.training.run_spec import RunSpec
from isocompute.training.trainer import train_run

SAMPLING = SamplingSpec(temperature=1.0, top_p=1.0, max_new_tokens=4)
SPEC = TrainingSpec(1e-4, 64, 2, 16, 48, 3, "grpo", SAMPLING)
SERVER = RolloutEngine("server", 0.8, 2, 4, "token_truncate", 2.0)


def job(
    tmp_path: Path, train_path: str, model: str, processes: int, spec: TrainingSpec = SPEC
) -> TrainingJob:
    layout = LaunchSpec(
        processes, per_device_batch_max=2, activation_checkpointing=False, accelerate_config=None
    )
    run = RunSpec(
        model, GridPoint("easy", 4, 2, 0), spec, Recipe(0.01, 0.001), str(tmp_path / "run"), "exact", layout
    )
    return TrainingJob(
        run, train_path, str(tmp_path / "train_log.parquet"), str(tmp_path / "checkpoints.json")
    )


def test_a_rollout_context_that_cannot_hold_the_longest_prompt_and_its_completion_stops_the_job_first(
    tiny_model: str, pool: pd.DataFrame, tmp_path: Path
) -> None:
    train_path = tmp_path / "train.parquet"
    write_table(pool, train_path)
    longest = max(pool["prompt"], key=len)  # the built-in tokenizer: one token a character
    engine = RolloutEngine("colocate", 0.3, 1, 1, "token_truncate", 2.0, max_model_len=len(longest) + 3)
    tight = job(tmp_path, str(train_path), tiny_model, 2, dataclasses.replace(SPEC, rollout_engine=engine))
    with pytest.raises(ContextTooShort) as refused:
        run_job(tight)
    message = str(refused.value)
    assert f"training.vllm.max_model_len={len(longest) + 3}" in message and repr(longest) in message
    assert "sampling.max_new_tokens=4" in message
    assert attempts(read_events(tight.run.run_dir)) == []  # stopped before an attempt, let alone a process


def test_job_round_trips_through_json(tmp_path: Path) -> None:
    original = job(
        tmp_path, "train.parquet", "model", 8, TrainingSpec(1e-6, 1024, 10, 1, 9, 3, "grpo", SAMPLING, SERVER)
    )
    assert job_from_dict(json.loads(json.dumps(job_to_dict(original)))) == original
    assert needs_launcher(original.run) and not needs_launcher(job(tmp_path, "t", "m", 1).run)


def test_devices_split_between_training_and_the_vllm_server() -> None:
    assert split_devices(["0", "1", "2", "3", "4", "5"], 4, 2) == (["0", "1", "2", "3"], ["4", "5"])
    assert split_devices(["3", "7"], 2, 0) == (["3", "7"], [])
    with pytest.raises(RuntimeError, match=r"training.processes=4 plus training.vllm.server_gpus=2"):
        split_devices(["0", "1", "2", "3"], 4, 2)


def test_accelerate_and_vllm_server_commands() -> None:
    plain = accelerate_command(
        LaunchSpec(8, 4, True, None), Path("run/job.json"), on_gpu=True, main_port=29612
    )
    assert plain[:3] == [sys.executable, "-m", "accelerate.commands.launch"]
    assert plain[plain.index("--num_processes") + 1] == "8" and "--multi_gpu" in plain
    assert (
        plain[plain.index("--mixed_precision") + 1] == "bf16"
        and plain[plain.index("--main_process_port") + 1] == "29612"
    )
    assert plain[-3:] == ["-m", "isocompute.training.launch", "run/job.json"]
    zero3 = accelerate_command(
        LaunchSpec(8, 4, True, "config/accelerate/deepspeed_zero3.yaml"), Path("j"), True, 29613
    )
    assert zero3[zero3.index("--config_file") + 1] == "config/accelerate/deepspeed_zero3.yaml"
    assert "--multi_gpu" not in zero3 and "--mixed_precision" not in zero3
    # On a CPU the config file's bf16 is overridden: DeepSpeed would stop at its mismatch with the trainer's.
    on_cpu = accelerate_command(LaunchSpec(2, 4, False, "config/accelerate/deepspeed_zero3.yaml"), Path("j"), False, 1)
    assert on_cpu[on_cpu.index("--mixed_precision") + 1] == "no" and "--config_file" in on_cpu
    assert cpu_environment(LaunchSpec(2, 4, False, ZERO3))["DS_ACCELERATOR"] == "cpu"
    assert "DS_ACCELERATOR" not in cpu_environment(LaunchSpec(2, 4, False, None))
    server = server_command("Qwen/Qwen2.5-7B-Instruct", SERVER, 41000)
    assert server[:3] == [sys.executable, "-m", "trl.scripts.vllm_serve"]
    options = dict(zip(server[3::2], server[4::2]))
    # The colocated memory share (0.8 here) is not the server's: it owns its GPUs at vllm-serve's default.
    assert options == {
        "--model": "Qwen/Qwen2.5-7B-Instruct",
        "--tensor_parallel_size": "2",
        "--data_parallel_size": "2",
        "--host": "127.0.0.1",
        "--port": "41000",
    }
    bounded = server_command("m", dataclasses.replace(SERVER, max_model_len=10240), 41000)
    assert dict(zip(bounded[3::2], bounded[4::2]))["--max_model_len"] == "10240"


@pytest.fixture(scope="module")
def launched(tiny_model: str, pool: pd.DataFrame, tmp_path_factory: pytest.TempPathFactory) -> TrainingJob:
    """A run trained as two processes under `accelerate launch`, uninterrupted."""
    tmp_path = tmp_path_factory.mktemp("launched")
    train_path = tmp_path / "train.parquet"
    write_table(pool, train_path)
    two = job(tmp_path, str(train_path), tiny_model, processes=2)
    run_job(two)
    return two


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the CPU (gloo) launch")
def test_two_processes_under_accelerate_launch_train_and_resume(
    launched: TrainingJob, tiny_model: str, tmp_path: Path
) -> None:
    two = launched
    table = pd.read_parquet(two.log_table)
    manifest = json.loads(Path(two.checkpoints).read_text())
    # B = 8 rollouts per step over 2 processes with at most 2 completions per device: 2 accumulation steps.
    assert table["step"].tolist() == list(range(1, 7)) and table["compute_rollouts"].tolist() == [
        8 * s for s in range(1, 7)
    ]
    assert [m["step"] for m in manifest] == [2, 3, 6]
    saved = torch.load(Path(two.run.run_dir) / "checkpoint-6" / "training_args.bin", weights_only=False)
    assert (saved.per_device_train_batch_size, saved.gradient_accumulation_steps, saved.world_size) == (
        2,
        2,
        2,
    )
    state = json.loads((Path(two.run.run_dir) / "checkpoint-6" / "trainer_state.json").read_text())
    assert state["global_step"] == 6
    # Only the newest checkpoint keeps both ranks' resume state; the older compute points their weights.
    run_dir = Path(two.run.run_dir)
    assert [is_weights_only(run_dir / m["path"]) for m in manifest] == [True, True, False]
    assert checkpoint_problem(run_dir / "checkpoint-6") is None
    # Stopped after checkpoint-3 (as a job preempted before checkpoint-6 leaves it: checkpoint-2 thinned,
    # checkpoint-3 whole), then relaunched: both ranks resume from checkpoint-3.
    stopped = job(tmp_path, two.train_path, tiny_model, processes=2)
    run_job(dataclasses.replace(stopped, run=dataclasses.replace(stopped.run, until_step=3)))
    assert is_weights_only(tmp_path / "run" / "checkpoint-2")
    assert checkpoint_problem(tmp_path / "run" / "checkpoint-3") is None
    run_job(stopped)
    assert json.loads((tmp_path / "run" / "job.json").read_text())["resume"].endswith("checkpoint-3")
    resumed = pd.read_parquet(stopped.log_table)
    assert resumed["step"].tolist() == list(range(1, 7))
    pd.testing.assert_frame_equal(resumed, table)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the CPU (gloo) launch")
def test_launched_ranks_save_one_step_before_the_time_limit_and_the_next_job_resumes(
    launched: TrainingJob, tiny_model: str, tmp_path: Path
) -> None:
    two = job(tmp_path, launched.train_path, tiny_model, processes=2)
    run_dir = Path(two.run.run_dir)
    with pytest.raises(TimeLimitReached, match=r"saved checkpoint-1 \(step 1 of 6\) before the job's time limit"):
        run_job(two, deadline=time.time() - 1)
    # both ranks stopped after the same step and saved it together: one whole checkpoint, both RNG states
    assert [p.name for p in run_dir.glob("checkpoint-*")] == ["checkpoint-1"]
    assert checkpoint_problem(run_dir / "checkpoint-1") is None
    assert sorted(p.name for p in (run_dir / "checkpoint-1").glob("rng_state*")) == ["rng_state_0.pth", "rng_state_1.pth"]
    assert not Path(two.log_table).exists()
    run_job(two)
    pd.testing.assert_frame_equal(pd.read_parquet(two.log_table), pd.read_parquet(launched.log_table))
    first, second = attempts(read_events(run_dir))
    assert (first.start["resume_from"], first.time_limit["step"], first.outcome) == (None, 1, "time_limit")
    assert (second.start["resume_from"], second.outcome) == ("checkpoint-1", "finished")
    assert [s["step"] for s in first.steps + second.steps] == list(range(1, 7))


ZERO3 = str(REPO / "config" / "accelerate" / "deepspeed_zero3.yaml")


def as_deepspeed_saved_it(checkpoint: Path, ranks: int) -> None:
    """Gives a checkpoint DeepSpeed's own files for `ranks` data-parallel ranks, as ZeRO-3 saves them."""
    engine = checkpoint / f"global_step{checkpoint.name.split('-')[1]}"
    engine.mkdir()
    for rank in range(ranks):
        for kind in ("model", "optim"):
            torch.save({}, engine / f"zero_pp_rank_{rank}_mp_rank_00_{kind}_states.pt")
    (checkpoint / "latest").write_text(engine.name)


def test_a_deepspeed_checkpoint_is_resumed_only_on_its_world_size_and_refused_before_training(
    tiny_model: str, pool: pd.DataFrame, tmp_path: Path
) -> None:
    train_path = tmp_path / "train.parquet"
    write_table(pool, train_path)
    one = job(tmp_path, str(train_path), tiny_model, processes=1)
    # Stopped at checkpoint-3 (a rung's end, or a job preempted there) of a run that goes on to step 6.
    at_three = dataclasses.replace(one.run, until_step=3)
    train_run(at_three, pool)
    run_dir = Path(one.run.run_dir)
    assert saved_world_size(run_dir / "checkpoint-3") is None  # no DeepSpeed
    as_deepspeed_saved_it(run_dir / "checkpoint-3", ranks=2)
    assert checkpoint_problem(run_dir / "checkpoint-3") is None and saved_world_size(run_dir / "checkpoint-3") == 2
    on_four = dataclasses.replace(one.run.launch, processes=4, accelerate_config=ZERO3)
    events = read_events(run_dir)
    with pytest.raises(WorldSizeChanged) as refused:
        run_job(dataclasses.replace(one, run=dataclasses.replace(one.run, launch=on_four)))
    message = str(refused.value)
    assert "on 2 training processes" in message and "training.processes=4" in message
    assert "training.processes: 2" in message and "ds_to_universal" in message
    assert read_events(run_dir) == events  # refused before an attempt started
    check_world_size(str(run_dir / "checkpoint-3"), dataclasses.replace(on_four, processes=2), 6)
    check_world_size(str(run_dir / "checkpoint-3"), dataclasses.replace(on_four, accelerate_config=None), 6)
    # Where the job's training ends at the checkpoint, nothing is refused and nothing launched (DeepSpeed is
    # not even installed here): its outputs are written from the checkpoint's trainer state.
    run_job(dataclasses.replace(one, run=dataclasses.replace(at_three, launch=on_four)))
    assert attempts(read_events(run_dir))[-1].outcome == "finished"
    assert pd.read_parquet(one.log_table)["step"].tolist() == [1, 2, 3]
