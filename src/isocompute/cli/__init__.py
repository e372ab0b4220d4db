"""The `isocompute` command: the analysis outside the pipeline, one module per command, on top of the library
(no library module imports this package).

    isocompute import SOURCE... --metric NAME --out EVALS.csv   (W&B, TensorBoard, MLflow, TRL: docs/reference/sources.md)
    isocompute fit EVALS --metric avg@4 --by n --compute rollouts --out FITS.json
    isocompute recommend FITS.json --compute 1e6
    isocompute compare RESULTS_DIR RESULTS_DIR ... --out DIR
    isocompute replay EVALS [--counts COUNTS] --out REPLAY.json   (docs/reference/adaptive-sweep.md)
    isocompute plot FITS.json --out DIR   (the study's figures, as the pipeline draws them)

EVALS is a CSV or parquet with at least the columns `run`, `n`, `b_problem`, `step`, `compute_rollouts`,
`compute_tokens` and the metric (`results/evaluation/evals.csv` is one). FITS.json has the schema of the
pipeline's `results/fits/<set>/<study>/fits.json` (docs/reference/fits.md, "Fits JSON"). `fit`, `replay` and
`recommend` take a source in place of EVALS (or FITS.json) with import's flags.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from isocompute.cli import (
    compare,
    fit,
    import_,
    noise,
    plan,
    plot,
    probe,
    recommend,
    replay,
    simulate,
    status,
    thin,
)
from isocompute.errors import IsoComputeError

# Each command's module adds its parser and sets `run`; the order is the order `--help` lists them in.
COMMANDS = (import_, fit, recommend, replay, plot, plan, status, probe, noise, thin, compare, simulate)


def parser() -> argparse.ArgumentParser:
    main = argparse.ArgumentParser(prog="isocompute", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = main.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        command.add_parser(commands)
    return main


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        args.run(args)
    except (IsoComputeError, ValueError, KeyError) as error:
        print(f"isocompute {args.command}: {error}", file=sys.stderr)
        return 2
    return 0
