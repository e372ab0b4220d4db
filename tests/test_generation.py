"""Sampling: the transformers backend on the tiny model (the vLLM backend: tests/test_vllm_cpu.py)."""

import pandas as pd
import pytest
from transformers import AutoModelForCausalLM, AutoTokenizer

from isocompute.data.difficulty import score_difficulty
from isocompute.sampling.answers import is_correct, reward_function
from isocompute.sampling.generation import TransformersSampler, make_sampler, score_problems
from isocompute.study.specs import SamplingSpec

SAMPLING = SamplingSpec(temperature=1.0, top_p=1.0, max_new_tokens=4)
TRANSFORMERS = {
    "backend": "transformers",
    "batch_size": 64,
    "tensor_parallel_size": 1,
    "vllm_engine_kwargs": {},
}


def test_base_model_and_tokenizer_load_with_from_pretrained(tiny_model: str) -> None:
    tokenizer = AutoTokenizer.from_pretrained(tiny_model)
    model = AutoModelForCausalLM.from_pretrained(tiny_model)
    ids = tokenizer("12+34=", add_special_tokens=False)["input_ids"]
    assert len(ids) == 6 and tokenizer.decode(ids) == "12+34="
    assert model.config.model_type == "qwen2" and tokenizer.padding_side == "left"


def test_k_samples_per_prompt_with_token_counts(tiny_model: str, pool: pd.DataFrame) -> None:
    sampler = make_sampler(TRANSFORMERS, tiny_model, SAMPLING, seed=0)
    assert isinstance(sampler, TransformersSampler)
    samples = sampler.sample(pool["prompt"].tolist()[:30], k=5)
    assert len(samples) == 30 and all(len(group) == 5 for group in samples)
    assert all(1 <= c.num_tokens <= SAMPLING.max_new_tokens for group in samples for c in group)


def test_sampling_is_deterministic_for_a_seed(tiny_model: str, pool: pd.DataFrame) -> None:
    prompts = pool["prompt"].tolist()[:40]
    first = make_sampler(TRANSFORMERS, tiny_model, SAMPLING, seed=3).sample(prompts, k=4)
    second = make_sampler(TRANSFORMERS, tiny_model, SAMPLING, seed=3).sample(prompts, k=4)
    other = make_sampler(TRANSFORMERS, tiny_model, SAMPLING, seed=4).sample(prompts, k=4)
    assert first == second and first != other


def test_problems_are_scored_by_counting_correct_samples_and_difficulty_is_their_share(
    tiny_model: str, pool: pd.DataFrame
) -> None:
    # The tiny model solves no addition: half the problems take one of its own completions as their answer.
    problems = pool.head(20).copy()
    drafts = make_sampler(TRANSFORMERS, tiny_model, SAMPLING, seed=99).sample(problems["prompt"].iloc[:10].tolist(), 1)
    problems.loc[problems.index[:10], "answer"] = [group[0].text.strip() for group in drafts]
    samples = make_sampler(TRANSFORMERS, tiny_model, SAMPLING, seed=0).sample(problems["prompt"].tolist(), 16)
    scores = score_problems(make_sampler(TRANSFORMERS, tiny_model, SAMPLING, seed=0), problems, 16, "exact")
    assert scores["id"].tolist() == problems["id"].tolist()
    assert scores["n_correct"].tolist() == [
        sum(is_correct(c.text, answer, "exact") for c in group) for group, answer in zip(samples, problems["answer"])
    ]
    assert scores["n_correct"].iloc[:10].sum() > 0
    assert scores["mean_response_tokens"].tolist() == [sum(c.num_tokens for c in group) / 16 for group in samples]
    difficulty = score_difficulty(problems, make_sampler(TRANSFORMERS, tiny_model, SAMPLING, seed=0), 16, "exact")
    assert difficulty["n_correct"].tolist() == scores["n_correct"].tolist() and (difficulty["n_samples"] == 16).all()
    assert (difficulty["avg@16"] == difficulty["n_correct"] / 16).all()


def test_answer_checking_is_exact() -> None:
    assert is_correct(" 46\n", "46") and not is_correct("460", "46") and not is_correct("", "46")
    assert reward_function("exact")(["46", "45"], answer=["46", "46"], prompts=["x", "x"]) == [1.0, 0.0]


def test_unknown_backend_is_an_error(tiny_model: str) -> None:
    with pytest.raises(ValueError, match="generation.backend"):
        make_sampler({**TRANSFORMERS, "backend": "sglang"}, tiny_model, SAMPLING, seed=0)
