"""`isocompute plot FITS.json --out DIR`: the study's figures (each curve with its fit, the frontier with its
leaders, the law of n* with its band, the hold-out check) from any fits.json, drawn by the pipeline's own
figure code, so a sweep fitted outside the pipeline is seen as the pipeline would show it."""

from __future__ import annotations

import argparse

from isocompute.fits.table_fit import COMPUTE

FORMATS = ("png", "pdf")


def add_parser(commands: argparse._SubParsersAction) -> None:
    plot = commands.add_parser(
        "plot", help="the study's figures from a fits.json, as the pipeline draws them"
    )
    plot.add_argument(
        "fits", help="FITS.json: the pipeline's results/fits/<set>/<study>/fits.json or `fit`'s"
    )
    plot.add_argument("--out", required=True, help="folder for the figures")
    plot.add_argument("--metric", help="default: the file's headline metric")
    plot.add_argument(
        "--compute", choices=sorted(COMPUTE), help="default: the file's headline compute measure"
    )
    plot.add_argument(
        "--format", dest="formats", nargs="+", choices=FORMATS, default=["png"], help="default: png"
    )
    plot.set_defaults(run=run)


def run(args: argparse.Namespace) -> None:
    # The figures' modules load matplotlib: imported here, to keep the other commands light.
    from isocompute.figures.compare import DEFAULT_STYLE
    from isocompute.figures.registry import draw_fits_file

    compute = COMPUTE[args.compute] if args.compute else None
    for path in draw_fits_file(args.fits, args.out, DEFAULT_STYLE, args.metric, compute, args.formats):
        print(path)
