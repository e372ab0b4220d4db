"""Tokens one optimizer step processes on one rank, with TRL's full-width micro-batches and with the
length-grouped ones (`isocompute.training.length_grouping`), on a long-tailed distribution of completion lengths.

A benchmark, not a test: run it as `python tests/benchmark_padding.py` (`--help` for the
distribution's settings). Arithmetic, not a timing: a rank's generation batch of B / processes rows is drawn,
split as TRL 1.16 splits it (`shuffle_sequence_dict`, `split_tensor_dict`: every micro-batch as wide as the
batch's longest prompt and completion) and as the project's trainer splits it (`length_grouped`, the same
function its `_prepare_inputs` and its reference and old-policy forwards call), and the token positions of
each pass are counted: rows x (prompt width + completion width), summed over micro-batches. The passes of a
paper step (config/presets/paper.yaml: Easy has a KL term, vLLM's importance sampling needs the old
policy's log-probs): the loss's forward and backward, the reference forward and the old-policy forward.
`forward-equivalents` weighs a backward as two forwards. A count, not a timing: attention grows faster
than linearly in width, but a micro-batch also has costs that do not shrink with it (ZeRO-3's weight
gathers), and generation is not counted.

Assumed lengths (chosen, not measured): `--at-max` of completions reach `--max-length` (truncated), the
others are log-normal around `--median` tokens (capped at the maximum); prompts are log-normal around
`--prompt-median` tokens, one length per problem shared by its n completions.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

import torch
from trl.trainer.utils import shuffle_sequence_dict, split_tensor_dict

from isocompute.study.grid import batch_split
from isocompute.training.length_grouping import length_grouped, tokens


def rank_batch(
    args: argparse.Namespace, b_problem: int, n: int, generator: torch.Generator
) -> dict[str, torch.Tensor]:
    """One rank's share of a step (B / processes rows of whole groups) in TRL's padded layout; token ids
    are irrelevant to the count, so bytes."""
    rows = b_problem * n // args.processes
    prompt = (args.prompt_median * torch.exp(0.4 * torch.randn(-(-rows // n), generator=generator))).long()
    prompt = prompt.clamp(1, 4 * args.prompt_median).repeat_interleave(n)[:rows]
    completion = (args.median * torch.exp(args.sigma * torch.randn(rows, generator=generator))).long()
    completion = completion.clamp(1, args.max_length)
    completion[torch.rand(rows, generator=generator) < args.at_max] = args.max_length
    prompt_width, completion_width = int(prompt.max()), int(completion.max())
    return {
        "prompt_ids": torch.zeros((rows, prompt_width), dtype=torch.uint8),
        "prompt_mask": (torch.arange(prompt_width) >= prompt_width - prompt.unsqueeze(1)).to(torch.uint8),
        "completion_ids": torch.zeros((rows, completion_width), dtype=torch.uint8),
        "completion_mask": (torch.arange(completion_width) < completion.unsqueeze(1)).to(torch.uint8),
    }


def step_tokens(batch: dict[str, torch.Tensor], micro_batches: int, grouped: bool) -> dict[str, int]:
    """Token positions of each pass of one step: the loss's micro-batches (after TRL's shuffle) and the
    forwards without gradient over the generation batch in chunks of the micro-batch size (in TRL's order)."""
    split = length_grouped if grouped else split_tensor_dict
    loss = sum(map(tokens, split(shuffle_sequence_dict(batch), micro_batches)))
    chunks = sum(map(tokens, split(batch, micro_batches)))
    return {"loss forward": loss, "loss backward": loss, "reference forward": chunks,
            "old-policy forward": chunks}  # fmt: skip


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--processes", type=int, default=8, help="training ranks (paper preset: 8)")
    parser.add_argument("--per-device", type=int, default=16, help="per_device_batch_max (paper preset: 16)")
    parser.add_argument("--max-length", type=int, default=8192, help="max completion tokens")
    parser.add_argument("--at-max", type=float, default=0.05, help="share of completions at the maximum")
    parser.add_argument("--median", type=float, default=700.0, help="median tokens of the other completions")
    parser.add_argument("--sigma", type=float, default=0.6, help="log-normal sigma of their lengths")
    parser.add_argument("--prompt-median", type=int, default=150, help="median prompt tokens")
    parser.add_argument("--points", default="32x8,32x256,64x1024", help="B_problem x n of the steps")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    torch.manual_seed(args.seed)  # TRL's shuffle draws from the global generator
    generator = torch.Generator().manual_seed(args.seed)
    print(f"per rank and optimizer step; {args.processes} ranks, <= {args.per_device} completions per micro-batch; "
          f"{args.at_max:.0%} of completions at {args.max_length} tokens, the rest log-normal "
          f"(median {args.median:g}, sigma {args.sigma:g}); prompts median {args.prompt_median}")  # fmt: skip
    for point in args.points.split(","):
        b_problem, n = map(int, point.split("x"))
        split = batch_split(b_problem * n, args.processes, args.per_device)
        batch = rank_batch(args, b_problem, n, generator)
        real = int(batch["prompt_mask"].sum() + batch["completion_mask"].sum())
        before = step_tokens(batch, split.accumulation, grouped=False)
        after = step_tokens(batch, split.accumulation, grouped=True)
        rows = batch["completion_mask"].size(0)
        print(f"\nbp{b_problem}_n{n} (B = {b_problem * n}): {rows} rows per rank, {split.accumulation} micro-batches of "
              f"{split.per_device}; mean completion {float(batch['completion_mask'].sum(1).float().mean()):.0f} tokens, "
              f"prompt + completion tokens {real:,}")  # fmt: skip
        print(f"  {'pass':<20}{'TRL (full width)':>18}{'length-grouped':>18}{'ratio':>8}")
        for name in before:
            print(f"  {name:<20}{before[name]:>18,}{after[name]:>18,}{before[name] / after[name]:>8.2f}")
        weights = {"loss forward": 1, "loss backward": 2, "reference forward": 1, "old-policy forward": 1}
        old, new = (sum(weight * passes[key] for key, weight in weights.items()) for passes in (before, after))
        print(f"  {'forward-equivalents':<20}{old:>18,}{new:>18,}{old / new:>8.2f}"
              f"   (real tokens x 5: {5 * real:,}; padding {1 - 5 * real / old:.0%} before, {1 - 5 * real / new:.0%} after)")  # fmt: skip


if __name__ == "__main__":
    main()
