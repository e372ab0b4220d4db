"""The rules whose jobs the cluster runs with the resources of the config's `resources:` block.

These are the only rules that can hold GPUs, so they are listed once, here, and every part that needs
them reads this registry: each rule's `resources:` line (`config.rule_resources`, which refuses a rule
missing here), the config checks (GPU counts of the rules that sample), `isocompute status` (GPU-hours
from their benchmark records) and `isocompute plan` (which refuses a workflow where a cluster job holds
GPUs for a rule missing here, since status would not count it). The schema's `resources` keys are the
registry's, and a test holds them equal. Every other rule runs on the submit host (`localrules`) or with
the profile's default resources, without GPUs.

A rule's benchmark records lie under `benchmarks/<rule>` (`<rule>.tsv`, or files below `<rule>/`); a
per-point rule's under `benchmarks/<rule>/<problem_set>/<run>` (`<run>.tsv`, or one file per evaluation
set below `<run>/`).
"""

from __future__ import annotations

from dataclasses import dataclass

from isocompute.errors import IsoComputeError


@dataclass(frozen=True)
class ClusterRule:
    """Where a rule's resources come from and how its jobs are counted."""

    # The key under the config's `resources:` (rules doing the same work share one).
    resources: str
    # One job per grid point (or per grid point and evaluation set): its hours belong to that point.
    per_point: bool = False
    # Samples with the generation backend: needs at least generation.tensor_parallel_size GPUs.
    samples: bool = False


CLUSTER_RULES: dict[str, ClusterRule] = {
    "pretrain_base_model": ClusterRule("pretrain_base_model"),
    "score_difficulty": ClusterRule("score_difficulty", samples=True),
    "score_pass_at": ClusterRule("score_pass_at", samples=True),
    "evaluate_base_model": ClusterRule("evaluate_base_model", samples=True),
    "probe_interference": ClusterRule("probe_interference"),
    "train_grpo": ClusterRule("train_grpo", per_point=True),
    "evaluate_run": ClusterRule("evaluate_run", per_point=True, samples=True),
    # A run's checkpoints on another validation set: the same work as evaluate_run, so the same resources.
    "evaluate_run_on": ClusterRule("evaluate_run", per_point=True, samples=True),
    # An adaptive sweep's rung of a run, and its new checkpoints' evaluation: the same work, rung by rung.
    "train_grpo_rung": ClusterRule("train_grpo", per_point=True),
    "evaluate_run_rung": ClusterRule("evaluate_run", per_point=True, samples=True),
}


class UnregisteredRuleError(IsoComputeError, ValueError):
    """A rule asked for configured resources without being in `CLUSTER_RULES`."""


def cluster_rule(rule: str) -> ClusterRule:
    """The registry's entry for `rule`; an error that says where to add it."""
    if rule not in CLUSTER_RULES:
        raise UnregisteredRuleError(
            f"rule {rule} is not in isocompute.study.cluster_rules.CLUSTER_RULES: add it there (and its key to the "
            f"schema's resources), so that `isocompute status` and `isocompute plan` count its GPU-hours"
        )
    return CLUSTER_RULES[rule]


def resource_keys() -> list[str]:
    """The config's `resources:` keys besides `default`, one per kind of cluster job."""
    return sorted({rule.resources for rule in CLUSTER_RULES.values()})
