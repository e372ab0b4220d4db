"""`isocompute noise CHECKPOINT --problems TABLE`: GRPO's per-rollout gradient noise scale B(n) at one
checkpoint, and the n it predicts (docs/log/noise-scale.md: what the prediction can and cannot tell)."""

from __future__ import annotations

import argparse
import math

from isocompute.cli.arguments import add_sampling_arguments, sampling_of
from isocompute.files import write_json
from isocompute.fits.table_fit import InputError


def add_parser(commands: argparse._SubParsersAction) -> None:
    noise = commands.add_parser("noise", help="per-rollout gradient noise scale B(n) at a checkpoint, and the n it predicts")
    noise.add_argument("checkpoint", help="a saved model; its optimizer.pt (if any) gives Adam's view too")
    noise.add_argument("--problems", required=True, help="training problems (id, prompt, answer; parquet or CSV)")
    noise.add_argument("--n", default="2,4,8,16,32", help="group sizes, comma-separated")
    noise.add_argument("--groups", type=int, default=1600, help="groups per n (problems drawn with replacement)")
    noise.add_argument("--replicas", type=int, default=1000, help="bootstrap resamples of the groups")
    noise.add_argument("--level", type=float, default=0.9, help="the interval's coverage")
    noise.add_argument("--out", required=True, help="NOISE.json to write")
    add_sampling_arguments(noise)
    noise.set_defaults(run=run)


def measured(args: argparse.Namespace) -> dict:
    """The measurement of `args` (imported here: it loads torch and the model)."""
    from isocompute.mechanism.noise_scale import NoiseSettings, adam_preconditioner, measure_checkpoint
    from isocompute.mechanism.probe import Policy, read_problems
    
    try:
        n_values = tuple(int(value) for value in args.n.split(","))
    except ValueError:
        raise InputError(f"--n {args.n!r}: group sizes must be integers separated by commas") from None
    problems = read_problems(args.problems)
    sampling = sampling_of(args)
    policy = Policy(args.checkpoint, sampling, args.checker)
    settings = NoiseSettings(n_values, args.groups, args.replicas, args.level, args.loss_type, args.seed)
    result = measure_checkpoint(policy, problems, settings, adam_preconditioner(policy, args.checkpoint))
    return {"checkpoint": str(args.checkpoint), "problems": str(args.problems), **result}


def _rollouts(value: float) -> str:
    return "inf" if math.isinf(value) else f"{value:,.0f}"


def run(args: argparse.Namespace) -> None:
    result = measured(args)
    write_json(result, args.out)
    for view, scales in result["noise_scale"].items():
        cells = [f"n={s['n']}: {_rollouts(s['noise_scale'])} [{_rollouts(s['low'])}, {_rollouts(s['high'])}]" for s in scales]
        predicted = result["predicted_n"][view]
        said = "no signal at any n" if predicted is None else f"n = {predicted['n']} (leaders {predicted['leaders']})"
        print(f"{view} B(n) in rollouts: " + "; ".join(cells) + f" -> predicted {said}")
    print("a prediction from one checkpoint, not a fit: see docs/log/noise-scale.md for how often it agreed")
