"""What a study needs (`isocompute plan --pilot/--step-model`): seconds per step fitted to a recorded pilot
(tests/data/pilot, three runs of the tiny model at B = 16, 64, 256 recorded by tests/data/record_pilot.py),
each run's GPU-hours and the attempts its job needs, the runs that cannot finish, the checkpoints' disk."""

import json
import math
import statistics
from pathlib import Path

import pytest
from conftest import REPO

from isocompute.cli import main
from isocompute.plan.budget import (
    OPTIMIZER_BYTES_PER_PARAM,
    WEIGHT_BYTES_PER_PARAM,
    BudgetError,
    RunNeed,
    StepModel,
    checkpoint_disk,
    fit_step_model,
    pilot_steps,
    read_retries,
    read_step_model,
    run_needs,
)
from isocompute.plan.requests import loaded_config

PILOT = sorted((REPO / "tests" / "data" / "pilot").glob("*.jsonl"))
PAPER = REPO / "config" / "presets" / "paper.yaml"
ASSUMED = REPO / "config" / "step_models" / "qwen2.5-7b-h100.yaml"


def test_the_fit_to_the_recorded_pilot_predicts_each_batch_size_s_median_step() -> None:
    model = fit_step_model([str(p) for p in PILOT], model_params=1e5)
    steps, startups = pilot_steps(PILOT)
    assert len(startups) == 3 and model.startup_s == statistics.median(startups)
    assert {s.batch for s in steps} == {16, 64, 256} and len(steps) == 3 * 23  # first step of each is startup
    assert model.overhead_s > 0 and model.gpu_seconds_per_token > 0 and model.startup_s > 0
    assert model.completion_tokens == pytest.approx(statistics.fmean(s.completion_tokens for s in steps))
    for batch in (16, 64, 256):
        median = statistics.median(s.seconds for s in steps if s.batch == batch)
        assert model.seconds_per_step(batch, 1) == pytest.approx(median, rel=0.15)
    assert model.seconds_per_step(256, 1) > 2 * model.seconds_per_step(16, 1)


def _progress(
    path: Path,
    batch: int,
    gpus: int,
    tokens: float,
    seconds: float,
    steps: int = 6,
    save_after: int | None = None,
) -> Path:
    """A progress file of one attempt: started at 0, first step at 30 s, then a step every `seconds`, and
    20 s more after step `save_after` (a checkpoint's save)."""
    events = [{"event": "start", "time": 0.0, "gpus": gpus, "batch": batch}]
    events += [
        {
            "event": "step",
            "time": 30.0 + i * seconds + (20.0 if save_after is not None and i >= save_after else 0.0),
            "step": i + 1,
            "completion_tokens": tokens,
        }
        for i in range(steps)
    ]
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    return path


def test_the_fit_recovers_a_known_step_model(tmp_path: Path) -> None:
    # 12 s fixed + 2e-4 GPU-s per token, on 8 GPUs, at three B and lengths
    pilots = [
        _progress(tmp_path / f"{b}.jsonl", b, 8, tokens, 12 + 2e-4 * b * tokens / 8)
        for b, tokens in [(256, 900.0), (1024, 1000.0), (4096, 1100.0)]
    ]
    model = fit_step_model(pilots)
    assert model.overhead_s == pytest.approx(12, rel=1e-6)
    assert model.gpu_seconds_per_token == pytest.approx(2e-4, rel=1e-6)
    assert model.completion_tokens == pytest.approx(1000) and model.startup_s == 30
    # a saved checkpoint (one slow step) does not move the medians
    slow = _progress(tmp_path / "slow.jsonl", 256, 8, 900.0, 12 + 2e-4 * 256 * 900 / 8, save_after=3)
    assert fit_step_model([slow, *pilots[1:]]).overhead_s == pytest.approx(12, rel=1e-6)


def test_a_pilot_that_cannot_give_a_model_is_refused_naming_why(tmp_path: Path) -> None:
    one = _progress(tmp_path / "one.jsonl", 256, 8, 900.0, 20.0)
    with pytest.raises(BudgetError, match=r"one B and GPU count only .*\(256, 8\).*two or more B"):
        fit_step_model([one])
    old = tmp_path / "old.jsonl"
    old.write_text(
        '{"event": "start", "time": 0, "gpus": 8, "batch": 8}\n{"event": "step", "time": 1, "step": 1}\n'
    )
    with pytest.raises(BudgetError, match=r"old.jsonl: its step events carry no completion_tokens"):
        fit_step_model([old, one])
    with pytest.raises(BudgetError, match=r"empty.jsonl: no logged steps"):
        fit_step_model([tmp_path / "empty.jsonl"])
    bad = tmp_path / "bad.yaml"
    bad.write_text("overhead_s: 1\ngpu_seconds_per_token: fast\n")
    with pytest.raises(BudgetError, match=r"bad.yaml: missing \['completion_tokens', 'startup_s'\]"):
        read_step_model(bad)
    bad.write_text("overhead_s: 1\ngpu_seconds_per_token: fast\ncompletion_tokens: 1\nstartup_s: 0\n")
    with pytest.raises(BudgetError, match=r"gpu_seconds_per_token='fast' is not a non-negative number"):
        read_step_model(bad)


@pytest.fixture(scope="module")
def paper_config() -> dict:
    return loaded_config([PAPER], directory=REPO)


def test_the_paper_preset_s_needs_under_the_stated_assumptions(paper_config: dict) -> None:
    model = read_step_model(ASSUMED)
    assert (model.overhead_s, model.gpu_seconds_per_token, model.completion_tokens) == (70, 5e-4, 1000)
    assert read_retries(REPO / "slurm") == 3
    needs = {(n.problem_set, n.run): n for n in run_needs(paper_config, model, retries=3)}
    assert len(needs) == 66
    # bp32_n8: 16,384 steps of 70 + 5e-4 * 256 * 1,000 / 8 = 86 s: 391 h, more than 4 attempts of 48 h hold
    small = needs[("easy", "bp32_n8_seed0")]
    assert (small.steps, small.gpus, small.seconds_per_step) == (16384, 8, pytest.approx(86.0))
    lost = 900 + 600  # the time-limit margin and the job's startup, per attempt
    assert small.attempts_needed == math.ceil(16384 * 86.0 / (2880 * 60 - lost)) == 9 and not small.finishes
    assert small.runtime_needed_min == pytest.approx((16384 * 86.0 / 4 + lost) / 60)
    large = needs[("easy", "bp1024_n64_seed0")]
    assert large.steps == 64 and large.attempts_needed == 2 and large.finishes
    # GPU-hours: every run's tokens cost the same (C_max x 1,000 tokens x 5e-4 s); steps cost 70 s x 8 GPUs
    expected = sum(8 * n.steps * 70 + 5e-4 * 4194304 * 1000 for n in needs.values()) / 3600
    assert sum(n.gpu_hours for n in needs.values()) == pytest.approx(expected)
    assert sorted(f"{s}/{r}" for (s, r), n in needs.items() if not n.finishes) == [
        "easy/bp32_n16_seed0", "easy/bp32_n8_seed0", "easy/bp64_n8_seed0",
        "hard/bp32_n16_seed0", "hard/bp32_n8_seed0", "hard/bp64_n8_seed0",
    ]  # fmt: skip


def test_per_attempt_runtimes_count_each_attempt(paper_config: dict) -> None:
    config = json.loads(json.dumps(paper_config))
    config["resources"]["train_grpo"]["runtime"] = [2880, 5760]  # 48 h, then 96 h for every later attempt
    model = StepModel(70, 5e-4, 1000, 600, "test")
    small = next(n for n in run_needs(config, model, retries=3) if n.run == "bp32_n8_seed0")
    lost = 900 + 600
    work = 16384 * 86.0
    assert small.attempts_needed == 2 + math.ceil(
        (work - 2 * (2880 * 60 - lost) - (5760 - 2880) * 60) / (5760 * 60 - lost)
    )


def test_checkpoint_disk_keeps_one_whole_checkpoint_per_run() -> None:
    run = RunNeed("easy", "r", 256, 16384, 8, 86.0, 9, 4, 0.0, checkpoints=16)
    disk = checkpoint_disk([run, run], 7.6e9)
    weights, whole = (
        7.6e9 * WEIGHT_BYTES_PER_PARAM,
        7.6e9 * (WEIGHT_BYTES_PER_PARAM + OPTIMIZER_BYTES_PER_PARAM),
    )
    assert whole == pytest.approx(106.4e9) and weights == pytest.approx(15.2e9)
    assert disk.peak == pytest.approx(2 * (2 * whole + 15 * weights))  # a save beside the last whole one
    assert disk.at_rest == pytest.approx(2 * (whole + 15 * weights))
    assert disk.all_whole == pytest.approx(2 * 17 * whole)  # before thinning: 16 whole + a resume one


def test_plan_prints_the_needs_beside_the_requested_gpu_hours(capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(["plan", "--configfile", str(PAPER), "--directory", str(REPO), "--step-model", str(ASSUMED)])
        == 0
    )
    out = capsys.readouterr().out
    assert "what the training runs need (retries: 3)" in out
    assert "against 25,344 GPU-hours its jobs request" in out
    assert "runs that cannot finish within runtime x (retries + 1): 6 of 66" in out
    assert "easy  bp32_n8_seed0        256  16,384     86.0  391.4      3,131    9 of 4" in out
    assert "checkpoint disk (7.60B parameters: 15.2 GB weights-only, 106.4 GB whole)" in out
    args = ["plan", "--configfile", str(PAPER), "--directory", str(REPO), "--pilot", *map(str, PILOT)]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "a fit to 69 steps at B x GPUs [(16, 1), (64, 1), (256, 1)] of 3 pilot file(s)" in out
    assert "checkpoint disk: not planned (give the model's parameter count: --model-params)" in out
    assert main([*args[:-4], "--pilot", str(PILOT[0])]) == 2
    assert "two or more B" in capsys.readouterr().err
