"""Stopping before a SLURM time limit: the time left as squeue prints it, the decision after each step,
and a real run that saves, stops and is resumed to the same training table as an uninterrupted one.
(The same on a real SLURM cluster, with the time limit SLURM itself enforces: tests/test_slurm.py.)"""

import time
from pathlib import Path

import pandas as pd
import pytest
from transformers import TrainerControl, TrainerState, TrainingArguments

from isocompute.study.grid import GridPoint
from isocompute.study.specs import Recipe, SamplingSpec, TrainingSpec
from isocompute.training import timelimit
from isocompute.training.checkpoints import checkpoint_problem
from isocompute.training.progress import read_events
from isocompute.training.timelimit import StopBeforeTimeLimit, TimeLimitReached, parse_time_left
from isocompute.training.run_spec import RunSpec
from isocompute.training.trainer import train_run

SPEC = TrainingSpec(1e-4, 64, 2, 24, 96, 3, "grpo", SamplingSpec(1.0, 1.0, 4))


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("1-02:03:04", 93784.0),
        ("2:03:04", 7384.0),
        ("0:41", 41.0),
        ("59:00", 3540.0),
        ("UNLIMITED", None),
        ("NOT_SET", None),
        ("INVALID", None),
    ],
)
def test_time_left_as_squeue_prints_it(text: str, seconds: float | None) -> None:
    assert parse_time_left(text) == seconds


def test_no_deadline_outside_slurm(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SLURM_JOB_ID", raising=False)
    assert timelimit.slurm_deadline() is None


class Clock:
    """Wall and monotonic time that the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def time(self) -> float:
        return self.now

    def monotonic(self) -> float:
        return self.now


def test_stops_after_the_step_past_which_one_step_and_one_save_no_longer_fit(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    clock = Clock()
    monkeypatch.setattr(timelimit, "time", clock)
    # 20 s steps, a 5 s save after step 2, a 10 s margin: the job must stop once less than 35 s are left.
    stop = StopBeforeTimeLimit(deadline=1000.0 + 200, margin=10)
    args = TrainingArguments(output_dir=str(tmp_path), use_cpu=True, report_to="none")
    state, control = TrainerState(max_steps=100), TrainerControl()
    stop.on_train_begin(args, state, control)
    stopped = None
    for step in range(1, 100):
        clock.now += 20
        state.global_step = step
        stop.on_step_end(args, state, control)
        if control.should_training_stop:
            stopped = step
            break
        if step == 2:
            clock.now += 5
            stop.on_save(args, state, control)
    # After step k >= 3, 200 - 20 k - 5 s are left: 35 s after step 8 (one step, a save and the margin
    # still fit), 15 s after step 9, which therefore saves and stops.
    assert stopped == 9 and control.should_save and stop.stopped_at == 9


def test_a_run_past_its_deadline_saves_stops_and_resumes_to_the_same_table(
    tiny_model: str, pool: pd.DataFrame, tmp_path: Path
) -> None:
    point = GridPoint("easy", 4, 2, 0)
    # 12 problems: 3 steps per epoch, so the resumed part crosses epochs (the shuffle must be replayed)
    problems = pool.head(12)
    full, _ = train_run(RunSpec(tiny_model, point, SPEC, Recipe(0.0, 0.0), str(tmp_path / "full")), problems)
    run_dir = tmp_path / "limited"
    run = RunSpec(tiny_model, point, SPEC, Recipe(0.0, 0.0), str(run_dir))
    with pytest.raises(
        TimeLimitReached, match=r"saved checkpoint-1 \(step 1 of 12\) before the job's time limit"
    ):
        train_run(run, problems, deadline=time.time() - 1)
    assert [p.name for p in run_dir.glob("checkpoint-*")] == ["checkpoint-1"]
    assert checkpoint_problem(run_dir / "checkpoint-1") is None
    assert not (run_dir / "train_log.parquet").exists()
    resumed, manifest = train_run(run, problems)
    assert [m["step"] for m in manifest] == [3, 6, 12]
    pd.testing.assert_frame_equal(full, resumed)
    events = read_events(run_dir)
    assert [(e["step"], e["checkpoint"]) for e in events if e["event"] == "time_limit"] == [
        (1, "checkpoint-1")
    ]
    # every optimizer step was logged once, across the two attempts
    assert [e["step"] for e in events if e["event"] == "step"] == list(range(1, 13))
