"""A run's training table (one row per optimizer step from TRL's log, compute in rollouts and in sampled
tokens) and its outputs written whole.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from isocompute.files import write_json, write_table

# TRL's per-step log keys, and the names the training table gives them.
LOG_COLUMNS = {
    "reward": "reward",
    "reward_std": "reward_std",
    "entropy": "entropy",
    "kl": "kl",
    "completions/mean_length": "response_length",
    "num_tokens": "num_tokens",
    "frac_reward_zero_std": "frac_reward_zero_std",
    "learning_rate": "lr",
    "loss": "loss",
    "grad_norm": "grad_norm",
}
# TRL's log of its rollouts from vLLM with importance sampling, kept in the table where a run logs them: how
# far the sampler's log-probabilities of the sampled tokens lie from the trainer's (small while vLLM holds
# the trainer's weights; it grows with every step vLLM's weights fall behind) and the ratios' range.
VLLM_LOG_COLUMNS = {
    "sampling/sampling_logp_difference/mean": "sampling_logp_diff_mean",
    "sampling/sampling_logp_difference/max": "sampling_logp_diff_max",
    "sampling/importance_sampling_ratio/min": "is_ratio_min",
    "sampling/importance_sampling_ratio/max": "is_ratio_max",
}


def training_table(log_history: list[dict[str, float]], batch: int) -> pd.DataFrame:
    """One row per optimizer step with compute in rollouts and in sampled completion tokens (and, where TRL
    sampled with vLLM under importance sampling, `VLLM_LOG_COLUMNS`)."""
    logged = [entry for entry in log_history if "reward" in entry]
    columns = {**LOG_COLUMNS, **{k: v for k, v in VLLM_LOG_COLUMNS.items() if any(k in e for e in logged)}}
    rows = [{"step": int(entry["step"]), **{name: entry.get(key) for key, name in columns.items()}} for entry in logged]
    table = pd.DataFrame(rows).drop_duplicates("step", keep="last").sort_values("step", ignore_index=True)
    table["compute_rollouts"] = table["step"] * batch
    table["compute_tokens"] = (table["response_length"] * batch).cumsum()
    return table


def write_outputs(
    table: pd.DataFrame, manifest: list[dict[str, object]], log_table: str | Path, checkpoints: str | Path
) -> None:
    """The run's training table and checkpoint manifest, each written under a temporary name, then renamed."""
    write_table(table, log_table)
    write_json(manifest, checkpoints)
