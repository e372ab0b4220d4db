"""The catalogue of the study's artifacts: where each lives under results/ and what it holds.

`results/README.md` is written from this one list, so the index a user opens and the paths the rules
write cannot drift apart unnoticed (a test checks every produced file matches an entry). The figures'
entries come from the figure registry (`isocompute.figures.registry`), which the figure rules read too.
"""

from __future__ import annotations

import fnmatch
from pathlib import Path

from isocompute.figures.registry import FIGURES
from isocompute.files import write_text

CATALOGUE: list[tuple[str, str]] = [
    ("problems/pool.parquet", "problem pool: one row per problem with `id`, `prompt`, `answer`"),
    ("problems/excluded.parquet", "rows of an imported table left out of the pool, with `id`, `row`, `reason`"),
    ("base_model/model/*", "the base model built by the pipeline (load with `from_pretrained` on this folder)"),
    ("base_model/pretrain_log.parquet", "supervised loss per step of the base model's pre-training"),
    ("difficulty/shards/shard*.parquet", "one shard of difficulty bucketing (per-problem correct counts)"),
    (
        "difficulty/problem_difficulty.parquet",
        "base model avg@16 per problem: `n_correct` of `n_samples`, mean response tokens",
    ),
    ("difficulty/pass_at*.parquet", "staged pass@k per problem: rollouts drawn and whether one was correct"),
    ("difficulty/pass_at*.json", "staged pass@k: rollouts sampled per stage and saved against k for every problem"),
    ("problem_sets/*/summary.json", "a set's bucket sizes, shares and train and validation sizes"),
    ("problem_sets/*/train.parquet", "a problem set's training problems with their base-model avg@16"),
    ("problem_sets/*/val.parquet", "a problem set's held-out validation problems"),
    ("train/*/*/run_settings.json", "the settings a run was trained with (a changed computation restarts it)"),
    ("train/*/*/superseded-*/*", "checkpoints a run set aside when its settings changed, and why (docs/guide/upgrading.md)"),
    ("train/*/*/job.json", "a launched run's job: what every `accelerate launch` rank reads, with its resume point"),
    ("train/*/*/train_log.parquet", "per optimizer step: reward, entropy, KL, response length, lr, compute"),
    ("train/*/*/checkpoints.json", "the run's checkpoints with the compute (rollouts, tokens) at each"),
    ("train/*/*/checkpoint-*/*", "a GRPO checkpoint saved at one of the study's log-spaced compute points"),
    ("train/*/*/README.md", "TRL's model card of the run"),
    ("train/*/*/progress.jsonl", "live progress: each attempt's start and end, every logged step (`isocompute status`)"),
    ("train/*/*/tensorboard/*", "TensorBoard event files of the run, all attempts (`training.report_to: tensorboard`)"),
    ("out_of_domain/*_excluded.parquet", "rows of an out-of-domain table left out, with `id`, `row`, `reason`"),
    ("out_of_domain/*.parquet", "an out-of-domain problem table (`extra_evaluation.out_of_domain`), read with datasets"),
    ("evaluation/*/*/on_*/evals.parquet", "a run's checkpoints on another validation set (`extra_evaluation.sets`)"),
    ("evaluation/*/*/on_*/val_counts.parquet", "per checkpoint and problem of another validation set: correct samples"),
    ("evaluation/*/base_model.parquet", "the base model's avg@4, best@4, worst@4 on a validation set"),
    ("evaluation/*/base_counts.parquet", "the base model's correct samples out of 4 per validation problem (bootstrap)"),
    ("evaluation/*/*/evals.parquet", "per checkpoint: avg@4, best@4, worst@4, response tokens, compute"),
    ("evaluation/*/*/val_counts.parquet", "per checkpoint and validation problem: correct samples out of 4"),
    ("evaluation/*/*/train_pass_rates.parquet", "per checkpoint: pass rate of each sampled training problem"),
    ("evaluation/evals.csv", "every run's evaluation rows in one table (input of `isocompute fit`)"),
    ("fits/*/*/on_*/fits.json", "a study's fits on another validation set (`extra_evaluation.sets`)"),
    ("fits/*/*/train_fits.json", "a study's fits of the training reward (smoothed) and training pass rate (Fig. 14)"),
    ("fits/*/*/fits.json", "a study's fits: per-curve sigmoids, frontier, optimum sigmoid, bootstrap intervals"),
    ("diagnostics/*/*/training.parquet", "per run and checkpoint: share of training problems with pass@train_k = 0, of zero-variance groups"),
    ("diagnostics/*/*/nstar_by_metric.parquet", "a study's n* along the frontier for avg@4, best@4 and worst@4"),
    ("interference/*/probe.json", "the interference probe of the base model: gradient cosines and one-step changes per set"),
    ("interference/*/pairs.parquet", "the interference probe: every pair of probed problems with its gradient cosines"),
    (
        "noise_scale/*/*/noise_scale.parquet",
        "B(n) per checkpoint of one run of a study, raw and under Adam, with intervals (a prediction)",
    ),
    (
        "noise_scale/*/*/agreement.json",
        "the n that B(n) predicts at each frontier point, its agreement and every constant n's (not a fit)",
    ),
    ("recommendations/*.md", "the prescribed n, B_problem, M and lr for the configured budgets"),
    ("recommendations/*.json", "the same prescription as a table"),
    # Before the figures' own rows: a glob's "*" crosses "/", so theirs would claim these too.
    *(
        (figure.results_glob_on_other_sets, f"{figure.summary}, on another validation set")
        for figure in FIGURES.values()
        if figure.results_glob_on_other_sets
    ),
    *((figure.results_glob, figure.summary) for figure in FIGURES.values()),
    ("README.md", "this index"),
]


def describe_artifact(relative_path: str) -> str | None:
    """The catalogue entry a path under results/ belongs to, or None for an unknown file."""
    for pattern, description in CATALOGUE:
        if fnmatch.fnmatch(relative_path, pattern):
            return description
    return None


def write_index(results_dir: str | Path, out_path: str | Path) -> list[str]:
    """Write the index of results/ (each kind of artifact with its files); return uncatalogued files."""
    results_dir = Path(results_dir)
    files = sorted(
        str(path.relative_to(results_dir))
        for path in results_dir.rglob("*")
        if path.is_file() and not path.name.startswith(".")
    )
    lines = ["# results/", "", "Every artifact of the study, by stage. Paths are relative to this folder.", ""]
    for pattern, description in CATALOGUE:
        matches = [f for f in files if fnmatch.fnmatch(f, pattern)]
        lines.append(f"- `{pattern}`: {description}" + (f" ({len(matches)} files)" if len(matches) > 1 else ""))
        if "checkpoint-" not in pattern and "base_model/model" not in pattern:
            lines.extend(f"  - `{match}`" for match in matches[:40] if match != pattern)
    write_text("\n".join(lines) + "\n", out_path)
    return [f for f in files if describe_artifact(f) is None]
