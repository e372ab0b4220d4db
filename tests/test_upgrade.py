"""A study survives its own upgrades: code edits and added settings rerun nothing it finished, a change of
a run's math reruns exactly that run and what depends on it (docs/guide/upgrading.md); a study finished on
the old layout of the package and rules has nothing to do once this checkout's layout is pulled over it."""

from __future__ import annotations

import io
import os
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from conftest import REPO, copy_of_study
from test_workflow import MICRO, snakemake

from isocompute.pipeline.artifacts import describe_artifact
from isocompute.study import upgrades

# The last commit of the old layout: the flat package src/isocompute/*.py and rules/*.smk as they were
# before the move into subpackages. A study finished on it must survive the move.
OLD_LAYOUT = "0221a7ff4cd35183d1b2e2db7f9ed01a5ed3d90d"
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


def assert_nothing_to_be_done(result: subprocess.CompletedProcess[str]) -> None:
    output = result.stdout + result.stderr
    assert result.returncode == 0 and "Nothing to be done" in output, output[-3000:]


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
    assert_nothing_to_be_done(snakemake_in(workdir, "-n"))  # the finished study, on the copy's own package

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
    assert_nothing_to_be_done(snakemake_in(workdir, "-n"))

    # A new layout reruns nothing: less memory for vLLM and other engine arguments (after an out-of-memory
    # error, say), other tensor parallelism, server GPUs, processes and micro-batches.
    (workdir / "layout.yaml").write_text(LAYOUT)
    assert_nothing_to_be_done(snakemake_in(workdir, "-n", configfiles=(MICRO, "layout.yaml")))

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


def git(*args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, check=False)


def old_layout_tree(target: Path) -> set[str]:
    """The old layout's tree, as a clone checked out at `OLD_LAYOUT` has it, written into `target`; its
    files' names. Skips where this checkout cannot say (no git, not a git checkout, a shallow clone)."""
    if shutil.which("git") is None or git("rev-parse", "--git-dir").returncode != 0:
        pytest.skip(f"{REPO} is not a git checkout: the old layout ({OLD_LAYOUT[:7]}) comes from its history")
    if git("cat-file", "-e", f"{OLD_LAYOUT}^{{commit}}").returncode != 0:
        reason = f"old layout's commit {OLD_LAYOUT[:7]} not in this clone (shallow? git fetch --unshallow)"
        pytest.skip(reason)
    archive = git("archive", "--format=tar", OLD_LAYOUT)
    assert archive.returncode == 0, archive.stderr.decode()
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extraction_filter = getattr(tarfile, "data_filter", None)  # none before Python 3.11.4
        tar.extractall(target)
        return {member.name for member in tar.getmembers() if member.isfile()}


def new_layout_files() -> set[str]:
    """This checkout's tree as a pull would leave it: tracked and not-ignored files, deleted ones left out."""
    listed = git("ls-files", "-z", "--cached", "--others", "--exclude-standard")
    assert listed.returncode == 0, listed.stderr.decode()
    return {name for name in listed.stdout.decode().split("\0") if name and (REPO / name).is_file()}


def pull_new_layout(study: Path, old_files: set[str]) -> None:
    """What pulling this checkout does to a study's folder on the old layout: files the new tree no longer
    has deleted (and folders left empty), added and changed ones written; unchanged files (their times),
    results/, logs/ and .snakemake/ left as they are."""
    new_files = new_layout_files()
    for name in sorted(old_files - new_files):
        path = study / name
        path.unlink()
        while path.parent != study and not any(path.parent.iterdir()):
            path = path.parent
            path.rmdir()
    for name in sorted(new_files):
        source, target = REPO / name, study / name
        if not target.is_file() or target.read_bytes() != source.read_bytes():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(source, target)


def declared_outputs(workdir: Path) -> dict[str, str]:
    """`snakemake --summary` on the folder's own layout: every output the study declares -> its plan ("no
    update" or why not). Its status may say "rule implementation changed": code is no rerun trigger."""
    result = snakemake_in(workdir, "--summary")
    assert result.returncode == 0, result.stderr[-3000:]
    rows = result.stdout.split("output_file\t", 1)[1].splitlines()[1:]
    return {row.split("\t")[0]: row.split("\t")[5] for row in rows if row.strip()}


def result_files(study: Path) -> dict[str, int]:
    """Every file under results/ -> its mtime (ns), which Snakemake compares."""
    files = (p for p in (study / "results").rglob("*") if p.is_file())
    return {p.relative_to(study).as_posix(): p.stat().st_mtime_ns for p in files}


# The jobs that read a study's fits, and the fits themselves: what a release that changes the fits' math
# (docs/guide/upgrading.md, 2026-12-06: the leaders and `fits.tolerance`; censored runs and bands, with the
# fit rules' `method` param) reruns, and nothing else.
FITS_AND_READERS = {
    "fit_study", "fit_study_on", "fit_train_metrics", "recommend_allocation", "tabulate_diagnostics",
    "plot_diagnostics", "plot_study_figure", "plot_study_figure_on", "plot_set_figure", "plot_data_figure",
    "plot_recipe_ablation_figure", "write_results_index", "all",
}  # fmt: skip


@pytest.mark.slow
def test_a_study_finished_on_the_old_layout_reruns_only_its_fits_on_the_new(tmp_path: Path) -> None:
    """The micro study run to the end on `OLD_LAYOUT`'s tree and package, then this checkout pulled over it
    (moved modules and rules gone): Snakemake plans the fits (whose math changed since: the leaders, with
    the new `fits.tolerance` in their params) and the jobs that read them, nothing upstream of them; every
    other result keeps its time, at the paths this layout declares."""
    study = tmp_path / "study"
    old_files = old_layout_tree(study)
    # Jobs import the old tree's own package (PYTHONPATH comes before an installed editable one).
    imported = subprocess.run(
        [sys.executable, "-c", "import isocompute; print(isocompute.__file__)"],
        capture_output=True,
        text=True,
        check=False,
        cwd=study,
        env={**os.environ, "PYTHONPATH": str(study / "src")},
    )
    assert Path(imported.stdout.strip()) == study / "src/isocompute/__init__.py", imported.stderr
    finished = snakemake_in(study)
    assert finished.returncode == 0, finished.stderr[-4000:]
    before = result_files(study)
    old_outputs = declared_outputs(study)
    assert len([name for name in before if name.endswith("/fits.json")]) == 3 and len(old_outputs) > 50

    pull_new_layout(study, old_files)
    assert result_files(study) == before  # the pull itself leaves every result and its time alone
    dry = snakemake_in(study, "-n")
    print("", *[line for line in dry.stdout.splitlines() if line.strip()][-2:], sep="\n")
    jobs = planned(dry)
    assert "fit_study" in jobs.values() and set(jobs.values()) <= FITS_AND_READERS, jobs
    # The new layout declares the same artifacts at the same paths; all but the fits and their readers are
    # up to date, and its catalogue names every file the old layout left.
    outputs = declared_outputs(study)
    stale = {path for path, plan in outputs.items() if plan != "no update"}
    assert set(outputs) == set(old_outputs)
    readers = ("results/fits/", "results/figures/", "results/diagnostics/", "results/recommendations/", "results/README.md")
    assert stale and all(path.startswith(readers) for path in stale), sorted(p for p in stale if not p.startswith(readers))
    produced = [name.removeprefix("results/") for name in before if not Path(name).name.startswith(".")]
    assert [name for name in produced if describe_artifact(name) is None] == []
    assert result_files(study) == before
    # Running it rewrites the fits and their readers only: training and evaluation keep their times.
    rerun = snakemake_in(study)
    assert rerun.returncode == 0, rerun.stderr[-4000:]
    after = result_files(study)
    kept = {name for name in before if name.startswith(("results/train/", "results/evaluation/", "results/problems/"))}
    assert kept and {name: after[name] for name in kept} == {name: before[name] for name in kept}
    assert_nothing_to_be_done(snakemake_in(study, "-n"))
