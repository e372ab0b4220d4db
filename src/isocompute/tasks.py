"""The synthetic task of the embedded default: integer addition of operands of mixed length.

Answers are exactly checkable and difficulty grows with operand length, so a briefly trained small model
solves short sums, fails long ones and is uncertain in between: that spread is what makes Easy and Hard
problem sets exist without a hub model or dataset.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

ALPHABET = "0123456789+="


def sample_addition(rng: np.random.Generator, min_digits: int, max_digits: int) -> tuple[str, str]:
    """Draw one problem: each operand's digit count is uniform in [min_digits, max_digits]."""
    operands = []
    for _ in range(2):
        digits = int(rng.integers(min_digits, max_digits + 1))
        low = 0 if digits == 1 else 10 ** (digits - 1)
        operands.append(int(rng.integers(low, 10**digits)))
    return f"{operands[0]}+{operands[1]}=", str(operands[0] + operands[1])


def make_addition_pool(size: int, min_digits: int, max_digits: int, seed: int) -> pd.DataFrame:
    """Return `size` distinct problems as the pipeline's problem table (`id`, `prompt`, `answer`).

    Prompts are unique so that a batch of B_problem distinct indices is B_problem distinct prompts.
    """
    rng = np.random.default_rng(seed)
    distinct = (10**max_digits) ** 2
    if size > distinct:
        raise ValueError(f"problems.size={size} exceeds the {distinct} distinct sums of {max_digits} digits")
    seen: dict[str, str] = {}
    while len(seen) < size:
        prompt, answer = sample_addition(rng, min_digits, max_digits)
        seen.setdefault(prompt, answer)
    width = len(str(size - 1))
    return pd.DataFrame(
        {
            "id": [f"add-{i:0{width}d}" for i in range(size)],
            "prompt": list(seen.keys()),
            "answer": list(seen.values()),
        }
    )
