"""Figures build from evaluation tables and fits alone, failed fits included."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from isocompute.figures import plot_frontier, plot_nstar
from isocompute.fitting import fit_study, reward_curve
from isocompute.specs import FigureStyle

STYLE = FigureStyle(palette="viridis", dpi=60, width=5.0, height=3.5, context="paper")


def evals(curves: dict[int, int]) -> pd.DataFrame:
    """n -> number of checkpoints; rewards from one sigmoid per n."""
    rows = []
    for n, points in curves.items():
        compute = np.geomspace(256, 65536, points)
        reward = reward_curve(np.log10(compute), 0.4, 0.5 + n / 100, 3.0 + np.log10(n), 1.0)
        rows += [
            {"run": f"bp8_n{n}_seed0", "n": n, "b_problem": 8, "step": i + 1, "compute_rollouts": c, "avg@4": r}
            for i, (c, r) in enumerate(zip(compute, reward))
        ]
    return pd.DataFrame(rows)


@pytest.mark.parametrize("curves", [{2: 8, 8: 8, 32: 8}, {2: 8, 8: 2}, {4: 3}])
def test_figures_render_with_and_without_fits(tmp_path: Path, curves: dict[int, int]) -> None:
    table = evals(curves)
    fits = fit_study(table, "avg@4", "compute_rollouts", 0, 30)
    paths = [str(tmp_path / "fig05.png"), str(tmp_path / "fig05.pdf")]
    plot_frontier(table, fits, 0.4, "easy", STYLE, paths)
    plot_nstar(fits, "easy", STYLE, [str(tmp_path / "fig06.png")])
    for path in [*paths, str(tmp_path / "fig06.png")]:
        assert Path(path).stat().st_size > 3000
