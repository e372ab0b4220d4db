"""Arguments several commands share: the workflow they load (named as snakemake's own options name it), how
a command that samples from a saved model samples and checks, and how a command reads a sweep's own logs."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from isocompute.fits.table_fit import InputError
from isocompute.sources import FORMATS, detect, import_source
from isocompute.sources.table import column_map
from isocompute.study.specs import SamplingSpec


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


def add_sampling_arguments(sub: argparse.ArgumentParser) -> None:
    """TRL's loss and the sampler's settings of a command that takes GRPO gradients of a saved model."""
    sub.add_argument("--loss-type", default="grpo", help="TRL's loss_type of the GRPO gradient")
    sub.add_argument("--temperature", type=float, default=1.0)
    sub.add_argument("--top-p", type=float, default=1.0)
    sub.add_argument("--max-new-tokens", type=int, default=8)
    sub.add_argument("--chat-template", action="store_true", help="prompts as one user turn of the chat template")
    sub.add_argument("--checker", default="exact", help="answer checking: exact or math_verify")
    sub.add_argument("--seed", type=int, default=0)


def sampling_of(args: argparse.Namespace) -> SamplingSpec:
    """The sampler's settings that `add_sampling_arguments` added."""
    return SamplingSpec(args.temperature, args.top_p, args.max_new_tokens, args.chat_template)


def add_source_arguments(sub: argparse.ArgumentParser) -> None:
    """How a command reads a sweep's own logs in place of an evaluation table (`isocompute.sources`)."""
    sub.add_argument("--format", choices=FORMATS, help="the source's format, where it is not detected")
    sub.add_argument("--map", dest="run_map", metavar="RUNS.csv", help="each run's n, b_problem and optional seed "
                     "(columns run, n, b_problem, seed); runs it leaves out are skipped")  # fmt: skip
    sub.add_argument("--name-pattern", metavar="REGEX", help="n, b_problem, seed from run names: named groups, "
                     "as in 'bp(?P<b_problem>\\d+)_n(?P<n>\\d+)'")  # fmt: skip
    sub.add_argument("--columns", metavar="run=COL,step=COL", help="the columns of a --format table source")


def source_table(path: str, args: argparse.Namespace, metrics: list[str]) -> pd.DataFrame | None:
    """The evaluation table of a command's positional `path` read as a source (its mapping printed to
    stderr, where it stays apart from the command's own output), or None where `path` is a table file that
    is no tracker's log: the command reads it as an evaluation table, as it always has."""
    flags = (args.format, args.run_map, args.name_pattern, args.columns)
    if all(flag is None for flag in flags) and Path(path).is_file():
        try:
            kind = detect(path)
        except InputError:
            return None  # no log of a tracker: the evaluation table's reader says what it lacks
        if kind == "table":
            return None
    imported = import_source([path], args.format, metrics, args.run_map, args.name_pattern, column_map(args.columns))
    print("\n".join(imported.mapping()), file=sys.stderr)
    return imported.table
