"""Arguments several commands share: the workflow they load (named as snakemake's own options name it), and
how a command that samples from a saved model samples and checks."""

from __future__ import annotations

import argparse

from isocompute.study.specs import SamplingSpec


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


def add_sampling_arguments(sub: argparse.ArgumentParser) -> None:
    """TRL's loss and the sampler's settings of a command that takes GRPO gradients of a saved model."""
    sub.add_argument("--loss-type", default="grpo", help="TRL's loss_type of the GRPO gradient")
    sub.add_argument("--temperature", type=float, default=1.0)
    sub.add_argument("--top-p", type=float, default=1.0)
    sub.add_argument("--max-new-tokens", type=int, default=8)
    sub.add_argument("--chat-template", action="store_true", help="prompts as one user turn of the chat template")
    sub.add_argument("--checker", default="exact", help="answer checking: exact or math_verify")
    sub.add_argument("--seed", type=int, default=0)


def sampling_of(args: argparse.Namespace) -> SamplingSpec:
    """The sampler's settings that `add_sampling_arguments` added."""
    return SamplingSpec(args.temperature, args.top_p, args.max_new_tokens, args.chat_template)
