"""`isocompute simulate PRESET`: the simulated policy's study, its fits and its phase diagram."""

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
    simulated.set_defaults(run=run)


def run(args: argparse.Namespace) -> None:
    from isocompute.mechanism.simulated_study import run_preset

    workers = available_cores() if args.workers is None else args.workers
    run_preset(args.preset, workers, train=not args.fit_only, fit=not args.no_fit)


def available_cores() -> int:
    """The cores this process may run on (its CPU affinity, which a batch scheduler or container sets), or
    the machine's count where the platform cannot say: each run's numbers depend only on the preset, so
    using them all changes the wall time, not a result."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
