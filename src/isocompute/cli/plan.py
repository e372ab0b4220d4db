"""`isocompute plan`: jobs and GPU-hours per rule of a dry run, and what the runs need from a step model,
to size a preset before submitting it."""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

from isocompute.cli.arguments import add_workflow_arguments
from isocompute.fits.table_fit import InputError


def add_parser(commands: argparse._SubParsersAction) -> None:
    sizing = commands.add_parser("plan", help="jobs and GPU-hours per rule that the workflow would request")
    add_workflow_arguments(sizing)
    sizing.add_argument(
        "--pending",
        action="store_true",
        help="only the jobs `snakemake -n` would run now (default: the whole workflow)",
    )
    sizing.add_argument(
        "--replay",
        metavar="REPLAY.json",
        help="an adaptive sweep's expected case: the share of the full grid's rollouts this replay "
        "(`isocompute replay`, or a finished adaptive sweep's summary.json) spent",
    )
    need = sizing.add_mutually_exclusive_group()
    need.add_argument(
        "--pilot",
        nargs="+",
        metavar="PROGRESS",
        help="pilot runs' progress.jsonl files (or run folders) at two or more B: fit seconds per step and "
        "plan what every training run needs (GPU-hours, attempts, disk)",
    )
    need.add_argument(
        "--step-model",
        metavar="FILE",
        help="the same from stated assumptions instead of a pilot (e.g. config/step_models/qwen2.5-7b-h100.yaml)",
    )
    sizing.add_argument(
        "--model-params", type=float, help="the model's parameter count, for the checkpoints' disk (with --pilot)"
    )
    sizing.add_argument(
        "--profile",
        default="slurm",
        help="the Snakemake profile folder whose `retries` bound a job's attempts (default: slurm, under --directory)",
    )
    sizing.set_defaults(run=run)


def planned(args: argparse.Namespace) -> str:
    """The plan of `args` as a text table; a bad config raises `PlanError` (a ValueError) with its message.
    An adaptive sweep's whole plan is its worst and expected cases (a dry run stops at its first decision).

    Imported here so that `fit` and `recommend` do not pay for importing Snakemake.
    """
    from isocompute.plan.budget import fit_step_model, read_retries, read_step_model
    from isocompute.plan.requests import format_table, plan, plan_report

    if args.pending:
        if args.replay or args.pilot or args.step_model:
            raise InputError("--pending plans the jobs due now; --replay, --pilot and --step-model the whole study")
        return format_table(plan(args.configfiles, args.snakefile, args.directory, pending_only=True))
    model = None
    if args.pilot:
        model = fit_step_model(args.pilot, args.model_params)
    elif args.step_model:
        model = read_step_model(args.step_model)
        if args.model_params:
            model = dataclasses.replace(model, model_params=args.model_params)
    profile = Path(args.directory) / args.profile
    retries = read_retries(profile)
    return plan_report(args.configfiles, args.snakefile, args.directory, args.replay, model, retries)


def run(args: argparse.Namespace) -> None:
    print(planned(args))
