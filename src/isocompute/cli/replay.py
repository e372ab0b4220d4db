"""`isocompute replay EVALS [--counts COUNTS] [--policy NAME]`: the adaptive sweep's policy on a complete table,
before spending a GPU on it: the rollouts it would have spent, its decisions and the fits of what it kept. Without
per-problem counts (no tracker keeps them) each decision's bands come from the residual bootstrap of `fit`.
`--policy` replays one of the rule's peers instead (`adaptive.peers`: optuna's pruners, top-k) on the same rungs,
accounted and fitted the same way, so the shares and laws compare."""

from __future__ import annotations

import argparse

from isocompute.adaptive.rungs import PILOT_RULES, RULES
from isocompute.cli.arguments import add_source_arguments, source_table
from isocompute.files import write_json
from isocompute.fits.curves import FitOptions
from isocompute.fits.table_fit import InputError, read_base_counts, read_counts, read_evals


def add_parser(commands: argparse._SubParsersAction) -> None:
    replay = commands.add_parser("replay", help="replay the adaptive sweep on complete evaluations: rollouts spent, decisions, fits")
    replay.add_argument("evals", help="evaluation table of one fixed-B_problem study (CSV or parquet)")
    replay.add_argument("--counts", help="per-problem correct counts (val_counts) for the bands; "
                        "without them, each curve's residuals are resampled")
    replay.add_argument("--base-counts", help="the base model's per-problem counts, resampled with --counts")
    replay.add_argument("--base-reward", type=float, help="anchor every curve's R0 at this value")
    replay.add_argument("--out", required=True, help="REPLAY.json to write")
    replay.add_argument("--metric", default="avg@4")
    replay.add_argument("--k", type=int, default=4, help="samples per problem in --counts")
    replay.add_argument("--bootstrap", type=int, default=50, help="replicas per decision: resamples of the "
                        "validation problems with --counts, else of each curve's residuals")
    replay.add_argument("--seed", type=int, default=0)
    replay.add_argument("--rung-factor", type=float, default=2.0, help="compute caps C_max / factor**j")
    replay.add_argument("--min-steps", type=int, default=10, help="optimizer steps an arm runs before it may stop")
    replay.add_argument("--audit-rungs", type=int, default=1, help="rungs the audit arm runs past its stop (0: none)")
    replay.add_argument("--prior", help="a law that decides what to measure: a finished study's fits.json or study fit, "
                        "or the paper's law by name (paper_easy, paper_hard); the kept data's law is fitted without it")
    replay.add_argument("--rules", default=",".join(RULES), help=f"the plain rule's parts to apply, comma-separated "
                        f"(default: all of {','.join(RULES)}; the workflow applies all): replay with fewer to see what each saves, or add "
                        f"a pilot not yet adopted ({','.join(PILOT_RULES)})")
    replay.add_argument("--policy", default="isocompute", help="who stops the arms: isocompute (the rule, the "
                        "default) or a peer: successive_halving, hyperband, median (optuna's pruners, pip install -e "
                        "'.[peers]'), top_k (the top half at each rung)")
    replay.add_argument("--holdout-decades", type=float, default=0.5, help="top compute held out to check the kept data's law")
    add_source_arguments(replay)
    replay.set_defaults(run=run)


def replayed(args: argparse.Namespace) -> dict:
    """The replay of `args` (the adaptive sweep imported here, to keep the other commands light)."""
    from isocompute.adaptive.peers import replay_policy
    from isocompute.adaptive.prior import load_prior
    from isocompute.adaptive.rungs import AdaptiveSettings

    evals = read_evals(args.evals, args.metric, ("n",), "compute_rollouts", source_table(args.evals, args, [args.metric]))
    if args.base_counts and not args.counts:
        raise InputError(
            f"--base-counts {args.base_counts}: its counts are resampled with --counts: give both"
        )
    counts = read_counts(args.counts, args.k, ("n",), "compute_rollouts") if args.counts else None
    options = FitOptions(metric=args.metric, compute="compute_rollouts", by=("n",), base_reward=args.base_reward)
    settings = AdaptiveSettings(args.rung_factor, args.min_steps, args.audit_rungs)
    base_counts = read_base_counts(args.base_counts, args.k, counts) if args.base_counts else None
    prior = load_prior(args.prior, args.metric) if args.prior else None
    return replay_policy(
        args.policy, evals, counts, options, args.k, args.bootstrap, args.seed, settings, base_counts, args.holdout_decades,
        prior=prior, rules=tuple(rule for rule in args.rules.split(",") if rule),
    )  # fmt: skip


def run(args: argparse.Namespace) -> None:
    result = replayed(args)
    write_json(result, args.out)
    law = result["fits"]["optimum"]["n"]
    print(f"policy {result['policy']}: rollouts spent {result['rollouts_spent']:.6g} of the full grid's {result['rollouts_full_grid']:.6g} "
          f"({result['share_of_full_grid']:.0%}); law of n*: {'fitted' if law['ok'] else law['kind']}")  # fmt: skip
    print(f"bands: {result['bootstrap']['bands']}")
    prior = result.get("prior")
    if prior is not None:
        fallback = prior["fallback"]
        print(f"prior {prior['source']}: " + ("followed to the end" if fallback is None else
              f"fell back to the plain rule at round {fallback['round']}: {fallback['reason']}"))  # fmt: skip
