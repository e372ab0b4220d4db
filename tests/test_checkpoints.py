"""What a run goes on from. A checkpoint that lost files, or was cut off while saving, is found and passed
over: the run resumes from the previous whole one and ends as an uninterrupted run would. A changed
compute_max extends or cuts the run from the checkpoints it has; a setting that changes what the run
computes sets its checkpoints aside, naming every differing key; none is deleted unannounced."""

import dataclasses
import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from isocompute import upgrades
from isocompute.checkpoints import checkpoint_problem, last_good_checkpoint
from isocompute.grid import GridPoint
from isocompute.specs import Recipe, RolloutEngine, SamplingSpec, TrainingSpec
from isocompute.training import RUN_SETTINGS, RunSpec, resume_point, train_run

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


@pytest.fixture
def run_copy(trained: tuple[Path, pd.DataFrame], tmp_path: Path, caplog: pytest.LogCaptureFixture) -> Path:
    """A copy of the finished run for one test to resume, raise, cut or change, with its log captured."""
    run_dir = tmp_path / "run_copy"
    shutil.copytree(trained[0], run_dir)
    caplog.set_level("INFO")
    return run_dir


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


def _steps(folder: Path) -> list[int]:
    return sorted(int(p.name.split("-")[1]) for p in folder.glob("checkpoint-*"))


def _superseded(run_dir: Path) -> list[Path]:
    return sorted(run_dir.glob("superseded-*"))


def test_raising_compute_max_extends_the_run_as_an_uninterrupted_run_would(
    run_copy: Path, tiny_model: str, pool: pd.DataFrame, tmp_path: Path
) -> None:
    # Compute points 24, 48, 96 (steps 3, 6, 12) keep their places when 192 (step 24) is added.
    higher = dataclasses.replace(SPEC, compute_max=192, checkpoint_points=4)
    run_dir = run_copy
    resumed = RunSpec(tiny_model, POINT, higher, Recipe(0.0, 0.0), str(run_dir))
    assert resume_point(resumed, pool) == str(run_dir / "checkpoint-12")
    extended, manifest = train_run(resumed, pool)
    full, full_manifest = train_run(
        RunSpec(tiny_model, POINT, higher, Recipe(0.0, 0.0), str(tmp_path / "full")), pool
    )
    pd.testing.assert_frame_equal(extended, full)
    assert manifest == full_manifest and [m["step"] for m in manifest] == [3, 6, 12, 24]
    assert _steps(run_dir) == [3, 6, 12, 24] and not _superseded(run_dir)


def test_a_run_stopped_at_a_rung_then_extended_equals_the_uninterrupted_run(
    trained: tuple[Path, pd.DataFrame], tiny_model: str, pool: pd.DataFrame, tmp_path: Path
) -> None:
    """An adaptive sweep's arm: stopped at step 6 (a rung's cap), then run on to its end."""
    run = RunSpec(tiny_model, POINT, SPEC, Recipe(0.0, 0.0), str(tmp_path / "arm"), until_step=6)
    rung, rung_manifest = train_run(run, pool)
    assert rung["step"].tolist() == list(range(1, 7)) and [m["step"] for m in rung_manifest] == [3, 6]
    assert _steps(tmp_path / "arm") == [3, 6]
    extended, manifest = train_run(dataclasses.replace(run, until_step=None), pool)
    pd.testing.assert_frame_equal(extended, trained[1])
    assert [m["step"] for m in manifest] == [3, 6, 12] and not _superseded(tmp_path / "arm")
    # Asking a finished run for an earlier rung trains nothing and sets nothing aside.
    again, again_manifest = train_run(run, pool)
    pd.testing.assert_frame_equal(again, rung)
    assert again_manifest == rung_manifest and _steps(tmp_path / "arm") == [3, 6, 12]


def test_lowering_compute_max_cuts_the_run_at_a_checkpoint_and_sets_the_later_ones_aside(
    trained: tuple[Path, pd.DataFrame],
    run_copy: Path,
    tiny_model: str,
    pool: pd.DataFrame,
    caplog: pytest.LogCaptureFixture,
) -> None:
    run_dir = run_copy
    lower = dataclasses.replace(SPEC, compute_max=48, checkpoint_points=2)
    table, manifest = train_run(RunSpec(tiny_model, POINT, lower, Recipe(0.0, 0.0), str(run_dir)), pool)
    # No step is trained again: the table is the first 6 steps of the longer run, from its checkpoint-6.
    pd.testing.assert_frame_equal(table, trained[1].head(6))
    assert [m["step"] for m in manifest] == [3, 6] and _steps(run_dir) == [3, 6]
    (aside,) = _superseded(run_dir)
    assert _steps(aside) == [12] and checkpoint_problem(aside / "checkpoint-12") is None
    assert f"checkpoint-12 moved to {aside.name}" in caplog.text
    # Moved back, it extends the run to 96 again without training a step.
    (aside / "checkpoint-12").rename(run_dir / "checkpoint-12")
    again, _ = train_run(RunSpec(tiny_model, POINT, SPEC, Recipe(0.0, 0.0), str(run_dir)), pool)
    pd.testing.assert_frame_equal(again, trained[1])


def test_a_changed_computation_sets_the_checkpoints_aside_and_names_every_differing_key(
    run_copy: Path, tiny_model: str, pool: pd.DataFrame, caplog: pytest.LogCaptureFixture
) -> None:
    run_dir = run_copy
    changed = RunSpec(
        tiny_model, POINT, dataclasses.replace(SPEC, lr_base=2e-4), Recipe(0.01, 0.0), str(run_dir)
    )
    assert resume_point(changed, pool) is None
    (aside,) = _superseded(run_dir)
    assert _steps(aside) == [3, 6, 12] and _steps(run_dir) == []
    assert json.loads((aside / RUN_SETTINGS).read_text())["spec"]["lr_base"] == 1e-4
    assert json.loads((run_dir / RUN_SETTINGS).read_text())["spec"]["lr_base"] == 2e-4
    reason = (aside / "reason.txt").read_text()
    for key in ("spec.lr_base: 0.0001 -> 0.0002", "recipe.kl_coef: 0.0 -> 0.01"):
        assert key in reason and key in caplog.text
    assert "compute_max" not in reason


def test_a_settings_file_from_before_an_added_field_counts_as_unchanged(
    run_copy: Path, tiny_model: str, pool: pd.DataFrame, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_dir = run_copy
    run = RunSpec(tiny_model, POINT, SPEC, Recipe(0.0, 0.0), str(run_dir))
    # As if `sampling.chat_template` had come with an upgrade: the older run's settings file lacks it.
    saved = json.loads((run_dir / RUN_SETTINGS).read_text())
    del saved["spec"]["sampling"]["chat_template"]
    (run_dir / RUN_SETTINGS).write_text(json.dumps(saved))
    monkeypatch.setitem(upgrades.ADDED_SETTINGS, "sampling.chat_template", False)
    assert resume_point(run, pool) == str(run_dir / "checkpoint-12") and not _superseded(run_dir)
    # At any other value the field is a change like any other.
    (run_dir / RUN_SETTINGS).write_text(json.dumps(saved))
    chat = dataclasses.replace(SPEC, sampling=dataclasses.replace(SPEC.sampling, chat_template=True))
    assert resume_point(dataclasses.replace(run, spec=chat), pool) is None
    (aside,) = _superseded(run_dir)
    assert "spec.sampling.chat_template: (absent) -> True" in (aside / "reason.txt").read_text()


def test_a_run_resumes_across_a_change_of_the_vllm_engines_layout_but_not_of_its_correction(
    run_copy: Path, tiny_model: str, pool: pd.DataFrame
) -> None:
    run_dir = run_copy
    # The settings file as a vLLM run wrote it before layout left it: with the engine's memory share.
    engine = RolloutEngine("colocate", 0.3, 1, 1, "token_truncate", 2.0)
    saved = json.loads((run_dir / RUN_SETTINGS).read_text())
    saved["spec"]["rollout_engine"] = dataclasses.asdict(engine)
    (run_dir / RUN_SETTINGS).write_text(json.dumps(saved))
    smaller = dataclasses.replace(engine, gpu_memory_utilization=0.21, tensor_parallel_size=2)
    spec = dataclasses.replace(SPEC, rollout_engine=smaller)
    run = RunSpec(tiny_model, POINT, spec, Recipe(0.0, 0.0), str(run_dir))
    assert resume_point(run, pool) == str(run_dir / "checkpoint-12") and not _superseded(run_dir)
    written = json.loads((run_dir / RUN_SETTINGS).read_text())["spec"]["rollout_engine"]
    assert written == {"mode": "colocate", "importance_sampling": "token_truncate", "importance_sampling_cap": 2}
    capped = dataclasses.replace(spec, rollout_engine=dataclasses.replace(smaller, importance_sampling_cap=4.0))
    assert resume_point(dataclasses.replace(run, spec=capped), pool) is None
    (aside,) = _superseded(run_dir)
    assert "spec.rollout_engine.importance_sampling_cap: 2.0 -> 4.0" in (aside / "reason.txt").read_text()
