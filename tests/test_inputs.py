"""Bad input files stop the study when the workflow loads, before any job, naming the file and the problem."""

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest
from test_problems import guru_rows
from test_workflow import scratch_workflow, snakemake

from isocompute.pipeline.inputs import model_problem, table_problem

TABLE = pd.DataFrame({"id": ["a", "b"], "prompt": ["1+1=", "2+2="], "answer": ["2", "4"]})


def test_a_good_table_and_model_pass(tmp_path: Path, tiny_model: str) -> None:
    for name, write in [("t.parquet", TABLE.to_parquet), ("t.csv", TABLE.to_csv), ("t.jsonl", None)]:
        path = tmp_path / name
        if write is None:
            TABLE.to_json(path, orient="records", lines=True)
        else:
            write(path, index=False)
        assert table_problem(str(path), "problem_table") is None, name
    pd.DataFrame(guru_rows()).to_parquet(tmp_path / "guru.parquet")
    assert table_problem(str(tmp_path / "guru.parquet"), "guru") is None
    assert model_problem(tiny_model) is None
    # hub ids are not checked here (nothing is downloaded to check them)
    assert (
        table_problem("LLM360/guru-RL-92k", "guru") is None
        and model_problem("Qwen/Qwen2.5-7B-Instruct") is None
    )


def test_bad_problem_tables_are_named_with_their_problem(tmp_path: Path) -> None:
    TABLE.rename(columns={"prompt": "promt"}).to_parquet(tmp_path / "typo.parquet")
    assert table_problem(str(tmp_path / "typo.parquet"), "problem_table") == (
        "missing column(s) 'prompt' (is 'promt' a typo?); a problem_table table needs ['id', 'prompt', 'answer'], "
        "this one has ['id', 'promt', 'answer']"
    )
    TABLE.assign(prompt=[1, 2]).to_parquet(tmp_path / "typed.parquet")
    assert table_problem(str(tmp_path / "typed.parquet"), "problem_table") == (
        "column 'prompt' holds integer values, not text"
    )
    TABLE.assign(answer=[[2], [4]]).to_csv(tmp_path / "typed.csv", index=False)
    assert table_problem(str(tmp_path / "typed.csv"), "problem_table") is None  # a CSV holds text
    TABLE.drop(columns="answer").to_csv(tmp_path / "short.csv", index=False)
    assert table_problem(str(tmp_path / "short.csv"), "problem_table").startswith(
        "missing column(s) 'answer'"
    )
    (tmp_path / "empty.parquet").write_bytes(b"")
    assert table_problem(str(tmp_path / "empty.parquet"), "problem_table") == "the file is empty"
    TABLE.head(0).to_parquet(tmp_path / "no_rows.parquet")
    assert table_problem(str(tmp_path / "no_rows.parquet"), "problem_table") == "the table has no rows"
    TABLE.to_parquet(tmp_path / "cut.parquet")
    data = (tmp_path / "cut.parquet").read_bytes()
    (tmp_path / "cut.parquet").write_bytes(data[: len(data) // 2])
    assert table_problem(str(tmp_path / "cut.parquet"), "problem_table").startswith(
        "not a readable parquet file (truncated or damaged?)"
    )
    assert table_problem(str(tmp_path / "missing.parquet"), "problem_table") == "no such file"
    pd.DataFrame(guru_rows()).drop(columns="reward_model").to_parquet(tmp_path / "guru.parquet")
    assert table_problem(str(tmp_path / "guru.parquet"), "guru").startswith(
        "missing column(s) 'reward_model'"
    )


def test_folders_that_are_not_models_are_named_with_their_problem(tmp_path: Path, tiny_model: str) -> None:
    assert model_problem(str(tmp_path / "nowhere")) == "no such folder"
    (tmp_path / "weights.bin").write_bytes(b"x")
    assert model_problem(str(tmp_path / "weights.bin")).startswith("a file, not a model folder")
    assert model_problem(str(tmp_path)) == "no config.json: not a model folder"
    model = tmp_path / "model"
    shutil.copytree(tiny_model, model)
    data = (model / "model.safetensors").read_bytes()
    (model / "model.safetensors").write_bytes(data[:-100])
    assert model_problem(str(model)).startswith("model.safetensors is truncated")
    (model / "model.safetensors").unlink()
    assert model_problem(str(model)).startswith("no model weights")
    (model / "config.json").write_text(json.dumps({"hidden_size": 4}))
    assert model_problem(str(model)) == "config.json is not a transformers model config (no model_type)"


BAD_INPUTS = {
    "missing column": (
        lambda d: TABLE.drop(columns="answer").to_parquet(d / "problems.parquet"),
        "problems.table.path=problems.parquet: missing column(s) 'answer'",
    ),
    "mistyped column": (
        lambda d: TABLE.assign(prompt=[3, 4]).to_parquet(d / "problems.parquet"),
        "problems.table.path=problems.parquet: column 'prompt' holds integer values, not text",
    ),
    "empty file": (
        lambda d: (d / "problems.parquet").write_bytes(b""),
        "problems.table.path=problems.parquet: the file is empty",
    ),
    "truncated parquet": (
        lambda d: (d / "problems.parquet").write_bytes(TABLE.to_parquet()[:300]),
        "problems.table.path=problems.parquet: not a readable parquet file (truncated or damaged?)",
    ),
    "model path not a model": (
        lambda d: (TABLE.to_parquet(d / "problems.parquet"), (d / "models/base").mkdir(parents=True)),
        "base_model.pretrained=./models/base: no config.json: not a model folder",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_a_bad_input_stops_the_study_before_any_job(tmp_path: Path, case: str) -> None:
    workdir = scratch_workflow(tmp_path)
    make, message = BAD_INPUTS[case]
    make(workdir)
    (workdir / "own.yaml").write_text(
        "problems:\n  source: table\n  table: {path: problems.parquet, split: train, schema: problem_table, data_files: null}\n"
        "base_model:\n  pretrained: ./models/base\n"
    )
    result = snakemake(workdir, configfiles=(".test/config_micro/config.yaml", "own.yaml"))
    assert result.returncode != 0
    assert message in result.stderr, result.stderr[-3000:]
    assert not (workdir / "results").exists() and not (workdir / "logs").exists()
