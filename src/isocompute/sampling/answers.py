"""Answer checking: the one definition of "this completion is correct", shared by reward and evaluation.

Training rewards, difficulty bucketing and evaluation all go through `is_correct` with the study's
configured checker (`problems.checker`), so the reward and the reported metric can never disagree.

Two checkers:
- `exact`: the synthetic task answers on one line; the first line must equal the reference.
- `math_verify`: math answers as the paper's Guru-Math data has them. Like Guru's own checker, the model's
  answer is the last `\\boxed{...}` after any `</think>`; Hugging Face's `math-verify` then decides
  equivalence (fractions, LaTeX, units, intervals), gold first since `verify` is not symmetric.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from functools import lru_cache

from math_verify import parse, verify

MATH_VERIFY_TIMEOUT_S = 5


def extract_answer(completion: str) -> str:
    """The model's answer: the completion's first line, stripped (the synthetic task answers in one line)."""
    lines = completion.strip().splitlines()
    return lines[0].strip() if lines else ""


def exact_match(completion: str, answer: str) -> bool:
    """Exact match of the extracted answer against the reference answer."""
    return extract_answer(completion) == answer.strip()


def last_boxed(text: str) -> str | None:
    """The content of the last `\\boxed{...}` (or `\\fbox{...}`) with balanced braces, or None."""
    start = max(text.rfind("\\boxed"), text.rfind("\\fbox"))
    if start < 0:
        return None
    opening = text.find("{", start)
    if opening < 0:
        return None
    depth = 0
    for position in range(opening, len(text)):
        depth += {"{": 1, "}": -1}.get(text[position], 0)
        if depth == 0:
            return text[opening + 1 : position]
    return None


def final_answer(completion: str) -> str | None:
    """The answer a reasoning model commits to: the last boxed expression after its thinking, if any."""
    return last_boxed(completion.rsplit("</think>", 1)[-1])


def _timeout() -> int | None:
    """math-verify's timeouts use `signal.alarm`, which only the main thread of a process may set.

    Worker processes (accelerate ranks, dataloader workers) run checks on their main thread and keep the
    timeout; a thread (a reward computed in a thread pool) checks without one instead of failing.
    """
    return MATH_VERIFY_TIMEOUT_S if threading.current_thread() is threading.main_thread() else None


@lru_cache(maxsize=65536)
def parse_gold(answer: str) -> tuple[object, ...]:
    """The reference answer as math-verify reads it; empty when it cannot be parsed."""
    return tuple(parse(f"\\boxed{{{answer}}}", parsing_timeout=_timeout()))


def math_verify_match(completion: str, answer: str) -> bool:
    """math-verify equivalence of the completion's last boxed answer and the reference."""
    boxed = final_answer(completion)
    gold = parse_gold(answer)
    if boxed is None or not gold:
        return False
    predicted = parse(f"\\boxed{{{boxed}}}", parsing_timeout=_timeout())
    return bool(predicted) and verify(list(gold), predicted, timeout_seconds=_timeout())


_MATCHERS: dict[str, Callable[[str, str], bool]] = {"exact": exact_match, "math_verify": math_verify_match}


def matcher(checker: str) -> Callable[[str, str], bool]:
    """The named checker's `(completion, answer) -> correct`; an unknown name is an error naming the key."""
    try:
        return _MATCHERS[checker]
    except KeyError:
        raise ValueError(f"problems.checker must be one of {list(_MATCHERS)}, not {checker!r}") from None


def is_correct(completion: str, answer: str, checker: str = "exact") -> bool:
    """Whether `completion` answers `answer` correctly under the named checker."""
    return matcher(checker)(completion, answer)


def reward_function(checker: str) -> Callable[..., list[float]]:
    """TRL reward function: 1.0 for a correct completion, else 0.0 (TRL passes dataset columns by name).

    Conversational completions (lists of messages) are scored on their last message's text.
    """
    match = matcher(checker)  # an unknown checker fails here, before training starts

    def correctness(completions: list[object], answer: list[str], **_: object) -> list[float]:
        return [float(match(_text(c), reference)) for c, reference in zip(completions, answer)]

    return correctness


def answer_parses(answer: str, checker: str) -> bool:
    """Whether a reference answer can be checked: math-verify must read it as mathematics (not only keep
    the raw string, its fallback for text it cannot parse); exact needs text."""
    if checker == "math_verify":
        return any(not isinstance(part, str) for part in parse_gold(answer))
    return bool(answer.strip())


def _text(completion: object) -> str:
    if isinstance(completion, list):
        return str(completion[-1]["content"]) if completion else ""
    return str(completion)
