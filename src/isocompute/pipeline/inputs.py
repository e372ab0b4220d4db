"""The study's input files, checked when the workflow loads: before any job, on every `snakemake` call.

A problem table that lacks a column, holds a column of the wrong type, is empty or is a cut-off parquet
file, and a `base_model.pretrained` folder that is not a model, would otherwise surface hours later, in
the first job that reads them (or, for the model, in bucketing on a GPU node). These checks read only
what is cheap: a parquet file's footer (its schema and row count, never its rows), the first rows of a
CSV or JSON-lines file, a model folder's config, file list and safetensors headers. Hub ids are not
checked here (nothing is downloaded to check them); `datasets` and `from_pretrained` report on those.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from isocompute.data.table_schema import GURU_COLUMNS, LOCAL_FORMATS, PROBLEM_COLUMNS
from isocompute.files import missing_columns, safetensors_problem
from isocompute.pipeline.config import Config, ConfigError

WEIGHT_FILES = (
    "model.safetensors",
    "model.safetensors.index.json",
    "pytorch_model.bin",
    "pytorch_model.bin.index.json",
)
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "tokenizer.model")
_ROWS_READ = 100  # rows of a CSV or JSON-lines file read to see its columns and their types


class InputFileError(ConfigError):
    """An input file the study cannot use; the message names the config key, the file and the problem."""


def check_inputs(config: Config) -> None:
    """Raise `InputFileError` for a local problem table or base model that later jobs could not use."""
    problems = config["problems"]
    if problems["source"] == "table":
        table = problems["table"]
        problem = table_problem(str(table["path"]), table["schema"])
        if problem:
            raise InputFileError(f"problems.table.path={table['path']}: {problem}")
    for name, table in config.get("extra_evaluation", {}).get("out_of_domain", {}).items():
        problem = table_problem(str(table["path"]), table.get("schema", "problem_table"))
        if problem:
            raise InputFileError(f"extra_evaluation.out_of_domain.{name}.path={table['path']}: {problem}")
    pretrained = config["base_model"].get("pretrained")
    if pretrained:
        problem = model_problem(str(pretrained))
        if problem:
            raise InputFileError(f"base_model.pretrained={pretrained}: {problem}")


def _looks_local(path_or_id: str) -> bool:
    """A path the user meant as a local file or folder (a hub id is `name` or `org/name`)."""
    return path_or_id.startswith(("/", "./", "../", "~")) or Path(path_or_id).suffix.lower() in LOCAL_FORMATS


def table_problem(path_or_id: str, schema: str) -> str | None:
    """What is wrong with a local problem table (the first problem found), or None."""
    path = Path(path_or_id).expanduser()
    if not path.exists():
        return "no such file" if _looks_local(path_or_id) else None
    if path.is_dir() or path.suffix.lower() not in LOCAL_FORMATS:
        return None  # a dataset folder or another format: `datasets` reads it in import_problem_table
    if path.stat().st_size == 0:
        return "the file is empty"
    try:
        columns, rows = _columns(path)
    except Exception as error:  # noqa: BLE001 - each reader has its own errors; the message is what matters
        kind = LOCAL_FORMATS[path.suffix.lower()]
        return f"not a readable {kind} file (truncated or damaged?): {type(error).__name__}: {error}"
    if rows == 0:
        return "the table has no rows"
    needed = PROBLEM_COLUMNS if schema == "problem_table" else GURU_COLUMNS
    missing = missing_columns(needed, list(columns))
    if missing:
        return f"{missing}; a {schema} table needs {list(needed)}, this one has {list(columns)}"
    for column, kinds in _EXPECTED[schema].items():
        if columns[column] not in kinds:
            return f"column {column!r} holds {columns[column]} values, not {' or '.join(sorted(kinds))}"
    return None


# The value kinds each schema's columns may hold (guru: chat messages, or their JSON text).
_EXPECTED = {
    "problem_table": {"id": {"text", "integer"}, "prompt": {"text"}, "answer": {"text", "integer", "number"}},
    "guru": {"data_source": {"text"}, "prompt": {"list", "text"}, "reward_model": {"record", "text"}},
}


def _columns(path: Path) -> tuple[dict[str, str], int | None]:
    """Column names with the kind of value each holds, and the row count where it is known without reading."""
    kind = LOCAL_FORMATS[path.suffix.lower()]
    if kind == "parquet":
        import pyarrow.parquet as pq

        metadata = pq.read_metadata(path)
        schema = metadata.schema.to_arrow_schema()
        return {field.name: _arrow_kind(field.type) for field in schema}, metadata.num_rows
    import pandas as pd

    if kind == "csv":
        head = pd.read_csv(path, nrows=_ROWS_READ)
    else:
        lines = path.read_text().lstrip().startswith("{")
        head = pd.read_json(path, lines=lines, nrows=_ROWS_READ) if lines else pd.read_json(path)
    return {str(column): _pandas_kind(head[column]) for column in head.columns}, len(head)


def _arrow_kind(arrow_type: Any) -> str:
    import pyarrow as pa

    if pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type):
        return "text"
    if pa.types.is_integer(arrow_type):
        return "integer"
    if pa.types.is_floating(arrow_type) or pa.types.is_decimal(arrow_type):
        return "number"
    if pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type):
        return "list"
    if pa.types.is_struct(arrow_type):
        return "record"
    return str(arrow_type)


def _pandas_kind(values: Any) -> str:
    import pandas as pd

    if pd.api.types.is_bool_dtype(values):
        return "boolean"
    if pd.api.types.is_integer_dtype(values):
        return "integer"
    if pd.api.types.is_float_dtype(values):
        return "number"
    first = values.dropna().iloc[0] if values.notna().any() else ""
    return {list: "list", dict: "record"}.get(type(first), "text")


def model_problem(path_or_id: str) -> str | None:
    """What keeps a local folder from being loaded by `from_pretrained` (the first problem found), or None."""
    path = Path(path_or_id).expanduser()
    if not path.exists():
        return "no such folder" if _looks_local(path_or_id) else None
    if not path.is_dir():
        return "a file, not a model folder (from_pretrained needs the folder with config.json)"
    config = path / "config.json"
    if not config.is_file():
        return "no config.json: not a model folder"
    try:
        model_type = json.loads(config.read_text()).get("model_type")
    except (ValueError, OSError, AttributeError):
        model_type = None
    if not model_type:
        return "config.json is not a transformers model config (no model_type)"
    weights = [name for name in WEIGHT_FILES if (path / name).is_file()]
    if not weights:
        return f"no model weights (none of {list(WEIGHT_FILES)})"
    if weights[0] == "model.safetensors":
        problem = safetensors_problem(path / "model.safetensors")
        if problem:
            return problem
    if not any((path / name).is_file() for name in TOKENIZER_FILES):
        return f"no tokenizer (none of {list(TOKENIZER_FILES)})"
    return None
