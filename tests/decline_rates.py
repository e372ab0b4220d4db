"""How often the fits give a curve a decline after its peak (`fits.forms.DECLINE_LEVEL`) where its truth does
not fall (no known-truth curve does): every known-truth family (tests/known_truth.py) on many draws, each curve fitted as `fit_curves`
fits it (seeds averaged, anchored at the base model's avg@4, the level divided among the study's curves).

    python tests/decline_rates.py [--draws=50] [--first-seed=1000] [--family=NAME ...]

prints per family the curves fitted, those given a decline and the draws with one (docs/log/fits-decline.md).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from known_truth import CLOSE, SCENARIOS, K, Scenario, draw

from isocompute.fits.curves import curve_points
from isocompute.fits.forms import DECLINE_LEVEL, RewardFit, fit_reward
from isocompute.sampling.metrics import summarize_counts


def declines(scenario: Scenario, seed: int) -> tuple[int, list[tuple[int, ...]]]:
    """The curves fitted in one draw and the keys of those given a decline."""
    evals, _, base = draw(scenario, seed)
    r0 = summarize_counts(base["n_correct"], K)["avg@4"]
    points = curve_points(evals, "avg@4", scenario.compute, scenario.by)
    fitted, falling = 0, []
    groups = points.groupby(list(scenario.by))
    for key, group in groups:
        fit = fit_reward(group[scenario.compute].to_numpy(float), group["avg@4"].to_numpy(float), r0=r0,
                         decline_level=DECLINE_LEVEL / groups.ngroups)  # fmt: skip
        fitted += isinstance(fit, RewardFit)
        if isinstance(fit, RewardFit) and fit.decline > 0:
            falling.append(key if isinstance(key, tuple) else (key,))
    return fitted, falling


def main(names: Sequence[str], draws: int, first_seed: int) -> None:
    print("| family | draws | curves | curves with a decline | draws with one | seeds (curves) |")
    print("| --- | --- | --- | --- | --- | --- |")
    total = [0, 0]
    for name in names:
        scenario = {**SCENARIOS, **CLOSE}[name]
        curves, with_decline, where = 0, 0, []
        for seed in range(first_seed, first_seed + draws):
            fitted, falling = declines(scenario, seed)
            curves, with_decline = curves + fitted, with_decline + len(falling)
            if falling:
                where.append(f"{seed} ({', '.join(str(k[-1]) for k in falling)})")
        total = [total[0] + curves, total[1] + with_decline]
        print(f"| {name} | {draws} | {curves} | {with_decline} ({with_decline / max(curves, 1):.1%}) | {len(where)} "
              f"| {'; '.join(where) or '-'} |")  # fmt: skip
    print(f"\n{total[1]} of {total[0]} curves ({total[1] / max(total[0], 1):.2%}) given a decline")


if __name__ == "__main__":
    options = dict(a[2:].split("=", 1) for a in sys.argv[1:] if a.startswith("--") and "=" in a)
    chosen = [a.split("=", 1)[1] for a in sys.argv[1:] if a.startswith("--family=")] or list({**SCENARIOS, **CLOSE})
    main(chosen, int(options.get("draws", 50)), int(options.get("first-seed", 1000)))
