"""`isocompute compare` draws several results trees on shared axes, reading only their fits."""

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from known_truth import SCENARIOS, fit_repetition

from isocompute.figures.compare import CompareError, compare, read_fits


def results_tree(root: Path, scenario: str, seed: int) -> Path:
    """A results tree holding one fitted fixed-B_problem study, as the pipeline lays it out."""
    fit = fit_repetition(SCENARIOS[scenario], seed, bootstrap=10)
    study = {"study": {"problem_set": "easy", "name": "bp32", "kind": "fixed_b_problem", "by": ["n"],
                       "fixed": {"b_problem": 32}},
             "learning_rate": {"lr_rule": "sqrt", "lr_base": 1e-6, "lr_batch_ref": 1024},
             "headline": {"metric": "avg@4", "compute": "compute_rollouts"},
             "fits": {"avg@4": {"compute_rollouts": fit}}}  # fmt: skip
    path = root / "results" / "fits" / "easy" / "bp32" / "fits.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(study))
    return root / "results"


def test_two_trees_are_drawn_on_shared_axes(tmp_path: Path) -> None:
    model_a = results_tree(tmp_path / "model_a", "paper_easy_law", 0)
    model_b = results_tree(tmp_path / "model_b", "two_levels", 0)
    found = read_fits([model_a, model_b])
    assert list(found) == [("easy", "bp32")] and set(found[("easy", "bp32")]) == {"model_a", "model_b"}
    result = subprocess.run(
        ["isocompute", "compare", str(model_a), str(model_b), "--out", str(tmp_path / "out")],
        capture_output=True, text=True,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    figure = tmp_path / "out" / "fig13_models_easy_bp32.png"
    assert str(figure) in result.stdout and figure.stat().st_size > 10000
    assert (tmp_path / "out" / "fig13_models_easy_bp32.pdf").exists()


def test_a_tree_without_fits_is_named(tmp_path: Path) -> None:
    (tmp_path / "empty" / "results").mkdir(parents=True)
    with pytest.raises(CompareError, match="empty/results: no fits"):
        compare([tmp_path / "empty" / "results"], tmp_path / "out")
    assert shutil.which("isocompute")
