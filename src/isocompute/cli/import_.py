"""`isocompute import SOURCE... --out EVALS.csv`: a sweep's own logs (W&B, TensorBoard, MLflow, TRL, a long
table) as the evaluation table the other commands read, with what was mapped printed for checking."""

from __future__ import annotations

import argparse

from isocompute.cli.arguments import add_source_arguments
from isocompute.files import write_user_table
from isocompute.sources import import_source
from isocompute.sources.table import column_map


def add_parser(commands: argparse._SubParsersAction) -> None:
    read = commands.add_parser(
        "import", help="read a sweep's W&B, TensorBoard, MLflow or TRL logs as an evaluation table"
    )
    read.add_argument("sources", nargs="+", metavar="SOURCE", help="files, folders or an MLflow tracking URI")
    read.add_argument("--out", required=True, help="EVALS.csv (or .parquet) to write")
    read.add_argument(
        "--metric", nargs="+", default=[], help="evaluation column(s), named as the source names them"
    )
    add_source_arguments(read)
    read.set_defaults(run=run)


def run(args: argparse.Namespace) -> None:
    imported = import_source(
        args.sources, args.format, args.metric, args.run_map, args.name_pattern, column_map(args.columns)
    )
    write_user_table(imported.table, args.out)
    print("\n".join(imported.mapping()))
    print(f"wrote {len(imported.table)} rows to {args.out}")
