"""Bootstrap over validation problems: paired replicas, and intervals that cover the truth."""

import numpy as np
import pandas as pd
import pytest

from isocompute.fits.bootstrap import resample_evals
from isocompute.fits.curves import FitOptions
from isocompute.fits.forms import reward_curve
from isocompute.fits.study_fit import fit_study
from isocompute.sampling.metrics import summarize_counts

OPTIONS = FitOptions("avg@4", "compute_rollouts")

COMPUTE = np.geomspace(1e3, 1e6, 10)
TRUTH = (0.2, 0.6, 4.0, 1.2)  # r0, a, log10 C_mid, b of the population's avg@4


def val_counts(problems: int, seed: int, curves: dict[int, tuple[float, ...]] | None = None, seeds: int = 1) -> pd.DataFrame:
    """Per-problem correct counts out of 4, each problem solving with the population's rate at C."""
    rng = np.random.default_rng(seed)
    rows = []
    for n, params in (curves or {8: TRUTH}).items():
        for run_seed in range(seeds):
            for step, c in enumerate(COMPUTE, start=1):
                p = reward_curve(np.log10(c), *params)
                for pid, correct in enumerate(rng.binomial(4, p, size=problems)):
                    rows.append(
                        {"run": f"n{n}_s{run_seed}", "b_problem": 8, "n": n, "seed": run_seed, "step": step,
                         "compute_rollouts": c, "compute_tokens": 5 * c, "id": f"p{pid}", "n_correct": correct}  # fmt: skip
                    )
    return pd.DataFrame(rows)


def evals_of(counts: pd.DataFrame) -> pd.DataFrame:
    keys = ["run", "b_problem", "n", "seed", "step", "compute_rollouts", "compute_tokens"]
    return counts.groupby(keys)["n_correct"].apply(lambda c: pd.Series(summarize_counts(c, 4))).unstack().reset_index()


def test_replicas_are_paired_and_differ_from_each_other() -> None:
    counts = val_counts(50, seed=0, curves={4: TRUTH, 16: TRUTH})
    replicas = resample_evals(counts, k=4, resamples=3, seed=0)
    assert len(replicas) == 3 and len(replicas[0].evals) == 2 * len(COMPUTE)
    assert not np.allclose(replicas[0].evals["avg@4"], replicas[1].evals["avg@4"])
    assert (replicas[0].evals["worst@4"] <= replicas[0].evals["avg@4"]).all()
    assert replicas[0].base is None
    assert resample_evals(counts, 4, 0, 0) == []
    again = resample_evals(counts, k=4, resamples=3, seed=0)
    pd.testing.assert_frame_equal(replicas[2].evals, again[2].evals)


def test_the_base_model_is_resampled_with_the_same_problems() -> None:
    counts = val_counts(80, seed=2)
    first = counts[counts["step"] == 1]
    # A base model that scores exactly like the first checkpoint: the same problem draw gives the same value.
    base = first[["id", "n_correct"]]
    replicas = resample_evals(counts, 4, 20, seed=0, base_counts=base)
    for replica in replicas:
        at_first = replica.evals.loc[replica.evals["step"] == 1]
        assert replica.base["avg@4"] == pytest.approx(at_first["avg@4"].iloc[0])
        assert replica.base["worst@4"] == pytest.approx(at_first["worst@4"].iloc[0])
    assert np.std([r.base["avg@4"] for r in replicas]) > 0.005
    with pytest.raises(ValueError, match="base model counts"):
        resample_evals(counts, 4, 2, 0, base_counts=base.iloc[:-1])


def test_seeds_of_a_curve_are_resampled() -> None:
    counts = val_counts(40, seed=4, seeds=3)
    replicas = resample_evals(counts, 4, 30, seed=0)
    drawn = [tuple(sorted(r.evals.loc[r.evals["step"] == 1, "seed"])) for r in replicas]
    assert all(len(d) == 3 for d in drawn)
    assert any(len(set(d)) < 3 for d in drawn)
    single = resample_evals(val_counts(40, seed=4), 4, 5, seed=0)
    assert all(sorted(r.evals["seed"]) == [0] * len(COMPUTE) for r in single)


def test_bootstrap_intervals_cover_the_true_asymptote_in_most_repetitions() -> None:
    repetitions, covered = 50, 0
    for seed in range(repetitions):
        counts = val_counts(300, seed)
        result = fit_study(evals_of(counts), OPTIONS, replicas=resample_evals(counts, 4, 40, seed))
        low, high = result["curves"][0]["intervals"]["a"]
        covered += low <= TRUTH[1] <= high
    rate = covered / repetitions
    print(f"bootstrap 95% interval of A covered the truth in {covered}/{repetitions} = {rate:.0%} repetitions")
    assert rate >= 0.8


def test_frontier_band_brackets_the_frontier() -> None:
    counts = val_counts(200, seed=1, curves={4: (0.2, 0.5, 3.5, 1.2), 32: (0.2, 0.65, 4.5, 1.2)})
    result = fit_study(evals_of(counts), OPTIONS, replicas=resample_evals(counts, 4, 30, 1))
    band = pd.DataFrame(result["frontier"])
    assert (band["reward_low"] <= band["reward"] + 1e-9).mean() > 0.9
    assert (band["reward"] <= band["reward_high"] + 1e-9).mean() > 0.9
    for point in result["optimum_points"]:
        assert sum(point["shares"]["n"].values()) == pytest.approx(1.0)
    assert result["bootstrap"] == {"resamples": 30, "kind": "problems", "seeds_resampled": False, "base_resampled": False}


def test_without_counts_each_curve_is_redrawn_from_its_own_residuals() -> None:
    """`isocompute fit` without --counts: the replicas keep each curve's fitted shape and scatter its points by
    what its own residuals show, so a noisier curve gets wider intervals."""
    counts = val_counts(200, seed=2, curves={4: (0.2, 0.5, 3.5, 1.2), 32: (0.2, 0.65, 4.5, 1.2)})
    evals = evals_of(counts)
    noisy = evals["n"] == 32
    evals.loc[noisy, "avg@4"] += np.random.default_rng(0).normal(0, 0.05, noisy.sum())
    result = fit_study(evals, OPTIONS, resamples=40, seed=3)
    assert result["bootstrap"]["kind"] == "residuals" and result["bootstrap"]["resamples"] == 40
    width = {c["key"]["n"]: np.diff(c["intervals"]["a"])[0] for c in result["curves"]}
    assert width[32] > 2 * width[4]
    again = fit_study(evals, OPTIONS, resamples=40, seed=3)
    assert again["curves"] == result["curves"]


def test_mismatched_problem_sets_are_an_error() -> None:
    counts = val_counts(20, seed=0)
    with pytest.raises(ValueError, match="same validation problems"):
        resample_evals(counts.drop(index=[0]), 4, 2, 0)
