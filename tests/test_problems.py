"""The problem table: one loader, through Hugging Face `datasets`, with errors that name file and row."""

from pathlib import Path

import pandas as pd
import pytest

from isocompute.problems import ProblemTableError, load_problem_table, write_table
from isocompute.tasks import make_addition_pool


def test_synthetic_pool_has_unique_checkable_problems() -> None:
    pool = make_addition_pool(300, 1, 3, seed=5)
    assert list(pool.columns) == ["id", "prompt", "answer"]
    assert pool["prompt"].is_unique and pool["id"].is_unique
    for prompt, answer in zip(pool["prompt"], pool["answer"]):
        left, right = prompt.rstrip("=").split("+")
        assert int(left) + int(right) == int(answer)
    assert pool.equals(make_addition_pool(300, 1, 3, seed=5))


def test_pool_larger_than_the_task_allows_is_an_error() -> None:
    with pytest.raises(ValueError, match="problems.size"):
        make_addition_pool(200, 1, 1, seed=0)


@pytest.mark.parametrize("suffix", [".parquet", ".jsonl", ".csv"])
def test_local_files_load_through_datasets(tmp_path: Path, suffix: str) -> None:
    pool = make_addition_pool(50, 1, 2, seed=0).assign(extra="ignored")
    path = tmp_path / f"problems{suffix}"
    if suffix == ".parquet":
        pool.to_parquet(path)
    elif suffix == ".jsonl":
        pool.to_json(path, orient="records", lines=True)
    else:
        pool.to_csv(path, index=False)
    loaded = load_problem_table(str(path))
    assert list(loaded.columns) == ["id", "prompt", "answer"]
    assert loaded["answer"].tolist() == pool["answer"].tolist()


def test_missing_column_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "bad.parquet"
    pd.DataFrame({"id": ["a"], "question": ["1+1="]}).to_parquet(path)
    with pytest.raises(ProblemTableError, match=r"bad\.parquet: missing column\(s\) \['prompt', 'answer'\]"):
        load_problem_table(str(path))


def test_empty_answer_and_duplicate_prompt_name_the_row(tmp_path: Path) -> None:
    path = tmp_path / "rows.parquet"
    pd.DataFrame({"id": ["a", "b"], "prompt": ["1+1=", "2+2="], "answer": ["2", ""]}).to_parquet(path)
    with pytest.raises(ProblemTableError, match=r"row 1 \(id='b'\) has an empty 'answer'"):
        load_problem_table(str(path))
    pd.DataFrame({"id": ["a", "b"], "prompt": ["1+1=", "1+1="], "answer": ["2", "2"]}).to_parquet(path)
    with pytest.raises(ProblemTableError, match="row 1 repeats prompt"):
        load_problem_table(str(path))


def test_write_table_leaves_no_partial_file(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "table.parquet"
    write_table(pd.DataFrame({"x": [1, 2]}), path)
    assert pd.read_parquet(path)["x"].tolist() == [1, 2]
    assert [p.name for p in path.parent.iterdir()] == ["table.parquet"]
