"""`isocompute compare RESULTS_DIR ...`: several studies (one per base model, say) on shared axes, from their fits."""

from __future__ import annotations

import argparse


def add_parser(commands: argparse._SubParsersAction) -> None:
    side = commands.add_parser("compare", help="several studies' frontiers and n* on shared axes, from their fits")
    side.add_argument("results_dirs", nargs="+", metavar="RESULTS_DIR", help="results trees (each with fits/)")
    side.add_argument("--out", required=True, help="folder for the figures")
    side.add_argument("--metric", help="default: each file's headline metric")
    side.set_defaults(run=run)


def run(args: argparse.Namespace) -> None:
    from isocompute.figures.compare import compare

    for path in compare(args.results_dirs, args.out, metric=args.metric):
        print(path)
