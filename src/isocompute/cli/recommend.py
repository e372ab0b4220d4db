"""`isocompute recommend FITS.json --compute C`: n, B_problem, M and lr for a budget, from a study's fits."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from isocompute.fits.recommend import describe_recommendation, recommend


def add_parser(commands: argparse._SubParsersAction) -> None:
    advise = commands.add_parser("recommend", help="n, B_problem, M and lr for a budget")
    advise.add_argument("fits", help="FITS.json from `isocompute fit` or the pipeline")
    advise.add_argument("--compute", type=float, required=True, help="budget C in rollouts")
    advise.add_argument("--metric", help="default: the file's headline metric")
    advise.add_argument("--json", action="store_true", help="print JSON instead of text")
    advise.set_defaults(run=run)


def run(args: argparse.Namespace) -> None:
    advice = recommend(json.loads(Path(args.fits).read_text()), args.compute, args.metric)
    print(json.dumps(advice, indent=2) if args.json else describe_recommendation(advice))
