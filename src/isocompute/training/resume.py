"""Where a run goes on from: its saved settings (`run_settings.json`, what it computes without the layout)
compared with the job's, checkpoints set aside when they no longer fit, and the newest whole checkpoint
from which every compute point the run saves at stays on disk.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import time
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from isocompute.files import write_text
from isocompute.study.grid import checkpoint_steps, total_steps
from isocompute.study.layout import without_layout
from isocompute.study.upgrades import changed_settings
from isocompute.training.checkpoints import checkpoints_of, keep_newest_whole, last_good_checkpoint, step_of
from isocompute.training.run_spec import RunSpec

LOG = logging.getLogger(__name__)

RUN_SETTINGS = "run_settings.json"


def run_settings(run: RunSpec, train_problems: pd.DataFrame) -> dict[str, object]:
    """Everything that changes what a run computes, and how far it goes; saved as `run_settings.json`.

    The layout is not among them (`run.launch`, and the vLLM engine's own layout: `study.layout.is_layout`), so a
    run resumes across a change of it; under DeepSpeed ZeRO, on its saved world size only
    (`launch.check_world_size`). Of these, `EXTENT` only says where the run stops and which steps it keeps:
    a run resumes across changes of it.
    """
    return without_layout(
        {
            "model": str(run.model_path),
            "problems": train_problems["id"].tolist(),
            "point": dataclasses.asdict(run.point),
            "spec": dataclasses.asdict(run.spec),
            "recipe": dataclasses.asdict(run.recipe),
            "checker": run.checker,
        }
    )


# The settings that set how far a run goes and where it saves, not what any of its steps computes: with
# a warm-up then a constant learning rate, a run raised to a larger compute_max goes on from its last
# checkpoint exactly as an uninterrupted run to that compute would.
EXTENT = ("spec.compute_min", "spec.compute_max", "spec.checkpoint_points")
SUPERSEDED = "superseded-"


def resume_point(run: RunSpec, train_problems: pd.DataFrame) -> str | None:
    """The checkpoint the run goes on from, or None to start; no checkpoint is ever deleted unannounced.

    A run whose settings changed what it computes (any key but `EXTENT`; `isocompute.study.upgrades` passes
    over fields an upgrade added at their neutral value) cannot use its checkpoints: they move, with the
    old `run_settings.json`, to `superseded-<time>/` in the run folder, the log names every differing key,
    and the run starts afresh. Otherwise the run goes on from its newest whole checkpoint at or below its
    last step below which every compute point it saves at is on disk: a raised compute_max extends it, a
    lowered one cuts it at a checkpoint it has (or trains up to the new end from an earlier one).
    Checkpoints beyond that point, or at compute points the run no longer saves at, move aside as well,
    named in the log. Incomplete checkpoints (a job killed while saving) are logged and removed. The
    compute points below the resume point keep only their weights (`checkpoints.keep_newest_whole`).
    """
    run_dir = Path(run.run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    settings = json.loads(json.dumps(run_settings(run, train_problems)))
    settings_file = run_dir / RUN_SETTINGS
    changed = _changed_computation(settings_file, settings)
    if changed:
        old = [path for _, path in checkpoints_of(run_dir)]
        reason = "its settings changed what it computes: " + "; ".join(changed)
        supersede(run_dir, [*old, *([settings_file] if settings_file.exists() else [])], reason)
    write_text(json.dumps(settings, indent=2, sort_keys=True), settings_file)
    point, spec = run.point, run.spec
    save_steps = checkpoint_steps(point.batch, spec.compute_min, spec.compute_max, spec.checkpoint_points)
    resume = last_good_checkpoint(run_dir, total_steps(point.batch, spec.compute_max), save_steps)
    resume_step = step_of(resume) if resume else 0
    unused = [
        path
        for step, path in checkpoints_of(run_dir)
        if step > resume_step or (step < resume_step and step not in save_steps)
    ]
    if unused:
        start = f"step {resume_step}" if resume else "the start"
        reason = f"the run saves at steps {save_steps}, going on from {start}: these lie beyond or off them"
        supersede(run_dir, unused, reason)
    # Finishes a thinning a kill cut short, and thins checkpoints saved whole before thinning existed.
    keep_newest_whole(run_dir, save_steps)
    LOG.info(
        "%s: %s", run_dir, f"resuming from {resume}" if resume else "no checkpoint to go on from, starting"
    )
    return resume


def _changed_computation(settings_file: Path, settings: dict[str, object]) -> list[str]:
    """`old -> new` of each key (but `EXTENT`) that differs from the saved settings; a run folder with
    checkpoints but no readable settings file counts as changed."""
    if not settings_file.exists():
        return ["run_settings.json: (absent)"] if checkpoints_of(settings_file.parent) else []
    try:
        saved = json.loads(settings_file.read_text())
    except ValueError:
        return ["run_settings.json: (unreadable)"]
    changed = changed_settings(without_layout(saved), settings)  # settings saved with their layout before
    return [
        f"{key}: {_shown(old)} -> {_shown(new)}" for key, (old, new) in changed.items() if key not in EXTENT
    ]


def _shown(value: object) -> str:
    """A settings value for the log: a long list (the training problems' ids) by its length."""
    return f"[{len(value)} items]" if isinstance(value, list) and len(value) > 8 else repr(value)


def supersede(run_dir: Path, paths: Sequence[Path], reason: str) -> Path:
    """Move `paths` (checkpoints, an old settings file) to a new `superseded-<UTC time>/` of the run folder,
    with the reason in its `reason.txt`, and log where they went and why."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    target = run_dir / f"{SUPERSEDED}{stamp}"
    suffix = 1
    while target.exists():
        suffix += 1
        target = run_dir / f"{SUPERSEDED}{stamp}-{suffix}"
    target.mkdir()
    (target / "reason.txt").write_text(reason + "\n")
    for path in paths:
        path.rename(target / path.name)
    LOG.warning("%s: %s moved to %s: %s", run_dir, ", ".join(p.name for p in paths), target.name, reason)
    return target
