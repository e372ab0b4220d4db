"""The skill-lookup task: problems that share no algorithm, with one dial for interference between them.

Addition is one shared algorithm, so an update on one sum helps the others and n barely matters there
(docs/log/headline-search.md). The paper blames large n winning on interference across problems: skills that
do not transfer, whose updates still meet in shared parameters. Here each problem is a lookup: the prompt
is a skill's 3-digit code, 2 distractor digits and `=`; the answer is the skill's one digit. Skills share
nothing but the model, so one can only move another through a shared preference for a digit, and that is
the dial (design D1, docs/log/headline-search.md): an Easy skill's answer is the default digit `0` with
probability `default_share` (rho), and every Hard skill's pre-trained wrong answer (its decoy) is that
same `0`. Each Easy success on `0` then pushes the Hard skills towards their decoy; at rho = 0.1 (the
control) Easy successes rarely land on `0`.

Base pass rates are set by design, not by luck: pre-training labels a skill's prompt with its answer with
probability q_s and with its decoy otherwise, so the cross-entropy optimum puts q_s on the answer. Easy
skills draw q_s uniformly from `easy_label_accuracy`, Hard skills log-uniformly from `hard_label_accuracy`,
so the Easy and Hard buckets of the base model's avg@16 fill from their own skills. The pool holds every
skill with `variants` distractors; the validation reserve (a seeded share of the pool) then holds held-out
distractor variants of the same skills, as the pipeline's reserve already does for any pool.

Multi-digit answers (design D3, docs/log/headline-search.md, section 22; `answer_digits`, default 1): a Hard
success needs every digit of the skill's answer at once, and a near-miss (some digits right) is no success
under the exact-match checker, so Hard successes are rare and the partial knowledge a policy has earns no
reward; and a policy that knows nothing about a Hard skill but "not the default" scores (1/9)^k on it
instead of 1/9. Every digit follows the one-digit rules (an Easy digit is the default with probability
rho, a Hard decoy is the default in every position), and a pre-training label gets each digit right
independently with probability q_s^(1/k), so the whole label is right with probability q_s, the base pass
rate by design, whatever k. One digit draws exactly what the task drew before `answer_digits` existed, so
no finished study's pool or base model changes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

CODE_DIGITS = 3
DISTRACTOR_DIGITS = 2
DEFAULT_ANSWER = "0"
NON_DEFAULT_ANSWERS = tuple("123456789")
# The skill table's own random stream, apart from pre-training's (which is seeded with the study seed too),
# so that the pool and the base model agree on every skill and neither's draws shift the other's.
SKILL_STREAM = 21


@dataclass(frozen=True)
class SkillLookupTask:
    """`problems.synthetic_skill_lookup`: how many skills of each level, distractor variants per skill, the
    label accuracy range of each level (of the whole answer), rho (`default_share`), and the digits of an
    answer."""

    easy_skills: int
    hard_skills: int
    variants: int
    easy_label_accuracy: tuple[float, float]
    hard_label_accuracy: tuple[float, float]
    default_share: float
    answer_digits: int = 1

    @property
    def size(self) -> int:
        return (self.easy_skills + self.hard_skills) * self.variants

    @property
    def size_setting(self) -> str:
        """The settings that fix the pool's size, for error messages."""
        return (
            f"problems.synthetic_skill_lookup ({self.easy_skills} + {self.hard_skills} skills x "
            f"{self.variants} variants = {self.size})"
        )

    @property
    def sequence_length(self) -> int:
        """Prompt, the answer's digits and eos."""
        return CODE_DIGITS + DISTRACTOR_DIGITS + 1 + self.answer_digits + 1

    def skills(self, seed: int) -> pd.DataFrame:
        """One row per skill: `code`, `level` (easy or hard), `answer` and `decoy` (`answer_digits` digits
        each, differing in every position), `label_accuracy` (q_s, of the whole answer)."""
        rng = np.random.default_rng([SKILL_STREAM, seed])
        total = self.easy_skills + self.hard_skills
        codes = rng.choice(10**CODE_DIGITS, size=total, replace=False)
        rows = []
        for index, code in enumerate(codes):
            # Digit by digit, in the order the one-digit task drew them, so one digit reproduces it exactly.
            answer = decoy = ""
            if index < self.easy_skills:
                low, high = self.easy_label_accuracy
                accuracy = float(rng.uniform(low, high))
                for _ in range(self.answer_digits):
                    default = bool(rng.random() < self.default_share)
                    digit = DEFAULT_ANSWER if default else str(rng.choice(NON_DEFAULT_ANSWERS))
                    answer += digit
                    # Never `0`: rho alone sets how much of the Easy skills' learning lands on the default.
                    decoy += str(rng.choice([d for d in NON_DEFAULT_ANSWERS if d != digit]))
                level = "easy"
            else:
                low, high = self.hard_label_accuracy
                accuracy = float(np.exp(rng.uniform(np.log(low), np.log(high))))
                for _ in range(self.answer_digits):
                    answer += str(rng.choice(NON_DEFAULT_ANSWERS))
                    decoy += DEFAULT_ANSWER
                level = "hard"
            code_text = f"{code:0{CODE_DIGITS}d}"
            rows.append(
                {
                    "code": code_text,
                    "level": level,
                    "answer": answer,
                    "decoy": decoy,
                    "label_accuracy": accuracy,
                }
            )
        return pd.DataFrame(rows)

    def pool(self, seed: int) -> pd.DataFrame:
        """Every skill with `variants` distinct distractors, as the problem table; ids name the level and
        the skill (`easy042-17`), so analyses can split a set by design level."""
        skills = self.skills(seed)
        rng = np.random.default_rng([SKILL_STREAM, seed, 1])
        rows = []
        for skill in skills.itertuples():
            for distractor in sorted(rng.choice(10**DISTRACTOR_DIGITS, size=self.variants, replace=False)):
                tail = f"{distractor:0{DISTRACTOR_DIGITS}d}"
                problem_id = f"{skill.level}{skill.code}-{tail}"
                rows.append({"id": problem_id, "prompt": f"{skill.code}{tail}=", "answer": skill.answer})
        return pd.DataFrame(rows, columns=["id", "prompt", "answer"])

    def pretraining_sampler(self, seed: int) -> Callable[[np.random.Generator], tuple[str, str]]:
        """Draws (prompt, label): a uniform skill, fresh distractor digits, and each label digit the answer's
        with probability q_s^(1/k), else the decoy's. Independent digits make the whole label right with
        probability q_s and put the wrong labels mostly on near-misses, which the checker does not reward."""
        skills = self.skills(seed)
        codes = skills["code"].tolist()
        answers = skills["answer"].tolist()
        decoys = skills["decoy"].tolist()
        # q ** (1 / 1) is q exactly, so one digit draws what the one-digit task drew.
        digit_accuracies = [q ** (1 / self.answer_digits) for q in skills["label_accuracy"]]

        def draw(rng: np.random.Generator) -> tuple[str, str]:
            skill = int(rng.integers(len(codes)))
            distractor = int(rng.integers(10**DISTRACTOR_DIGITS))
            right, wrong, accuracy = answers[skill], decoys[skill], digit_accuracies[skill]
            label = "".join(a if rng.random() < accuracy else d for a, d in zip(right, wrong, strict=True))
            return f"{codes[skill]}{distractor:0{DISTRACTOR_DIGITS}d}=", label

        return draw


def check_skill_lookup(task: SkillLookupTask) -> str | None:
    """What makes the settings unusable, naming the key, or None."""
    key = "problems.synthetic_skill_lookup"
    if task.easy_skills + task.hard_skills == 0:
        return f"{key}: easy_skills + hard_skills is 0; the pool would be empty"
    if task.easy_skills + task.hard_skills > 10**CODE_DIGITS:
        return f"{key}: easy_skills + hard_skills exceeds the {10**CODE_DIGITS} distinct {CODE_DIGITS}-digit codes"
    if task.answer_digits < 1:
        return f"{key}.answer_digits={task.answer_digits} must be at least 1"
    if task.variants > 10**DISTRACTOR_DIGITS:
        return f"{key}.variants={task.variants} exceeds the {10**DISTRACTOR_DIGITS} distinct distractors"
    for name in ("easy_label_accuracy", "hard_label_accuracy"):
        low, high = getattr(task, name)
        if not 0 < low <= high <= 1:
            return f"{key}.{name}=[{low}, {high}] must satisfy 0 < low <= high <= 1"
    return None
