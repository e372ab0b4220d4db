"""Sampling k completions per prompt, behind one interface with a vLLM and a transformers backend.

Bucketing and evaluation only need "k samples per prompt, with their token counts"; vLLM does that fast
on GPUs, batched transformers `generate` does it on a CPU. `make_sampler` picks vLLM when it imports and
a GPU is there, so the same rule runs on a laptop and on a cluster.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import pandas as pd
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from isocompute.answers import is_correct
from isocompute.prompts import model_input
from isocompute.specs import SamplingSpec


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
        self.tokenizer = AutoTokenizer.from_pretrained(model_path, padding_side="left")
        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        self.model = AutoModelForCausalLM.from_pretrained(model_path).to(self.device).eval()
        self.sampling = sampling
        self.batch_size = batch_size
        self.generator_seed = seed

    def sample(self, prompts: Sequence[str], k: int) -> list[list[Completion]]:
        torch.manual_seed(self.generator_seed)
        results: list[list[Completion]] = []
        per_batch = max(1, self.batch_size // k)
        for start in range(0, len(prompts), per_batch):
            chunk = prompts[start : start + per_batch]
            generated, lengths = generate_token_ids(self.model, self.tokenizer, self.sampling, chunk, k)
            texts = self.tokenizer.batch_decode(generated, skip_special_tokens=True)
            for row in range(len(chunk)):
                results.append([Completion(texts[row * k + j], lengths[row * k + j]) for j in range(k)])
        return results

    def close(self) -> None:
        """Nothing held beyond what garbage collection frees."""


def generate_token_ids(
    model: Any, tokenizer: Any, sampling: SamplingSpec, prompts: Sequence[str], k: int
) -> tuple[torch.Tensor, list[int]]:
    """k sampled continuations of each prompt, one batched left-padded `generate` on the model's device: the
    generated token ids (prompt i's j-th in row i * k + j) and each one's length up to its first eos. The
    one way this project samples with transformers (evaluation, bucketing, the interference probe)."""
    eos, pad = tokenizer.eos_token_id, tokenizer.pad_token_id
    texts = [model_input(tokenizer, p, sampling.chat_template) for p in prompts]
    encoded = tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False).to(model.device)
    with torch.no_grad():
        output = model.generate(
            **encoded,
            do_sample=True,
            temperature=sampling.temperature,
            top_p=sampling.top_p,
            top_k=0,
            max_new_tokens=sampling.max_new_tokens,
            num_return_sequences=k,
            pad_token_id=pad,
            eos_token_id=eos,
        )
    generated = output[:, encoded["input_ids"].shape[1] :]
    return generated, _completion_lengths(generated, eos, pad)


def _completion_lengths(generated: torch.Tensor, eos: int, pad: int) -> list[int]:
    """Tokens up to and including the first eos; all generated tokens where no eos came."""
    lengths = []
    for row in generated.tolist():
        length = len(row)
        for position, token in enumerate(row):
            if token == eos:
                length = position + 1
                break
        else:
            while length and row[length - 1] == pad and pad != eos:
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
        from vllm import LLM, SamplingParams

        self.engine = LLM(
            model=model_path,
            seed=seed,
            tensor_parallel_size=tensor_parallel_size,
            **dict(engine_kwargs or {}),
        )
        self.params = SamplingParams
        self.sampling = sampling

    def sample(self, prompts: Sequence[str], k: int) -> list[list[Completion]]:
        params = self.params(
            n=k,
            temperature=self.sampling.temperature,
            top_p=self.sampling.top_p,
            max_tokens=self.sampling.max_new_tokens,
        )
        tokenizer = self.engine.get_tokenizer()
        texts = [model_input(tokenizer, p, self.sampling.chat_template) for p in prompts]
        outputs = self.engine.generate(texts, params, use_tqdm=False)
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
