"""Shared fixtures: a tiny base model and problem pool that the pipeline's own code builds, and the micro
study run to the end once per session for the tests that start from a finished study."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest
import torch

from isocompute.data.base_model import pretrain_base_model
from isocompute.data.tasks import AdditionTask, make_addition_pool
from isocompute.study.specs import BaseModelSpec

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


@pytest.fixture(scope="session")
def reachable(tiny_model: str, pool: pd.DataFrame) -> pd.DataFrame:
    """Problems the tiny model solves now and then: each prompt's answer is the model's own greedy
    completion (its true sums are out of reach after 60 steps of pre-training, so no group would vary)."""
    from isocompute.sampling.generation import load_for_sampling
    from isocompute.study.specs import SamplingSpec

    model, tokenizer = load_for_sampling(tiny_model, SamplingSpec(temperature=1.0, top_p=1.0, max_new_tokens=4))
    problems = pool.head(40).reset_index(drop=True)
    encoded = tokenizer(problems["prompt"].tolist(), return_tensors="pt", padding=True, add_special_tokens=False)
    with torch.no_grad():
        output = model.generate(**encoded, do_sample=False, max_new_tokens=4, pad_token_id=tokenizer.pad_token_id)
    texts = tokenizer.batch_decode(output[:, encoded["input_ids"].shape[1] :], skip_special_tokens=True)
    problems["answer"] = [t.strip().splitlines()[0] if t.strip() else "0" for t in texts]
    return problems


@pytest.fixture(scope="session")
def finished_micro_study(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The micro study run to the end in a scratch copy of the workflow, once per session. Tests never
    write in it: they work in `copy_of_study`'s copies."""
    from test_workflow import scratch_workflow, snakemake

    workdir = scratch_workflow(tmp_path_factory.mktemp("finished_micro_study"))
    result = snakemake(workdir)
    assert result.returncode == 0, result.stderr[-4000:]
    return workdir


def copy_of_study(study: Path, target: Path) -> Path:
    """A copy of a finished study's folder that Snakemake sees as the same study: file times kept (it
    compares them), its metadata of every job kept (code, params and inputs it compares), no locks."""
    return Path(shutil.copytree(study, target, ignore=shutil.ignore_patterns("locks", "incomplete")))


def live_processes() -> list[tuple[int, int, int]]:
    """Every live (not zombie) process as (pid, parent pid, process group), read from /proc: the crash tests
    find a killed study's leftovers with it."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if fields[0] != "Z":
                found.append((int(entry.name), int(fields[1]), int(fields[2])))
    return found
