"""`isocompute thin RUN_DIR ...`: keep a finished run's newest checkpoint whole and only the weights of the
others, so a paper-scale study's checkpoints fit its disk (docs/guide/running-at-scale.md)."""

from __future__ import annotations

import argparse


def add_parser(commands: argparse._SubParsersAction) -> None:
    thinning = commands.add_parser(
        "thin", help="keep finished runs' newest checkpoint whole and only the weights of the others"
    )
    thinning.add_argument("run_dirs", nargs="+", metavar="RUN_DIR", help="run folders, e.g. results/train/*/*")
    thinning.set_defaults(run=run)


def run(args: argparse.Namespace) -> None:
    from isocompute.training.checkpoints import thin_finished_run

    for run_dir in args.run_dirs:
        thinned = thin_finished_run(run_dir)
        print(f"{run_dir}: {len(thinned)} checkpoint(s) thinned to their weights")
