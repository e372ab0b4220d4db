"""`training.report_to`: TensorBoard files under the run's folder, one tracked run per grid point carrying
its grid point and recipe, continued (not restarted) by a resumed job."""

import dataclasses
import json
from pathlib import Path

import pandas as pd
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from isocompute.study.grid import GridPoint
from isocompute.study.specs import Recipe, SamplingSpec, TrainingSpec
from isocompute.training.tracking import TENSORBOARD_DIR, tracked_run_id
from isocompute.training.run_spec import SINGLE_PROCESS, RunSpec
from isocompute.training.trainer import train_run

SPEC = TrainingSpec(1e-4, 64, 2, 24, 96, 3, "grpo", SamplingSpec(1.0, 1.0, 4))


def _events(folder: Path) -> EventAccumulator:
    events = EventAccumulator(str(folder), size_guidance={"scalars": 0, "tensors": 0})
    events.Reload()
    return events


def test_tensorboard_files_of_one_run_across_its_attempts(
    tiny_model: str, pool: pd.DataFrame, tmp_path: Path
) -> None:
    point = GridPoint("easy", 4, 2, 0)
    launch = dataclasses.replace(SINGLE_PROCESS, report_to=("tensorboard",))
    run = RunSpec(tiny_model, point, SPEC, Recipe(0.01, 0.001), str(tmp_path / "run"), launch=launch)
    # The first job stops at checkpoint-6 (as at a time limit); the next resumes from it, from step 7 on.
    train_run(dataclasses.replace(run, until_step=6), pool)
    folder = tmp_path / "run" / TENSORBOARD_DIR
    first = sorted(folder.glob("events.out.tfevents.*"))
    assert len(first) == 1
    events = _events(folder)
    assert [e.step for e in events.Scalars("train/reward")] == list(range(1, 7))
    config = events.Tensors("isocompute/text_summary")[0].tensor_proto.string_val[0].decode()
    assert json.loads(config) == {
        "grid_point": dataclasses.asdict(point),
        "recipe": dataclasses.asdict(run.recipe),
    }
    assert json.loads(config)["grid_point"]["n"] == 2 and json.loads(config)["recipe"]["kl_coef"] == 0.01
    assert (
        '"run_name": "easy/bp4_n2_seed0"'
        in events.Tensors("args/text_summary")[0].tensor_proto.string_val[0].decode()
    )
    table, _ = train_run(run, pool)
    assert len(sorted(folder.glob("events.out.tfevents.*"))) == 2
    rewards = _events(folder).Scalars("train/reward")
    assert [e.step for e in rewards] == list(range(1, 13))
    assert [e.value for e in rewards] == [float(r) for r in table["reward"]]


def test_without_report_to_nothing_is_tracked(tiny_model: str, pool: pd.DataFrame, tmp_path: Path) -> None:
    run = RunSpec(tiny_model, GridPoint("easy", 4, 2, 0), SPEC, Recipe(0.0, 0.0), str(tmp_path / "run"))
    train_run(run, pool.head(24))
    assert not (tmp_path / "run" / TENSORBOARD_DIR).exists() and not (tmp_path / "run" / "runs").exists()


def test_a_tracked_run_keeps_its_id_until_its_settings_change(tmp_path: Path) -> None:
    settings = {"point": {"n": 2}, "spec": {"lr_base": 1e-4}}
    assert tracked_run_id(tmp_path / "run", settings) == tracked_run_id(tmp_path / "run", dict(settings))
    assert tracked_run_id(tmp_path / "run", settings) != tracked_run_id(
        tmp_path / "run", {**settings, "spec": {}}
    )
    assert tracked_run_id(tmp_path / "run", settings) != tracked_run_id(tmp_path / "other", settings)
