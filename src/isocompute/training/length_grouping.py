"""Length-grouped micro-batches: the rows of a rank's generation batch ordered by completion length before
they are split into micro-batches, and each micro-batch cut to its own longest prompt and completion.

TRL 1.16's `GRPOTrainer` pads a rank's whole generation batch to its longest completion (and its longest
prompt, on the left), shuffles the rows and slices them into micro-batches that keep that width, in the
loss's forward and backward (`_compute_loss` takes `logits_to_keep = completion_ids.size(1)`) and in the
reference and old-policy forwards (`_get_per_token_logps_and_entropies` in chunks of the micro-batch size).
With one 8,192-token completion in a rank's batch, every row then costs about 8.5k tokens in every pass.
Ordered by length, the long completions share a few micro-batches and the others are cut short.

Cutting is exact: a column that no row of a micro-batch attends to changes nothing for its rows, and the
per-token outputs there are zero in TRL's own full-width forward (`FusedCausalLMOutput`: zero where the label
is -100), as they are here after padding back. What can change is only the floats: kernels see other shapes,
and a row left-padded by fewer columns starts at another position, which rotary position embeddings see
only through relative positions (all the study's models). Whether a loss stays the same when other rows
share a micro-batch depends on how it is normalized: `isocompute.training.selective_grpo` says which, and groups only
where it does.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import torch
from trl.trainer.utils import split_tensor_dict

# TRL's left-padded keys; every other tensor whose second dimension is the completion width is per token.
PROMPT_KEYS = ("prompt_ids", "prompt_mask")


def length_grouped(
    batch: Mapping[str, Any], micro_batches: int, multiple: int | None = None
) -> list[dict[str, Any]]:
    """The batch's rows, longest completion first, split into `micro_batches` equal micro-batches, each cut
    to the columns its own rows attend to (widths rounded up to TRL's `pad_to_multiple_of`, if set).

    The sort is stable, so rows of equal length keep the order they came in (TRL's shuffle). Longest first,
    so that a step's widest micro-batch, the one that sets its peak memory, runs first.
    """
    rows = batch["completion_mask"].size(0)
    if rows % micro_batches:
        raise ValueError(f"{rows} rows do not split into {micro_batches} equal micro-batches")
    order = torch.argsort(batch["completion_mask"].sum(dim=1), descending=True, stable=True)
    ordered = {key: _rows(value, order) for key, value in batch.items()}
    return [trimmed(part, multiple) for part in split_tensor_dict(ordered, micro_batches)]


def trimmed(batch: Mapping[str, Any], multiple: int | None = None) -> dict[str, Any]:
    """The micro-batch without the prompt columns (on the left) and completion columns (on the right) that
    none of its rows attends to; at least one completion column is kept, so every per-token tensor stays
    two-dimensional and a (rows, 1) per-sequence tensor is never mistaken for a per-token one."""
    prompt_width, completion_width = batch["prompt_mask"].size(1), batch["completion_mask"].size(1)
    attended = batch["prompt_mask"].any(dim=0).nonzero()
    keep_prompt = _rounded(prompt_width - int(attended[0]) if len(attended) else 0, multiple, prompt_width)
    attended = batch["completion_mask"].any(dim=0).nonzero()
    last = int(attended[-1]) + 1 if len(attended) else 0
    keep_completion = _rounded(max(last, 1), multiple, completion_width)
    cut = {}
    for key, value in batch.items():
        if key in PROMPT_KEYS:
            value = value[:, prompt_width - keep_prompt :]
        elif isinstance(value, torch.Tensor) and value.ndim >= 2 and value.size(1) == completion_width:
            value = value[:, :keep_completion]
        cut[key] = value
    return cut


def tokens(batch: Mapping[str, Any]) -> int:
    """The token positions a forward over the (micro-)batch processes: rows x (prompt + completion width)."""
    return batch["completion_ids"].size(0) * (batch["prompt_ids"].size(1) + batch["completion_ids"].size(1))


def _rows(value: Any, order: torch.Tensor) -> Any:
    """A batch entry in the new row order; 0-d tensors (the step's normalizers) and None as they are."""
    return value[order] if isinstance(value, torch.Tensor) and value.ndim else value


def _rounded(width: int, multiple: int | None, limit: int) -> int:
    return min(limit, math.ceil(width / multiple) * multiple) if multiple else width
