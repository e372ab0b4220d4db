"""From the validated config to the typed specs the library takes, with the checks a schema cannot make.

Rules hand scripts plain slices of the config (Snakemake tracks only plain values as params, so a changed
setting reruns exactly the jobs that read it), and scripts turn them into specs with these functions.

The JSON schema catches unknown keys and wrong types; `check_config` catches what needs two keys at once
(a grid point over its set's batch limit, a recipe that does not exist, a pool too small for the sets
asked), so a bad study stops before any job runs, with the key named.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from isocompute.grid import GridError, GridPoint, expand_grid
from isocompute.specs import BaseModelSpec, FigureStyle, ProblemSetSpec, Recipe, SamplingSpec, TrainingSpec
from isocompute.studies import Study, StudyError, configured_studies

Config = Mapping[str, Any]


class ConfigError(ValueError):
    """A config that cannot give a study; the message names the key."""


def validate_config(config: Config, schema_path: str | Path) -> None:
    """Check the config against the JSON schema, raising `ConfigError` with the offending key's path.

    All violations are listed, each as `key.path: what is wrong`, so one run names every bad key.
    """
    schema = yaml.safe_load(Path(schema_path).read_text())
    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(config), key=lambda error: list(map(str, error.absolute_path)))
    if errors:
        lines = [f"{'.'.join(map(str, e.absolute_path)) or '(top level)'}: {e.message}" for e in errors]
        raise ConfigError("invalid config:\n  " + "\n  ".join(lines))


def sampling_spec(sampling: Mapping[str, Any]) -> SamplingSpec:
    """From the `sampling` block."""
    return SamplingSpec(float(sampling["temperature"]), float(sampling["top_p"]), int(sampling["max_new_tokens"]))


def base_model_spec(config: Config) -> BaseModelSpec:
    """From `base_model.builtin` and the synthetic task's digit range."""
    task = config["problems"]["synthetic_addition"]
    return BaseModelSpec(
        **config["base_model"]["builtin"], min_digits=task["min_digits"], max_digits=task["max_digits"]
    )


def problem_set_specs(config: Config) -> list[ProblemSetSpec]:
    return [
        ProblemSetSpec(name, float(s["avg_range"][0]), float(s["avg_range"][1]), s["train_size"], s["val_size"])
        for name, s in config["problem_sets"].items()
    ]


def recipe_of(config: Config, problem_set: str) -> Recipe:
    recipe = config["recipes"][config["problem_sets"][problem_set]["recipe"]]
    return Recipe(float(recipe["kl_coef"]), float(recipe["entropy_coef"]))


def training_spec(config: Config) -> TrainingSpec:
    training = config["training"]
    return TrainingSpec(
        lr_base=float(training["lr_base"]),
        lr_batch_ref=int(training["lr_batch_ref"]),
        warmup_steps=int(training["warmup_steps"]),
        compute_min=int(training["compute_min"]),
        compute_max=int(training["compute_max"]),
        checkpoint_points=int(training["checkpoint_points"]),
        loss_type=str(training["loss_type"]),
        sampling=sampling_spec(config["sampling"]),
    )


def figure_style(figures: Mapping[str, Any]) -> FigureStyle:
    """From the `figures` block."""
    return FigureStyle(**figures)


def rule_resources(config: Config, rule: str) -> dict[str, Any]:
    """A rule's cluster resources: `resources.default` overridden by `resources.<rule>`, unset keys dropped.

    A GPU count of 0 is dropped too, so CPU rules never ask SLURM for `--gpus=0`.
    """
    merged = {**config["resources"]["default"], **config["resources"].get(rule, {})}
    return {key: value for key, value in merged.items() if value is not None and not (key == "gpu" and value == 0)}


def grid_points(config: Config) -> list[GridPoint]:
    max_batch = {name: s["max_batch"] for name, s in config["problem_sets"].items()}
    try:
        return expand_grid(config["grid"], max_batch)
    except GridError as error:
        raise ConfigError(str(error)) from None


def check_config(config: Config) -> list[GridPoint]:
    """Raise `ConfigError` naming the key for a study that cannot run; return its grid points."""
    problems = config["problems"]
    if problems["source"] == "table" and not problems.get("table", {}).get("path"):
        raise ConfigError("problems.table.path must be set when problems.source is 'table'")
    if problems["source"] == "synthetic_addition":
        task = problems.get("synthetic_addition")
        if task is None:
            raise ConfigError("problems.synthetic_addition is required when problems.source is 'synthetic_addition'")
        if task["min_digits"] > task["max_digits"]:
            raise ConfigError("problems.synthetic_addition.min_digits exceeds max_digits")
        wanted = sum(s["train_size"] + s["val_size"] for s in config["problem_sets"].values())
        if task["size"] < wanted:
            raise ConfigError(
                f"problems.synthetic_addition.size={task['size']} is smaller than the {wanted} problems that "
                f"problem_sets.*.train_size + val_size ask for: no bucket could be large enough"
            )
    model = config["base_model"]
    if not model.get("pretrained"):
        if "builtin" not in model:
            raise ConfigError("base_model needs either pretrained (a path or hub id) or builtin")
        if problems["source"] != "synthetic_addition":
            raise ConfigError("base_model.builtin is trained on the synthetic task: set base_model.pretrained")
        builtin = model["builtin"]
        if builtin["hidden_size"] % builtin["num_heads"] or builtin["num_heads"] % builtin["num_kv_heads"]:
            raise ConfigError("base_model.builtin: num_heads must divide hidden_size and num_kv_heads num_heads")
    for name, spec in config["problem_sets"].items():
        low, high = spec["avg_range"]
        if low > high:
            raise ConfigError(f"problem_sets.{name}.avg_range: lower bound {low} exceeds upper bound {high}")
        if spec["recipe"] not in config["recipes"]:
            raise ConfigError(f"problem_sets.{name}.recipe={spec['recipe']!r} is not a key of recipes")
        if config["evaluation"]["train_sample_size"] > spec["train_size"]:
            raise ConfigError(
                f"evaluation.train_sample_size={config['evaluation']['train_sample_size']} exceeds "
                f"problem_sets.{name}.train_size={spec['train_size']}"
            )
    training = config["training"]
    if training["compute_min"] > training["compute_max"]:
        raise ConfigError("training.compute_min exceeds training.compute_max")
    metric_k = int(config["fits"]["metric"].split("@")[1])
    if metric_k != config["evaluation"]["k"]:
        raise ConfigError(f"fits.metric={config['fits']['metric']!r} needs evaluation.k={metric_k}")
    points = grid_points(config)
    studies_of(config, points)
    return points


def studies_of(config: Config, points: list[GridPoint]) -> list[Study]:
    """The configured studies on the grid's runs."""
    try:
        return configured_studies(config.get("studies", {}), points)
    except StudyError as error:
        raise ConfigError(str(error)) from None
