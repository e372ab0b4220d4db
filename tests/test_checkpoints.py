"""What a run goes on from. A checkpoint that lost files, or was cut off while saving, is found and passed
over: the run resumes from the previous whole one and ends as an uninterrupted run would. Only the newest
checkpoint keeps optimizer state; the older compute points are thinned to their weights once a newer one
is whole, a kill at any moment of the thinning leaves the run resumable, and evaluation reads every
compute point. A changed compute_max extends or cuts the run from the checkpoints it has; a setting that
changes what the run computes sets its checkpoints aside, naming every differing key; none is deleted
unannounced."""

import dataclasses
import json
import shutil
from functools import partial
from pathlib import Path

import pandas as pd
import pytest

from isocompute.cli import main
from isocompute.sampling.evaluation import evaluate_checkpoints
from isocompute.sampling.generation import make_sampler
from isocompute.study import upgrades
from isocompute.study.grid import GridPoint
from isocompute.study.specs import Recipe, RolloutEngine, SamplingSpec, TrainingSpec
from isocompute.training import checkpoints
from isocompute.training import callbacks, resume
from isocompute.training.checkpoints import (
    checkpoint_problem,
    is_weights_only,
    keep_newest_whole,
    last_good_checkpoint,
    weights_problem,
)
from isocompute.training.resume import RUN_SETTINGS, resume_point
from isocompute.training.run_spec import RunSpec
from isocompute.training.trainer import train_run

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


@pytest.fixture(scope="module")
def unthinned(
    tiny_model: str, pool: pd.DataFrame, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, pd.DataFrame]:
    """The same run as a version before thinning left it: every checkpoint whole (3, 6 and 12)."""
    run_dir = tmp_path_factory.mktemp("unthinned") / "run"
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(callbacks, "keep_newest_whole", lambda *_: None)
        patch.setattr(resume, "keep_newest_whole", lambda *_: None)
        table, _ = train_run(RunSpec(tiny_model, POINT, SPEC, Recipe(0.0, 0.0), str(run_dir)), pool)
    assert all(checkpoint_problem(run_dir / f"checkpoint-{step}") is None for step in (3, 6, 12))
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
    unthinned: tuple[Path, pd.DataFrame],
    tiny_model: str,
    pool: pd.DataFrame,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    run_dir = tmp_path / "run"
    shutil.copytree(unthinned[0], run_dir)
    # the job was killed while saving step 12 (no optimizer state yet), and step 6 lost a file since
    (run_dir / "checkpoint-12" / "optimizer.pt").unlink()
    (run_dir / "checkpoint-6" / "trainer_state.json").unlink()
    caplog.set_level("INFO")
    assert last_good_checkpoint(run_dir) == str(run_dir / "checkpoint-3")
    assert sorted(p.name for p in run_dir.glob("checkpoint-*")) == ["checkpoint-3"]
    assert "checkpoint-12 is incomplete (optimizer.pt is missing)" in caplog.text
    shutil.rmtree(run_dir)
    shutil.copytree(unthinned[0], run_dir)
    (run_dir / "checkpoint-12" / "optimizer.pt").unlink()
    resumed, manifest = train_run(RunSpec(tiny_model, POINT, SPEC, Recipe(0.0, 0.0), str(run_dir)), pool)
    assert "resuming from " + str(run_dir / "checkpoint-6") in caplog.text
    pd.testing.assert_frame_equal(resumed, unthinned[1])
    assert [is_weights_only(run_dir / m["path"]) for m in manifest] == [True, True, False]
    assert all(weights_problem(run_dir / m["path"]) is None for m in manifest)
    assert checkpoint_problem(run_dir / "checkpoint-12") is None
    assert json.loads((run_dir / "checkpoint-12" / "trainer_state.json").read_text())["global_step"] == 12


def test_only_the_newest_checkpoint_keeps_optimizer_state_and_evaluation_reads_every_one(
    trained: tuple[Path, pd.DataFrame], unthinned: tuple[Path, pd.DataFrame], pool: pd.DataFrame
) -> None:
    run_dir = trained[0]
    pd.testing.assert_frame_equal(trained[1], unthinned[1])
    assert [is_weights_only(run_dir / f"checkpoint-{s}") for s in (3, 6, 12)] == [True, True, False]
    assert not list((run_dir / "checkpoint-3").glob("rng_state*"))
    assert checkpoint_problem(run_dir / "checkpoint-12") is None
    thinned = sum(f.stat().st_size for f in (run_dir / "checkpoint-3").iterdir())
    whole = sum(f.stat().st_size for f in (unthinned[0] / "checkpoint-3").iterdir())
    assert thinned < whole / 2  # AdamW's two moments are twice the fp32 weights
    # Evaluation scores the same on the thinned checkpoints as on whole ones.
    manifest = json.loads(json.dumps([{"step": s, "path": f"checkpoint-{s}", "compute_rollouts": 8 * s,
                                      "compute_tokens": 0.0} for s in (3, 6, 12)]))  # fmt: skip
    generation = {"backend": "transformers", "batch_size": 64}
    sampler = partial(make_sampler, generation, sampling=SPEC.sampling, seed=0)
    scored = [
        evaluate_checkpoints(sampler, manifest, str(run), POINT, pool.head(8), None, 2, 2, "exact")[0]
        for run in (run_dir, unthinned[0])
    ]
    pd.testing.assert_frame_equal(*scored)


class Killed(Exception):
    """Stands for a kill -9 at one file operation of the thinning."""


def test_a_kill_at_any_file_operation_of_the_thinning_leaves_a_resumable_run(
    unthinned: tuple[Path, pd.DataFrame],
    tiny_model: str,
    pool: pd.DataFrame,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A run mid-way (checkpoint-6 just saved, checkpoint-3 whole from before) killed after each file
    operation in turn of the thinning that follows the save: the newest checkpoint stays whole, every
    compute point's weights stay readable, and the resumed run ends as the uninterrupted one."""
    remove, write_json = checkpoints._remove, checkpoints.write_json
    for kill_after in range(1, 20):
        run_dir = tmp_path / f"killed_after_{kill_after}"
        shutil.copytree(unthinned[0], run_dir, ignore=shutil.ignore_patterns("checkpoint-12"))
        done = []

        def counted(operation, done=done, kill_after=kill_after):
            def run(*args):
                if len(done) == kill_after:
                    raise Killed
                done.append(args)
                return operation(*args)

            return run

        monkeypatch.setattr(checkpoints, "_remove", counted(remove))
        monkeypatch.setattr(checkpoints, "write_json", counted(write_json))
        try:
            keep_newest_whole(run_dir, [3, 6, 12])
            finished = True
        except Killed:
            finished = False
        monkeypatch.undo()
        assert checkpoint_problem(run_dir / "checkpoint-6") is None
        assert weights_problem(run_dir / "checkpoint-3") is None
        assert last_good_checkpoint(run_dir, 12, [3, 6, 12]) == str(run_dir / "checkpoint-6")
        resumed, manifest = train_run(RunSpec(tiny_model, POINT, SPEC, Recipe(0.0, 0.0), str(run_dir)), pool)
        pd.testing.assert_frame_equal(resumed, unthinned[1])
        assert [is_weights_only(run_dir / m["path"]) for m in manifest] == [True, True, False]
        assert not (run_dir / "checkpoint-3" / "optimizer.pt").exists()
        if finished:
            break
    assert finished and kill_after > 3  # the mark and at least the optimizer, scheduler and RNG states


def test_a_save_cut_off_thins_nothing_and_the_run_resumes_from_the_one_before(
    unthinned: tuple[Path, pd.DataFrame], tiny_model: str, pool: pd.DataFrame, tmp_path: Path
) -> None:
    run_dir = tmp_path / "run"
    shutil.copytree(unthinned[0], run_dir)
    _truncate(run_dir / "checkpoint-12" / "model.safetensors")  # the save of step 12 was cut off
    keep_newest_whole(run_dir, [3, 6, 12])
    assert all(checkpoint_problem(run_dir / f"checkpoint-{step}") is None for step in (3, 6))
    resumed, _ = train_run(RunSpec(tiny_model, POINT, SPEC, Recipe(0.0, 0.0), str(run_dir)), pool)
    pd.testing.assert_frame_equal(resumed, unthinned[1])
    assert [is_weights_only(run_dir / f"checkpoint-{step}") for step in (3, 6, 12)] == [True, True, False]


def test_a_finished_run_from_before_thinning_is_thinned_by_hand(
    unthinned: tuple[Path, pd.DataFrame], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir = tmp_path / "run"
    shutil.copytree(unthinned[0], run_dir)
    assert main(["thin", str(run_dir)]) == 2
    assert "no checkpoints.json (not a finished run)" in capsys.readouterr().err
    manifest = [{"step": step, "path": f"checkpoint-{step}"} for step in (3, 6, 12)]
    (run_dir / "checkpoints.json").write_text(json.dumps(manifest))
    assert main(["thin", str(run_dir)]) == 0
    assert capsys.readouterr().out == f"{run_dir}: 2 checkpoint(s) thinned to their weights\n"
    assert [is_weights_only(run_dir / f"checkpoint-{s}") for s in (3, 6, 12)] == [True, True, False]
    assert checkpoint_problem(run_dir / "checkpoint-12") is None
    assert main(["thin", str(run_dir)]) == 0 and "0 checkpoint(s)" in capsys.readouterr().out


def test_a_run_whose_newest_whole_checkpoint_is_lost_starts_afresh_and_sets_the_thinned_aside(
    run_copy: Path, tiny_model: str, pool: pd.DataFrame, caplog: pytest.LogCaptureFixture
) -> None:
    (run_copy / "checkpoint-12" / "rng_state.pth").unlink()
    assert resume_point(RunSpec(tiny_model, POINT, SPEC, Recipe(0.0, 0.0), str(run_copy)), pool) is None
    (aside,) = _superseded(run_copy)
    assert _steps(aside) == [3, 6] and _steps(run_copy) == []
    assert "checkpoint-12 is incomplete (no rng_state*.pth)" in caplog.text


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
