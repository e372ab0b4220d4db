"""Result files and folders are written whole or not at all (`isocompute.files`)."""

import json
from pathlib import Path

import pytest

from isocompute.files import write_atomically, write_json


def test_a_failed_write_leaves_the_old_file_and_the_next_write_replaces_it(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "fits.json"
    write_json({"version": 1}, path)

    def crash(partial: Path) -> None:
        partial.write_text('{"version": ')  # half a file, then the job dies
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        write_atomically(path, crash)
    assert json.loads(path.read_text()) == {"version": 1}
    write_json({"version": 2}, path)  # the crashed write's leftover is cleared, not read
    assert json.loads(path.read_text()) == {"version": 2}
    assert sorted(p.name for p in path.parent.iterdir()) == ["fits.json"]


def test_a_folder_is_replaced_as_a_whole(tmp_path: Path) -> None:
    model = tmp_path / "model"

    def save(files: dict[str, str]):
        def write(partial: Path) -> None:
            partial.mkdir()
            for name, text in files.items():
                (partial / name).write_text(text)

        return write

    write_atomically(model, save({"config.json": "old", "weights.bin": "old"}))
    write_atomically(model, save({"config.json": "new"}))
    assert {p.name: p.read_text() for p in model.iterdir()} == {"config.json": "new"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model"]
