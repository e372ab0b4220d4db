"""Settings fields added while studies run, and the comparison of a run's settings that passes over them.

A paper-scale study outlives many versions of this code, and two places compare a run's settings with
those it was made with: Snakemake (each rule's `params`, stored in .snakemake/metadata as the `repr` of each
value, so a dict that gains a key counts as changed) and a training job deciding whether to resume from
its checkpoints (`run_settings.json`). A field that an upgrade adds would look like a change of every
finished run to both, although at its default it computes exactly what the code computed before the field
existed. Registered in `ADDED_SETTINGS` with that value, the field is left out of both comparisons while it
holds that value; any other value is a change like any other, and reruns what it changes.

Fields present when a study started are never left out, so the stored params of a running study keep
their form: a field goes into `ADDED_SETTINGS` only in the change that adds it (docs/guide/upgrading.md). For
the same reason the layout fields that were params when layout left them (`layout.is_layout`) stay in the
params at a frozen value, in their stored place (`FROZEN_LAYOUT`, `with_frozen_layout`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# Config key path of a field added by an upgrade -> the value at which it computes what the code computed
# before it existed. Paths are the config's: `training.<key>`, `training.vllm.<key>`, `sampling.<key>`,
# `evaluation.<key>`, `generation.<key>`, `recipes.<key>` (the key in every recipe), `grid.<key>` (a grid
# point's field).
ADDED_SETTINGS: dict[str, Any] = {"training.vllm.sleep_mode": False, "training.vllm.max_model_len": None}

# Where the blocks of a run's settings (`training.run_settings`) and of its params (`config.run_params`)
# live in the config, where their names differ; the longest matching prefix applies.
CONFIG_PATHS = {
    "spec.sampling": "sampling",
    "spec.rollout_engine": "training.vllm",
    "spec": "training",
    "recipe": "recipes",
    "point": "grid",
}

# Layout fields (`layout.is_layout`) that were among the params when layout left them: each keeps a place
# in the params at this value, whatever the config says, so that the params Snakemake stored for a study
# started before (at these values: the default and every preset's training block) compare equal and rerun
# nothing. The job itself reads the config's value (`config.with_layout`). Layout fields added since are
# never in the params; none goes into this table.
FROZEN_LAYOUT: dict[str, Any] = {
    "training.vllm.gpu_memory_utilization": 0.3,
    "training.vllm.tensor_parallel_size": 1,
    "training.vllm.server_gpus": 1,
    "generation.tensor_parallel_size": 1,
    "generation.vllm_engine_kwargs": {},
}
# The blocks that hold them, and the block that holds those, with their keys in config/config.yaml's order
# then (`with_frozen_layout`).
FROZEN_LAYOUT_ORDER = {
    "training": (
        "lr_rule",
        "lr_base",
        "lr_batch_ref",
        "warmup_steps",
        "compute_min",
        "compute_max",
        "checkpoint_points",
        "loss_type",
        "vllm",
    ),
    "training.vllm": (
        "mode",
        "gpu_memory_utilization",
        "tensor_parallel_size",
        "server_gpus",
        "importance_sampling",
        "importance_sampling_cap",
    ),
    "generation": ("backend", "batch_size", "tensor_parallel_size", "vllm_engine_kwargs"),
}


def with_frozen_layout(values: Mapping[str, Any], path: str) -> dict[str, Any]:
    """A block's params at config path `path`, its layout left out, with the layout fields it held before
    (`FROZEN_LAYOUT`) back at their frozen value, where the stored params of a study started before have
    them.

    Snakemake merges the config files so that the keys they name come first, in the order named, and
    config.yaml's other keys follow in config.yaml's order; a dict's `repr` follows that order. A study
    started with these layout fields unnamed (or named with their whole block in config.yaml's order, as
    the paper preset does) has them, and `training.vllm` in `training`, among the trailing keys in
    config.yaml's order; a file that names one now (a new memory share) would move it forward. So the
    trailing run of keys that follows config.yaml's order takes them at their places in that order; the
    keys before it keep theirs. (A study whose files named keys on both sides of the frozen ones, in
    config.yaml's order, without naming those, had them elsewhere: its jobs replan once.)
    """
    order = FROZEN_LAYOUT_ORDER.get(path)
    if order is None:
        return dict(values)
    held = FROZEN_LAYOUT.keys() | FROZEN_LAYOUT_ORDER.keys()
    placed = [key for key in order if f"{path}.{key}" in held]
    keys = [key for key in values if key not in placed]
    start = len(keys)
    while start and keys[start - 1] in order:
        if start < len(keys) and order.index(keys[start - 1]) > order.index(keys[start]):
            break
        start -= 1
    present = [key for key in placed if key in values or f"{path}.{key}" in FROZEN_LAYOUT]
    trailing = sorted([*keys[start:], *present], key=order.index)
    return {
        **{key: values[key] for key in keys[:start]},
        **{key: values[key] if key in values else FROZEN_LAYOUT[f"{path}.{key}"] for key in trailing},
    }


def config_path(path: str) -> str:
    """The config key path of a dotted settings path: `spec.sampling.top_p` is `sampling.top_p`."""
    for prefix in sorted(CONFIG_PATHS, key=len, reverse=True):
        if path == prefix or path.startswith(prefix + "."):
            return CONFIG_PATHS[prefix] + path[len(prefix) :]
    return path


def is_added_default(path: str, value: Any) -> bool:
    """Whether the field at this settings path is an added one at the value that changes nothing."""
    key = config_path(path)
    return key in ADDED_SETTINGS and value == ADDED_SETTINGS[key]


def without_added(values: Mapping[str, Any], path: str = "") -> dict[str, Any]:
    """`values` (the settings at dotted `path`; "" for a whole run's) without the added fields that hold
    their neutral value, at any depth; every other key keeps its place and value, so the `repr` that
    Snakemake stores of settings with no added field is unchanged."""
    kept = {}
    for key, value in values.items():
        inner = f"{path}.{key}" if path else str(key)
        if is_added_default(inner, value):
            continue
        kept[key] = without_added(value, inner) if isinstance(value, Mapping) else value
    return kept


def setting(values: Mapping[str, Any], path: str) -> Any:
    """The field at config path `path` read from its block `values` (a job's params, which leave an added
    field out at its neutral value): the value there, else that neutral value. Code reads added fields
    through this."""
    key = path.rsplit(".", 1)[-1]
    return values[key] if key in values else ADDED_SETTINGS[path]


def flat(values: Mapping[str, Any], path: str = "") -> dict[str, Any]:
    """Nested settings as {dotted path: leaf value}."""
    leaves: dict[str, Any] = {}
    for key, value in values.items():
        inner = f"{path}.{key}" if path else str(key)
        if isinstance(value, Mapping) and value:
            leaves.update(flat(value, inner))
        else:
            leaves[inner] = value
    return leaves


def changed_settings(old: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, tuple[Any, Any]]:
    """Every dotted path whose value differs between two runs' settings, as (old, new); a path on one side
    only is (missing, value). Added fields at their neutral value count as absent, so a settings file
    written before a field existed equals one written with the field at its default."""
    before, after = flat(without_added(old)), flat(without_added(new))
    return {
        path: (before.get(path, MISSING), after.get(path, MISSING))
        for path in sorted(before.keys() | after.keys())
        if before.get(path, MISSING) != after.get(path, MISSING)
    }


class _Missing:
    """A path one side of a comparison lacks (unlike None, which a field may hold)."""

    def __repr__(self) -> str:
        return "(absent)"


MISSING = _Missing()
