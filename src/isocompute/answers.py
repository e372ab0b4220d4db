"""Answer checking: the one definition of "this completion is correct", shared by reward and evaluation.

Training rewards, difficulty bucketing and evaluation all call `is_correct`, so a change of checker can
never make the reward and the reported metric disagree.
"""

from __future__ import annotations


def extract_answer(completion: str) -> str:
    """The model's answer: the completion's first line, stripped (the synthetic task answers in one line)."""
    lines = completion.strip().splitlines()
    return lines[0].strip() if lines else ""


def is_correct(completion: str, answer: str) -> bool:
    """Exact match of the extracted answer against the reference answer."""
    return extract_answer(completion) == answer.strip()


def correctness_reward(completions: list[str], answer: list[str], **_: object) -> list[float]:
    """TRL reward function: 1.0 for a correct completion, else 0.0 (TRL passes dataset columns by name)."""
    return [float(is_correct(completion, reference)) for completion, reference in zip(completions, answer)]
