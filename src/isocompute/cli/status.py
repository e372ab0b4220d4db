"""`isocompute status`: every grid point's state, step, reward and GPU-hours, from the files alone."""

from __future__ import annotations

import argparse

from isocompute.cli.arguments import add_workflow_arguments


def add_parser(commands: argparse._SubParsersAction) -> None:
    watch = commands.add_parser("status", help="where every run of the study stands, from its files")
    add_workflow_arguments(watch)
    watch.set_defaults(run=run)


def run(args: argparse.Namespace) -> None:
    """Print the study's status as a text table (imported here, like plan, to keep `fit` light)."""
    from isocompute.plan.status import format_status, status

    table, total = status(args.configfiles, args.snakefile, args.directory)
    print(format_status(table, total))
