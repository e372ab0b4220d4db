"""How wide is the noise scale's interval for a given number of groups? (issue 30, step 1: choose the
number of groups by measuring the interval's width against it; docs/log/noise-scale.md has the figures.)

A benchmark, not a test: `python tests/benchmark_noise_scale.py tiny` or `... simulated`.

- `tiny`: the tests' tiny Qwen2 base model (tests/conftest.py's TINY_MODEL, pre-trained here for its 60
  steps; nothing is downloaded). Its true sums are out of reach, so, as tests/test_interference.py does,
  each problem's answer is the model's own greedy completion: problems it solves now and then. Per n, one
  group per draw of a problem (drawn with replacement from the pool, so the groups are i.i.d. as the
  estimator assumes), the per-group gradient of TRL's grpo loss (`isocompute.mechanism.probe.Policy`), then
  B(n) raw and under Adam's preconditioner from `--minibatches` GRPO minibatches at the model (the probe's
  `minibatch_second_moment`: the tiny model has no optimizer checkpoint) on the first N groups.
- `simulated`: the simulated policy at its base model (config/simulated/simulated.yaml's problems and
  recipe; `--range` sets the initial pass rates), where the exact B(n) is known: the width and whether
  the interval covers the truth, over `--repeats` independent samples of N groups.

Width is the interval's high / low (90 % pivotal bootstrap), infinite when the interval reaches no signal.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

from isocompute.mechanism.noise_scale import (
    checkpoint_group_gradients,
    gram_noise_scale,
    noise_scale,
    simulated_gram,
    simulated_group_moments,
    simulated_logit_gradients,
    simulated_noise_scale,
)
from isocompute.mechanism.probe import Policy, ProbeSettings, minibatch_second_moment, preconditioner
from isocompute.mechanism.simulated_policy import Channels, base_logits, unit_features
from isocompute.mechanism.simulated_study import load_preset, update
from isocompute.study.specs import SamplingSpec

GROUP_COUNTS = (25, 50, 100, 200, 400, 800)


def fmt(value: float) -> str:
    return "inf" if not np.isfinite(value) else f"{value:,.0f}" if value >= 100 else f"{value:.3g}"


def greedy_answers(policy: Policy, pool: pd.DataFrame) -> pd.DataFrame:
    """The pool with each answer replaced by the model's greedy completion (its first line)."""
    encoded = policy.tokenizer(pool["prompt"].tolist(), return_tensors="pt", padding=True, add_special_tokens=False)
    with torch.no_grad():
        output = policy.model.generate(**encoded, do_sample=False, max_new_tokens=4,
                                       pad_token_id=policy.tokenizer.pad_token_id)  # fmt: skip
    texts = policy.tokenizer.batch_decode(output[:, encoded["input_ids"].shape[1] :], skip_special_tokens=True)
    table = pool.copy()
    table["answer"] = [t.strip().splitlines()[0] if t.strip() else "0" for t in texts]
    return table


def tiny(args: argparse.Namespace) -> None:
    from conftest import TINY_MODEL

    from isocompute.data.base_model import pretrain_base_model
    from isocompute.data.tasks import make_addition_pool

    torch.set_num_threads(1)
    folder = Path(tempfile.mkdtemp()) / "base"
    started = time.perf_counter()
    pretrain_base_model(TINY_MODEL, folder, seed=0)
    sampling = SamplingSpec(temperature=1.0, top_p=1.0, max_new_tokens=4)
    policy = Policy(str(folder), sampling, "exact")
    pool = greedy_answers(policy, make_addition_pool(200, 1, 2, seed=0))
    print(f"tiny model: {policy.size:,} parameters, pre-trained in {time.perf_counter() - started:.0f} s")
    settings = ProbeSettings(lr=1e-3, n=8, b_problem=16, minibatches=args.minibatches)
    v, shares = minibatch_second_moment(policy, pool, settings)
    scale = preconditioner(v, 1e-8).double().numpy()
    print(f"Adam's v from {args.minibatches} GRPO minibatches of 16 x 8 (zero-std share {np.mean(shares):.2f})")
    rng = np.random.default_rng(args.seed)
    print("n  groups  zero-std  B raw [90 %]  width  |  B Adam [90 %]  width  (seconds for the gradients)")
    for n in args.n:
        chosen = pool.iloc[rng.integers(0, len(pool), max(args.groups))].reset_index(drop=True)
        started = time.perf_counter()
        rows = checkpoint_group_gradients(policy, chosen, n, args.seed + n, "grpo")
        seconds = time.perf_counter() - started
        silent = float((np.abs(rows).sum(1) == 0).mean())
        for count in args.groups:
            raw = noise_scale(rows[:count], n, seed=count)
            adam = noise_scale(rows[:count], n, preconditioner=scale, seed=count)
            print(f"{n:<3}{count:>7}  {silent:8.2f}  {fmt(raw.noise_scale)} [{fmt(raw.low)}, {fmt(raw.high)}]"
                  f"  {fmt(raw.width)}  |  {fmt(adam.noise_scale)} [{fmt(adam.low)}, {fmt(adam.high)}]"
                  f"  {fmt(adam.width)}  ({seconds:.0f})")  # fmt: skip


def simulated(args: argparse.Namespace) -> None:
    config = load_preset(args.preset)
    rng = np.random.default_rng(args.seed)
    answers, dim = config["policy"]["answers"], config["policy"]["feature_dim"]
    problems = config["problems"]["train_size"]
    low, high = args.range
    correct = rng.integers(0, answers, problems)
    recipe = update(config, 1)
    logits = base_logits(rng.uniform(low, high, problems), correct, answers, recipe.temperature)
    features = unit_features(problems, dim, 0.5, rng)
    level = config["interference"][args.level]
    channels = Channels(**{k: float(level[k]) for k in ("private", "features", "overlap", "bias")})
    print(f"simulated policy at its base model: {problems} problems, p ~ U[{low}, {high}], K = {answers}, "
          f"level {args.level}, recipe kl {recipe.kl_coef} entropy {recipe.entropy_coef}")  # fmt: skip
    print("n  groups  exact B  median B  median width  share width < 2  coverage of exact (of repeats)")
    for n in args.n:
        moments = [simulated_group_moments(logits[i], logits[i], correct[i], n, recipe) for i in range(problems)]
        means = np.array([m for m, _ in moments])
        traces = np.array([np.trace(c) for _, c in moments])
        exact = simulated_noise_scale(means, traces, features, channels, n)
        for count in args.groups:
            results = []
            for repeat in range(args.repeats):
                draw = np.random.default_rng([args.seed, n, count, repeat])
                chosen = draw.integers(0, problems, count)
                grad_z = simulated_logit_gradients(logits, logits, correct, chosen, n, recipe, draw)
                gram = simulated_gram(grad_z, chosen, features, channels)
                results.append(gram_noise_scale(gram, n, replicas=args.replicas, seed=repeat))
            widths = np.array([r.width for r in results])
            covered = np.mean([r.low <= exact <= r.high for r in results])
            print(f"{n:<3}{count:>7}  {fmt(exact):>7}  {fmt(float(np.median([r.noise_scale for r in results]))):>8}"
                  f"  {fmt(float(np.median(widths))):>12}  {np.mean(widths < 2):15.2f}  {covered:.2f}")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("which", choices=["tiny", "simulated"])
    parser.add_argument("--n", type=lambda s: [int(v) for v in s.split(",")], default=[2, 4, 8, 16])
    parser.add_argument("--groups", type=lambda s: [int(v) for v in s.split(",")], default=list(GROUP_COUNTS))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--minibatches", type=int, default=20)
    parser.add_argument("--preset", default="config/simulated/simulated.yaml")
    parser.add_argument("--range", type=lambda s: [float(v) for v in s.split(",")], default=[0.3, 0.6])
    parser.add_argument("--level", default="shared_1")
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--replicas", type=int, default=400)
    args = parser.parse_args()
    tiny(args) if args.which == "tiny" else simulated(args)


if __name__ == "__main__":
    main()
