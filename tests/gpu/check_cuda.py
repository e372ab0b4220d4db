"""The checks that need CUDA, one per command; `tests/gpu/check.sh` runs them all and sums up.

    python tests/gpu/check_cuda.py CHECK WORKDIR [--allow-cpu]

CHECK is one of:
  grpo     TRL's GRPOTrainer for 12 steps of B = 128 rollouts in bf16 on the GPU, with the project's own
           small model (config/config.yaml's built-in Qwen2, pre-trained here for 300 steps), then a stop
           before a deadline and a resume to the same training table
  sampler  the transformers sampler on the GPU: k samples per prompt, the same for the same seed
  vllm     TRL's colocated vLLM rollouts with truncated importance sampling, vLLM sampling from the
           trainer's weights after every step (skipped without vllm)
  zero3    the run under `accelerate launch` with DeepSpeed ZeRO-3, stopped at step 3 and resumed from
           that checkpoint (skipped without deepspeed)
  vllm_zero3  `accelerate launch` under ZeRO-3 on 2 ranks with colocated vLLM in sleep mode (what only a GPU
           has: vLLM refuses it on a CPU), TIS and a bounded context, its weights pushed back after every
           wake, stopped at step 3 and resumed (skipped without vllm, deepspeed or a second GPU)
The CPU runs the rest of the cluster path (ZeRO-3 on 2 processes, colocated vLLM without sleep mode, kill
and resume): tests/test_cluster_cpu.py.
It prints `PASS <check>: ...`, or `SKIP <check>: why` and exits 77, or fails with a traceback.
`--allow-cpu` runs grpo and sampler on the CPU (no bf16), to check the script itself where no GPU is.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import math
import sys
import time
from pathlib import Path

import torch
import yaml

REPO = Path(__file__).resolve().parents[2]
SKIP = 77
# TRL's mean |log p_trainer - log p_vLLM| over a step's sampled tokens, after step 1: bf16 kernels on both
# sides differ by about 0.01; a vLLM left on stale weights drifts beyond it as the policy moves.
SYNCED = 0.05


def _model(workdir: Path) -> str:
    """The default study's built-in base model, pre-trained briefly (once per WORKDIR)."""
    from isocompute.data.base_model import pretrain_base_model
    from isocompute.pipeline.config import base_model_spec

    path = workdir / "base_model"
    if not (path / "config.json").exists():
        config = yaml.safe_load((REPO / "config/config.yaml").read_text())
        # 300 steps on a GPU; 40 where --allow-cpu checks the script itself on the CPU
        config["base_model"]["builtin"]["train_steps"] = 300 if torch.cuda.is_available() else 40
        pretrain_base_model(base_model_spec(config), path, seed=0)
    return str(path)


def _problems(size: int = 256):
    from isocompute.data.tasks import make_addition_pool

    return make_addition_pool(size, 1, 2, seed=0)


def _run(workdir: Path, name: str, engine=None, launch=None):
    from isocompute.study.grid import GridPoint
    from isocompute.study.specs import Recipe, SamplingSpec, TrainingSpec
    from isocompute.training.run_spec import SINGLE_PROCESS, RunSpec

    spec = TrainingSpec(1e-4, 128, 2, 128, 128 * 12, 3, "grpo", SamplingSpec(1.0, 1.0, 8), engine)
    return RunSpec(
        _model(workdir),
        GridPoint("easy", 16, 8, 0),
        spec,
        Recipe(0.001, 0.001),
        str(workdir / name),
        "exact",
        launch or SINGLE_PROCESS,
    )


def check_grpo(workdir: Path, on_gpu: bool) -> str:
    import pandas as pd

    from isocompute.training.checkpoints import checkpoint_problem, weights_problem
    from isocompute.training.timelimit import TimeLimitReached
    from isocompute.training.resume import resume_point
    from isocompute.training.trainer import train_run
    from isocompute.training.trl_args import grpo_args

    run = _run(workdir, "grpo")
    args = grpo_args(run.point, run.spec, run.recipe, run.run_dir)
    assert args.bf16 == on_gpu and args.use_cpu != on_gpu, (args.bf16, args.use_cpu)
    started = time.monotonic()
    table, manifest = train_run(run, _problems())
    seconds = time.monotonic() - started
    assert table["step"].tolist() == list(range(1, 13)), table["step"].tolist()
    assert all(math.isfinite(v) for v in table["loss"]) and all(math.isfinite(v) for v in table["grad_norm"])
    assert all(weights_problem(Path(run.run_dir) / m["path"]) is None for m in manifest)
    assert checkpoint_problem(Path(run.run_dir) / manifest[-1]["path"]) is None
    limited = dataclasses.replace(run, run_dir=str(workdir / "grpo_limited"))
    try:
        train_run(limited, _problems(), deadline=time.time() - 1)
        raise AssertionError("no stop before a deadline that has passed")
    except TimeLimitReached as stop:
        assert "saved checkpoint-1 (step 1 of 12)" in str(stop), str(stop)
    assert resume_point(limited, _problems()) == str(workdir / "grpo_limited" / "checkpoint-1")
    resumed, _ = train_run(limited, _problems())
    same = resumed.equals(table)
    diff = float((resumed["reward"] - table["reward"]).abs().max())
    pd.testing.assert_series_equal(resumed["step"], table["step"])
    return (
        f"12 steps of B = 128 in {'bf16 on ' + torch.cuda.get_device_name() if on_gpu else 'fp32 on the CPU'} "
        f"in {seconds:.1f} s, final reward {table['reward'].iloc[-1]:.3f}; stopped at step 1 before a deadline "
        f"and resumed: table {'identical' if same else f'differs (largest reward difference {diff:.3f})'}"
    )


def check_sampler(workdir: Path, on_gpu: bool) -> str:
    from isocompute.sampling.generation import TransformersSampler, count_correct
    from isocompute.study.specs import SamplingSpec

    problems = _problems(200)
    prompts, answers = problems["prompt"].tolist(), problems["answer"].tolist()
    sampler = TransformersSampler(_model(workdir), SamplingSpec(1.0, 1.0, 8), seed=0, batch_size=256)
    assert sampler.model.device.type == ("cuda" if on_gpu else "cpu"), sampler.model.device
    first = sampler.sample(prompts, k=4)
    again = sampler.sample(prompts, k=4)
    assert len(first) == 200 and all(len(group) == 4 for group in first)
    assert [[c.text for c in g] for g in first] == [[c.text for c in g] for g in again]
    n_correct, _ = count_correct(sampler, prompts, answers, 4, "exact")
    return f"200 prompts x 4 samples on {sampler.model.device}, the same twice for one seed; avg@4 {sum(n_correct) / 800:.3f}"


def check_vllm(workdir: Path, on_gpu: bool) -> str:
    from isocompute.study.specs import RolloutEngine
    from isocompute.training.trainer import train_run

    engine = RolloutEngine("colocate", 0.3, 1, 1, "token_truncate", 2.0)
    table, _ = train_run(_run(workdir, "vllm", engine), _problems())
    assert table["step"].tolist() == list(range(1, 13)) and all(math.isfinite(v) for v in table["loss"])
    return f"12 steps with colocated vLLM {importlib.import_module('vllm').__version__} rollouts and TIS; " + _synced(table)


def _synced(table) -> str:
    """vLLM sampled from the trainer's weights at every step after the first (TRL's logged log-prob
    difference), and the importance-sampling ratios are finite."""
    after_first = table["sampling_logp_diff_mean"].iloc[1:]
    assert (after_first < SYNCED).all(), table["sampling_logp_diff_mean"].tolist()
    ratios = table[["is_ratio_min", "is_ratio_max"]].to_numpy()
    assert all(math.isfinite(v) and v > 0 for v in ratios.flatten()), ratios
    return f"sampling log-prob difference after step 1 at most {after_first.max():.4f} (< {SYNCED}), ratios finite"


def _launched_zero3(workdir: Path, name: str, processes: int, engine=None):
    """A run of `processes` ranks under `accelerate launch` and ZeRO-3, stopped at step 3 (its compute point:
    that checkpoint whole) and resumed from there to step 12; its table and its checkpoints' paths, each
    checked whole."""
    import pandas as pd

    from isocompute.files import write_table
    from isocompute.study.specs import LaunchSpec
    from isocompute.training.checkpoints import checkpoint_problem, weights_problem
    from isocompute.training.launch import TrainingJob, run_job

    launch = LaunchSpec(processes, 64, True, str(REPO / "config/accelerate/deepspeed_zero3.yaml"))
    write_table(_problems(), workdir / "train.parquet")
    run = _run(workdir, name, engine, launch=launch)
    job = TrainingJob(
        run, str(workdir / "train.parquet"), str(workdir / f"{name}_log.parquet"), str(workdir / f"{name}.json")
    )
    run_job(dataclasses.replace(job, run=dataclasses.replace(run, until_step=3)))
    assert checkpoint_problem(Path(run.run_dir) / "checkpoint-3") is None
    run_job(job)
    resumed_from = json.loads((Path(run.run_dir) / "job.json").read_text())["resume"]
    assert resumed_from == str(Path(run.run_dir) / "checkpoint-3"), resumed_from
    table = pd.read_parquet(job.log_table)
    manifest = json.loads(Path(job.checkpoints).read_text())
    # The newest keeps the ZeRO-3 engine state; the older compute points only their 16-bit weights.
    problems = {m["path"]: weights_problem(Path(run.run_dir) / m["path"]) for m in manifest}
    problems[manifest[-1]["path"]] = checkpoint_problem(Path(run.run_dir) / manifest[-1]["path"])
    assert not any(problems.values()), problems
    assert table["step"].tolist() == list(range(1, 13)) and all(math.isfinite(v) for v in table["loss"])
    return table, sorted(problems)


def check_zero3(workdir: Path, on_gpu: bool) -> str:
    processes = torch.cuda.device_count()
    _, checkpoints = _launched_zero3(workdir, "zero3", processes)
    return f"12 steps on {processes} GPU(s) under ZeRO-3, resumed from checkpoint-3, checkpoints {checkpoints} whole"


def check_vllm_zero3(workdir: Path, on_gpu: bool) -> str:
    from isocompute.study.specs import RolloutEngine

    engine = RolloutEngine("colocate", 0.3, 1, 1, "token_truncate", 2.0, sleep_mode=True, max_model_len=256)
    table, checkpoints = _launched_zero3(workdir, "vllm_zero3", 2, engine)
    return (
        f"12 steps on 2 ranks under ZeRO-3 with colocated vLLM {importlib.import_module('vllm').__version__} "
        f"in sleep mode and TIS, resumed from checkpoint-3, checkpoints {checkpoints} whole; " + _synced(table)
    )


CHECKS = {
    "grpo": check_grpo,
    "sampler": check_sampler,
    "vllm": check_vllm,
    "zero3": check_zero3,
    "vllm_zero3": check_vllm_zero3,
}
PACKAGES = {"vllm": ("vllm",), "zero3": ("deepspeed",), "vllm_zero3": ("vllm", "deepspeed")}
# Checks that need more than one GPU: colocated vLLM beside ZeRO-3 is only distributed on several ranks.
MIN_GPUS = {"vllm_zero3": 2}


def main(argv: list[str]) -> int:
    name, workdir = argv[0], Path(argv[1])
    allow_cpu = "--allow-cpu" in argv
    on_gpu = torch.cuda.is_available()
    if not on_gpu and not (allow_cpu and name in ("grpo", "sampler")):
        print(f"SKIP {name}: no CUDA device")
        return SKIP
    for package in PACKAGES.get(name, ()):
        if importlib.util.find_spec(package) is None:
            print(f"SKIP {name}: {package} is not installed (pip install -e '.[{package}]')")
            return SKIP
    if torch.cuda.device_count() < MIN_GPUS.get(name, 0):
        print(f"SKIP {name}: needs {MIN_GPUS[name]} GPUs, {torch.cuda.device_count()} visible")
        return SKIP
    torch.set_num_threads(1)
    workdir.mkdir(parents=True, exist_ok=True)
    print(f"PASS {name}: {CHECKS[name](workdir, on_gpu)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
