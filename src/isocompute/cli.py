"""`isocompute fit`, `recommend`, `compare`, `plan` and `status`: the analysis outside the pipeline.

    isocompute fit EVALS --metric avg@4 --by n --compute rollouts --out FITS.json
    isocompute recommend FITS.json --compute 1e6
    isocompute compare RESULTS_DIR RESULTS_DIR ... --out DIR
    isocompute replay EVALS --counts COUNTS --out REPLAY.json   (the adaptive sweep, docs/reference/adaptive-sweep.md)

EVALS is a CSV or parquet with at least the columns `run`, `n`, `b_problem`, `step`, `compute_rollouts`,
`compute_tokens` and the metric (`results/evaluation/evals.csv` is one). FITS.json has the schema of the
pipeline's `results/fits/<set>/<study>/fits.json` (docs/reference/fits.md, "Fits JSON").
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from isocompute.fitted_study import FitOptions
from isocompute.bootstrap import resample_evals
from isocompute.files import write_json
from isocompute.grid import LR_RULES
from isocompute.recommend import describe_recommendation, recommend
from isocompute.study_fits import fit_study

REQUIRED = ["run", "n", "b_problem", "step", "compute_rollouts", "compute_tokens"]
# Columns of the pipeline's evaluations that tell a recipe ablation's runs from the sweep's.
RUN_SETTINGS = ["recipe", "lr_rule", "lr_base", "lr_batch_ref", "n_baseline"]
COMPUTE = {"rollouts": "compute_rollouts", "tokens": "compute_tokens", "steps": "step"}


class InputError(ValueError):
    """An input table the fit cannot use; the message names the file and the column."""


def read_table(path: str) -> pd.DataFrame:
    if not Path(path).exists():
        raise InputError(f"{path}: no such file")
    return pd.read_parquet(path) if path.endswith(".parquet") else pd.read_csv(path)


def fit_command(args: argparse.Namespace) -> dict:
    evals = read_table(args.evals)
    missing = [c for c in [*REQUIRED, args.metric] if c not in evals.columns]
    if missing:
        raise InputError(f"{args.evals}: missing column(s) {missing}")
    settings = [c for c in RUN_SETTINGS if c in evals.columns]
    if settings and len(evals[settings].drop_duplicates()) > 1:
        raise InputError(f"{args.evals} mixes runs of several recipes or learning rates ({RUN_SETTINGS}): keep one")
    by = args.by.split(",")
    fixed = {}
    if "b_problem" not in by:
        values = sorted(evals["b_problem"].unique())
        if len(values) > 1:
            raise InputError(
                f"{args.evals} holds b_problem values {values}: keep one (fixed-B_problem study) or use --by b_problem,n"
            )
        fixed = {"b_problem": int(values[0])}
    base_counts = read_table(args.base_counts) if args.base_counts else None
    replicas = []
    if args.counts:
        replicas = resample_evals(read_table(args.counts), args.k, args.bootstrap, args.seed, by, base_counts)
    compute = COMPUTE[args.compute]
    options = FitOptions(
        metric=args.metric,
        compute=compute,
        by=tuple(by),
        base_reward=args.base_reward,
        points=args.points,
        record_bin=args.record_bin,
        extrapolate=args.extrapolate,
    )
    fit = fit_study(
        evals,
        options,
        min_compute=args.min_compute,
        frontier_points=args.frontier_points,
        replicas=replicas,
        holdout_decades=args.holdout_decades,
        resamples=0 if args.counts else args.bootstrap,
        seed=args.seed,
    )
    return {
        "study": {"kind": "cli", "name": Path(args.evals).stem, "by": by, "fixed": fixed},
        "learning_rate": {"lr_rule": args.lr_rule, "lr_base": args.lr_base, "lr_batch_ref": args.lr_batch_ref},
        "headline": {"metric": args.metric, "compute": compute},
        "fits": {args.metric: {compute: fit}},
    }


def parser() -> argparse.ArgumentParser:
    main = argparse.ArgumentParser(prog="isocompute", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = main.add_subparsers(dest="command", required=True)
    fit = commands.add_parser("fit", help="fit per-curve sigmoids, the frontier and the optimum's sigmoid")
    fit.add_argument("evals", help="evaluation table (CSV or parquet)")
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
    fit.add_argument("--holdout-decades", type=float, default=0.5, help="top compute held out to check the law (0: none)")
    fit.add_argument("--points", choices=["all", "record_breaking"], default="all")
    fit.add_argument("--record-bin", type=float, default=0.01)
    fit.add_argument("--lr-base", type=float, default=1e-6, help="for recommend: lr at --lr-batch-ref")
    fit.add_argument("--lr-batch-ref", type=int, default=1024)
    fit.add_argument("--lr-rule", choices=sorted(LR_RULES), default="sqrt", help="for recommend: lr_base * f(B / B_ref)")
    advise = commands.add_parser("recommend", help="n, B_problem, M and lr for a budget")
    advise.add_argument("fits", help="FITS.json from `isocompute fit` or the pipeline")
    advise.add_argument("--compute", type=float, required=True, help="budget C in rollouts")
    advise.add_argument("--metric", help="default: the file's headline metric")
    advise.add_argument("--json", action="store_true", help="print JSON instead of text")
    add_replay_parser(commands)
    add_plan_parser(commands)
    add_status_parser(commands)
    add_probe_parser(commands)
    thinning = commands.add_parser(
        "thin", help="keep finished runs' newest checkpoint whole and only the weights of the others"
    )
    thinning.add_argument("run_dirs", nargs="+", metavar="RUN_DIR", help="run folders, e.g. results/train/*/*")
    side = commands.add_parser("compare", help="several studies' frontiers and n* on shared axes, from their fits")
    side.add_argument("results_dirs", nargs="+", metavar="RESULTS_DIR", help="results trees (each with fits/)")
    side.add_argument("--out", required=True, help="folder for the figures")
    side.add_argument("--metric", help="default: each file's headline metric")
    simulated = commands.add_parser("simulate", help="the simulated policy's study, fits and phase diagram (docs/log/simulated-policy.md)")
    simulated.add_argument("preset", help="a simulated-policy preset, e.g. config/presets/simulated.yaml")
    simulated.add_argument("--workers", type=int, default=1, help="processes training (B_problem, n) groups")
    simulated.add_argument("--no-fit", action="store_true", help="write the tables only")
    simulated.add_argument("--fit-only", action="store_true", help="refit the tables already written, no training")
    return main


def add_replay_parser(commands: argparse._SubParsersAction) -> None:
    """`isocompute replay`: the adaptive sweep's policy on a complete table, before spending a GPU on it."""
    sweep = commands.add_parser("replay", help="replay the adaptive sweep on complete evaluations: rollouts spent, decisions, fits")
    sweep.add_argument("evals", help="evaluation table of one fixed-B_problem study (CSV or parquet)")
    sweep.add_argument("--counts", required=True, help="per-problem correct counts (val_counts): the bootstrap's bands")
    sweep.add_argument("--base-counts", help="the base model's per-problem counts, resampled with --counts")
    sweep.add_argument("--base-reward", type=float, help="anchor every curve's R0 at this value")
    sweep.add_argument("--out", required=True, help="REPLAY.json to write")
    sweep.add_argument("--metric", default="avg@4")
    sweep.add_argument("--k", type=int, default=4, help="samples per problem in --counts")
    sweep.add_argument("--bootstrap", type=int, default=50, help="resamples of the validation problems per decision")
    sweep.add_argument("--seed", type=int, default=0)
    sweep.add_argument("--rung-factor", type=float, default=2.0, help="compute caps C_max / factor**j")
    sweep.add_argument("--min-steps", type=int, default=10, help="optimizer steps an arm runs before it may stop")
    sweep.add_argument("--audit-rungs", type=int, default=1, help="rungs the audit arm runs past its stop (0: none)")
    sweep.add_argument("--holdout-decades", type=float, default=0.5, help="top compute held out to check the kept data's law")


def replay_command(args: argparse.Namespace) -> dict:
    """The replay of `args` (imported here, like plan, to keep the other commands light)."""
    from isocompute.adaptive import replay
    from isocompute.rungs import SweepSettings

    evals, counts = read_table(args.evals), read_table(args.counts)
    missing = [c for c in [*REQUIRED, args.metric] if c not in evals.columns]
    if missing:
        raise InputError(f"{args.evals}: missing column(s) {missing}")
    missing = [c for c in ["id", "n_correct", "n", "step"] if c not in counts.columns]
    if missing:
        raise InputError(f"{args.counts}: missing column(s) {missing}")
    options = FitOptions(metric=args.metric, compute="compute_rollouts", by=("n",), base_reward=args.base_reward)
    settings = SweepSettings(args.rung_factor, args.min_steps, args.audit_rungs)
    base_counts = read_table(args.base_counts) if args.base_counts else None
    return replay(evals, counts, options, args.k, args.bootstrap, args.seed, settings, base_counts, args.holdout_decades)


def add_plan_parser(commands: argparse._SubParsersAction) -> None:
    """`isocompute plan`: jobs and GPU-hours per rule of a dry run, to size a preset before submitting."""
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
        "(`isocompute replay`, or a finished sweep's summary.json) spent",
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


def add_probe_parser(commands: argparse._SubParsersAction) -> None:
    """`isocompute probe`: gradient interference between training problems of a saved model (docs/log/headline-search.md)."""
    probing = commands.add_parser("probe", help="interference between training problems: gradient cosines, one-step changes")
    probing.add_argument("model", help="a saved model (a `from_pretrained` path or hub id)")
    probing.add_argument("sets", nargs="+", metavar="NAME=TABLE", help="problem tables (id, prompt, answer) by name")
    probing.add_argument("--out", required=True, help="folder for probe.json, pairs.parquet and probe.png")
    probing.add_argument("--lr", type=float, default=1e-4, help="the step's learning rate (default: the default recipe's at B = 128)")
    probing.add_argument("--problems", type=int, default=100, help="problems per set in the cosines and one-step changes")
    probing.add_argument("--n", type=int, default=8, help="completions per problem in every GRPO gradient")
    probing.add_argument("--b-problem", type=int, default=16, help="problems per preconditioner minibatch")
    probing.add_argument("--minibatches", type=int, default=20, help="GRPO minibatches whose squared gradients make v")
    probing.add_argument("--optimizer-checkpoint", help="a Trainer checkpoint whose optimizer state gives v instead")
    probing.add_argument("--loss-type", default="grpo", help="TRL's loss_type of the GRPO gradient")
    probing.add_argument("--temperature", type=float, default=1.0)
    probing.add_argument("--top-p", type=float, default=1.0)
    probing.add_argument("--max-new-tokens", type=int, default=8)
    probing.add_argument("--chat-template", action="store_true", help="prompts as one user turn of the chat template")
    probing.add_argument("--checker", default="exact", help="answer checking: exact or math_verify")
    probing.add_argument("--seed", type=int, default=0)


def probe_command(args: argparse.Namespace) -> str:
    """Run the probe and write its files; return a short reading (imported here: it loads torch)."""
    from isocompute.compare import DEFAULT_STYLE
    from isocompute.diagnostic_figures import plot_probe
    from isocompute.interference import ProbeSettings, probe, read_problems, write_probe
    from isocompute.specs import SamplingSpec

    named = [item.partition("=") for item in args.sets]
    bad = [item for item, (name, sep, path) in zip(args.sets, named) if not (name and sep and path)]
    if bad:
        raise InputError(f"problem sets must be NAME=TABLE, not {bad}")
    sets = {name: read_problems(path) for name, _, path in named}
    settings = ProbeSettings(lr=args.lr, problems=args.problems, n=args.n, b_problem=args.b_problem,
                             minibatches=args.minibatches, loss_type=args.loss_type, seed=args.seed)  # fmt: skip
    sampling = SamplingSpec(args.temperature, args.top_p, args.max_new_tokens, args.chat_template)
    result, pairs = probe(args.model, sets, settings, sampling, args.checker, args.optimizer_checkpoint)
    out = Path(args.out)
    write_probe(result, pairs, out / "probe.json", out / "pairs.parquet")
    plot_probe(result, pairs, f"interference probe: {', '.join(sets)}", DEFAULT_STYLE, [str(out / "probe.png")])
    lines = [f"{block}: mean cosine {s['mean']:.4f}, share below -0.1 {s['share_below_-0.1']:.3f}"
             for block, s in result["cosines"]["adam"].items()]  # fmt: skip
    lines += [f"one step along {s['along']}: mean log p on {s['on']} {s['change_mean_log_p']:+.4f}" for s in result["one_step"]]
    return "\n".join(lines)


def add_status_parser(commands: argparse._SubParsersAction) -> None:
    """`isocompute status`: every grid point's state, step, reward and GPU-hours, from the files alone."""
    watch = commands.add_parser("status", help="where every run of the study stands, from its files")
    add_workflow_arguments(watch)


def status_command(args: argparse.Namespace) -> str:
    """The study's status as a text table (imported here, like plan, to keep `fit` light)."""
    from isocompute.status import format_status, status

    table, total = status(args.configfiles, args.snakefile, args.directory)
    return format_status(table, total)


def plan_command(args: argparse.Namespace) -> str:
    """The plan of `args` as a text table; a bad config raises `PlanError` (a ValueError) with its message.
    An adaptive sweep's whole plan is its worst and expected cases (a dry run stops at its first decision).

    Imported here so that `fit` and `recommend` do not pay for importing Snakemake.
    """
    from isocompute.budget import fit_step_model, read_retries, read_step_model
    from isocompute.plan import format_table, plan, plan_report

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


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        if args.command == "fit":
            result = fit_command(args)
            write_json(result, args.out)
            optimum = result["fits"][args.metric][COMPUTE[args.compute]]["optimum"]
            print(json.dumps({column: {k: v for k, v in fit.items() if k != "samples"} for column, fit in optimum.items()}, indent=2))
        elif args.command == "replay":
            result = replay_command(args)
            write_json(result, args.out)
            law = result["fits"]["optimum"]["n"]
            print(f"rollouts spent {result['rollouts_spent']:.6g} of the full grid's {result['rollouts_full_grid']:.6g} "
                  f"({result['share_of_full_grid']:.0%}); law of n*: {'fitted' if law['ok'] else law['kind']}")  # fmt: skip
        elif args.command == "plan":
            print(plan_command(args))
        elif args.command == "status":
            print(status_command(args))
        elif args.command == "thin":
            from isocompute.checkpoints import thin_finished_run

            for run_dir in args.run_dirs:
                thinned = thin_finished_run(run_dir)
                print(f"{run_dir}: {len(thinned)} checkpoint(s) thinned to their weights")
        elif args.command == "probe":
            print(probe_command(args))
        elif args.command == "simulate":
            from isocompute.simulated_study import run_preset

            run_preset(args.preset, args.workers, train=not args.fit_only, fit=not args.no_fit)
        elif args.command == "compare":
            from isocompute.compare import compare

            for path in compare(args.results_dirs, args.out, metric=args.metric):
                print(path)
        else:
            advice = recommend(json.loads(Path(args.fits).read_text()), args.compute, args.metric)
            print(json.dumps(advice, indent=2) if args.json else describe_recommendation(advice))
    except (InputError, ValueError, KeyError) as error:
        print(f"isocompute {args.command}: {error}", file=sys.stderr)
        return 2
    return 0
