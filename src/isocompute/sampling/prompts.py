"""How a problem's prompt reaches the model: as plain text, or as one user turn through the chat template.

Instruct models (the paper's Qwen2.5-7B-Instruct) are sampled through their chat template; the embedded
default's tiny model reads the raw prompt. Bucketing, evaluation and TRL's rollouts must see the same model
input, so the samplers get token ids from `prompt_token_ids`, which tokenizes as TRL's `GRPOTrainer` does for
training, and never a rendered text that a second tokenization could change.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def as_messages(prompt: str) -> list[dict[str, str]]:
    """The prompt as a one-turn conversation, the form TRL's `GRPOTrainer` applies the template to."""
    return [{"role": "user", "content": prompt}]


def prompt_token_ids(tokenizer: Any, prompts: Sequence[str], chat_template: bool) -> list[list[int]]:
    """The token ids the model continues, per prompt, as TRL 1.16's `GRPOTrainer._tokenize_prompts`
    tokenizes the training prompts that `trl_prompt` makes.

    A conversation goes through `apply_chat_template(tokenize=True)`, which adds no special tokens beyond
    those the template writes: a template that begins with BOS (Llama 3.x) gives one BOS. Rendering the
    template to text and tokenizing that text with special tokens, as vLLM's `generate` does with a text
    prompt, gives two (huggingface/trl#3853, vllm-project/vllm#9519). A plain prompt is tokenized with the
    tokenizer's own special tokens, as TRL does (the embedded default's character tokenizer has none).
    """
    if not prompts:
        return []
    if chat_template:
        encoded = tokenizer.apply_chat_template(
            [as_messages(p) for p in prompts], add_generation_prompt=True, tokenize=True, return_dict=True
        )
    else:
        encoded = tokenizer(text=list(prompts))
    return [list(ids) for ids in encoded["input_ids"]]


def trl_prompt(prompt: str, chat_template: bool) -> str | list[dict[str, str]]:
    """The dataset's `prompt` cell for TRL: conversational when the chat template is on."""
    return as_messages(prompt) if chat_template else prompt
