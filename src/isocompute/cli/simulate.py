"""`isocompute simulate PRESET`: the simulated policy's study, its fits and its phase diagram."""

from __future__ import annotations

import argparse


def add_parser(commands: argparse._SubParsersAction) -> None:
    simulated = commands.add_parser("simulate", help="the simulated policy's study, fits and phase diagram (docs/log/simulated-policy.md)")
    simulated.add_argument("preset", help="a simulated-policy preset, e.g. config/simulated/simulated.yaml")
    simulated.add_argument("--workers", type=int, default=1, help="processes training (B_problem, n) groups")
    simulated.add_argument("--no-fit", action="store_true", help="write the tables only")
    simulated.add_argument("--fit-only", action="store_true", help="refit the tables already written, no training")
    simulated.set_defaults(run=run)


def run(args: argparse.Namespace) -> None:
    from isocompute.mechanism.simulated_study import run_preset

    run_preset(args.preset, args.workers, train=not args.fit_only, fit=not args.no_fit)
