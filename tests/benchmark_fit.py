"""How long `isocompute fit` takes on a paper-sized table: 8 values of n x 20 compute points (the paper
preset's shared grid), 300 validation problems x 4 samples, 50 bootstrap replicas of the whole estimator.
A benchmark, not a test: it prints the wall time of each call, with per-problem counts (problems
resampled) and without (each curve redrawn from its residuals).

    python tests/benchmark_fit.py [--replicas 50] [--repeats 3]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import tempfile
import time
from pathlib import Path

from known_truth import CLOSE, K, draw

from isocompute.cli import main
from isocompute.sampling.metrics import summarize_counts


def run(replicas: int, repeats: int) -> None:
    scenario = CLOSE["close_shared_saturating"]
    evals, counts, base = draw(scenario, 0)
    with tempfile.TemporaryDirectory() as folder:
        tables = Path(folder)
        evals.to_csv(tables / "evals.csv", index=False)
        counts.to_parquet(tables / "val_counts.parquet")
        base.to_parquet(tables / "base_counts.parquet")
        base_reward = summarize_counts(base["n_correct"], K)["avg@4"]
        common = ["fit", str(tables / "evals.csv"), "--metric", "avg@4", "--by", "n", "--compute", "rollouts",
                  "--bootstrap", str(replicas), "--base-reward", str(base_reward), "--out", str(tables / "fits.json")]  # fmt: skip
        with_counts = ["--counts", str(tables / "val_counts.parquet"), "--base-counts", str(tables / "base_counts.parquet")]
        print(f"table: {evals['n'].nunique()} n x {evals['compute_rollouts'].nunique()} checkpoints, "
              f"{counts['id'].nunique()} problems x {K} samples, {replicas} replicas; {os.cpu_count()} cores")  # fmt: skip
        for label, extra in (("with --counts", with_counts), ("without --counts", [])):
            times = []
            for _ in range(repeats):
                start = time.perf_counter()
                with contextlib.redirect_stdout(io.StringIO()):
                    assert main([*common, *extra]) == 0
                times.append(time.perf_counter() - start)
            print(f"isocompute fit {label}: {min(times):.1f} s best, {sum(times) / len(times):.1f} s mean of {repeats}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicas", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    run(args.replicas, args.repeats)
