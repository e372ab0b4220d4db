"""Running one grid point on the devices its job was given: in the job's own process, or under
`accelerate launch` (several GPUs, DeepSpeed ZeRO) beside a `trl vllm-serve` server (TRL's server mode).

The job holds the run folder's lock (`runlock`: no second trainer beside a live one of an earlier
attempt), decides once whether to resume (`training.resume_point`) and when to stop before its SLURM
time limit (`timelimit`), writes those decisions with the whole job to `job.json` in the run folder, and
every training process reads it, so ranks never race on the run folder. Each attempt is recorded in the
run's progress file. Rank 0 writes the run's outputs, each under a temporary name and then renamed.

Run as `python -m isocompute.training.launch JOB.json`: the entry point `accelerate launch` starts on every rank.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import torch
import yaml
from accelerate import PartialState
from transformers import AutoConfig, AutoTokenizer

from isocompute.errors import IsoComputeError
from isocompute.sampling.generation import CPU_VLLM_ENVIRONMENT
from isocompute.sampling.prompts import check_context, prompt_token_ids
from isocompute.files import write_json
from isocompute.study.grid import GridPoint, total_steps
from isocompute.study.specs import LaunchSpec, Recipe, RolloutEngine, SamplingSpec, TrainingSpec
from isocompute.training import runlock
from isocompute.training.progress import append_event, attempts, read_events, start_attempt
from isocompute.training.timelimit import TimeLimitReached
from isocompute.training.checkpoints import saved_world_size, step_of
from isocompute.training.resume import resume_point
from isocompute.training.run_spec import RunSpec
from isocompute.training.table import write_outputs
from isocompute.training.trainer import run_training
from isocompute.training.trl_args import last_step

JOB_FILE = "job.json"


@dataclass(frozen=True)
class TrainingJob:
    """One `train_grpo` job: its run, the training problems it reads and the outputs it writes, in a form
    every rank can read back from `job.json`."""

    run: RunSpec
    train_path: str
    log_table: str
    checkpoints: str


def job_to_dict(job: TrainingJob) -> dict[str, Any]:
    return dataclasses.asdict(job)


def job_from_dict(data: dict[str, Any]) -> TrainingJob:
    """The inverse of `job_to_dict`, rebuilding the nested specs."""
    run = dict(data["run"])
    spec = dict(run["spec"])
    spec["sampling"] = SamplingSpec(**spec["sampling"])
    spec["rollout_engine"] = RolloutEngine(**spec["rollout_engine"]) if spec["rollout_engine"] else None
    rebuilt = RunSpec(
        **{
            **run,
            "point": GridPoint(**run["point"]),
            "spec": TrainingSpec(**spec),
            "recipe": Recipe(**run["recipe"]),
            "launch": LaunchSpec(**{**run["launch"], "report_to": tuple(run["launch"]["report_to"])}),
        }
    )
    return TrainingJob(**{**data, "run": rebuilt})


def needs_launcher(run: RunSpec) -> bool:
    """Several training processes, an accelerate config (DeepSpeed ZeRO, FSDP: also on one process), or
    a vLLM server beside them need `accelerate launch`."""
    engine = run.spec.rollout_engine
    return (
        run.launch.processes > 1
        or run.launch.accelerate_config is not None
        or (engine is not None and engine.own_gpus > 0)
    )


class WorldSizeChanged(IsoComputeError, RuntimeError):
    """A DeepSpeed checkpoint that this job would resume on another data-parallel world size."""


def uses_deepspeed(launch: LaunchSpec) -> bool:
    """Whether the run trains under DeepSpeed: its accelerate config's `distributed_type`."""
    if launch.accelerate_config is None:
        return False
    settings = yaml.safe_load(Path(launch.accelerate_config).read_text()) or {}
    return str(settings.get("distributed_type", "")).upper() == "DEEPSPEED"


def check_world_size(resume: str | None, launch: LaunchSpec, stop_step: int) -> None:
    """Refuse, before any process starts, to go on from a checkpoint saved under DeepSpeed on another number
    of training processes: ZeRO partitions the optimizer state by data-parallel rank and DeepSpeed refuses it
    at another world size, after the job's allocation has started and its model has loaded. Only where
    training is left (`resume` below `stop_step`, where this job's training stops): a finished run's outputs are
    written from its trainer state alone, on any number of processes. A run without DeepSpeed (one process,
    or DDP) resumes on any number."""
    if resume is None or step_of(resume) >= stop_step or not uses_deepspeed(launch):
        return
    saved = saved_world_size(resume)
    if saved is None or saved == launch.processes:
        return
    raise WorldSizeChanged(
        f"{resume} was saved by DeepSpeed on {saved} training processes (one optimizer shard per rank), "
        f"and this job would resume it on training.processes={launch.processes}: DeepSpeed refuses a ZeRO "
        f"checkpoint at another data-parallel world size. Resubmit with training.processes: {saved} (and "
        "resources.train_grpo.gpu to match), or move the run's checkpoint-* folders aside to train it afresh "
        "on this count. DeepSpeed's ds_to_universal converts a ZeRO checkpoint for another world size, but "
        "this pipeline does not resume from a universal checkpoint (docs/guide/running-at-scale.md)."
    )


def check_rollout_context(run: RunSpec, problems: pd.DataFrame) -> None:
    """Refuse, before any process starts, a vLLM context (`training.vllm.max_model_len`, or the model's own
    where it is null, as TRL's engine takes it) that cannot hold the longest training prompt plus
    `max_new_tokens` (`prompts.check_context`)."""
    engine = run.spec.rollout_engine
    if engine is None:
        return
    sampling = run.spec.sampling
    tokenizer = AutoTokenizer.from_pretrained(run.model_path)
    context = engine.max_model_len or AutoConfig.from_pretrained(run.model_path).max_position_embeddings
    prompts = problems["prompt"].tolist()
    ids = prompt_token_ids(tokenizer, prompts, sampling.chat_template)
    check_context(ids, prompts, sampling.max_new_tokens, context, "training.vllm.max_model_len")


def split_devices(devices: list[str], processes: int, server_gpus: int) -> tuple[list[str], list[str]]:
    """The job's GPUs: the first `processes` train, the next `server_gpus` serve vLLM."""
    if len(devices) < processes + server_gpus:
        raise RuntimeError(
            f"the job sees GPUs {devices or 'none'}, fewer than training.processes={processes} plus "
            f"training.vllm.server_gpus={server_gpus}; ask for them with resources.train_grpo.gpu"
        )
    return devices[:processes], devices[processes : processes + server_gpus]


def visible_devices() -> list[str]:
    """The GPUs this job may use, as SLURM (or the user) set CUDA_VISIBLE_DEVICES."""
    listed = os.environ.get("CUDA_VISIBLE_DEVICES")
    if listed is not None:
        return [d for d in listed.split(",") if d]
    return [str(i) for i in range(torch.cuda.device_count())]


def accelerate_command(launch: LaunchSpec, job_file: Path, on_gpu: bool, main_port: int) -> list[str]:
    """`accelerate launch` of this module on `launch.processes` processes of one machine.

    `main_port` is the ranks' rendezvous port: two runs on one node must not share torch's default.
    The precision is the config file's on GPUs and `no` on a CPU (given on the command line, it overrides
    the file's): the project's ZeRO-3 config asks for bf16, which the trainer turns on only on a GPU, and
    DeepSpeed stops at the mismatch ("ds bf16.enabled=True vs hf bf16|bf16_full_eval=False").
    """
    command = [sys.executable, "-m", "accelerate.commands.launch", "--num_processes", str(launch.processes)]
    command += ["--num_machines", "1", "--main_process_port", str(main_port), "--dynamo_backend", "no"]
    if launch.accelerate_config:
        command += ["--config_file", launch.accelerate_config]
    if not on_gpu or not launch.accelerate_config:
        command += ["--mixed_precision", "bf16" if on_gpu else "no"]
    if not launch.accelerate_config and launch.processes > 1:
        command.append("--multi_gpu")
    return command + ["-m", "isocompute.training.launch", str(job_file)]


def cpu_environment(launch: LaunchSpec) -> dict[str, str]:
    """What the training processes need on a machine without a GPU, beside what the caller set: DeepSpeed's
    CPU accelerator (it picks CUDA's otherwise and fails; over gloo where oneCCL is missing) and vLLM's CPU
    build's settings (`generation.CPU_VLLM_ENVIRONMENT`)."""
    env = {**CPU_VLLM_ENVIRONMENT}
    if uses_deepspeed(launch):
        env["DS_ACCELERATOR"] = "cpu"
    return {key: value for key, value in env.items() if key not in os.environ}


def server_command(model_path: str, engine: RolloutEngine, port: int) -> list[str]:
    """`trl vllm-serve` for the run's model on the server's GPUs: tensor parallel, data parallel beyond.

    The colocated share `gpu_memory_utilization` is not passed: the server owns its GPUs and keeps
    `trl vllm-serve`'s default (0.9). `max_model_len`, where set, sizes its KV cache.
    """
    context = ["--max_model_len", str(engine.max_model_len)] if engine.max_model_len is not None else []
    return [
        sys.executable,
        "-m",
        "trl.scripts.vllm_serve",
        "--model",
        model_path,
        "--tensor_parallel_size",
        str(engine.tensor_parallel_size),
        "--data_parallel_size",
        str(engine.server_gpus // engine.tensor_parallel_size),
        *context,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
    ]


def free_port() -> int:
    """A port no one listens on now, so jobs sharing a node do not collide on TRL's default ports."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def run_job(job: TrainingJob, deadline: float | None = None) -> None:
    """Train the job's grid point and write its outputs, launching processes and a server as needed.

    `deadline` is the job's time limit (seconds since the epoch; `timelimit.slurm_deadline`): before it the
    run saves and `TimeLimitReached` is raised. Raises `runlock.TrainerAlive` while a trainer of an earlier
    attempt still writes the run folder, `WorldSizeChanged` for a DeepSpeed checkpoint it cannot resume, and
    `prompts.ContextTooShort` for a vLLM context that would cut completions short.
    """
    run = job.run
    problems = pd.read_parquet(job.train_path)
    with runlock.TrainerLock(run.run_dir):
        resume = resume_point(run, problems)
        stop = last_step(run.point, run.spec, run.until_step)
        check_world_size(resume, run.launch, stop)
        check_rollout_context(run, problems)
        steps = total_steps(run.point.batch, run.spec.compute_max)
        gpus = len(visible_devices())
        start_attempt(run.run_dir, gpus, resume, steps, run.point.batch, os.environ.get("SLURM_JOB_ID"))
        outcome = "failed"
        try:
            # With no training left the outputs come from the checkpoint's trainer state: no process to launch.
            if needs_launcher(run) and (resume is None or step_of(resume) < stop):
                _launch(job, resume, deadline)
            else:
                write_outputs(
                    *run_training(run, problems, resume, deadline=deadline), job.log_table, job.checkpoints
                )
            outcome = "finished"
        except TimeLimitReached:
            outcome = "time_limit"
            raise
        except subprocess.CalledProcessError:
            stopped = attempts(read_events(run.run_dir))[-1].time_limit
            if stopped is None:
                raise
            outcome = "time_limit"
            raise TimeLimitReached.saved(run.run_dir, stopped["step"], steps) from None
        finally:
            append_event(run.run_dir, "end", outcome=outcome)


def _launch(job: TrainingJob, resume: str | None, deadline: float | None) -> None:
    """The run under `accelerate launch`, beside a vLLM server in TRL's server mode."""
    run = job.run
    ports = (free_port(), free_port())
    job_file = Path(run.run_dir) / JOB_FILE
    saved = {"job": job_to_dict(job), "resume": resume, "ports": ports, "deadline": deadline}
    write_json(saved, job_file)
    engine = run.spec.rollout_engine
    server_gpus = engine.own_gpus if engine is not None else 0
    on_gpu = torch.cuda.is_available()
    if server_gpus and not on_gpu:
        raise RuntimeError("training.vllm.mode=server needs GPUs, and this job sees none")
    env = dict(os.environ) if on_gpu else {**os.environ, **cpu_environment(run.launch)}
    server = None
    if on_gpu:
        train_devices, server_devices = split_devices(visible_devices(), run.launch.processes, server_gpus)
        env["CUDA_VISIBLE_DEVICES"] = ",".join(train_devices)
        if server_gpus:
            server = subprocess.Popen(
                server_command(run.model_path, engine, ports[0]),
                env={**os.environ, "CUDA_VISIBLE_DEVICES": ",".join(server_devices)},
                stdout=sys.stdout,
                stderr=sys.stderr,
            )
    try:
        command = accelerate_command(run.launch, job_file, on_gpu, free_port())
        subprocess.run(command, env=env, check=True, stdout=sys.stdout, stderr=sys.stderr)
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=120)


def main(job_file: str) -> None:
    """One rank of a launched run: train its share from the job's resume point; rank 0 writes outputs."""
    torch.set_num_threads(1)
    logging.basicConfig(stream=sys.stdout, level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    saved = json.loads(Path(job_file).read_text())
    job = job_from_dict(saved["job"])
    lock = runlock.join(job.run.run_dir)  # shared with the job: no later attempt starts while this rank lives
    table, manifest = run_training(
        job.run, pd.read_parquet(job.train_path), saved["resume"], tuple(saved["ports"]), saved["deadline"]
    )
    if PartialState().is_main_process:
        write_outputs(table, manifest, job.log_table, job.checkpoints)
    lock.close()


if __name__ == "__main__":
    main(sys.argv[1])
