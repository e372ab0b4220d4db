"""`isocompute probe MODEL NAME=TABLE ...`: gradient interference between training problems of a saved model."""

from __future__ import annotations

import argparse
from pathlib import Path

from isocompute.cli.arguments import add_sampling_arguments, sampling_of
from isocompute.fits.table_fit import InputError


def add_parser(commands: argparse._SubParsersAction) -> None:
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
    add_sampling_arguments(probing)
    probing.set_defaults(run=run)


def probed(args: argparse.Namespace) -> str:
    """Run the probe and write its files; return a short reading (imported here: it loads torch)."""
    from isocompute.figures.compare import DEFAULT_STYLE
    from isocompute.figures.mechanism import plot_probe
    from isocompute.mechanism.probe import ProbeSettings, probe, read_problems, write_probe
    
    named = [item.partition("=") for item in args.sets]
    bad = [item for item, (name, sep, path) in zip(args.sets, named) if not (name and sep and path)]
    if bad:
        raise InputError(f"problem sets must be NAME=TABLE, not {bad}")
    sets = {name: read_problems(path) for name, _, path in named}
    settings = ProbeSettings(lr=args.lr, problems=args.problems, n=args.n, b_problem=args.b_problem,
                             minibatches=args.minibatches, loss_type=args.loss_type, seed=args.seed)  # fmt: skip
    sampling = sampling_of(args)
    result, pairs = probe(args.model, sets, settings, sampling, args.checker, args.optimizer_checkpoint)
    out = Path(args.out)
    write_probe(result, pairs, out / "probe.json", out / "pairs.parquet")
    plot_probe(result, pairs, f"interference probe: {', '.join(sets)}", DEFAULT_STYLE, [str(out / "probe.png")])
    lines = [f"{block}: mean cosine {s['mean']:.4f}, share below -0.1 {s['share_below_-0.1']:.3f}"
             for block, s in result["cosines"]["adam"].items()]  # fmt: skip
    lines += [f"one step along {s['along']}: mean log p on {s['on']} {s['change_mean_log_p']:+.4f}" for s in result["one_step"]]
    return "\n".join(lines)


def run(args: argparse.Namespace) -> None:
    print(probed(args))
