"""`isocompute simulate PRESET`: the simulated policy's study, its fits and its phase diagram; with `--truth`,
its known truth beside the fits (docs/log/simulated-truth.md)."""

from __future__ import annotations

import argparse
import os


def add_parser(commands: argparse._SubParsersAction) -> None:
    simulated = commands.add_parser("simulate", help="the simulated policy's study, fits and phase diagram (docs/log/simulated-policy.md)")
    simulated.add_argument("preset", help="a simulated-policy preset, e.g. config/simulated/simulated.yaml")
    simulated.add_argument(
        "--workers", type=int,
        help="processes training (B_problem, n) groups and fitting the levels (default: every core this process "
        "may use, as snakemake --cores all; the numbers are the same for any count)",
    )  # fmt: skip
    simulated.add_argument("--no-fit", action="store_true", help="write the tables only")
    simulated.add_argument("--fit-only", action="store_true", help="refit the tables already written, no training")
    simulated.add_argument(
        "--truth", type=int, metavar="SEEDS",
        help="instead of the study: train SEEDS more seeds per level (after the grid's) and write each study's "
        "expected reward, true n*(C) and its material moves beside the fits on disk (truth/truth_vs_fit.md)",
    )  # fmt: skip
    simulated.add_argument(
        "--levels", nargs="+", metavar="LEVEL", help="with --truth: only these interference levels"
    )
    simulated.set_defaults(run=run)


def run(args: argparse.Namespace) -> None:
    from isocompute.mechanism.simulated_policy import SimulationError
    from isocompute.mechanism.simulated_study import load_preset, run_preset
    from isocompute.mechanism.simulated_truth import run_truth

    if args.truth is not None:
        run_truth(load_preset(args.preset), args.truth, args.levels)
        return
    if args.levels:
        raise SimulationError(f"--levels {args.levels}: only --truth trains a subset of levels")
    workers = available_cores() if args.workers is None else args.workers
    run_preset(args.preset, workers, train=not args.fit_only, fit=not args.no_fit)


def available_cores() -> int:
    """The cores this process may run on (its CPU affinity, which a batch scheduler or container sets), or
    the machine's count where the platform cannot say: each run's numbers depend only on the preset, so
    using them all changes the wall time, not a result."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
