"""A study of the simulated policy (`isocompute simulate`): its preset, its runs and the pipeline's tables.

A preset (config/simulated/simulated.yaml) names the problems (how many, their initial pass rates from a
target distribution or a real difficulty table), the policy (answers, feature width, temperature), the
training recipe (the pipeline's `training:` keys and a recipe's kl_coef and entropy_coef), the
interference levels (each a problem set here: its channels' scales and the features' overlap) and the
grid (B_problem, n, seeds). Every run is written in the pipeline's own layout under the preset's
results root, so `isocompute fit`, the bootstrap and the figures read it unchanged:

    evaluation/<level>/base_model.parquet, base_counts.parquet          the base model on validation
    evaluation/<level>/<run>/evals.parquet, val_counts.parquet          exact avg@k, best@k, worst@k; counts
    evaluation/<level>/<run>/train_pass_rates.parquet                   Binomial(train_k, p) on a sample
    evaluation/<level>/<run>/on_train/evals.parquet, val_counts.parquet the same metrics on the training set
    evaluation/<level>/evals.csv, on_train_evals.csv                    every run's rows (input of the fit)
    evaluation/<level>/zero_pass.csv                                    Fig. 12's statistic, exact, per checkpoint

The metrics in the evaluation tables are exact (avg@k = mean p, best@k = mean 1 - (1 - p)^k, worst@k =
mean p^k); the counts are drawn from the exact p, so the bootstrap resamples problems as it does for a
model. Every table has a `policy` column saying "simulated policy": these numbers never belong in a
language-model study. The training set is evaluated too because held-out problems move only through the
shared channels: in the tabular limit validation never changes and only the training metric can scale.
"""

from __future__ import annotations

import multiprocessing
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch
import yaml

from isocompute.files import write_atomically, write_json, write_table, write_text
from isocompute.fits.leaders import DEFAULT_TOLERANCE
from isocompute.fits.table_fit import TableFit, fit_table
from isocompute.mechanism.simulated_policy import (
    Channels,
    SimulatedPolicies,
    SimulationError,
    Update,
    base_logits,
    unit_features,
)
from isocompute.sampling.metrics import metric_names
from isocompute.study.grid import GridPoint, checkpoint_steps, learning_rate, total_steps

POLICY = "simulated policy"
ON_TRAIN = "on_train"
# Keys every preset must give, with their types (a missing or mistyped key stops before any run).
REQUIRED: dict[str, dict[str, type | tuple[type, ...]]] = {
    "": {"seed": int, "results_root": str},
    "problems": {"train_size": int, "val_size": int, "initial": dict},
    "policy": {"answers": int, "feature_dim": int, "temperature": (int, float)},
    "training": {
        "lr_rule": str,
        "lr_base": (int, float),
        "lr_batch_ref": int,
        "warmup_steps": int,
        "loss_type": str,
        "max_completion_length": int,
        "max_grad_norm": (int, float),
        "compute_min": int,
        "compute_max": int,
        "checkpoint_points": int,
        "kl_coef": (int, float),
        "entropy_coef": (int, float),
    },
    "evaluation": {"k": int, "train_k": int, "train_sample_size": int},
    "grid": {"b_problem": list, "n": list, "seeds": list},
    "fits": {"metric": str, "bootstrap": int, "holdout_decades": (int, float), "zero_pass_n": list},
}
CHANNEL_KEYS = ("private", "features", "overlap", "bias")


def load_preset(path: str | Path) -> dict[str, Any]:
    """The preset at `path`, checked: every key present with its type, every level with its four channels."""
    path = Path(path)
    if not path.exists():
        raise SimulationError(f"{path}: no such preset")
    config = yaml.safe_load(path.read_text()) or {}
    check_preset(config)
    return config


def check_preset(config: Mapping[str, Any]) -> None:
    """Raise `SimulationError` naming the first missing, mistyped or out-of-range key."""
    for section, keys in REQUIRED.items():
        block = config if not section else config.get(section)
        if not isinstance(block, Mapping):
            raise SimulationError(f"{section}: missing (a mapping of {sorted(keys)})")
        for key, kind in keys.items():
            name = f"{section}.{key}" if section else key
            if key not in block:
                raise SimulationError(f"{name}: missing")
            if not isinstance(block[key], kind) or isinstance(block[key], bool):
                raise SimulationError(f"{name}: {block[key]!r} is not of type {kind}")
    levels = config.get("interference")
    if not isinstance(levels, Mapping) or not levels:
        raise SimulationError("interference: missing (a mapping of level name -> {private, features, overlap, bias})")
    for level, channels in levels.items():
        for key in CHANNEL_KEYS:
            if not isinstance(channels, Mapping) or not isinstance(channels.get(key), (int, float)):
                raise SimulationError(f"interference.{level}.{key}: missing or not a number")
    if config["policy"]["answers"] < 2:
        raise SimulationError("policy.answers: needs at least 2 answers")
    for key in ("b_problem", "n", "seeds"):
        if not config["grid"][key] or not all(isinstance(v, int) for v in config["grid"][key]):
            raise SimulationError(f"grid.{key}: needs a non-empty list of integers")
    if not set(config["fits"]["zero_pass_n"]) <= set(config["grid"]["n"]) or len(config["fits"]["zero_pass_n"]) != 2:
        raise SimulationError(f"fits.zero_pass_n: {config['fits']['zero_pass_n']} must be two values of grid.n")
    initial = config["problems"]["initial"]
    if sum(key in initial for key in ("range", "beta", "table")) != 1:
        raise SimulationError("problems.initial: needs exactly one of range, beta or table")
    update(config, 1)  # the loss type and the learning-rate rule


def update(config: Mapping[str, Any], batch: int) -> Update:
    """The GRPO recipe of a run of B = `batch` rollouts per step: the learning-rate rule is the pipeline's own."""
    training = config["training"]
    try:
        lr = learning_rate(batch, float(training["lr_base"]), int(training["lr_batch_ref"]), training["lr_rule"])
    except ValueError as error:
        raise SimulationError(f"training.lr_rule: {error}") from error
    recipe = Update(
        lr=lr,
        warmup_steps=int(training["warmup_steps"]),
        kl_coef=float(training["kl_coef"]),
        entropy_coef=float(training["entropy_coef"]),
        loss_type=training["loss_type"],
        max_completion_length=int(training["max_completion_length"]),
        max_grad_norm=float(training["max_grad_norm"]),
        temperature=float(config["policy"]["temperature"]),
    )
    recipe.loss_scale(batch)
    return recipe


@dataclass(frozen=True)
class Problems:
    """One problem instance, shared by every level and run (as a problem set is by the pipeline's runs)."""

    pass_rates: np.ndarray  # initial p per problem: training problems first, then validation
    correct: np.ndarray
    train_size: int

    @property
    def train(self) -> np.ndarray:
        return np.arange(self.train_size)

    @property
    def val(self) -> np.ndarray:
        return np.arange(self.train_size, len(self.pass_rates))

    def ids(self, which: np.ndarray) -> np.ndarray:
        return np.array([f"sim-{i:05d}" for i in which])


def initial_pass_rates(initial: Mapping[str, Any], size: int, rng: np.random.Generator) -> np.ndarray:
    """`size` initial pass rates: uniform on `range`, Beta(`beta`), or problems drawn from a difficulty `table`.

    From a table (the pipeline's problem_difficulty.parquet: `n_correct` of `n_samples` per problem), the
    problems within `avg_range` (of avg@n_samples, both ends included) are drawn without replacement and
    each p is drawn from its Jeffreys posterior Beta(n_correct + 1/2, n_samples - n_correct + 1/2): a
    problem the base model never solved in 16 samples still has a small p, as a real one does.
    """
    if "range" in initial:
        low, high = initial["range"]
        if not 0 < low <= high < 1:
            raise SimulationError(f"problems.initial.range: {initial['range']} must lie strictly inside (0, 1)")
        return rng.uniform(low, high, size)
    if "beta" in initial:
        a, b = initial["beta"]
        if a <= 0 or b <= 0:
            raise SimulationError(f"problems.initial.beta: {initial['beta']} needs two positive numbers")
        return np.clip(rng.beta(a, b, size), 1e-6, 1 - 1e-6)
    path = Path(initial["table"])
    if not path.exists():
        raise SimulationError(f"problems.initial.table: {path}: no such file")
    table = pd.read_parquet(path)
    missing = [c for c in ("n_correct", "n_samples") if c not in table.columns]
    if missing:
        raise SimulationError(f"problems.initial.table: {path} lacks column(s) {missing}")
    low, high = initial.get("avg_range", [0.0, 1.0])
    share = table["n_correct"] / table["n_samples"]
    bucket = table[(share >= low) & (share <= high)]
    if len(bucket) < size:
        raise SimulationError(
            f"problems.initial.avg_range: {len(bucket)} problems of {path} in [{low}, {high}], {size} needed"
        )
    drawn = bucket.iloc[rng.choice(len(bucket), size, replace=False)]
    p = rng.beta(drawn["n_correct"] + 0.5, drawn["n_samples"] - drawn["n_correct"] + 0.5)
    return np.clip(p, 1e-6, 1 - 1e-6)


def make_problems(config: Mapping[str, Any]) -> Problems:
    """The problem instance of the preset's `seed`: initial pass rates and a correct answer per problem."""
    rng = np.random.default_rng([config["seed"], 0])
    spec = config["problems"]
    size = spec["train_size"] + spec["val_size"]
    pass_rates = initial_pass_rates(spec["initial"], size, rng)
    correct = rng.integers(0, config["policy"]["answers"], size)
    return Problems(pass_rates, correct, spec["train_size"])


def run_name(b_problem: int, n: int, seed: int) -> str:
    """The pipeline's run name (`isocompute.study.grid.RUN_PATTERN`) for the default recipe."""
    return GridPoint("simulated", b_problem, n, seed).run


def exact_metrics(p: np.ndarray, k: int) -> dict[str, float]:
    """avg@k, best@k and worst@k of exact pass rates: mean p, mean 1 - (1 - p)^k, mean p^k."""
    avg, best, worst = metric_names(k)
    return {avg: float(p.mean()), best: float((1 - (1 - p) ** k).mean()), worst: float((p**k).mean())}


def simulate(config: Mapping[str, Any], workers: int = 1, log: Callable[[str], None] = print) -> dict[str, float]:
    """Train every run of the preset and write its tables; return the seconds each (B_problem, n) group took.

    Groups run in `workers` processes, the longest (smallest n) first; each run's numbers depend only on
    the preset and its own (B_problem, n, seed), so the worker count changes no result.
    """
    root = Path(config["results_root"])
    problems = make_problems(config)
    _write_base(root, list(config["interference"]), problems, config["evaluation"]["k"], config["seed"])
    groups = sorted(((b, n) for b in config["grid"]["b_problem"] for n in config["grid"]["n"]), key=lambda g: g[0] * g[1])
    timings = {}
    if workers <= 1:
        for b_problem, n in groups:
            timings[f"bp{b_problem}_n{n}"] = train_group(config, b_problem, n, log)
    else:
        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
            # workers print their own lines (a callable of the caller need not pickle)
            futures = {pool.submit(train_group, config, b, n): f"bp{b}_n{n}" for b, n in groups}
            for future, name in futures.items():
                timings[name] = future.result()
    runs = [run_name(b, n, seed) for b, n in groups for seed in config["grid"]["seeds"]]
    for level in config["interference"]:
        _gather(root / "evaluation" / level, runs)
    return timings


def train_group(config: Mapping[str, Any], b_problem: int, n: int, log: Callable[[str], None] = print) -> float:
    """Train every level and seed at (B_problem, n) side by side and write their tables; return the seconds."""
    started = time.perf_counter()
    root = Path(config["results_root"])
    problems = make_problems(config)
    replicas = [(level, seed) for level in config["interference"] for seed in config["grid"]["seeds"]]
    records, batch = train_replicas(config, problems, b_problem, n, replicas)
    evaluation = config["evaluation"]
    sample = np.random.default_rng([config["seed"], 2]).choice(
        problems.train, min(evaluation["train_sample_size"], problems.train_size), replace=False
    )
    for r, (level, seed) in enumerate(replicas):
        _write_run(root / "evaluation" / level, level, b_problem, n, seed, records, r, problems, sample, evaluation, batch)
    seconds = time.perf_counter() - started
    log(f"bp{b_problem} n={n}: {records[-1][0]} steps x {len(replicas)} runs in {seconds:.1f} s")
    return seconds


def train_replicas(
    config: Mapping[str, Any], problems: Problems, b_problem: int, n: int, replicas: list[tuple[str, int]]
) -> tuple[list[tuple[int, np.ndarray, np.ndarray]], int]:
    """Train the runs `replicas` ((level, seed) pairs) at (B_problem, n) side by side to the preset's compute_max.

    Returns the checkpoints (step, exact pass rates (replicas x problems), mean zero-std group share per
    replica since the last checkpoint) and the batch B. The one training loop of the simulated policy: the
    study's runs (`train_group`) and the truth's seeds (`simulated_truth`) both step through it.
    """
    torch.set_num_threads(1)  # one core per group: the groups are the parallelism
    answers, dim = config["policy"]["answers"], config["policy"]["feature_dim"]
    base = base_logits(problems.pass_rates, problems.correct, answers, float(config["policy"]["temperature"]))
    levels = config["interference"]
    features = {
        level: unit_features(len(problems.pass_rates), dim, float(levels[level]["overlap"]), np.random.default_rng([config["seed"], 1]))
        for level in dict.fromkeys(level for level, _ in replicas)
    }
    policies = SimulatedPolicies(
        base=np.broadcast_to(base, (len(replicas), *base.shape)),
        correct=np.broadcast_to(problems.correct, (len(replicas), len(problems.correct))),
        features=np.stack([features[level] for level, _ in replicas]),
        channels=[Channels(**{key: float(levels[level][key]) for key in CHANNEL_KEYS}) for level, _ in replicas],
        train=problems.train,
        update=update(config, b_problem * n),
        b_problem=b_problem,
        n=n,
        seeds=[_run_seed(config["seed"], seed, b_problem, n) for _, seed in replicas],
    )
    training = config["training"]
    saves = set(checkpoint_steps(policies.batch, training["compute_min"], training["compute_max"], training["checkpoint_points"]))
    last = total_steps(policies.batch, training["compute_max"])
    records, since = [], []
    for step in range(1, last + 1):
        since.append(policies.advance()["frac_reward_zero_std"])
        if step in saves:
            records.append((step, policies.pass_rates(), np.mean(since, axis=0)))
            since = []
    return records, policies.batch


def _run_seed(preset_seed: int, seed: int, b_problem: int, n: int) -> list[int]:
    """A run's generator seed: its own (B_problem, n, seed), so a run never depends on which runs share its batch."""
    return [preset_seed, seed, b_problem, n]


def _write_base(root: Path, levels: list[str], problems: Problems, k: int, seed: int) -> None:
    """The base model's row and counts per level (the same base: levels differ only in how it trains)."""
    rng = np.random.default_rng([seed, 3])
    p = problems.pass_rates[problems.val]
    counts = pd.DataFrame({"id": problems.ids(problems.val), "n_correct": rng.binomial(k, p), "mean_response_tokens": 1.0})
    for level in levels:
        folder = root / "evaluation" / level
        write_table(pd.DataFrame([{"problem_set": level, "step": 0, **exact_metrics(p, k), "mean_response_tokens": 1.0, "policy": POLICY}]), folder / "base_model.parquet")
        write_table(counts, folder / "base_counts.parquet")
        p_train = problems.pass_rates[problems.train]
        write_table(pd.DataFrame([{"problem_set": level, "step": 0, **exact_metrics(p_train, k), "mean_response_tokens": 1.0, "policy": POLICY}]), folder / ON_TRAIN / "base_model.parquet")


def _write_run(folder: Path, level: str, b_problem: int, n: int, seed: int, records: list, r: int, problems: Problems,
               sample: np.ndarray, evaluation: Mapping[str, Any], batch: int) -> None:  # fmt: skip
    """One run's evaluation tables, in the columns the pipeline's evaluate stage writes, plus `policy`."""
    k, train_k = evaluation["k"], evaluation["train_k"]
    run = run_name(b_problem, n, seed)
    rng = np.random.default_rng([seed, b_problem, n, 4])
    keys = {"run": run, "problem_set": level, "b_problem": b_problem, "n": n, "seed": seed, "recipe": None,
            "lr_rule": None, "lr_base": None, "lr_batch_ref": None, "n_baseline": None}  # fmt: skip
    tables: dict[str, list[pd.DataFrame]] = {name: [] for name in ("evals", "val_counts", "train_evals", "train_counts", "pass_rates", "zero")}
    for step, rates, zero_std in records:
        p = rates[r]
        at = {**keys, "step": step, "compute_rollouts": step * batch, "compute_tokens": step * batch}
        for which, evals, counts in ((problems.val, "evals", "val_counts"), (problems.train, "train_evals", "train_counts")):
            tables[evals].append(pd.DataFrame([{**at, **exact_metrics(p[which], k), "mean_response_tokens": 1.0, "policy": POLICY}]))
            drawn = rng.binomial(k, p[which])
            tables[counts].append(pd.DataFrame({"id": problems.ids(which), "n_correct": drawn, "mean_response_tokens": 1.0, **at, "policy": POLICY}))
        sampled = rng.binomial(train_k, p[sample])
        tables["pass_rates"].append(pd.DataFrame({"id": problems.ids(sample), "n_correct": sampled, "mean_response_tokens": 1.0,
                                                  "pass_rate": sampled / train_k, **at, "policy": POLICY}))  # fmt: skip
        train_p = p[problems.train]
        tables["zero"].append(pd.DataFrame([{**at, "policy": POLICY, f"share_pass_at_{train_k}_zero": float(((1 - train_p) ** train_k).mean()),
                                             "share_p_below_0.01": float((train_p < 0.01).mean()), "frac_reward_zero_std": float(zero_std[r])}]))  # fmt: skip
    out = folder / run
    write_table(pd.concat(tables["evals"], ignore_index=True), out / "evals.parquet")
    write_table(pd.concat(tables["val_counts"], ignore_index=True), out / "val_counts.parquet")
    write_table(pd.concat(tables["pass_rates"], ignore_index=True), out / "train_pass_rates.parquet")
    write_table(pd.concat(tables["train_evals"], ignore_index=True), out / ON_TRAIN / "evals.parquet")
    write_table(pd.concat(tables["train_counts"], ignore_index=True), out / ON_TRAIN / "val_counts.parquet")
    write_table(pd.concat(tables["zero"], ignore_index=True), out / "zero_pass.parquet")


def _gather(folder: Path, runs: list[str]) -> None:
    """A level's runs (those of the preset's grid, not a folder left by an earlier grid) in one table per
    evaluation set: the input of `isocompute fit` (and its counts)."""
    for prefix, sub in (("", ""), (f"{ON_TRAIN}_", f"{ON_TRAIN}/")):
        evals = pd.concat([pd.read_parquet(folder / run / sub / "evals.parquet") for run in runs], ignore_index=True)
        _write_csv(evals, folder / f"{prefix}evals.csv")
        counts = pd.concat([pd.read_parquet(folder / run / sub / "val_counts.parquet") for run in runs], ignore_index=True)
        write_table(counts, folder / f"{prefix}val_counts.parquet")
    zero = pd.concat([pd.read_parquet(folder / run / "zero_pass.parquet") for run in runs], ignore_index=True)
    _write_csv(zero, folder / "zero_pass.csv")


def _write_csv(table: pd.DataFrame, path: Path) -> None:
    write_atomically(path, lambda partial: table.to_csv(partial, index=False))


def fit_levels(config: Mapping[str, Any], workers: int = 1, log: Callable[[str], None] = print) -> pd.DataFrame:
    """`isocompute fit` on every level, B_problem and evaluation set; return each fit's n* per compute.

    The fits run through the CLI's own code (`isocompute.cli`), so they are exactly what a user gets
    from `isocompute fit` on these tables: curves keyed by n, anchored at the base model's exact value,
    bootstrapped over problems (and seeds) from the counts, with the law's held-out check. Levels are
    fitted in `workers` processes.
    """
    jobs = [(level, b, sub) for level in config["interference"] for b in config["grid"]["b_problem"] for sub in ("", f"{ON_TRAIN}/")]
    if workers <= 1:
        results = [fit_one(config, *job) for job in jobs]
    else:
        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
            results = list(pool.map(fit_one, [config] * len(jobs), *zip(*jobs)))
    rows = []
    for verdict, points in results:
        log(verdict)
        rows += points
    table = pd.DataFrame(rows)
    _write_csv(table, Path(config["results_root"]) / "fits" / "n_star.csv")
    return table


def fit_tolerance(config: Mapping[str, Any]) -> float:
    """The fits' practical tolerance: `fits.tolerance` where a preset sets it, else the fits' default. One
    definition, so the truth (`simulated_truth`) judges moves with the tolerance the fits use."""
    return float(config["fits"].get("tolerance", DEFAULT_TOLERANCE))


def fit_one(config: Mapping[str, Any], level: str, b_problem: int, sub: str) -> tuple[str, list[dict[str, Any]]]:
    """`isocompute fit` of one level's runs at one B_problem on one evaluation set (`sub`: "" or "on_train/")."""
    root = Path(config["results_root"])
    fits = config["fits"]
    folder = root / "evaluation" / level
    prefix = sub.replace("/", "_")
    out = root / "fits" / level / f"bp{b_problem}" / sub
    evals = pd.read_csv(folder / f"{prefix}evals.csv")
    counts = pd.read_parquet(folder / f"{prefix}val_counts.parquet")
    _write_csv(evals[evals["b_problem"] == b_problem], out / "evals.csv")
    write_table(counts[counts["b_problem"] == b_problem], out / "val_counts.parquet")
    base = pd.read_parquet(folder / sub / "base_model.parquet")[fits["metric"]].iloc[0]
    job = TableFit(
        evals=str(out / "evals.csv"), metric=fits["metric"], counts=str(out / "val_counts.parquet"),
        k=config["evaluation"]["k"], bootstrap=fits["bootstrap"], seed=config["seed"], base_reward=float(base),
        holdout_decades=fits["holdout_decades"], base_counts=None if sub else str(folder / "base_counts.parquet"),
        tolerance=fit_tolerance(config),
    )  # fmt: skip
    result = fit_table(job)
    write_json(result, out / "fits.json")
    fit = result["fits"][fits["metric"]]["compute_rollouts"]
    law = fit["optimum"]["n"]
    verdict = (f"{law['direction']} law: L={law['L']:.2f} k={law['k']:.2f} log10_c0={law['log10_c0']:.2f} "
               f"b={law['b']:.2f}" if law["ok"] else f"no law ({law['kind']}): {law['reason']}")  # fmt: skip
    evaluated_on = "train" if sub else "validation"
    points = [
        {"policy": POLICY, "level": level, "b_problem": b_problem, "evaluated_on": evaluated_on,
         "compute": point["compute"], "n_star": int(point["n"]), "resolved": (point.get("resolved") or {}).get("n"),
         "verdict": verdict}
        for point in fit["optimum_points"]
    ]
    return f"{level} bp{b_problem} {evaluated_on}: {verdict}", points


def phase_diagram(table: pd.DataFrame, levels: list[str], out: Path) -> pd.DataFrame:
    """n* by interference level (rows) and compute (columns) per evaluation set, as CSV, markdown and figure.

    A compute point whose optimum the bootstrap does not resolve is marked `?` in the markdown and hatched
    in the figure: the data do not determine n* there.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    tables = {}
    figure, axes = plt.subplots(1, 2, figsize=(13, 0.6 * len(levels) + 2.2), squeeze=False)
    for axis, (evaluated_on, group) in zip(axes[0], table.groupby("evaluated_on")):
        grid = group.pivot_table(index="level", columns="compute", values="n_star", aggfunc="first").reindex(levels)
        sure = group.pivot_table(index="level", columns="compute", values="resolved", aggfunc="first").reindex(levels)
        tables[evaluated_on] = grid
        _write_csv(grid.reset_index().assign(policy=POLICY), out / f"phase_diagram_{evaluated_on}.csv")
        marked = grid.astype("Int64").astype(str) + sure.map(lambda v: "" if v is True or pd.isna(v) else "?")
        header = "| level | " + " | ".join(f"{c:.3g}" for c in grid.columns) + " |"
        lines = [f"simulated policy: n* by level and compute (rollouts), {evaluated_on} avg@4; ? = unresolved", "",
                 header, "|" + "---|" * (len(grid.columns) + 1)]  # fmt: skip
        lines += [f"| {level} | " + " | ".join(marked.loc[level]) + " |" for level in levels]
        write_text("\n".join(lines) + "\n", out / f"phase_diagram_{evaluated_on}.md")
        image = axis.imshow(np.log2(grid.to_numpy(dtype=float)), aspect="auto", cmap="viridis", vmin=1, vmax=9)
        for (i, j), value in np.ndenumerate(marked.to_numpy()):
            axis.text(j, i, value, ha="center", va="center", color="white", fontsize=7)
        axis.set_xticks(range(len(grid.columns)), [f"{c:.0e}" for c in grid.columns], rotation=60, fontsize=7)
        axis.set_yticks(range(len(levels)), levels, fontsize=8)
        axis.set_xlabel("compute C (rollouts)")
        axis.set_title(f"simulated policy: n*(C), {evaluated_on} avg@4", fontsize=9)
        figure.colorbar(image, ax=axis, label="log2 n*")
    figure.tight_layout()
    write_atomically(out / "phase_diagram.png", lambda partial: figure.savefig(partial, dpi=120, format="png"))
    plt.close(figure)
    return pd.concat(tables, names=["evaluated_on"])


def run_preset(path: str | Path, workers: int = 1, train: bool = True, fit: bool = True, log: Callable[[str], None] = print) -> None:
    """`isocompute simulate`: train the preset's runs, fit every level, draw the phase diagram, time each stage.

    `train=False` refits the tables already written (after a change of the fits, say) without training.
    """
    config = load_preset(path)
    root = Path(config["results_root"])
    timings: dict[str, Any] = {}
    if train:
        started = time.perf_counter()
        timings["groups"] = simulate(config, workers, log)
        timings["train_seconds"] = time.perf_counter() - started
    if fit:
        fitting = time.perf_counter()
        table = fit_levels(config, workers, log)
        phase_diagram(table, list(config["interference"]), root / "figures")
        zero_pass_skew(config)
        timings["fit_seconds"] = time.perf_counter() - fitting
        from isocompute.mechanism.simulated_truth import compare  # it imports this module

        compare(config, log)  # a refit refreshes the truth's comparison, where a truth was run
    timings["workers"] = workers
    write_json(timings, root / ("timings.json" if train else "timings_fit.json"))
    log(f"simulated policy: trained in {timings.get('train_seconds', 0):.0f} s, fitted in {timings.get('fit_seconds', 0):.0f} s")


def zero_pass_skew(config: Mapping[str, Any]) -> pd.DataFrame:
    """Fig. 12's statistic at matched compute: the share of training problems with pass@train_k = 0 (exact
    expectation, mean (1 - p)^train_k) for a small and a large n, per level and compute point, over seeds.

    The two runs' checkpoints are paired where their compute agrees within 5 % (the shared log grid, rounded
    to each run's batch); `gap` is small minus large, `seed_spread` the largest difference between seeds
    of either n at that point, the yardstick the gap is read against.
    """
    small, large = config["fits"]["zero_pass_n"]
    column = f"share_pass_at_{config['evaluation']['train_k']}_zero"
    root = Path(config["results_root"])
    rows = []
    for level in config["interference"]:
        table = pd.read_csv(root / "evaluation" / level / "zero_pass.csv")
        table = table[table["b_problem"] == config["grid"]["b_problem"][0]]
        by_n = {n: table[table["n"] == n].pivot_table(index="compute_rollouts", columns="seed", values=column) for n in (small, large)}
        for compute, values in by_n[large].iterrows():
            near = by_n[small].index[np.abs(by_n[small].index / compute - 1) <= 0.05]
            if not len(near):
                continue
            paired = by_n[small].loc[near[0]]
            spread = max(np.ptp(paired.to_numpy()), np.ptp(values.to_numpy()))
            rows.append({"policy": POLICY, "level": level, "compute": compute, f"n{small}": paired.mean(),
                         f"n{large}": values.mean(), "gap": paired.mean() - values.mean(), "seed_spread": spread})  # fmt: skip
    result = pd.DataFrame(rows)
    _write_csv(result, root / "figures" / "zero_pass_skew.csv")
    return result
