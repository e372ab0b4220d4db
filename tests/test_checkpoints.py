"""A checkpoint that lost files, or was cut off while saving, is found and passed over: the run resumes
from the previous whole one and ends as an uninterrupted run would."""

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from isocompute.checkpoints import checkpoint_problem, last_good_checkpoint
from isocompute.grid import GridPoint
from isocompute.specs import Recipe, SamplingSpec, TrainingSpec
from isocompute.training import RunSpec, train_run

SPEC = TrainingSpec(1e-4, 64, 2, 24, 96, 3, "grpo", SamplingSpec(1.0, 1.0, 4))
POINT = GridPoint("easy", 4, 2, 0)


@pytest.fixture(scope="module")
def trained(
    tiny_model: str, pool: pd.DataFrame, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, pd.DataFrame]:
    """A finished run (checkpoints at steps 3, 6 and 12) and its training table."""
    run_dir = tmp_path_factory.mktemp("trained") / "run"
    table, _ = train_run(RunSpec(tiny_model, POINT, SPEC, Recipe(0.0, 0.0), str(run_dir)), pool)
    return run_dir, table


def _truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


DAMAGE = {
    "optimizer.pt is missing": lambda c: (c / "optimizer.pt").unlink(),
    "optimizer.pt is truncated or not a torch file": lambda c: _truncate(c / "optimizer.pt"),
    "model.safetensors is truncated": lambda c: _truncate(c / "model.safetensors"),
    "no model weights (model.safetensors)": lambda c: (c / "model.safetensors").unlink(),
    "trainer_state.json is missing": lambda c: (c / "trainer_state.json").unlink(),
    "trainer_state.json is unreadable": lambda c: _truncate(c / "trainer_state.json"),
    "scheduler.pt is missing": lambda c: (c / "scheduler.pt").unlink(),
    "no rng_state*.pth": lambda c: (c / "rng_state.pth").unlink(),
}


@pytest.mark.parametrize("problem", sorted(DAMAGE))
def test_a_damaged_checkpoint_is_named_with_its_problem(
    trained: tuple[Path, pd.DataFrame], tmp_path: Path, problem: str
) -> None:
    checkpoint = tmp_path / "checkpoint-12"
    shutil.copytree(trained[0] / "checkpoint-12", checkpoint)
    assert checkpoint_problem(checkpoint) is None
    DAMAGE[problem](checkpoint)
    assert checkpoint_problem(checkpoint).startswith(problem)


def test_a_checkpoint_of_another_step_is_not_taken(
    trained: tuple[Path, pd.DataFrame], tmp_path: Path
) -> None:
    moved = tmp_path / "checkpoint-13"
    shutil.copytree(trained[0] / "checkpoint-12", moved)
    assert checkpoint_problem(moved) == "trainer_state.json is at step 12, not 13"


def test_the_run_resumes_from_the_previous_whole_checkpoint(
    trained: tuple[Path, pd.DataFrame],
    tiny_model: str,
    pool: pd.DataFrame,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    run_dir = tmp_path / "run"
    shutil.copytree(trained[0], run_dir)
    # the job was killed while saving step 12 (no optimizer state yet), and step 6 lost a file since
    (run_dir / "checkpoint-12" / "optimizer.pt").unlink()
    (run_dir / "checkpoint-6" / "trainer_state.json").unlink()
    caplog.set_level("INFO")
    assert last_good_checkpoint(run_dir) == str(run_dir / "checkpoint-3")
    assert sorted(p.name for p in run_dir.glob("checkpoint-*")) == ["checkpoint-3"]
    assert "checkpoint-12 is incomplete (optimizer.pt is missing)" in caplog.text
    shutil.rmtree(run_dir)
    shutil.copytree(trained[0], run_dir)
    (run_dir / "checkpoint-12" / "optimizer.pt").unlink()
    resumed, manifest = train_run(RunSpec(tiny_model, POINT, SPEC, Recipe(0.0, 0.0), str(run_dir)), pool)
    assert "resuming from " + str(run_dir / "checkpoint-6") in caplog.text
    pd.testing.assert_frame_equal(resumed, trained[1])
    assert all(checkpoint_problem(run_dir / m["path"]) is None for m in manifest)
    assert json.loads((run_dir / "checkpoint-12" / "trainer_state.json").read_text())["global_step"] == 12
