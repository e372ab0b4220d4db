"""What every workflow script sets up: logging into the rule's log, single-threaded torch, the job's settings.

Every job runs torch on one thread so that results do not depend on `--cores`: the same config gives the
same numbers on any machine, and two jobs share two cores instead of fighting over them.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Any, TextIO

from isocompute.pipeline.config import with_layout


def start_job(log_path: str) -> TextIO:
    """Send stdout, stderr and `logging` to the rule's log; pin torch to one thread."""
    import torch

    Path(log_path).parent.mkdir(parents=True, exist_ok=True)
    handle = open(log_path, "w", buffering=1)  # noqa: SIM115 - lives as long as the job
    sys.stdout = sys.stderr = handle
    logging.basicConfig(stream=handle, level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s", force=True)
    torch.set_num_threads(1)
    return handle


def base_model_of(snakemake: Any) -> str:
    """The model a job loads: the pipeline's own (its `model` input) or the configured path or hub id."""
    return snakemake.input.model[0] if snakemake.input.model else snakemake.params.pretrained


def generation_of(snakemake: Any) -> dict[str, Any]:
    """The sampler's settings: the job's `generation` params with the layout (tensor parallelism, vLLM's
    engine arguments) from the config, not the params, so a new layout reruns nothing."""
    return with_layout(snakemake.params.generation, snakemake.config["generation"], "generation")


def named_inputs_of(snakemake: Any) -> dict[str, list[str]]:
    """A figure job's input files by name, each a list: the names are those of its entry in the figure
    registry (`isocompute.figures.registry.INPUTS`), which its drawing function reads them by."""
    return {name: list(files) for name, files in snakemake.input.items()}
