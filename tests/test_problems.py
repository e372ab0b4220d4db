"""The problem table: one loader, through Hugging Face `datasets`, with errors that name file and row."""

import json
from pathlib import Path

import pandas as pd
import pytest

from isocompute.data.problems import ProblemTableError, load_problem_table
from isocompute.data.tasks import make_addition_pool
from isocompute.files import write_table


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
    loaded = load_problem_table(str(path)).problems
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


def guru_rows() -> list[dict]:
    """Rows shaped like Guru-Math's parquet: chat prompt, reward_model struct, data_source, extra_info."""

    def row(question: str, truth: str | None, messages: list[dict] | None = None) -> dict:
        user = {"role": "user", "content": f"{question} Please output the final answer within \\boxed{{}}."}
        return {
            "data_source": "math__deepscaler",
            "prompt": messages if messages is not None else [user],
            "ability": "math",
            "reward_model": {"style": "rule", "ground_truth": truth},
            "extra_info": {"index": 0},
        }

    system = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "What is 3+3?"}]
    return [
        row("What is 1/2 + 1/4?", "\\frac{3}{4}"),
        row("Solve x^2 = 4 for x > 0.", "2"),
        row("What is 2+2?", None),
        row("Name the answer.", "?"),
        row("Two turns", "6", system),
        row("What is 1/2 + 1/4?", "0.75"),
        row("Find the interval.", "[1,3)"),
    ]


def test_guru_schema_maps_chat_prompt_and_ground_truth_and_reports_bad_rows(tmp_path: Path) -> None:
    path = tmp_path / "math__combined.parquet"
    pd.DataFrame(guru_rows()).to_parquet(path)
    imported = load_problem_table(str(path), schema="guru", checker="math_verify")
    problems = imported.problems
    assert problems["id"].tolist() == ["math__deepscaler-0", "math__deepscaler-1", "math__deepscaler-6"]
    assert problems["answer"].tolist() == ["\\frac{3}{4}", "2", "[1,3)"]
    assert problems["prompt"].iloc[0].startswith("What is 1/2 + 1/4? Please output the final answer within")
    reasons = dict(zip(imported.excluded["id"], imported.excluded["reason"]))
    assert reasons == {
        "math__deepscaler-2": "no reward_model.ground_truth",
        "math__deepscaler-3": "answer '?' cannot be read by math_verify",
        "math__deepscaler-4": "prompt is not a single user turn",
        "math__deepscaler-5": "repeats an earlier prompt",
    }
    assert imported.excluded["row"].tolist() == [2, 3, 4, 5]


def test_guru_compressed_release_with_json_strings_reads_the_same(tmp_path: Path) -> None:
    rows = [
        {**r, "reward_model": json.dumps(r["reward_model"]), "prompt": json.dumps(r["prompt"])}
        for r in guru_rows()
    ]
    path = tmp_path / "compressed.parquet"
    pd.DataFrame(rows).drop(columns=["extra_info"]).to_parquet(path)
    imported = load_problem_table(str(path), schema="guru", checker="math_verify")
    assert imported.problems["answer"].tolist() == ["\\frac{3}{4}", "2", "[1,3)"]
    assert len(imported.excluded) == 4


def test_guru_schema_without_its_columns_names_them(tmp_path: Path) -> None:
    path = tmp_path / "plain.parquet"
    make_addition_pool(5, 1, 1, seed=0).to_parquet(path)
    with pytest.raises(
        ProblemTableError, match=r"plain\.parquet: missing Guru column\(s\) \['data_source', 'reward_model'\]"
    ):
        load_problem_table(str(path), schema="guru", checker="math_verify")


def test_plain_table_answer_the_checker_cannot_read_names_the_row(tmp_path: Path) -> None:
    path = tmp_path / "math.parquet"
    pd.DataFrame({"id": ["a", "b"], "prompt": ["p", "q"], "answer": ["\\frac{1}{2}", "?"]}).to_parquet(path)
    with pytest.raises(
        ProblemTableError, match=r"row 1 \(id='b'\) has answer '\?', which problems.checker='math_verify'"
    ):
        load_problem_table(str(path), checker="math_verify")
