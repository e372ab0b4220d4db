"""The built-in synthetic tasks, which make a study possible without a hub model or dataset.

The embedded default is integer addition of operands of mixed length: answers are exactly checkable and
difficulty grows with operand length, so a briefly trained small model solves short sums, fails long ones
and is uncertain in between, which is what makes Easy and Hard problem sets exist. The skill-lookup task
(`isocompute.data.skill_lookup`) sets each problem's base pass rate by design and adds a dial for interference
between problems. A task gives the pipeline its problem pool and its pre-training examples; everything
after the base model (bucketing, sets, training, evaluation, fits) sees only the problem table.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from isocompute.data.skill_lookup import SkillLookupTask
from isocompute.study.specs import SyntheticTask

ALPHABET = "0123456789+="
ADDITION = "synthetic_addition"
SKILL_LOOKUP = "synthetic_skill_lookup"
SYNTHETIC_SOURCES = (ADDITION, SKILL_LOOKUP)


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


@dataclass(frozen=True)
class AdditionTask:
    """`problems.synthetic_addition`: `size` distinct sums of operands of min_digits to max_digits digits."""

    size: int
    min_digits: int
    max_digits: int

    @property
    def size_setting(self) -> str:
        return f"problems.synthetic_addition.size={self.size}"

    @property
    def sequence_length(self) -> int:
        return 2 * self.max_digits + 4

    def pool(self, seed: int) -> pd.DataFrame:
        return make_addition_pool(self.size, self.min_digits, self.max_digits, seed)

    def pretraining_sampler(self, seed: int) -> Callable[[np.random.Generator], tuple[str, str]]:
        """Fresh sums from the pre-training generator; the pool's seed plays no part."""
        return lambda rng: sample_addition(rng, self.min_digits, self.max_digits)


def synthetic_task(source: str, settings: Mapping[str, Any]) -> SyntheticTask:
    """The task named by `problems.source`, from its config block `problems.<source>`."""
    if source == ADDITION:
        return AdditionTask(int(settings["size"]), int(settings["min_digits"]), int(settings["max_digits"]))
    if source == SKILL_LOOKUP:
        return SkillLookupTask(
            int(settings["easy_skills"]),
            int(settings["hard_skills"]),
            int(settings["variants"]),
            tuple(float(v) for v in settings["easy_label_accuracy"]),
            tuple(float(v) for v in settings["hard_label_accuracy"]),
            float(settings["default_share"]),
            # Absent from every preset before design D3, and so from their pools' and base models' params.
            int(settings.get("answer_digits", 1)),
        )
    raise ValueError(f"problems.source={source!r} is not a built-in task ({ADDITION}, {SKILL_LOOKUP})")
