"""The embedded default's base model: a tiny Qwen2 causal LM that the pipeline builds and pre-trains.

RL needs a base model that already solves some problems and fails others. On a laptop there is no hub,
so the pipeline makes one: a Qwen2 architecture with a character tokenizer, trained supervised for a
fixed number of steps on examples freshly drawn from the synthetic task
(`isocompute.data.tasks`). It is saved in the standard format, so every later stage
loads it with `from_pretrained(path)` exactly as it would load Qwen2.5-7B-Instruct.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import torch
from transformers import PreTrainedTokenizerBase, Qwen2Config, Qwen2ForCausalLM

from isocompute.data.tasks import ALPHABET
from isocompute.data.tokenizer import build_char_tokenizer
from isocompute.files import write_atomically
from isocompute.study.specs import BaseModelSpec


def build_model(spec: BaseModelSpec, vocab_size: int, pad_id: int, eos_id: int) -> Qwen2ForCausalLM:
    """An untrained Qwen2 with tied embeddings, sized by `spec`."""
    config = Qwen2Config(
        vocab_size=vocab_size,
        hidden_size=spec.hidden_size,
        intermediate_size=spec.intermediate_size,
        num_hidden_layers=spec.num_layers,
        num_attention_heads=spec.num_heads,
        num_key_value_heads=spec.num_kv_heads,
        max_position_embeddings=4 * spec.task.sequence_length,
        tie_word_embeddings=True,
        pad_token_id=pad_id,
        eos_token_id=eos_id,
        bos_token_id=None,
    )
    return Qwen2ForCausalLM(config)


def supervised_batch(
    tokenizer: PreTrainedTokenizerBase, problems: list[tuple[str, str]]
) -> dict[str, torch.Tensor]:
    """Right-padded `prompt + answer + eos` sequences with the loss on the answer and eos only."""
    eos = tokenizer.eos_token_id
    prompts = [tokenizer(prompt, add_special_tokens=False)["input_ids"] for prompt, _ in problems]
    answers = [tokenizer(answer, add_special_tokens=False)["input_ids"] + [eos] for _, answer in problems]
    width = max(len(p) + len(a) for p, a in zip(prompts, answers))
    input_ids = torch.full((len(problems), width), tokenizer.pad_token_id, dtype=torch.long)
    labels = torch.full_like(input_ids, -100)
    attention_mask = torch.zeros_like(input_ids)
    for row, (prompt, answer) in enumerate(zip(prompts, answers)):
        length = len(prompt) + len(answer)
        input_ids[row, :length] = torch.tensor(prompt + answer)
        labels[row, len(prompt) : length] = torch.tensor(answer)
        attention_mask[row, :length] = 1
    return {"input_ids": input_ids, "attention_mask": attention_mask, "labels": labels}


def pretrain_base_model(spec: BaseModelSpec, out_dir: str | Path, seed: int) -> pd.DataFrame:
    """Build, train and save the base model and tokenizer to `out_dir`; return the per-step loss table.

    The model is written to a temporary directory and renamed, so an interrupted job leaves no model that
    looks finished.
    """
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    sample = spec.task.pretraining_sampler(seed)
    tokenizer = build_char_tokenizer(ALPHABET)
    model = build_model(spec, len(tokenizer), tokenizer.pad_token_id, tokenizer.eos_token_id)
    optimizer = torch.optim.AdamW(model.parameters(), lr=spec.learning_rate)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: min(1.0, (step + 1) / 50) * max(0.1, 1 - step / spec.train_steps)
    )
    losses = []
    model.train()
    for step in range(spec.train_steps):
        problems = [sample(rng) for _ in range(spec.batch_size)]
        loss = model(**supervised_batch(tokenizer, problems)).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        schedule.step()
        losses.append({"step": step + 1, "loss": float(loss)})
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    def save(partial: Path) -> None:
        model.save_pretrained(partial)
        tokenizer.save_pretrained(partial)

    write_atomically(out_dir, save)
    return pd.DataFrame(losses)
