"""Shared fixtures: a tiny base model and problem pool that the pipeline's own code builds."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import torch

from isocompute.base_model import pretrain_base_model
from isocompute.specs import BaseModelSpec
from isocompute.tasks import AdditionTask, make_addition_pool

REPO = Path(__file__).resolve().parents[1]

# One grid point (Easy, bp4_n2_seed1) and no study over it: the longer runs of the crash and time-limit
# tests, layered over the micro config with a larger training.compute_max.
ONE_RUN = """grid:
  - problem_sets: [easy]
    b_problem: [4]
    n: [2]
    seeds: [1]
studies: {fixed_b_problem: [], fixed_batch: [], joint: false}
"""

TINY_MODEL = BaseModelSpec(
    hidden_size=32,
    intermediate_size=64,
    num_layers=1,
    num_heads=2,
    num_kv_heads=1,
    train_steps=60,
    batch_size=64,
    learning_rate=3e-3,
    task=AdditionTask(200, 1, 2),
)


@pytest.fixture(autouse=True)
def _one_thread() -> None:
    torch.set_num_threads(1)


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A Qwen2 base model pre-trained for a few steps, saved for `from_pretrained`."""
    torch.set_num_threads(1)
    path = tmp_path_factory.mktemp("model") / "base"
    pretrain_base_model(TINY_MODEL, path, seed=0)
    return str(path)


@pytest.fixture(scope="session")
def pool() -> pd.DataFrame:
    return make_addition_pool(200, 1, 2, seed=0)
