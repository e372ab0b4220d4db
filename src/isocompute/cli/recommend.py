"""`isocompute recommend FITS.json --compute C`: n, B_problem, M and lr for a budget, from a study's fits, or
from a sweep's own logs fitted first with `isocompute fit`'s defaults."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from isocompute.cli.arguments import add_source_arguments, source_table
from isocompute.fits.recommend import describe_recommendation, recommend
from isocompute.fits.table_fit import TableFit, fit_table


def add_parser(commands: argparse._SubParsersAction) -> None:
    advise = commands.add_parser("recommend", help="n, B_problem, M and lr for a budget")
    advise.add_argument("fits", help="FITS.json from `isocompute fit` or the pipeline, or an evaluation table or source to fit first")
    advise.add_argument("--compute", type=float, required=True, help="budget C in rollouts")
    advise.add_argument("--metric", help="default: the file's headline metric (a table or source: avg@4)")
    advise.add_argument("--json", action="store_true", help="print JSON instead of text")
    add_source_arguments(advise)
    advise.set_defaults(run=run)


def fits_of(args: argparse.Namespace) -> dict:
    """The fits the recommendation reads: FITS.json as it is, or a table or source fitted with `isocompute
    fit`'s defaults (its learning-rate rule among them)."""
    if Path(args.fits).suffix == ".json" and args.format is None:
        return json.loads(Path(args.fits).read_text())
    job = TableFit(args.fits, **({"metric": args.metric} if args.metric else {}))
    return fit_table(job, source_table(args.fits, args, [job.metric]))


def run(args: argparse.Namespace) -> None:
    advice = recommend(fits_of(args), args.compute, args.metric)
    print(json.dumps(advice, indent=2) if args.json else describe_recommendation(advice))
