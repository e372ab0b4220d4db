"""The vLLM backend for real: the project's VLLMSampler on vLLM's CPU build (or on vLLM where it is
installed beside the project), sampling from a model the pipeline builds itself.

vLLM's CPU build needs numpy < 2.4 on Python 3.11 (through mistral_common) where the project pins 2.4.6 on
Python >= 3.13, so it lives in the cluster path's own environment (`.ci/install-cluster-cpu` makes
`.venv-cluster-cpu`, on the pins Python 3.11 gets) and runs tests/vllm_cpu/check_sampler.py there with the
project's src/ on PYTHONPATH. vLLM's CPU attention needs a head size of at least 32, hence the model here.
"""

import importlib.util
import json
import os
import subprocess
import sys

import pytest
from conftest import REPO

from isocompute.data.base_model import pretrain_base_model
from isocompute.data.tasks import AdditionTask
from isocompute.study.specs import BaseModelSpec

CPU_BUILD = REPO / ".venv-cluster-cpu" / "bin" / "python"
# The cluster path's environment: with tests/test_cluster_cpu.py, `pytest -m heavy`.
pytestmark = pytest.mark.heavy


def vllm_python() -> str | None:
    if importlib.util.find_spec("vllm") is not None:
        return sys.executable
    return str(CPU_BUILD) if CPU_BUILD.exists() else None


@pytest.fixture(scope="module")
def vllm_run(tmp_path_factory: pytest.TempPathFactory) -> dict:
    python = vllm_python()
    if python is None:
        pytest.skip("vLLM does not import here and .venv-cluster-cpu is missing (run .ci/install-cluster-cpu)")
    model = tmp_path_factory.mktemp("vllm") / "model"
    spec = BaseModelSpec(64, 128, 2, 2, 2, train_steps=150, batch_size=64, learning_rate=3e-3, task=AdditionTask(200, 1, 2))
    pretrain_base_model(spec, model, seed=0)
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "VLLM_ENABLE_V1_MULTIPROCESSING": "0"}
    result = subprocess.run(
        [python, str(REPO / "tests/vllm_cpu/check_sampler.py"), str(model)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_k_samples_per_prompt_in_one_request_with_token_counts(vllm_run: dict) -> None:
    run = vllm_run["seed0"]
    assert len(run["texts"]) == 200 and all(len(group) == 4 for group in run["texts"])
    assert all(1 <= t <= 6 for group in run["tokens"] for t in group)
    assert all(0 <= c <= 4 for c in run["n_correct"]) and sum(run["n_correct"]) > 0


def test_same_seed_same_samples_other_seed_other_samples(vllm_run: dict) -> None:
    assert vllm_run["seed0"] == vllm_run["seed0_again"]
    assert vllm_run["seed0"]["texts"] != vllm_run["seed1"]["texts"]


def test_samples_of_different_prompts_are_not_correlated(vllm_run: dict) -> None:
    """A per-request seed made sample j of every prompt share one random stream: 42 distinct 4-tuples
    of 200 prompts. With the engine's seed alone, nearly every prompt gets its own."""
    distinct = {tuple(group) for group in vllm_run["seed0"]["texts"]}
    assert len(distinct) > 150
