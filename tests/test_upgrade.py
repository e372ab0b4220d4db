"""A study survives its own upgrades: code edits and added settings rerun nothing it finished, a change of
a run's math reruns exactly that run and what depends on it (docs/guide/upgrading.md)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import REPO, copy_of_study
from test_workflow import MICRO, snakemake

from isocompute.study import upgrades

# An added field whose default (TRL's own max_grad_norm) computes what the study computed before it.
ADDED_FIELD = "max_grad_norm"
# Layout settings changed in a finished study.
LAYOUT = """\
training:
  processes: 2
  per_device_batch_max: 8
  vllm: {gpu_memory_utilization: 0.21, tensor_parallel_size: 2, server_gpus: 2}
generation:
  tensor_parallel_size: 2
  vllm_engine_kwargs: {enforce_eager: true, max_model_len: 4096}
"""


def test_added_fields_at_their_neutral_value_leave_the_comparisons(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(upgrades.ADDED_SETTINGS, "training.max_grad_norm", 1.0)
    monkeypatch.setitem(upgrades.ADDED_SETTINGS, "sampling.min_p", 0.0)
    params = {"sampling": {"top_p": 1.0, "min_p": 0.0}, "training": {"lr_base": 0.1, "max_grad_norm": 1.0}}
    assert upgrades.without_added(params) == {"sampling": {"top_p": 1.0}, "training": {"lr_base": 0.1}}
    assert upgrades.without_added(params["sampling"], "sampling") == {"top_p": 1.0}
    assert upgrades.setting({"top_p": 1.0}, "sampling.min_p") == 0.0
    assert upgrades.setting({"min_p": 0.1}, "sampling.min_p") == 0.1
    # A run's settings file names the training block `spec` and the sampling block `spec.sampling`.
    saved = {"spec": {"lr_base": 0.1, "sampling": {"top_p": 1.0}}}
    now = {"spec": {"lr_base": 0.1, "max_grad_norm": 1.0, "sampling": {"top_p": 1.0, "min_p": 0.0}}}
    assert upgrades.changed_settings(saved, now) == {}
    now["spec"]["max_grad_norm"] = 0.5
    now["spec"]["lr_base"] = 0.2
    assert upgrades.changed_settings(saved, now) == {
        "spec.lr_base": (0.1, 0.2),
        "spec.max_grad_norm": (upgrades.MISSING, 0.5),
    }


def test_fields_a_study_started_with_keep_their_params_form() -> None:
    """With nothing added, the params Snakemake stores for a running study are the same `repr`."""
    params = {"training": {"zero": 0.0, "none": None, "vllm": {"mode": None}}, "sampling": {"top_p": 1.0}}
    assert repr(upgrades.without_added(params)) == repr(params)


def snakemake_in(workdir: Path, *args: str, configfiles: tuple[str, ...] = (MICRO,)) -> subprocess.CompletedProcess[str]:
    """Snakemake in the scratch copy, on the copy's own package (its upgraded library modules)."""
    return snakemake(workdir, *args, configfiles=configfiles, package=workdir / "src")


def planned(result: subprocess.CompletedProcess[str]) -> dict[str, str]:
    """A dry run's jobs: first output -> rule."""
    assert result.returncode == 0, result.stderr[-3000:]
    jobs = re.findall(r"^(?:local)?rule (\w+):\n(?:    .*\n)*?    output: ([^,\n]+)", result.stdout, re.M)
    return {output: rule for rule, output in jobs}


def append_comment(paths: list[Path]) -> None:
    for path in paths:
        path.write_text(path.read_text() + "\n# upgraded: nothing this file computes changed\n")


def add_training_field(workdir: Path) -> None:
    """The config and schema side of adding `training.max_grad_norm` at its default."""
    config = workdir / "config/config.yaml"
    config.write_text(config.read_text().replace("training:\n", f"training:\n  {ADDED_FIELD}: 1.0\n", 1))
    schema = workdir / "workflow/schemas/config.schema.yaml"
    head, training = schema.read_text().split("\n  training:\n", 1)
    training = training.replace("properties:\n", f"properties:\n      {ADDED_FIELD}: {{type: number}}\n", 1)
    schema.write_text(head + "\n  training:\n" + training)


@pytest.mark.slow
def test_upgrades_rerun_nothing_finished_unless_a_runs_math_changed(finished_micro_study: Path, tmp_path: Path) -> None:
    workdir = copy_of_study(finished_micro_study, tmp_path / "workdir")
    shutil.copytree(REPO / "src", workdir / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    finished = snakemake_in(workdir, "-n")  # the finished study, on the copy's own package
    assert "Nothing to be done" in finished.stdout + finished.stderr, finished.stdout[-3000:]

    # A pull that touches every workflow script, rule file and library module.
    code = [
        workdir / "Snakefile",
        *(workdir / "rules").glob("*.smk"),
        *(workdir / "workflow/scripts").glob("*.py"),
        *(workdir / "src/isocompute").glob("*.py"),
    ]
    assert len(code) > 40
    append_comment(code)
    # ... and adds a settings field at the default that computes what the study computed before. Until it
    # is registered as added, the training jobs see changed params: the field reaches what they compare.
    add_training_field(workdir)
    unregistered = planned(snakemake_in(workdir, "-n"))
    assert "train_grpo" in unregistered.values()
    registry = workdir / "src/isocompute/study/upgrades.py"
    registry.write_text(registry.read_text() + f'\nADDED_SETTINGS["training.{ADDED_FIELD}"] = 1.0\n')
    nothing = snakemake_in(workdir, "-n")
    assert (
        nothing.returncode == 0 and "Nothing to be done" in nothing.stdout + nothing.stderr
    ), nothing.stdout[-3000:]

    # A new layout reruns nothing: less memory for vLLM and other engine arguments (after an out-of-memory
    # error, say), other tensor parallelism, server GPUs, processes and micro-batches.
    (workdir / "layout.yaml").write_text(LAYOUT)
    relaid = snakemake_in(workdir, "-n", configfiles=(MICRO, "layout.yaml"))
    assert (
        relaid.returncode == 0 and "Nothing to be done" in relaid.stdout + relaid.stderr
    ), relaid.stdout[-3000:]

    # A change of the runs' math (every micro run uses the default lr_base) reruns exactly the training
    # jobs and what depends on them: the jobs Snakemake plans when those three runs alone are forced.
    (workdir / "lr.yaml").write_text("training:\n  lr_base: 0.002\n")
    changed = planned(snakemake_in(workdir, "-n", configfiles=(MICRO, "lr.yaml")))
    runs = sorted(
        str(p.relative_to(workdir)) for p in (workdir / "results/train/easy").glob("*/train_log.parquet")
    )
    assert len(runs) == 3
    assert sorted(out for out, rule in changed.items() if rule == "train_grpo") == runs
    forced = planned(snakemake_in(workdir, "-n", "--forcerun", *runs))
    assert changed == forced
    upstream = {"make_problem_pool", "pretrain_base_model", "score_difficulty", "gather_difficulty"}
    assert not upstream & set(changed.values())
    assert {"build_problem_sets", "evaluate_base_model"}.isdisjoint(changed.values())
    assert {"evaluate_run", "fit_study", "gather_evaluations"} <= set(changed.values())
