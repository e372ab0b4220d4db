"""How a problem's prompt reaches the model: as plain text, or as one user turn through the chat template.

Instruct models (the paper's Qwen2.5-7B-Instruct) are sampled through their chat template; the embedded
default's tiny model reads the raw prompt. Bucketing, evaluation and TRL's rollouts must see the same model
input, so the samplers get token ids from `prompt_token_ids`, which tokenizes as TRL's `GRPOTrainer` does for
training, and never a rendered text that a second tokenization could change.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from isocompute.errors import IsoComputeError


class ContextTooShort(IsoComputeError, ValueError):
    """vLLM's context cannot hold a prompt and a whole completion: it would cut completions short."""


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


def check_context(
    prompt_ids: Sequence[Sequence[int]], prompts: Sequence[str], max_new_tokens: int, context: int, key: str
) -> None:
    """Refuse a vLLM context (`key`, resolved to `context` tokens) that cannot hold the longest prompt plus
    `sampling.max_new_tokens`. vLLM ends a request once prompt and completion reach its `max_model_len`
    (`FINISHED_LENGTH_CAPPED`), without an error: such a prompt's completions would be trained on, scored
    and counted shorter than the study's `max_new_tokens`, a silent change of what the run computes.
    `prompt_ids` are the prompts as the model reads them (`prompt_token_ids`)."""
    if not prompt_ids:
        return
    longest = max(range(len(prompt_ids)), key=lambda i: len(prompt_ids[i]))
    needed = len(prompt_ids[longest]) + max_new_tokens
    if needed > context:
        shown = prompts[longest] if len(prompts[longest]) <= 80 else prompts[longest][:77] + "..."
        raise ContextTooShort(
            f"{key}={context} is shorter than the longest prompt, {len(prompt_ids[longest])} tokens ({shown!r}), "
            f"plus sampling.max_new_tokens={max_new_tokens} = {needed}: vLLM would end its completions early, "
            f"silently. Raise {key} to at least {needed}, or leave such prompts out of the problem table"
        )
