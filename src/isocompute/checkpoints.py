"""Is a saved checkpoint whole? The check a run makes before it resumes from one.

Transformers writes a checkpoint file by file into `checkpoint-<step>/` (weights, optimizer, scheduler,
RNG states, trainer state last), so a job killed while saving, or a file lost on a shared file system,
leaves a folder that looks like a checkpoint but cannot be resumed from: resuming would crash, or worse,
load a truncated optimizer state. Each file is checked by its own format's cheap integrity marks (the
safetensors header against the file size, the zip directory at the end of a `torch.save` file, the
trainer state's step), without loading any tensor, so the check costs milliseconds even for a 7B model.
"""

from __future__ import annotations

import json
import logging
import re
import shutil
import struct
import zipfile
from collections.abc import Collection
from pathlib import Path

LOG = logging.getLogger(__name__)
CHECKPOINT = re.compile(r"^checkpoint-(\d+)$")


def checkpoints_of(run_dir: str | Path) -> list[tuple[int, Path]]:
    """The run's `checkpoint-<step>` folders as (step, path), oldest first."""
    found = []
    for path in Path(run_dir).glob("checkpoint-*"):
        match = CHECKPOINT.match(path.name)
        if match and path.is_dir():
            found.append((int(match.group(1)), path))
    return sorted(found)


def step_of(path: str | Path) -> int:
    """The step of a `checkpoint-<step>` folder, from its name."""
    match = CHECKPOINT.match(Path(path).name)
    if not match:
        raise ValueError(f"{path} is not named checkpoint-<step>")
    return int(match.group(1))


def checkpoint_problem(path: str | Path) -> str | None:
    """What makes the checkpoint unusable for a resume (the first problem found), or None when it is whole."""
    path = Path(path)
    match = CHECKPOINT.match(path.name)
    if not match:
        return f"{path.name} is not named checkpoint-<step>"
    state_file = path / "trainer_state.json"
    if not state_file.is_file():
        return "trainer_state.json is missing"
    try:
        step = json.loads(state_file.read_text())["global_step"]
    except (ValueError, KeyError, OSError):
        return "trainer_state.json is unreadable"
    if step != int(match.group(1)):
        return f"trainer_state.json is at step {step}, not {match.group(1)}"
    deepspeed = _deepspeed_state(path)
    problem = _weights_problem(path, deepspeed is not None) or _optimizer_problem(path, deepspeed)
    if problem:
        return problem
    rng_states = sorted(path.glob("rng_state*.pth"))
    if not rng_states:
        return "no rng_state*.pth"
    for name in [*(p.name for p in rng_states), *(["scheduler.pt"] if deepspeed is None else [])]:
        problem = _torch_file_problem(path / name)
        if problem:
            return problem
    return None


def last_good_checkpoint(
    run_dir: str | Path, last_step: int | None = None, save_steps: Collection[int] = ()
) -> str | None:
    """The newest whole checkpoint at or below `last_step` (the run's end) below which every step of
    `save_steps` (the compute points the run saves at) is on disk, so that going on from it leaves the run
    with all of them; None when there is none. Broken ones met on the way are logged and removed so the run
    saves them again; checkpoints passed over otherwise are left where they are."""
    on_disk = checkpoints_of(run_dir)
    steps = {step for step, _ in on_disk}
    for step, path in reversed(on_disk):
        if last_step is not None and step > last_step:
            continue
        if any(needed not in steps for needed in save_steps if needed < step):
            continue
        problem = checkpoint_problem(path)
        if problem is None:
            return str(path)
        LOG.warning(
            "%s is incomplete (%s): removed; the run resumes from an earlier checkpoint", path, problem
        )
        shutil.rmtree(path)
        steps.discard(step)
    return None


def _deepspeed_state(path: Path) -> Path | None:
    """The DeepSpeed engine's folder (`latest` names it) when the checkpoint was saved under DeepSpeed."""
    latest = path / "latest"
    if not latest.is_file():
        return None
    return path / latest.read_text().strip()


def _weights_problem(path: Path, deepspeed: bool) -> str | None:
    """Model weights: one safetensors file, a sharded safetensors index with every shard, or a torch file."""
    single = path / "model.safetensors"
    index = path / "model.safetensors.index.json"
    if single.is_file():
        return safetensors_problem(single)
    if index.is_file():
        try:
            shards = sorted(set(json.loads(index.read_text())["weight_map"].values()))
        except (ValueError, KeyError, OSError):
            return f"{index.name} is unreadable"
        for shard in shards:
            problem = safetensors_problem(path / shard)
            if problem:
                return problem
        return None
    if (path / "pytorch_model.bin").is_file():
        return _torch_file_problem(path / "pytorch_model.bin")
    # Under ZeRO-3 without a gathered 16-bit copy the weights live in the engine's shards only.
    return None if deepspeed else "no model weights (model.safetensors)"


def _optimizer_problem(path: Path, deepspeed: Path | None) -> str | None:
    """The optimizer state: `optimizer.pt`, or DeepSpeed's per-rank shards in the folder `latest` names."""
    if deepspeed is None:
        return _torch_file_problem(path / "optimizer.pt")
    shards = sorted(deepspeed.glob("*optim_states.pt")) if deepspeed.is_dir() else []
    if not shards:
        return f"no optimizer shards in {deepspeed.name}/"
    for shard in shards:
        problem = _torch_file_problem(shard)
        if problem:
            return problem
    return None


def _torch_file_problem(path: Path) -> str | None:
    """A `torch.save` file is a zip archive whose directory is written last: a cut-off file has none."""
    if not path.is_file():
        return f"{path.name} is missing"
    if not zipfile.is_zipfile(path):
        return f"{path.name} is truncated or not a torch file"
    return None


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
