"""The law-finder judged by rates over many draws of every known-truth family (tests/known_truth.py), with and
without per-problem counts: how often a moving truth gets a law within a factor 2 at >= 80 % of its points
(the points the law speaks for: every point for an identified law, the material range for a partial one),
how often a truth with no law gets one, and how often a monotone truth is refused as not monotone.

    python tests/recovery_rates.py [--draws=50] [--family=NAME ...] [--workers=2] [--bootstrap=30]

prints one row per family and counts setting (docs/log/fits-simultaneous.md publishes the table);
tests/test_recovery_rates.py asserts the rates on fewer draws (a heavy test).
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass

from known_truth import CLOSE, SCENARIOS, Scenario, fit_repetition, recovery

ALL: dict[str, Scenario] = {**SCENARIOS, **CLOSE}
# What each family's truth is: a law that rises or falls (a verdict must find it), no law at all (one n best
# everywhere, every n alike), or a truth that falls back (no law; `not_monotone` is the right refusal).
FALLING = ("close_falling", "shared_grid_falling")
NON_MONOTONE = ("not_monotone", "shared_grid_not_monotone", "close_not_monotone")
NO_LAW = tuple(name for name in ALL if name.endswith(("constant", "flat")))
# The bars: a moving truth within x2 at >= 80 % of its points in >= 95 % of draws; a truth with no law given
# one in <= 5 %; a monotone truth refused as not monotone in <= 5 %.
RECOVERED_SHARE, FOUND_RATE, FALSE_RATE = 0.8, 0.95, 0.05


def kind(name: str) -> str:
    if name in FALLING:
        return "falling"
    if name in NON_MONOTONE:
        return "not_monotone"
    if name in NO_LAW:
        return "no_law"
    return "rising"


@dataclass(frozen=True)
class Draw:
    """One draw's verdict and, where a law was reported, its recovery over the points it speaks for
    (`known_truth.recovery(claimed=True)`) and over every measured point."""

    verdict: str
    ok: bool
    direction: str | None
    recovered: float | None
    recovered_everywhere: float | None


def one_draw(job: tuple[str, int, bool, int]) -> Draw:
    name, seed, counts, bootstrap = job
    fit = fit_repetition(ALL[name], seed, bootstrap, counts)
    law = fit["optimum"]["n"]
    return Draw(law["identified"] if law["ok"] else law["kind"], bool(law["ok"]), law.get("direction"),
                recovery(ALL[name], fit, claimed=True), recovery(ALL[name], fit))  # fmt: skip


@dataclass(frozen=True)
class Rates:
    """A family's rates over its draws, with the bar each must meet and whether it does."""

    name: str
    counts: bool
    draws: int
    verdicts: Counter
    found: float
    found_everywhere: float
    false_law: float
    not_monotone: float

    @property
    def passes(self) -> bool:
        truth = kind(self.name)
        if truth in ("rising", "falling"):
            return self.found >= FOUND_RATE and self.not_monotone <= FALSE_RATE
        if truth == "no_law":
            return self.false_law <= FALSE_RATE and self.not_monotone <= FALSE_RATE
        return self.false_law <= FALSE_RATE


def rates(name: str, counts: bool, draws: Sequence[Draw]) -> Rates:
    truth = kind(name)
    wanted = "falling" if truth == "falling" else "rising"
    found, everywhere = (
        sum(d.ok and d.direction == wanted and share is not None and share >= RECOVERED_SHARE for d, share in zip(draws, shares))
        for shares in ([d.recovered for d in draws], [d.recovered_everywhere for d in draws])
    )
    false_law = sum(d.ok for d in draws) if truth in ("no_law", "not_monotone") else sum(
        d.ok and d.direction != wanted for d in draws)  # fmt: skip
    return Rates(name, counts, len(draws), Counter(d.verdict for d in draws), found / len(draws), everywhere / len(draws),
                 false_law / len(draws),
                 sum(d.verdict == "not_monotone" for d in draws) / len(draws))  # fmt: skip


def measure(names: Sequence[str], draws: int, workers: int = 2, bootstrap: int = 30, first_seed: int = 0) -> list[Rates]:
    """Every family in `names`, with counts and without, on seeds first_seed .. first_seed + draws - 1."""
    jobs = [(name, seed, counts, bootstrap) for name in names for counts in (True, False)
            for seed in range(first_seed, first_seed + draws)]  # fmt: skip
    with ProcessPoolExecutor(workers) as pool:
        results = list(pool.map(one_draw, jobs, chunksize=4))
    by: dict[tuple[str, bool], list[Draw]] = {}
    for (name, _, counts, _), result in zip(jobs, results):
        by.setdefault((name, counts), []).append(result)
    return [rates(name, counts, found) for (name, counts), found in by.items()]


def table(found: Sequence[Rates]) -> str:
    lines = ["| family | truth | counts | draws | law within x2 at >= 80 % of its points (of every point) | false law | "
             "not_monotone | verdicts | bar |", "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]  # fmt: skip
    for r in found:
        verdicts = ", ".join(f"{v} {c}" for v, c in r.verdicts.most_common())
        lines.append(f"| {r.name} | {kind(r.name)} | {'yes' if r.counts else 'no'} | {r.draws} | {r.found:.0%} ({r.found_everywhere:.0%}) | "
                     f"{r.false_law:.0%} | {r.not_monotone:.0%} | {verdicts} | {'met' if r.passes else 'MISSED'} |")  # fmt: skip
    return "\n".join(lines)


if __name__ == "__main__":
    options = dict(a[2:].split("=", 1) for a in sys.argv[1:] if a.startswith("--") and "=" in a)
    chosen = [a.split("=", 1)[1] for a in sys.argv[1:] if a.startswith("--family=")] or list(ALL)
    print(table(measure(chosen, int(options.get("draws", 50)), int(options.get("workers", 2)),
                        int(options.get("bootstrap", 30)), int(options.get("first-seed", 0)))))  # fmt: skip
