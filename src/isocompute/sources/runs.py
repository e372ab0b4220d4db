"""What a tracked run is to the study: its name, its logged values by step and its config (`RunLog`), and
the (n, B_problem, seed) it trained (`RunSettings`), read from its config where the framework names them,
else from the user's run map or a pattern over run names, and refused where none of them says.

A tracker keeps a run's name, its logged values and its config, never the study's grid: n and B_problem
sit under each framework's own keys (TRL, verl, OpenRLHF, this project's own runs), or only in the run's
free-text name. Guessing them would fit a law to the wrong grid without a sign, so every run either gets
both values from a named place, which the import prints, or stops the import with its name.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping
from typing import Any

import pandas as pd

from isocompute.fits.table_fit import SEED, SIZE, InputError, checked_table, read_columns, without_duplicates

SETTINGS = ("n", "b_problem", "seed")


@dataclasses.dataclass(frozen=True)
class RunLog:
    """One run as its tracker kept it: `history` has a `step` column (the optimizer step) and one column per
    logged key, named as the tracker names it; `config` maps dotted keys (`data.train_batch_size`) to
    values; `origin` is the file or folder it was read from, for messages."""

    name: str
    history: pd.DataFrame
    config: dict[str, Any]
    origin: str


@dataclasses.dataclass(frozen=True)
class RunSettings:
    """The grid point of one run, and where each of its values came from (printed by the import)."""

    n: int
    b_problem: int
    seed: int | None
    origin: dict[str, str]


def flat(config: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """A nested config (verl's YAML, W&B's config) as dotted keys, so that every framework's keys are looked
    up one way whatever nesting the tracker kept."""
    flattened: dict[str, Any] = {}
    for key, value in config.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            flattened.update(flat(value, f"{name}."))
        else:
            flattened[name] = value
    return flattened


def _number(value: Any) -> float | None:
    """A config value as a number: trackers keep numbers as text (MLflow's params, TensorBoard's args)."""
    if isinstance(value, bool) or value is None:
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _project(config: dict[str, Any]) -> dict[str, float | None]:
    """This project's runs: `run_settings.json`'s `point`, the tracked run's `grid_point`, or a table's own
    columns."""
    for prefix in ("point.", "grid_point.", ""):
        if f"{prefix}n" in config or f"{prefix}b_problem" in config:
            return {key: _number(config.get(f"{prefix}{key}")) for key in SETTINGS}
    return {}


def _trl(config: dict[str, Any]) -> dict[str, float | None]:
    """TRL's GRPOConfig: n is `num_generations`; an optimizer step takes per-device batch x processes x
    accumulation completions, and a generation `generation_batch_size` (per-device batch x processes x
    `steps_per_generation`) of them, so a step's completions are generation_batch_size x accumulation /
    steps_per_generation (or, where the config says the world size, per-device batch x it x accumulation)."""
    n = _number(config.get("num_generations"))
    if n is None:
        return {}
    generation, per_step_generations = (
        _number(config.get("generation_batch_size")),
        _number(config.get("steps_per_generation")),
    )
    accumulation, per_device = (
        _number(config.get("gradient_accumulation_steps")),
        _number(config.get("per_device_train_batch_size")),
    )
    world = _number(config.get("world_size"))
    completions = None
    if generation and per_step_generations and accumulation:
        completions = generation * accumulation / per_step_generations
    elif per_device and world and accumulation:
        completions = per_device * world * accumulation
    return {
        "n": n,
        "b_problem": None if completions is None else completions / n,
        "seed": _number(config.get("seed")),
    }


def _verl(config: dict[str, Any]) -> dict[str, float | None]:
    """verl: `actor_rollout_ref.rollout.n` rollouts per prompt, `data.train_batch_size` prompts per step."""
    if "actor_rollout_ref.rollout.n" not in config:
        return {}
    return {
        "n": _number(config["actor_rollout_ref.rollout.n"]),
        "b_problem": _number(config.get("data.train_batch_size")),
    }


def _openrlhf(config: dict[str, Any]) -> dict[str, float | None]:
    """OpenRLHF: `n_samples_per_prompt` rollouts per prompt, `rollout_batch_size` prompts per batch."""
    if "n_samples_per_prompt" not in config:
        return {}
    return {
        "n": _number(config["n_samples_per_prompt"]),
        "b_problem": _number(config.get("rollout_batch_size")),
        "seed": _number(config.get("seed")),
    }


# Each framework whose config names the grid, in the order they are tried (the project's keys first: they
# are the grid point itself).
FRAMEWORKS: dict[str, Callable[[dict[str, Any]], dict[str, float | None]]] = {
    "IsoCompute": _project,
    "TRL": _trl,
    "verl": _verl,
    "OpenRLHF": _openrlhf,
}


def _from_config(log: RunLog) -> tuple[dict[str, float], str | None]:
    """The settings the first framework that knows the run's config names, and that framework."""
    for framework, read in FRAMEWORKS.items():
        found = {key: value for key, value in read(log.config).items() if value is not None}
        if found:
            return found, framework
    return {}, None


def read_run_map(path: str) -> pd.DataFrame:
    """The user's run map: one row per run (the source's name), its n and b_problem, and optionally its seed,
    checked as an evaluation table's columns are."""
    table = read_columns(path, ["run", "n", "b_problem"])
    numeric = {"n": SIZE, "b_problem": SIZE, **({"seed": SEED} if "seed" in table.columns else {})}
    table = checked_table(table.assign(run=table["run"].astype(str)), path, numeric, ["run"])
    return without_duplicates(table, path, ["run"], list(numeric), "row per run")


def _from_name(pattern: re.Pattern[str], name: str) -> dict[str, float]:
    """The named groups (n, b_problem, seed) the pattern finds in a run's name; none where it fails."""
    match = pattern.search(name)
    if match is None:
        return {}
    return {
        key: float(value) for key, value in match.groupdict().items() if key in SETTINGS and value is not None
    }


def _name_pattern(pattern: str) -> re.Pattern[str]:
    """`--name-pattern`, refused where it cannot name n or b_problem."""
    try:
        compiled = re.compile(pattern)
    except re.error as error:
        raise InputError(f"--name-pattern {pattern!r}: not a regular expression ({error})") from None
    if not {"n", "b_problem"} & set(compiled.groupindex):
        raise InputError(
            f"--name-pattern {pattern!r}: name a group n or b_problem (and seed), as in (?P<n>\\d+)"
        )
    return compiled


def _whole(log: RunLog, key: str, value: float, origin: str) -> int:
    """A setting as a whole number, refused (naming the run and where the value came from) where it is not
    one a grid has."""
    low = -float("inf") if key == "seed" else 1
    if value % 1 != 0 or value < low:
        bound = "" if key == "seed" else " of at least 1"
        raise InputError(
            f"{log.origin}: run {log.name!r}: {key} {value:g} from {origin} is not a whole number{bound}"
        )
    return int(value)


def run_settings(
    logs: list[RunLog], run_map: str | None = None, name_pattern: str | None = None
) -> tuple[dict[str, RunSettings], list[str]]:
    """Each run's settings, keyed by run name, and the runs a map leaves out (skipped).

    A value the user gives (the map over the pattern) wins over the config's: the user names the grid
    where a config says something else (a batch counted otherwise). A run without n or b_problem after
    all three, a map naming a run the source does not have, and two runs with one (n, b_problem, seed)
    are refused with the runs named.
    """
    names = [log.name for log in logs]
    mapped: dict[str, dict[str, float]] = {}
    if run_map is not None:
        table = read_run_map(run_map)
        unknown = sorted(set(table["run"]) - set(names))
        if unknown:
            raise InputError(
                f"{run_map}: runs {unknown} are not in the source, whose runs are {sorted(names)}"
            )
        columns = [key for key in SETTINGS if key in table.columns]
        mapped = {row["run"]: {key: float(row[key]) for key in columns} for _, row in table.iterrows()}
    pattern = _name_pattern(name_pattern) if name_pattern is not None else None
    settings, skipped = {}, []
    for log in logs:
        if run_map is not None and log.name not in mapped:
            skipped.append(log.name)
            continue
        config, framework = _from_config(log)
        values = {key: (value, f"config ({framework})") for key, value in config.items()}
        if pattern is not None:
            values.update(
                {key: (value, "--name-pattern") for key, value in _from_name(pattern, log.name).items()}
            )
        values.update({key: (value, "--map") for key, value in mapped.get(log.name, {}).items()})
        absent = [key for key in ("n", "b_problem") if key not in values]
        if absent:
            raise InputError(
                f"{log.origin}: run {log.name!r} has no {' and no '.join(absent)}: its config names none of "
                "TRL's, verl's or OpenRLHF's keys for it (docs/reference/sources.md); give them with "
                "--map RUNS.csv (columns run, n, b_problem, seed) or --name-pattern"
            )
        whole = {key: _whole(log, key, value, origin) for key, (value, origin) in values.items()}
        settings[log.name] = RunSettings(
            whole["n"],
            whole["b_problem"],
            whole.get("seed"),
            {key: origin for key, (_, origin) in values.items()},
        )
    _refuse_collisions(settings)
    return settings, skipped


def _refuse_collisions(settings: dict[str, RunSettings]) -> None:
    """Two runs of one (n, b_problem, seed) cannot both be a curve's run: one of them is mapped wrong, or
    they are seeds the map does not tell apart."""
    seen: dict[tuple[int, int, int | None], str] = {}
    for name, run in settings.items():
        key = (run.n, run.b_problem, run.seed)
        if key in seen:
            raise InputError(
                f"runs {seen[key]!r} and {name!r} collide: both map to n {run.n}, b_problem {run.b_problem}, "
                f"seed {run.seed}; tell them apart with a seed (a seed column in --map, or a seed group in "
                "--name-pattern) or leave one out of --map"
            )
        seen[key] = name
