"""`isocompute fit EVALS`: per-curve sigmoids, the frontier and the law of n*, from any evaluation table or a
sweep's own logs."""

from __future__ import annotations

import argparse
import dataclasses
import json

from isocompute.cli.arguments import add_source_arguments, source_table
from isocompute.files import write_json
from isocompute.fits.leaders import DEFAULT_TOLERANCE
from isocompute.fits.table_fit import COMPUTE, TableFit, fit_table
from isocompute.study.grid import LR_RULES


def add_parser(commands: argparse._SubParsersAction) -> None:
    fit = commands.add_parser("fit", help="fit per-curve sigmoids, the frontier and the optimum's sigmoid")
    fit.add_argument("evals", help="evaluation table (CSV or parquet), or a source to import (isocompute import)")
    fit.add_argument("--metric", default="avg@4")
    fit.add_argument("--by", default="n", help="curve key: n, or b_problem,n")
    fit.add_argument("--compute", choices=sorted(COMPUTE), default="rollouts")
    fit.add_argument("--out", required=True, help="FITS.json to write")
    fit.add_argument("--counts", help="per-problem correct counts (val_counts) for bootstrap intervals")
    fit.add_argument("--k", type=int, default=4, help="samples per problem in --counts")
    fit.add_argument(
        "--bootstrap", type=int, default=100,
        help="replicas of the whole fit: resamples of the validation problems with --counts, else of each curve's residuals",
    )  # fmt: skip
    fit.add_argument("--seed", type=int, default=0)
    fit.add_argument("--min-compute", type=float, default=0.0)
    fit.add_argument("--frontier-points", type=int, default=60)
    fit.add_argument("--base-reward", type=float, help="anchor every curve's R0 at this value")
    fit.add_argument("--base-counts", help="the base model's per-problem counts, resampled with --counts")
    fit.add_argument("--extrapolate", action="store_true", help="let curves compete beyond their measured ranges (marked)")
    fit.add_argument(
        "--tolerance", type=float, default=DEFAULT_TOLERANCE,
        help="a reward difference (the metric's units) no one would act on: values within it of the best lead together",
    )  # fmt: skip
    fit.add_argument("--holdout-decades", type=float, default=0.5, help="top compute held out to check the law (0: none)")
    fit.add_argument("--points", choices=["all", "record_breaking"], default="all")
    fit.add_argument("--record-bin", type=float, default=0.01)
    fit.add_argument("--lr-base", type=float, default=1e-6, help="for recommend: lr at --lr-batch-ref")
    fit.add_argument("--lr-batch-ref", type=int, default=1024)
    fit.add_argument("--lr-rule", choices=sorted(LR_RULES), default="sqrt", help="for recommend: lr_base * f(B / B_ref)")
    add_source_arguments(fit)
    fit.set_defaults(run=run)


def run(args: argparse.Namespace) -> None:
    job = TableFit(**{field.name: getattr(args, field.name) for field in dataclasses.fields(TableFit)})
    result = fit_table(job, source_table(args.evals, args, [args.metric]))
    write_json(result, args.out)
    optimum = result["fits"][args.metric][COMPUTE[args.compute]]["optimum"]
    print(json.dumps({column: {k: v for k, v in fit.items() if k != "samples"} for column, fit in optimum.items()}, indent=2))
