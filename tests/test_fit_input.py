"""`isocompute fit` on users' own tables, bad ones too (issue 35): every damaged table is refused before any
fitting with one message naming the file, the column and the data rows (counted from 1 below the header),
or, where dropping is the right call, fitted with a warning that counts what was dropped; legal tables,
the base model's compute-0 point among them, still fit."""

from __future__ import annotations

import json
import logging
import subprocess
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from isocompute.cli import main
from isocompute.fits.forms import reward_curve

K = 4
PROBLEMS = 40
CURVES = {8: (0.3, 0.55, 3.5, 1.5), 32: (0.3, 0.62, 4.5, 1.5), 128: (0.3, 0.70, 5.5, 1.5)}


def legal_tables() -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """An evaluation table of three curves of nine checkpoints, its per-problem counts and the base model's."""
    rng = np.random.default_rng(35)
    rows, counts = [], []
    for n, params in CURVES.items():
        for step, c in enumerate(np.geomspace(1e3, 1e7, 9), start=1):
            correct = rng.binomial(K, reward_curve(np.log10(c), *params), size=PROBLEMS)
            at = {"run": f"bp32_n{n}_seed0", "b_problem": 32, "n": n, "seed": 0, "step": step,
                  "compute_rollouts": c, "compute_tokens": 7 * c}  # fmt: skip
            rows.append({**at, "avg@4": correct.mean() / K})
            counts.append(pd.DataFrame({"id": [f"p{i}" for i in range(PROBLEMS)], "n_correct": correct, **at}))
    base = pd.DataFrame({"id": [f"p{i}" for i in range(PROBLEMS)], "n_correct": rng.binomial(K, 0.3, PROBLEMS)})
    return pd.DataFrame(rows), pd.concat(counts, ignore_index=True), base


def fit(tmp_path: Path, evals: pd.DataFrame | str, *flags: str, counts: pd.DataFrame | None = None,
        base: pd.DataFrame | None = None) -> int:  # fmt: skip
    """`isocompute fit` on `evals` (a table, or a file's text) written as evals.csv, with the counts and the
    base model's counts as parquet files where given."""
    path = tmp_path / "evals.csv"
    path.write_text(evals) if isinstance(evals, str) else evals.to_csv(path, index=False)
    extra = []
    if counts is not None:
        counts.to_parquet(tmp_path / "counts.parquet")
        extra += ["--counts", str(tmp_path / "counts.parquet")]
    if base is not None:
        base.to_parquet(tmp_path / "base.parquet")
        extra += ["--base-counts", str(tmp_path / "base.parquet"), "--base-reward", "0.3"]
    out = tmp_path / "fits.json"
    return main(["fit", str(path), "--out", str(out), "--bootstrap", "4", "--holdout-decades", "0", *extra, *flags])


def with_cell(row: int, column: str, value: object) -> Callable[[pd.DataFrame], pd.DataFrame]:
    """A table with data row `row` (from 1) of `column` set to `value`: a text value turns the column into
    text (as a parquet file holds a column of one type), a float turns it into floats."""
    def change(table: pd.DataFrame) -> pd.DataFrame:
        table = table.copy()
        if isinstance(value, (str, float)):
            table[column] = table[column].astype(str if isinstance(value, str) else float)
        table.loc[row - 1, column] = value
        return table

    return change


# Evaluation tables each refused with a message naming the file (evals.csv), the column and the data row.
BAD_EVALS: dict[str, tuple[Callable[[pd.DataFrame], pd.DataFrame], str]] = {
    "non-numeric metric": (with_cell(5, "avg@4", "x"), "evals.csv: column 'avg@4' holds non-numeric values at data row 5 ('x')"),
    "non-numeric compute": (with_cell(3, "compute_rollouts", "1e5 rollouts"), "column 'compute_rollouts' holds non-numeric values at data row 3 ('1e5 rollouts')"),
    "non-numeric step": (with_cell(2, "step", "two"), "column 'step' holds non-numeric values at data row 2 ('two')"),
    "non-numeric n": (with_cell(10, "n", "n32"), "column 'n' holds non-numeric values at data row 10 ('n32')"),
    "non-numeric b_problem": (with_cell(4, "b_problem", "?"), "column 'b_problem' holds non-numeric values at data row 4 ('?')"),
    "missing compute": (with_cell(6, "compute_rollouts", np.nan), "column 'compute_rollouts' has no value at data row 6"),
    "missing step": (with_cell(6, "step", np.nan), "column 'step' has no value at data row 6"),
    "missing n": (with_cell(7, "n", np.nan), "column 'n' has no value at data row 7"),
    "missing b_problem": (with_cell(7, "b_problem", np.nan), "column 'b_problem' has no value at data row 7"),
    "missing run": (with_cell(8, "run", None), "column 'run' has no value at data row 8"),
    "infinite metric": (with_cell(5, "avg@4", np.inf), "column 'avg@4' holds infinite values at data row 5 (inf)"),
    "infinite compute": (with_cell(9, "compute_rollouts", np.inf), "column 'compute_rollouts' holds infinite values at data row 9 (inf)"),
    "negative compute": (with_cell(2, "compute_rollouts", -5000.0), "column 'compute_rollouts' must be at least 0 (compute counts from 0, the base model's point, which the fit leaves out) at data row 2 (-5000.0)"),
    "negative step": (with_cell(2, "step", -1), "column 'step' must be at least 0 (steps count from 0"),
    "metric above 1": (with_cell(12, "avg@4", 35.5), "column 'avg@4' must lie in [0, 1] (a metric is a share of the validation problems) at data row 12 (35.5)"),
    "metric below 0": (with_cell(12, "avg@4", -0.1), "column 'avg@4' must lie in [0, 1]"),
    "non-integer n": (with_cell(3, "n", 8.5), "column 'n' must hold whole numbers at data row 3 (8.5)"),
    "non-integer b_problem": (with_cell(3, "b_problem", 31.9), "column 'b_problem' must hold whole numbers at data row 3 (31.9)"),
    "non-integer step": (with_cell(3, "step", 2.5), "column 'step' must hold whole numbers at data row 3 (2.5)"),
    "zero n": (with_cell(3, "n", 0), "column 'n' must be at least 1"),
    "one run, two n": (with_cell(9, "n", 16), "run 'bp32_n8_seed0' has several values of 'n', first at data rows 1 (8), 9 (16): a run trains one (B_problem, n)"),
    "conflicting duplicates": (
        lambda t: pd.concat([t, t.iloc[[4]].assign(**{"avg@4": 0.99})], ignore_index=True),
        "evals.csv: run 'bp32_n8_seed0', step 5 appears at data rows 5, 28 with different values of ['avg@4']: "
        "keep one evaluation per run and step",
    ),
    "no metric anywhere": (lambda t: t.assign(**{"avg@4": np.nan}), "evals.csv: column 'avg@4' has no value in any row"),
    "missing column": (
        lambda t: t.rename(columns={"compute_rollouts": "compute_rollout"}),
        "evals.csv: missing column(s) 'compute_rollouts' (is 'compute_rollout' a typo?)",
    ),
    "header only": (lambda t: t.iloc[:0], "evals.csv: the table has no rows"),
}


@pytest.mark.parametrize("case", sorted(BAD_EVALS))
def test_a_bad_evaluation_table_is_refused_with_file_column_and_row(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    change, message = BAD_EVALS[case]
    evals, _, _ = legal_tables()
    assert fit(tmp_path, change(evals)) == 2
    error = capsys.readouterr().err
    assert error.startswith("isocompute fit: ") and message in error, error
    assert not (tmp_path / "fits.json").exists()


@pytest.mark.parametrize(
    ("text", "message"),
    [("", "evals.csv: the file is empty"), ("run,n\n\"x,1\n", "evals.csv: not a readable CSV file")],
)
def test_an_empty_or_unreadable_file_is_named(text: str, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert fit(tmp_path, text) == 2
    assert message in capsys.readouterr().err


def test_a_truncated_parquet_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    evals, _, _ = legal_tables()
    evals.to_parquet(tmp_path / "evals.parquet")
    whole = (tmp_path / "evals.parquet").read_bytes()
    (tmp_path / "evals.parquet").write_bytes(whole[: len(whole) // 2])
    assert main(["fit", str(tmp_path / "evals.parquet"), "--out", str(tmp_path / "fits.json")]) == 2
    assert "evals.parquet: not a readable parquet file (truncated or damaged?)" in capsys.readouterr().err


# Per-problem counts (--counts) each refused naming counts.parquet, the column and the data row.
BAD_COUNTS: dict[str, tuple[Callable[[pd.DataFrame], pd.DataFrame], str]] = {
    "count above k": (with_cell(7, "n_correct", 5), "counts.parquet: column 'n_correct' must lie in [0, 4] (correct samples out of --k 4) at data row 7 (5"),
    "negative count": (with_cell(7, "n_correct", -1), "column 'n_correct' must lie in [0, 4]"),
    "non-integer count": (with_cell(7, "n_correct", 2.5), "column 'n_correct' must hold whole numbers at data row 7 (2.5)"),
    "non-numeric count": (with_cell(7, "n_correct", "three"), "column 'n_correct' holds non-numeric values at data row 7 ('three')"),
    "missing count": (with_cell(7, "n_correct", np.nan), "column 'n_correct' has no value at data row 7"),
    "missing id": (with_cell(7, "id", None), "column 'id' has no value at data row 7"),
    "negative compute": (with_cell(41, "compute_rollouts", -1.0), "column 'compute_rollouts' must be at least 0"),
    "non-integer n": (with_cell(41, "n", 7.5), "column 'n' must hold whole numbers at data row 41 (7.5)"),
    "missing key": (lambda t: t.drop(columns=["step"]), "counts.parquet: missing column(s) 'step'"),
    "conflicting duplicates": (
        lambda t: pd.concat([t, t.iloc[[0]].assign(n_correct=(t["n_correct"].iloc[0] + 1) % (K + 1))], ignore_index=True),
        "id 'p0' appears at data rows 1, 1081 with different values of ['n_correct']: keep one count per checkpoint and problem",
    ),
    "a problem missing at one checkpoint": (
        lambda t: t.drop(index=[45]).reset_index(drop=True),
        "is scored on 39 of the table's 40 problems (not on ['p5']): every checkpoint must be scored on the same problems",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_COUNTS))
def test_bad_counts_are_refused_with_file_column_and_row(case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    change, message = BAD_COUNTS[case]
    evals, counts, _ = legal_tables()
    assert fit(tmp_path, evals, counts=change(counts)) == 2
    error = capsys.readouterr().err
    assert "counts.parquet: " in error and message in error, error


BAD_BASE: dict[str, tuple[Callable[[pd.DataFrame], pd.DataFrame], str]] = {
    "count above k": (with_cell(3, "n_correct", 9), "base.parquet: column 'n_correct' must lie in [0, 4] (correct samples out of --k 4) at data row 3 (9"),
    "missing id": (with_cell(3, "id", None), "base.parquet: column 'id' has no value at data row 3"),
    "conflicting duplicates": (
        lambda t: pd.concat([t, t.iloc[[2]].assign(n_correct=(t["n_correct"].iloc[2] + 1) % (K + 1))], ignore_index=True),
        "base.parquet: id 'p2' appears at data rows 3, 41 with different values of ['n_correct']: keep one count per problem",
    ),
    "other problems": (
        lambda t: t.assign(id=[f"q{i}" for i in range(PROBLEMS)]),
        "base.parquet: the base model is scored on other problems than the runs' counts: 40 of theirs missing",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_BASE))
def test_bad_base_counts_are_refused_with_file_column_and_row(case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    change, message = BAD_BASE[case]
    evals, counts, base = legal_tables()
    assert fit(tmp_path, evals, counts=counts, base=change(base)) == 2
    error = capsys.readouterr().err
    assert message in error, error


def test_base_counts_without_counts_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    evals, _, base = legal_tables()
    base.to_parquet(tmp_path / "base.parquet")
    assert fit(tmp_path, evals, "--base-counts", str(tmp_path / "base.parquet")) == 2
    assert "the base model's counts are resampled with --counts; give both" in capsys.readouterr().err


def test_legal_tables_fit_with_counts_and_the_base_model(tmp_path: Path) -> None:
    evals, counts, base = legal_tables()
    assert fit(tmp_path, evals, counts=counts, base=base) == 0
    result = json.loads((tmp_path / "fits.json").read_text())["fits"]["avg@4"]["compute_rollouts"]
    assert len(result["measured"]) == len(evals) and result["bootstrap"]["kind"] == "problems"


def test_the_base_models_compute_zero_point_stays_legal(tmp_path: Path) -> None:
    """Step 0 at compute 0 is the base model's point: legal, and left out of the fit as before."""
    evals, counts, _ = legal_tables()
    start = evals.groupby("run", as_index=False).first().assign(step=0, compute_rollouts=0.0, compute_tokens=0.0)
    start_counts = counts[counts["step"] == 1].assign(step=0, compute_rollouts=0.0, compute_tokens=0.0)
    assert fit(tmp_path, pd.concat([start, evals]), counts=pd.concat([start_counts, counts])) == 0
    result = json.loads((tmp_path / "fits.json").read_text())["fits"]["avg@4"]["compute_rollouts"]
    assert min(row["compute_rollouts"] for row in result["measured"]) == pytest.approx(1e3)


def test_identical_duplicates_are_dropped_with_a_warning(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """The same evaluation twice (an export written twice, or overlapping exports joined) is one point:
    kept twice it would weigh twice against the curve's other seeds."""
    evals, counts, _ = legal_tables()
    twice = pd.concat([evals, evals.iloc[[4, 5]]], ignore_index=True)
    with caplog.at_level(logging.WARNING):
        assert fit(tmp_path, twice, counts=pd.concat([counts, counts.iloc[[3]]], ignore_index=True)) == 0
    assert "evals.csv: dropped 2 repeated row(s) of one evaluation per run and step with the same values: data rows 28, 29" in caplog.text
    assert "counts.parquet: dropped 1 repeated row(s) of one count per checkpoint and problem" in caplog.text
    result = json.loads((tmp_path / "fits.json").read_text())["fits"]["avg@4"]["compute_rollouts"]
    assert len(result["measured"]) == len(evals)


def test_rows_without_the_metric_are_dropped_and_counted(tmp_path: Path) -> None:
    """A log exported from a trainer has a row per step and the evaluation only at some: those rows are
    dropped, and the user is told how many and which (run as a user runs it, so the warning is what they see)."""
    evals, _, _ = legal_tables()
    evals.loc[[4, 20], "avg@4"] = np.nan
    evals.to_csv(tmp_path / "evals.csv", index=False)
    result = subprocess.run(
        ["isocompute", "fit", str(tmp_path / "evals.csv"), "--out", str(tmp_path / "fits.json"), "--bootstrap", "0",
         "--holdout-decades", "0"],
        capture_output=True, text=True,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "evals.csv: dropped 2 row(s) without a value of 'avg@4': data rows 5, 21" in result.stderr
    measured = json.loads((tmp_path / "fits.json").read_text())["fits"]["avg@4"]["compute_rollouts"]["measured"]
    assert len(measured) == len(evals) - 2
