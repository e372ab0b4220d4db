"""How a problem's prompt reaches the model: as plain text, or as one user turn through the chat template.

Instruct models (the paper's Qwen2.5-7B-Instruct) are sampled through their chat template; the embedded
default's tiny model reads the raw prompt. Bucketing, evaluation and TRL's rollouts all format prompts
here, so the three always see the same model input.
"""

from __future__ import annotations

from typing import Any


def as_messages(prompt: str) -> list[dict[str, str]]:
    """The prompt as a one-turn conversation, the form TRL's `GRPOTrainer` applies the template to."""
    return [{"role": "user", "content": prompt}]


def model_input(tokenizer: Any, prompt: str, chat_template: bool) -> str:
    """The text the model continues: the raw prompt, or the chat template with the generation prompt."""
    if not chat_template:
        return prompt
    return tokenizer.apply_chat_template(as_messages(prompt), tokenize=False, add_generation_prompt=True)


def trl_prompt(prompt: str, chat_template: bool) -> str | list[dict[str, str]]:
    """The dataset's `prompt` cell for TRL: conversational when the chat template is on."""
    return as_messages(prompt) if chat_template else prompt
