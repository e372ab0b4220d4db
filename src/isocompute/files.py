"""Result files written whole or not at all, the tables among them read back, and whether a weights file is
whole.

A job can be killed at any moment (a SLURM time limit, preemption, a lost node), and a weeks-long study
reads its files while other jobs still write theirs. So every result file and folder is written under a
hidden temporary name beside its final one and renamed into place: a reader, or the next attempt, sees the
old version or the new one, never half of one. A leftover `.<name>.partial` is only ever a crashed write.
"""

from __future__ import annotations

import difflib
import json
import shutil
import struct
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pandas as pd


def write_atomically(path: str | Path, write: Callable[[Path], object]) -> None:
    """Have `write` make `path`'s content (a file or a folder) at a temporary name beside it, then rename
    that to `path`.

    A file is replaced in one rename. A folder standing at `path` is removed just before the rename (a
    rename cannot replace a non-empty folder), so a crash in that instant leaves no folder, never a mixed one.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.partial")
    _remove(partial)
    write(partial)
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    partial.replace(path)


def write_text(text: str, path: str | Path) -> None:
    """A text file, written atomically."""
    write_atomically(path, lambda partial: partial.write_text(text))


def write_json(data: Any, path: str | Path) -> None:
    """A JSON file (indented, as every result file of the study is), written atomically."""
    write_text(json.dumps(data, indent=2), path)


def _remove(path: Path) -> None:
    """A crashed earlier write's leftover, file or folder."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)


def read_tables(paths: list[str] | tuple[str, ...]) -> pd.DataFrame:
    """Concatenate parquet tables (per-shard or per-run pieces of one table)."""
    return pd.concat([pd.read_parquet(path) for path in paths], ignore_index=True)


def write_table(table: pd.DataFrame, path: str | Path) -> None:
    """A parquet table, written atomically (`write_atomically`): no reader sees half a file."""
    write_atomically(path, lambda partial: table.to_parquet(partial, index=False))


# A user's table by its suffix (anything else is CSV): trackers' exports come as any of them.
TABLE_KINDS = {".parquet": "parquet", ".jsonl": "JSON lines", ".json": "JSON lines", ".csv": "CSV"}


def table_kind(path: str | Path) -> str:
    """How `read_table` reads `path`: parquet, JSON lines or CSV."""
    return TABLE_KINDS.get(Path(path).suffix, "CSV")


def read_table(path: str | Path) -> pd.DataFrame:
    """A table a user hands a command: CSV, parquet or JSON lines by its suffix. A missing, empty or
    unreadable file is named (pandas' own messages, such as "No columns to parse from file", do not say
    which file)."""
    if not Path(path).exists():
        raise FileNotFoundError(f"{path}: no such file")
    if Path(path).stat().st_size == 0:
        raise ValueError(f"{path}: the file is empty")
    kind = table_kind(path)
    try:
        if kind == "parquet":
            return pd.read_parquet(path)
        return pd.read_json(path, lines=True) if kind == "JSON lines" else pd.read_csv(path)
    except Exception as error:  # noqa: BLE001 - each reader has its own errors; the message is what matters
        raise ValueError(f"{path}: not a readable {kind} file (truncated or damaged?): {error}") from None


def write_user_table(table: pd.DataFrame, path: str | Path) -> None:
    """A table for a user, by its suffix as `read_table` reads it, written atomically."""
    kind = table_kind(path)
    if kind == "parquet":
        write_table(table, path)
    elif kind == "JSON lines":
        write_atomically(path, lambda partial: table.to_json(partial, orient="records", lines=True))
    else:
        write_atomically(path, lambda partial: table.to_csv(partial, index=False))


def missing_columns(needed: Sequence[str], present: Sequence[str]) -> str | None:
    """The columns of `needed` not in `present`, each with the present column it may be a typo of, or None."""
    missing = [column for column in needed if column not in present]
    if not missing:
        return None
    hints = {m: difflib.get_close_matches(m, [str(p) for p in present], n=1) for m in missing}
    said = ", ".join(f"{m!r}" + (f" (is {hints[m][0]!r} a typo?)" if hints[m] else "") for m in missing)
    return f"missing column(s) {said}"


def safetensors_problem(path: Path) -> str | None:
    """A safetensors file is an 8-byte header length, a JSON header, then the tensors it lists: the file
    must be exactly as long as the header says."""
    if not path.is_file():
        return f"{path.name} is missing"
    size = path.stat().st_size
    try:
        with path.open("rb") as handle:
            (length,) = struct.unpack("<Q", handle.read(8))
            if length > size:
                return f"{path.name} is truncated"
            header = json.loads(handle.read(length))
    except (struct.error, ValueError, OSError):
        return f"{path.name} has an unreadable header"
    end = max((entry["data_offsets"][1] for key, entry in header.items() if key != "__metadata__"), default=0)
    if size != 8 + length + end:
        return f"{path.name} is truncated ({size} of {8 + length + end} bytes)"
    return None
