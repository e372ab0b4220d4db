"""Arguments several commands share: the workflow they load, named as snakemake's own options name it."""

from __future__ import annotations

import argparse


def add_workflow_arguments(sub: argparse.ArgumentParser) -> None:
    """The workflow a command loads, as snakemake's own options name it."""
    sub.add_argument(
        "--configfile",
        "--configfiles",
        dest="configfiles",
        nargs="+",
        default=[],
        metavar="FILE",
        help="config files overlaid on the Snakefile's own, in order (as snakemake's)",
    )
    sub.add_argument("--snakefile", help="default: the Snakefile of the current directory")
    sub.add_argument("--directory", default=".", help="working directory of the workflow (default: .)")
