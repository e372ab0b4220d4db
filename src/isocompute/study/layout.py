"""Which settings lay a job out on devices and jobs rather than change what it computes: such a setting
reruns nothing, and a run resumes across a change of it (docs/guide/upgrading.md, "Layout"). A study's
settings, read by the workflow (which keeps them out of every job's params, `pipeline.config`) and by the
training (which keeps them out of a run's saved settings, `training.resume.run_settings`) alike.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from isocompute.study import upgrades

# The `training` keys that lay a run out on devices and jobs without changing what it computes.
LAUNCH_KEYS = (
    "processes",
    "per_device_batch_max",
    "activation_checkpointing",
    "accelerate_config",
    "resume_every_minutes",
    "resume_every_steps",  # deprecated: resume_every_minutes
    "time_limit_margin",
    "report_to",
)
# The keys of `training.vllm` that change what a run computes: whether TRL samples with vLLM at all, and how
# importance sampling corrects for its sampler. Every other key of the block lays the engine out (memory
# share, tensor parallelism, the server's GPUs, ...): a key added to the block is layout unless named here.
VLLM_RECIPE_KEYS = ("mode", "importance_sampling", "importance_sampling_cap")
# The keys of `generation` that lay a sampler out without changing what it samples. Not `batch_size`: the
# transformers sampler draws one random stream across its generate calls, so another batch size samples
# other completions where it splits the prompts differently (docs/guide/upgrading.md).
GENERATION_LAYOUT_KEYS = ("tensor_parallel_size", "vllm_engine_kwargs")


def is_layout(path: str) -> bool:
    """Whether the setting at config path `path` (`training.vllm.gpu_memory_utilization`) lays a job out
    on devices rather than changing what it computes: such a setting reruns nothing and a run resumes
    across changes of it, so it is in no job's params and in no run's settings."""
    block, *keys = path.split(".")
    if block == "training" and keys:
        if keys[0] == "vllm":
            return len(keys) > 1 and keys[1] not in VLLM_RECIPE_KEYS
        return keys[0] in LAUNCH_KEYS
    return block == "generation" and bool(keys) and keys[0] in GENERATION_LAYOUT_KEYS


def without_layout(values: Mapping[str, Any], path: str = "") -> dict[str, Any]:
    """`values` (settings at dotted `path`: a config block, or a run's settings, whose paths
    `upgrades.config_path` maps to the config's) without their layout fields, at any depth."""
    kept = {}
    for key, value in values.items():
        inner = f"{path}.{key}" if path else str(key)
        if not is_layout(upgrades.config_path(inner)):
            kept[key] = without_layout(value, inner) if isinstance(value, Mapping) else value
    return kept
