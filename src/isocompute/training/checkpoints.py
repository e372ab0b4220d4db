"""Is a saved checkpoint whole? The check a run makes before it resumes from one.

Transformers writes a checkpoint file by file into `checkpoint-<step>/` (weights, optimizer, scheduler,
RNG states, trainer state last), so a job killed while saving, or a file lost on a shared file system,
leaves a folder that looks like a checkpoint but cannot be resumed from: resuming would crash, or worse,
load a truncated optimizer state. Each file is checked by its own format's cheap integrity marks (the
safetensors header against the file size, the zip directory at the end of a `torch.save` file, the
trainer state's step), without loading any tensor, so the check costs milliseconds even for a 7B model.

Only a run's newest checkpoint needs what a resume reads (optimizer state, scheduler, RNG states: 12 bytes
a parameter under ZeRO-3 against 2 for bf16 weights); evaluation reads every compute point's weights. So
once a newer checkpoint is whole, `keep_newest_whole` thins the older compute-point checkpoints to their
weights (`thin`: a `weights_only.json` mark first, then the resume state removed file by file) and removes
older resume-only checkpoints. A kill at any moment leaves the newest whole checkpoint whole: nothing is
thinned before a newer one passed `checkpoint_problem`, and a marked checkpoint is never taken for a
resume point nor removed as broken, however far its thinning got.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import zipfile
from collections.abc import Collection
from pathlib import Path

from isocompute.files import safetensors_problem, write_json
from isocompute.training.runlock import describe_holder, holder, trainer_alive

LOG = logging.getLogger(__name__)
CHECKPOINT = re.compile(r"^checkpoint-(\d+)$")
# The mark of a checkpoint thinned to what evaluation reads: written before anything is removed.
WEIGHTS_ONLY = "weights_only.json"
# What a resume reads besides the weights and trainer_state.json (transformers' and DeepSpeed's names), and
# the scripts DeepSpeed 0.19.8 writes beside its shards to convert them (`zero_to_fp32.py`, `zero_to_torch.py`),
# useless once the shards are gone.
RESUME_STATE = ("optimizer.pt", "scheduler.pt", "scaler.pt", "rng_state*.pth", "zero_to_fp32.py", "zero_to_torch.py")


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


def is_weights_only(path: str | Path) -> bool:
    """Whether the checkpoint was (or is being) thinned to its weights: never a resume point."""
    return (Path(path) / WEIGHTS_ONLY).is_file()


def weights_problem(path: str | Path) -> str | None:
    """What keeps evaluation from reading the checkpoint's weights (a thinned or a whole checkpoint), or
    None: its name and trainer state agree and its weights are whole outside any DeepSpeed engine state."""
    path = Path(path)
    return _state_problem(path) or _weights_problem(path, deepspeed=False)


def checkpoint_problem(path: str | Path) -> str | None:
    """What makes the checkpoint unusable for a resume (the first problem found), or None when it is whole."""
    path = Path(path)
    problem = _state_problem(path)
    if problem:
        return problem
    if is_weights_only(path):
        return f"weights only ({WEIGHTS_ONLY}): no optimizer state"
    deepspeed = deepspeed_state(path)
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


def _state_problem(path: Path) -> str | None:
    """The folder's name against its trainer state's step."""
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
    return None


def last_good_checkpoint(
    run_dir: str | Path, last_step: int | None = None, save_steps: Collection[int] = ()
) -> str | None:
    """The newest whole checkpoint at or below `last_step` (the run's end) below which every step of
    `save_steps` (the compute points the run saves at) is on disk, so that going on from it leaves the run
    with all of them; None when there is none. A thinned checkpoint counts only at `last_step` itself,
    where nothing is left to train and its trainer state is all that is read. Broken ones met on the way
    are logged and removed so the run saves them again; checkpoints passed over otherwise (thinned ones
    among them) are left where they are."""
    on_disk = checkpoints_of(run_dir)
    steps = {step for step, _ in on_disk}
    for step, path in reversed(on_disk):
        if last_step is not None and step > last_step:
            continue
        if any(needed not in steps for needed in save_steps if needed < step):
            continue
        if is_weights_only(path):
            if step == last_step and weights_problem(path) is None:
                return str(path)
            continue
        problem = checkpoint_problem(path)
        if problem is None:
            return str(path)
        LOG.warning(
            "%s is incomplete (%s): removed; the run resumes from an earlier checkpoint", path, problem
        )
        _remove(path)
        steps.discard(step)
    return None


def keep_newest_whole(run_dir: str | Path, save_steps: Collection[int]) -> None:
    """After a save: once the run's newest checkpoint is whole, thin every older compute-point checkpoint
    (`save_steps`) to its weights and remove every older resume-only one. Nothing happens while the newest
    is not whole (a save still being written, or cut off): the one before it stays the resume point."""
    on_disk = checkpoints_of(run_dir)
    if not on_disk or checkpoint_problem(on_disk[-1][1]) is not None:
        return
    for step, path in on_disk[:-1]:
        if step in save_steps:
            thin(path)
        else:
            _remove(path)


def thin_finished_run(run_dir: str | Path) -> list[str]:
    """`keep_newest_whole` for a run folder that no job trains now: its compute points are those of its
    `checkpoints.json` (a finished run's manifest); the checkpoints thinned are returned. Refused while a
    trainer holds the run (`runlock`), or where the run has no manifest yet (it is not finished)."""
    run_dir = Path(run_dir)
    manifest = run_dir / "checkpoints.json"
    if not manifest.is_file():
        raise ValueError(f"{run_dir}: no checkpoints.json (not a finished run); its next job thins it")
    if trainer_alive(run_dir):
        raise ValueError(f"{run_dir}: a trainer still writes it ({describe_holder(holder(run_dir))})")
    before = {path for _, path in checkpoints_of(run_dir) if not is_weights_only(path)}
    keep_newest_whole(run_dir, [int(entry["step"]) for entry in json.loads(manifest.read_text())])
    return sorted(str(path) for path in before if is_weights_only(path))


def thin(path: str | Path) -> None:
    """Reduce a checkpoint to what evaluation reads (weights, config, tokenizer, trainer_state.json): the
    `WEIGHTS_ONLY` mark is written first (atomically), then the resume state is removed, so a kill between
    any two removals leaves a marked checkpoint whose weights are untouched, and a later call finishes it.
    A checkpoint whose weights live only in DeepSpeed's engine state (ZeRO-3 without
    `zero3_save_16bit_model`) is left whole, with a warning: thinning it would lose them."""
    path = Path(path)
    if not is_weights_only(path):
        problem = weights_problem(path)
        if problem:
            LOG.warning("%s: not thinned to its weights (%s); it keeps its resume state", path, problem)
            return
        removed = "optimizer, scheduler and RNG states, DeepSpeed engine state"
        write_json({"removed": removed}, path / WEIGHTS_ONLY)
    engine = deepspeed_state(path)
    if engine is not None:
        _remove(engine)
        _remove(path / "latest")
    for pattern in RESUME_STATE:
        for found in sorted(path.glob(pattern)):
            _remove(found)


def _remove(path: Path) -> None:
    """One file or folder of a checkpoint, gone (each call is one step a kill may stop after)."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.exists():
        os.remove(path)


def deepspeed_state(path: Path) -> Path | None:
    """The DeepSpeed engine's folder (`latest` names it) when the checkpoint was saved under DeepSpeed."""
    latest = path / "latest"
    if not latest.is_file():
        return None
    return path / latest.read_text().strip()


# DeepSpeed's per-rank optimizer shard (ZeRO stages 1-3; `bf16_` prefixed under its bf16 optimizer).
OPTIMIZER_SHARD = re.compile(r"zero_pp_rank_(\d+)_mp_rank_\d+_optim_states\.pt$")


def saved_world_size(path: str | Path) -> int | None:
    """The data-parallel world size a checkpoint was saved at under DeepSpeed, from DeepSpeed's own files:
    one optimizer shard per rank in the folder `latest` names. None for a checkpoint saved without
    DeepSpeed or thinned to its weights. No record of our own is needed (nor can one be missing from a
    whole checkpoint)."""
    engine = deepspeed_state(Path(path))
    if engine is None or not engine.is_dir():
        return None
    ranks = {match.group(1) for shard in engine.iterdir() if (match := OPTIMIZER_SHARD.search(shard.name))}
    return len(ranks) or None


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
