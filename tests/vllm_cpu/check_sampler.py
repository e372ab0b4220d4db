"""The project's VLLMSampler on a model, run by an interpreter where vLLM imports; prints JSON.

tests/test_vllm_cpu.py runs it in the cluster path's CPU environment (.venv-cluster-cpu), or with the test's
interpreter where vLLM is installed there.
"""

import json
import sys

from isocompute.data.tasks import make_addition_pool
from isocompute.sampling.generation import VLLMSampler, count_correct, make_sampler
from isocompute.study.specs import SamplingSpec

GENERATION = {
    "backend": "vllm",
    "batch_size": 64,
    "tensor_parallel_size": 1,
    "vllm_engine_kwargs": {"dtype": "float32", "enforce_eager": True, "kv_cache_memory_bytes": 1 << 26},
}


def run(model: str, seed: int) -> dict[str, object]:
    pool = make_addition_pool(200, 1, 2, seed=0)
    prompts, answers = pool["prompt"].tolist(), pool["answer"].tolist()
    sampler = make_sampler(GENERATION, model, SamplingSpec(1.0, 1.0, 6), seed)
    assert isinstance(sampler, VLLMSampler)
    samples = sampler.sample(prompts, k=4)
    n_correct, mean_tokens = count_correct(sampler, prompts, answers, 4, "exact")
    sampler.close()  # the next engine must fit beside nothing
    return {
        "texts": [[c.text for c in group] for group in samples],
        "tokens": [[c.num_tokens for c in group] for group in samples],
        "n_correct": n_correct,
        "mean_tokens": mean_tokens,
    }


if __name__ == "__main__":
    path = sys.argv[1]
    print(json.dumps({"seed0": run(path, 0), "seed0_again": run(path, 0), "seed1": run(path, 1)}))
