"""From the validated config to the typed specs the library takes, with the checks a schema cannot make.

Rules hand scripts plain slices of the config (Snakemake tracks only plain values as params, so a changed
setting reruns exactly the jobs that read it), and scripts turn them into specs with these functions.

The JSON schema catches unknown keys and wrong types; `check_config` catches what needs two keys at once
(a grid point over its set's batch limit, a recipe that does not exist, a pool too small for the sets
asked), so a bad study stops before any job runs, with the key named.
"""

from __future__ import annotations

import importlib.util
import logging
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from isocompute.adaptive.prior import load_prior
from isocompute.adaptive.rungs import AdaptiveError, AdaptiveSettings, rung_caps
from isocompute.data.skill_lookup import SkillLookupTask, check_skill_lookup
from isocompute.data.tasks import ADDITION, SKILL_LOOKUP, SYNTHETIC_SOURCES, AdditionTask, synthetic_task
from isocompute.study import upgrades
from isocompute.study.layout import is_layout
from isocompute.study.cluster_rules import CLUSTER_RULES, cluster_rule
from isocompute.study.grid import GridError, GridPoint, LearningRate, batch_split, expand_grid
from isocompute.study.recipe_ablations import RecipeAblation, configured_recipe_ablations
from isocompute.study.specs import (
    BaseModelSpec,
    Bucket,
    FigureStyle,
    LaunchSpec,
    ProblemSetSpec,
    Recipe,
    RolloutEngine,
    SamplingSpec,
    TrainingSpec,
)

# Keys of `vllm.LLM` that other config keys set: `generation.vllm_engine_kwargs` may not repeat them.
VLLM_ENGINE_RESERVED = ("model", "seed", "tensor_parallel_size")
from isocompute.errors import IsoComputeError
from isocompute.study.studies import Study, StudyError, configured_studies

LOG = logging.getLogger(__name__)

Config = Mapping[str, Any]


class ConfigError(IsoComputeError, ValueError):
    """A config that cannot give a study; the message names the key."""


def output_roots(config: Config) -> dict[str, str]:
    """Where a study writes its results, logs and benchmarks.

    The default root is `results/` beside `logs/` and `benchmarks/`. Another `results_root` (one per base
    model, say) keeps its logs and benchmarks in `logs/<root name>/` and `benchmarks/<root name>/`, so
    several studies live side by side in one clone without sharing a file.
    """
    root = str(config.get("results_root", "results")).rstrip("/")
    if root == "results":
        return {"results": "results", "logs": "logs", "benchmarks": "benchmarks"}
    name = Path(root).name
    return {"results": root, "logs": f"logs/{name}", "benchmarks": f"benchmarks/{name}"}


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
    return SamplingSpec(
        float(sampling["temperature"]),
        float(sampling["top_p"]),
        int(sampling["max_new_tokens"]),
        bool(sampling["chat_template"]),
    )


def base_model_spec(config: Config) -> BaseModelSpec:
    """From `base_model.builtin` and the synthetic task it is pre-trained on: the task of `problems.source`,
    or, in the pre-training rule's slice (`pretraining_settings`), the one task block there is."""
    problems = config["problems"]
    source = problems["source"] if "source" in problems else next(iter(problems))
    return BaseModelSpec(**config["base_model"]["builtin"], task=synthetic_task(source, problems[source]))


def pretraining_settings(config: Config) -> dict[str, Any]:
    """The pre-training rule's params: the built-in model's block and the block of the task it learns."""
    source = config["problems"]["source"]
    return {
        "base_model": {"builtin": config["base_model"]["builtin"]},
        "problems": {source: config["problems"].get(source)},
    }


def pool_params(config: Config) -> dict[str, Any]:
    """The pool rule's params: the task's block, the seed, and the task's name unless it is addition, whose
    params keep the form they had before a second task existed, so that no finished study's pool (and so
    none of its runs) reruns (docs/guide/upgrading.md). Read the name back with `pool_source`."""
    source = config["problems"]["source"]
    params = {"task": config["problems"][source], "seed": config["seed"]}
    return params if source == ADDITION else {**params, "source": source}


def pool_source(params: Mapping[str, Any]) -> str:
    """The task a pool rule's params (`pool_params`) name."""
    return str(params.get("source", ADDITION))


# The set whose recipe and max_batch a mixture or a pass@k set takes where it names none (the paper: the
# Hard recipe).
HARD_SET = "hard"


def problem_sets(config: Config) -> dict[str, dict[str, Any]]:
    """Every problem set the config defines, resolved to plain values, by name.

    A set with `sizes` (a size sweep) becomes one set per size, `<name>_size<S>`, sharing the validation
    set. A mixture's parts are its components' selections with their shares; a mixture or a pass@k set
    without `recipe` or `max_batch` takes those of the `hard` set. Each entry's `build` holds exactly what
    decides the set's problems, so a set's build reruns only when its own definition changes.
    """
    sets = config["problem_sets"]
    resolved: dict[str, dict[str, Any]] = {}
    for name, spec in sets.items():
        key = f"problem_sets.{name}"
        if "mix" in spec:
            total = sum(spec["mix"].values())
            if abs(total - 1.0) > 1e-6:
                raise ConfigError(f"{key}.mix: the shares sum to {total:g}, not 1")
            parts = []
            for component, share in spec["mix"].items():
                other = sets.get(component)
                if other is None or "mix" in other:
                    raise ConfigError(
                        f"{key}.mix names {component!r}, which is not a problem set with avg_range or pass_at"
                    )
                parts.append({**_selection(other), "share": float(share)})
        else:
            parts = [{**_selection(spec), "share": 1.0}]
        settings = {"recipe": spec.get("recipe"), "max_batch": spec.get("max_batch")}
        for field in ("recipe", "max_batch"):
            if settings[field] is None:
                hard = sets.get(HARD_SET, {})
                if "avg_range" in spec or hard.get(field) is None:
                    raise ConfigError(f"{key}.{field} is required (a mixture or pass_at set takes the {HARD_SET} set's)")
                settings[field] = hard[field]
        sizes = [(name, spec["train_size"], key)] if "train_size" in spec else [
            (f"{name}_size{size}", size, f"{key}.sizes") for size in spec["sizes"]]  # fmt: skip
        for set_name, size, set_key in sizes:
            if set_name in resolved or (set_name != name and set_name in sets):
                raise ConfigError(f"{set_key}: the set name {set_name!r} is taken by another problem set")
            resolved[set_name] = {
                **settings,
                "sweep": name if "sizes" in spec else None,
                "mix_of": list(spec.get("mix", {})),
                "build": {"key": set_key, "parts": parts, "train_size": int(size), "val_size": int(spec["val_size"])},
            }
    return resolved


def _selection(spec: Mapping[str, Any]) -> dict[str, Any]:
    """A set's bucket as plain values: its avg_range or its pass_at."""
    if "pass_at" in spec:
        return {"pass_at": {"k": int(spec["pass_at"]["k"]), "max": float(spec["pass_at"]["max"])}}
    return {"avg_range": [float(v) for v in spec["avg_range"]]}


def evaluation_sets(config: Config) -> dict[str, list[str]]:
    """Per problem set, the other validation sets its runs are evaluated on (`extra_evaluation.sets`):
    names of problem sets or of `extra_evaluation.out_of_domain` tables."""
    extra = config.get("extra_evaluation", {"sets": {}, "out_of_domain": {}})
    sets = problem_sets(config)
    for name in extra["out_of_domain"]:
        if name in sets:
            raise ConfigError(f"extra_evaluation.out_of_domain.{name}: the name is a problem set's; choose another")
    for name, others in extra["sets"].items():
        if name not in sets:
            raise ConfigError(f"extra_evaluation.sets names {name!r}, not a problem set")
        for other in others:
            if other == name or (other not in sets and other not in extra["out_of_domain"]):
                raise ConfigError(
                    f"extra_evaluation.sets.{name} names {other!r}: neither another problem set nor a key of "
                    f"extra_evaluation.out_of_domain"
                )
    return {name: list(others) for name, others in extra["sets"].items()}


def out_of_domain_tables(config: Config) -> dict[str, dict[str, Any]]:
    """`extra_evaluation.out_of_domain`, each completed with the defaults of `problems.table`."""
    tables = config.get("extra_evaluation", {}).get("out_of_domain", {})
    return {name: {"split": "train", "schema": "problem_table", "data_files": None, **table} for name, table in tables.items()}


def pass_at_ks(build: Mapping[str, Any]) -> list[int]:
    """The staged pass@k tables a set's build reads."""
    return sorted({part["pass_at"]["k"] for part in build["parts"] if "pass_at" in part})


def problem_set_spec(name: str, build: Mapping[str, Any]) -> ProblemSetSpec:
    """From a resolved set's `build` (`problem_sets`)."""
    parts = []
    for part in build["parts"]:
        if "pass_at" in part:
            bucket = Bucket(pass_k=int(part["pass_at"]["k"]), pass_max=float(part["pass_at"]["max"]))
        else:
            bucket = Bucket(low=float(part["avg_range"][0]), high=float(part["avg_range"][1]))
        parts.append((bucket, float(part["share"])))
    return ProblemSetSpec(name, tuple(parts), int(build["train_size"]), int(build["val_size"]), build["key"])


def recipe_name(config: Config, point: GridPoint) -> str:
    """The run's recipe: its own where the grid names one, else its problem set's."""
    return point.recipe or problem_sets(config)[point.problem_set]["recipe"]


def recipe_params(config: Config, point: GridPoint) -> dict[str, Any]:
    """The run's recipe as plain values: the only recipe a training job reads (and reruns for)."""
    recipe = config["recipes"][recipe_name(config, point)]
    return {
        "kl_coef": float(recipe["kl_coef"]),
        "entropy_coef": float(recipe["entropy_coef"]),
        "zero_variance_filter": recipe.get("zero_variance_filter"),
    }


def recipe_spec(recipe: Mapping[str, Any]) -> Recipe:
    """From `recipe_params`."""
    return Recipe(float(recipe["kl_coef"]), float(recipe["entropy_coef"]), recipe["zero_variance_filter"])


# The `training` keys of the default learning rate; a run with its own (`GridPoint.lr`) replaces them.
LR_KEYS = ("lr_rule", "lr_base", "lr_batch_ref")


def default_lr(training: Mapping[str, Any]) -> LearningRate:
    """`training.lr_rule`, `lr_base` and `lr_batch_ref`: the learning rate of every run that names none."""
    return LearningRate(str(training["lr_rule"]), float(training["lr_base"]), int(training["lr_batch_ref"]))


def run_lr(config: Config, point: GridPoint) -> LearningRate:
    """The run's learning-rate settings: its own, or the study's default."""
    return point.lr or default_lr(config["training"])


def run_params(config: Config, point: GridPoint) -> dict[str, Any]:
    """Everything a training job computes with, as plain values (Snakemake reruns it when they change):
    the sampling, the `training` keys without the layout (`params_form`), with the run's own learning
    rate in place of the default, and the run's own recipe. Other recipes, other runs' learning rates and the
    problem sets' blocks are not among them, so adding a recipe ablation reruns no finished run; nor are fields an
    upgrade added, at their neutral value (`isocompute.study.upgrades`)."""
    lr = run_lr(config, point)
    training = params_form(config["training"], "training")
    training = {key: value for key, value in training.items() if key not in LR_KEYS}
    return upgrades.without_added(
        {
            "sampling": config["sampling"],
            "training": {**training, "lr_rule": lr.rule, "lr_base": lr.base, "lr_batch_ref": lr.batch_ref},
            "recipe": recipe_params(config, point),
        }
    )


def run_description(config: Config, point: GridPoint) -> dict[str, Any]:
    """A run's settings resolved to plain values (its recipe's name and terms, its learning rate at its
    batch): what a recipe ablation's figure labels and compares its runs by."""
    lr = run_lr(config, point)
    return {
        "run": point.run,
        "b_problem": point.b_problem,
        "n": point.n,
        "n_baseline": point.n_baseline,
        "seed": point.seed,
        "recipe": recipe_name(config, point),
        **recipe_params(config, point),
        "lr_rule": lr.rule,
        "lr_base": lr.base,
        "lr_batch_ref": lr.batch_ref,
        "lr": lr.at(point.update_batch),
    }


def training_spec(config: Config) -> TrainingSpec:
    """From the `training` and `sampling` blocks (of the config, or of a run's `run_params`)."""
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
        rollout_engine=rollout_engine(training["vllm"]),
        lr_rule=str(training["lr_rule"]),
    )


def rollout_engine(vllm: Mapping[str, Any]) -> RolloutEngine | None:
    """From `training.vllm`; None (TRL generates with transformers) when `mode` is null."""
    if vllm["mode"] is None:
        return None
    return RolloutEngine(
        mode=str(vllm["mode"]),
        gpu_memory_utilization=float(vllm["gpu_memory_utilization"]),
        tensor_parallel_size=int(vllm["tensor_parallel_size"]),
        server_gpus=int(vllm["server_gpus"]),
        importance_sampling=vllm["importance_sampling"],
        importance_sampling_cap=float(vllm["importance_sampling_cap"]),
        sleep_mode=bool(upgrades.setting(vllm, "training.vllm.sleep_mode")),
        max_model_len=upgrades.setting(vllm, "training.vllm.max_model_len"),
    )


# The packages transformers' trackers need, for the trackers the config check knows.
TRACKER_PACKAGES = {
    "tensorboard": ("tensorboard", "tensorboardX"),
    "wandb": ("wandb",),
    "trackio": ("trackio",),
}


def params_form(block: Mapping[str, Any], path: str) -> dict[str, Any]:
    """A config block at `path` as jobs' params hold it: what they compute, without the layout, so that a
    new layout reruns nothing. The layout fields that were params before stay at a fixed value
    (`upgrades.with_frozen_layout`), so the params of a study started before keep their stored form."""
    kept = {}
    for key, value in block.items():
        inner = f"{path}.{key}"
        if not is_layout(inner):
            kept[key] = params_form(value, inner) if isinstance(value, Mapping) else value
    return upgrades.with_frozen_layout(kept, path)


def with_layout(params: Mapping[str, Any], block: Mapping[str, Any], path: str) -> dict[str, Any]:
    """What a job runs with: its params' block (`params_form`) with every layout field, at any depth, taken
    from the config's `block` at `path` (`snakemake.config`; not a param, so a new layout reruns nothing)."""
    merged = dict(params)
    for key, value in block.items():
        inner = f"{path}.{key}"
        if is_layout(inner):
            merged[key] = value
        elif isinstance(value, Mapping) and isinstance(params.get(key), Mapping):
            merged[key] = with_layout(params[key], value, inner)
    return merged


def report_to(setting: str | list[str] | None) -> tuple[str, ...]:
    """`training.report_to` (one name or a list, as TRL takes it) as a tuple of trackers; empty for none."""
    names = [setting] if isinstance(setting, str) else list(setting or [])
    return tuple(name for name in names if name != "none")


def launch_spec(training: Mapping[str, Any]) -> LaunchSpec:
    """From the `training` block's device layout keys. `resume_every_steps`, which a config may still set,
    is honoured with a deprecation warning in the job's log."""
    every_steps = training.get("resume_every_steps")
    if every_steps is not None:
        LOG.warning(
            "training.resume_every_steps=%s is deprecated: set training.resume_every_minutes (resume "
            "checkpoints on a wall-clock interval) instead; it is still honoured, and neither reruns a run",
            every_steps,
        )
    return LaunchSpec(
        processes=int(training["processes"]),
        per_device_batch_max=int(training["per_device_batch_max"]),
        activation_checkpointing=bool(training["activation_checkpointing"]),
        accelerate_config=training["accelerate_config"],
        resume_every_minutes=training["resume_every_minutes"],
        resume_every_steps=every_steps,
        time_limit_margin=float(training["time_limit_margin"]),
        report_to=report_to(training["report_to"]),
    )


def training_gpus(training: Mapping[str, Any]) -> int:
    """GPUs one training job uses: one per process, plus the vLLM server's in server mode."""
    engine = rollout_engine(training["vllm"])
    return int(training["processes"]) + (engine.own_gpus if engine else 0)


def figure_style(figures: Mapping[str, Any]) -> FigureStyle:
    """From the `figures` block."""
    return FigureStyle(**figures)


def rule_resources(config: Config, rule: str) -> dict[str, Any]:
    """A rule's cluster resources: `resources.default` overridden by the rule's key in `resources:`
    (`cluster_rules.CLUSTER_RULES`, which a rule must be in), unset keys dropped.

    A GPU count of 0 is dropped too, so CPU rules never ask SLURM for `--gpus=0`.
    A list of runtimes gives each attempt its own (the last repeats), so a job resubmitted after its time
    limit can ask for more. Every job asks for one node (`nodes: 1`, the SLURM plugin's `--nodes=1`), and a
    GPU job for one task (`tasks_per_gpu: 0`: no `--ntasks-per-gpu`).
    """
    merged = {**config["resources"]["default"], **config["resources"].get(cluster_rule(rule).resources, {})}
    resources = {
        key: value for key, value in merged.items() if value is not None and not (key == "gpu" and value == 0)
    }
    if isinstance(resources.get("runtime"), list):
        resources["runtime"] = runtime_per_attempt(resources["runtime"])
    # Every cluster job is one process tree on one machine (`accelerate launch` of training.processes ranks,
    # a vLLM server beside them): `--gpus=N` alone would let SLURM spread its GPUs over several nodes.
    # And one task: the SLURM plugin before 2.7 (Python < 3.13's pin) adds `--ntasks-per-gpu=1` to a GPU job
    # unless `tasks_per_gpu` or `tasks` is set, so SLURM would allocate N tasks of `cpus_per_task` CPUs each
    # (8 GPUs x 64 CPUs: 512) for a job whose one step runs `accelerate launch`. 0 leaves the flag out under
    # 2.6.1 and 2.8.0 alike (2.8.0 adds it only where asked).
    if resources.get("gpu"):
        resources["tasks_per_gpu"] = 0
    return {**resources, "nodes": 1}


# The software environments of `--sdm conda`, relative to rules/: PyTorch's CPU build for every rule, or the
# CUDA build with vLLM and DeepSpeed for a job that holds a GPU; both on Python 3.11, hence on the same pins.
CONDA_ENVS = {"cpu": "../envs/isocompute.yaml", "gpu": "../envs/isocompute-gpu.yaml"}


def conda_env(config: Config, rule: str) -> str:
    """The conda environment file of a cluster rule: the GPU build where its configured resources hold a GPU
    (`resources.<rule>.gpu`), else the CPU build, so a GPU job never trains on CPU torch."""
    return CONDA_ENVS["gpu" if rule_resources(config, rule).get("gpu", 0) else "cpu"]


def runtime_per_attempt(minutes: list[int]) -> Callable[..., int]:
    """Snakemake's resource callable for a per-attempt `runtime` list (attempts count from 1)."""

    def runtime(wildcards: object, attempt: int) -> int:
        return int(minutes[min(attempt, len(minutes)) - 1])

    return runtime


def grid_points(config: Config) -> list[GridPoint]:
    """Every run the config asks for: the grid's and the recipe ablation studies', each once."""
    points = set(expand_blocks(config, config["grid"], "grid"))
    for name, ablation in config.get("ablations", {}).items():
        points.update(expand_blocks(config, ablation["grid"], f"ablations.{name}.grid"))
    return sorted(points)


def expand_blocks(config: Config, blocks: list[Mapping[str, Any]], key: str) -> list[GridPoint]:
    """One list of grid blocks, with the problem sets' own recipes and the default learning rate."""
    sets = problem_sets(config)
    size_sweeps: dict[str, list[str]] = {}
    for name, settings in sets.items():
        if settings["sweep"]:
            size_sweeps.setdefault(settings["sweep"], []).append(name)
    for index, block in enumerate(blocks):
        for recipe in block.get("recipes", []):
            if recipe not in config["recipes"]:
                raise ConfigError(f"{key}[{index}].recipes names {recipe!r}, not a key of recipes")
    # A size sweep named in a block stands for each of its sizes.
    blocks = [
        {**block, "problem_sets": [s for name in block["problem_sets"] for s in size_sweeps.get(name, [name])]}
        for block in blocks
    ]
    try:
        return expand_grid(
            blocks,
            {name: s["max_batch"] for name, s in sets.items()},
            {name: s["recipe"] for name, s in sets.items()},
            default_lr(config["training"]),
            key,
        )
    except GridError as error:
        raise ConfigError(str(error)) from None


def check_config(config: Config) -> list[GridPoint]:
    """Raise `ConfigError` naming the key for a study that cannot run; return its grid points."""
    problems = config["problems"]
    if problems["source"] == "table" and not problems.get("table", {}).get("path"):
        raise ConfigError("problems.table.path must be set when problems.source is 'table'")
    if problems["source"] in SYNTHETIC_SOURCES:
        source = problems["source"]
        if problems.get(source) is None:
            raise ConfigError(f"problems.{source} is required when problems.source is {source!r}")
        task = synthetic_task(source, problems[source])
        if isinstance(task, AdditionTask) and task.min_digits > task.max_digits:
            raise ConfigError("problems.synthetic_addition.min_digits exceeds max_digits")
        if isinstance(task, SkillLookupTask) and (problem := check_skill_lookup(task)):
            raise ConfigError(problem)
        new_tokens = config["sampling"]["max_new_tokens"]
        if isinstance(task, SkillLookupTask) and new_tokens < task.answer_digits + 1:
            # A completion cut before its eos never matches, so every reward would be zero.
            raise ConfigError(
                f"sampling.max_new_tokens={new_tokens} is fewer than the "
                f"{task.answer_digits + 1} tokens of an answer of problems.{SKILL_LOOKUP}.answer_digits="
                f"{task.answer_digits} and its eos: no sample could be right"
            )
        share = config["difficulty"]["validation_share"]
        for settings in problem_sets(config).values():
            build = settings["build"]
            for part, size, room in (("train", build["train_size"], 1 - share), ("val", build["val_size"], share)):
                if size > room * task.size:
                    raise ConfigError(
                        f"{build['key']}: {part} size {size} exceeds the {room * task.size:.0f} problems of "
                        f"{task.size_setting} that difficulty.validation_share={share} "
                        f"leaves for {part}: no bucket could be large enough"
                    )
    model = config["base_model"]
    if not model.get("pretrained"):
        if "builtin" not in model:
            raise ConfigError("base_model needs either pretrained (a path or hub id) or builtin")
        if problems["source"] not in SYNTHETIC_SOURCES:
            raise ConfigError(
                "base_model.builtin is trained on a synthetic task: set base_model.pretrained"
            )
        builtin = model["builtin"]
        if builtin["hidden_size"] % builtin["num_heads"] or builtin["num_heads"] % builtin["num_kv_heads"]:
            raise ConfigError(
                "base_model.builtin: num_heads must divide hidden_size and num_kv_heads num_heads"
            )
    for name, spec in config["problem_sets"].items():
        if "avg_range" in spec:
            low, high = spec["avg_range"]
            if low > high:
                raise ConfigError(f"problem_sets.{name}.avg_range: lower bound {low} exceeds upper bound {high}")
        if "pass_at" in spec and spec["pass_at"]["k"] <= config["difficulty"]["samples"]:
            raise ConfigError(
                f"problem_sets.{name}.pass_at.k={spec['pass_at']['k']} must exceed difficulty.samples="
                f"{config['difficulty']['samples']} (the first stage of its sampling)"
            )
    for name, settings in problem_sets(config).items():
        build = settings["build"]
        if settings["recipe"] not in config["recipes"]:
            raise ConfigError(f"{build['key']}.recipe={settings['recipe']!r} is not a key of recipes")
        if config["evaluation"]["train_sample_size"] > build["train_size"]:
            raise ConfigError(
                f"evaluation.train_sample_size={config['evaluation']['train_sample_size']} exceeds "
                f"the train size {build['train_size']} of {build['key']} (set {name})"
            )
    evaluation_sets(config)
    training = config["training"]
    if training["compute_min"] > training["compute_max"]:
        raise ConfigError("training.compute_min exceeds training.compute_max")
    metric_k = int(config["fits"]["metric"].split("@")[1])
    if metric_k != config["evaluation"]["k"]:
        raise ConfigError(f"fits.metric={config['fits']['metric']!r} needs evaluation.k={metric_k}")
    _check_devices(config)
    points = grid_points(config)
    if not points:
        raise ConfigError("grid and ablations ask for no run: give grid blocks or a recipe ablation study")
    for point in points:
        try:
            batch_split(point.batch, training["processes"], training["per_device_batch_max"])
        except GridError as error:
            raise ConfigError(f"grid point {point.run} of {point.problem_set}: {error}") from None
    names: dict[tuple[str, str], GridPoint] = {}
    for point in points:
        other = names.setdefault((point.problem_set, point.run), point)
        if other != point:
            raise ConfigError(f"runs {other} and {point} of {point.problem_set} share the name {point.run}")
    adaptive_settings(config, studies_of(config, points), points)
    adaptive_prior(config)
    ablations_of(config)
    return points


def _check_devices(config: Config) -> None:
    """GPU-side keys that must agree: the job's GPU request, processes, vLLM parallelism, engine kwargs."""
    training, generation = config["training"], config["generation"]
    vllm = training["vllm"]
    if vllm["mode"] == "colocate" and training["processes"] % vllm["tensor_parallel_size"]:
        raise ConfigError(
            f"training.vllm.tensor_parallel_size={vllm['tensor_parallel_size']} must divide "
            f"training.processes={training['processes']} in colocate mode"
        )
    if vllm["mode"] == "server" and vllm["server_gpus"] % vllm["tensor_parallel_size"]:
        raise ConfigError(
            f"training.vllm.tensor_parallel_size={vllm['tensor_parallel_size']} must divide "
            f"training.vllm.server_gpus={vllm['server_gpus']}"
        )
    if vllm["mode"] == "server" and vllm.get("sleep_mode"):
        raise ConfigError("training.vllm.sleep_mode applies to mode colocate only (a server owns its GPUs)")
    max_model_len, max_new_tokens = vllm.get("max_model_len"), config["sampling"]["max_new_tokens"]
    if max_model_len is not None and max_model_len <= max_new_tokens:
        raise ConfigError(
            f"training.vllm.max_model_len={max_model_len} leaves no room for a prompt beside "
            f"sampling.max_new_tokens={max_new_tokens}"
        )
    for tracker in report_to(training["report_to"]):
        packages = TRACKER_PACKAGES.get(tracker, ())
        if packages and not any(importlib.util.find_spec(package) for package in packages):
            raise ConfigError(
                f"training.report_to: {tracker} needs the package {packages[0]}, which is not installed "
                f"(pip install {packages[0]})"
            )
    accelerate_config = training["accelerate_config"]
    if accelerate_config and not Path(accelerate_config).is_file():
        raise ConfigError(f"training.accelerate_config: no file {accelerate_config!r}")
    train_gpus = rule_resources(config, "train_grpo").get("gpu", 0)
    if train_gpus and train_gpus != training_gpus(training):
        raise ConfigError(
            f"resources.train_grpo.gpu={train_gpus} does not match the {training_gpus(training)} GPUs a run "
            f"uses (training.processes, plus training.vllm.server_gpus in server mode)"
        )
    reserved = sorted(set(VLLM_ENGINE_RESERVED) & set(generation["vllm_engine_kwargs"]))
    if reserved:
        raise ConfigError(f"generation.vllm_engine_kwargs may not set {reserved}: other keys set them")
    sampling_rules = {rule.resources: name for name, rule in CLUSTER_RULES.items() if rule.samples}
    for key, rule in sorted(sampling_rules.items()):
        gpus = rule_resources(config, rule).get("gpu", 0)
        if gpus and gpus < generation["tensor_parallel_size"]:
            raise ConfigError(
                f"resources.{key}.gpu={gpus} is fewer than generation.tensor_parallel_size="
                f"{generation['tensor_parallel_size']}"
            )


def studies_of(config: Config, points: list[GridPoint]) -> list[Study]:
    """The configured studies on the grid's runs."""
    try:
        return configured_studies(config.get("studies", {}), points)
    except StudyError as error:
        raise ConfigError(str(error)) from None


def round_fit_settings(config: Config) -> dict[str, Any]:
    """The `fits:` settings an adaptive round's decision reads: all but `tolerance`, which names the leaders
    of the law's verdict and nothing a decision reads (the frontier's band and the curves' ceilings), so
    setting it, or its arrival in a study under way, redoes no round and retrains no rung."""
    return {key: value for key, value in config["fits"].items() if key != "tolerance"}


def adaptive_settings(config: Config, studies: list[Study], points: list[GridPoint]) -> AdaptiveSettings | None:
    """The adaptive sweep's settings (None for the full grid), refused where the sweep could not decide.

    An arm stops only on bootstrap bands (per-problem counts, `fits.bootstrap` > 0); the frontier's arm and
    its two neighbours always continue (three arms at least); and an adaptive sweep decides between rungs (two at
    least from training.compute_min to compute_max). The fixed-B_problem studies are the ones it adapts.
    """
    sweep = config.get("sweep", {"mode": "full"})
    if sweep["mode"] != "adaptive":
        return None
    settings = AdaptiveSettings(**{key: sweep[key] for key in ("rung_factor", "min_steps", "audit_rungs") if key in sweep})
    if config["fits"]["bootstrap"] == 0:
        raise ConfigError(
            "sweep.mode=adaptive needs fits.bootstrap > 0: an arm stops only on bootstrap bands of the "
            "per-problem counts, and fits.bootstrap = 0 gives none"
        )
    adapted = [study for study in studies if study.kind == "fixed_b_problem"]
    if not adapted:
        raise ConfigError("sweep.mode=adaptive adapts the fixed-B_problem studies: studies.fixed_b_problem has none on the grid")
    for study in adapted:
        arms = sorted({p.n for p in study.runs(points)})
        if len(arms) < 3:
            raise ConfigError(
                f"sweep.mode=adaptive: studies.fixed_b_problem {study.name} on {study.problem_set} has {len(arms)} "
                f"arm(s) (n = {arms}); it needs at least three (the frontier's arm and its two neighbours continue)"
            )
    swept = {(p.problem_set, p.run) for study in adapted for p in study.runs(points)}
    for study in studies:
        if study.kind != "fixed_b_problem" and any((p.problem_set, p.run) in swept for p in study.runs(points)):
            key = "studies.joint" if study.kind == "joint" else f"studies.{study.kind}"
            raise ConfigError(
                f"sweep.mode=adaptive: the {study.kind} study {study.name} on {study.problem_set} shares runs with an "
                f"adapted fixed-B_problem study, whose arms end where the adaptive sweep stops them: its frontier "
                f"would be fitted on cut curves. Leave it out ({key}) or run the full grid (sweep.mode: full)"
            )
    both = {p.run for p in points if (p.problem_set, p.run) in swept} & {
        p.run for p in points if (p.problem_set, p.run) not in swept
    }
    if both:
        raise ConfigError(
            f"sweep.mode=adaptive: runs {sorted(both)} are arms of an adapted study on one problem set and full runs "
            f"on another; give every set of the grid the same studies.fixed_b_problem"
        )
    training = config["training"]
    try:
        caps = rung_caps(training["compute_min"], training["compute_max"], settings.rung_factor)
    except AdaptiveError as error:
        raise ConfigError(str(error)) from None
    if len(caps) < 2:
        raise ConfigError(
            f"sweep.rung_factor={settings.rung_factor} leaves {len(caps)} rung from training.compute_min="
            f"{training['compute_min']} to compute_max={training['compute_max']}: an adaptive sweep needs two or more"
        )
    return settings


def adaptive_prior(config: Config) -> dict[str, dict[str, Any]] | None:
    """The adaptive sweep's prior per problem set (`sweep.prior`: one for every set, or a mapping of set names
    to priors; each a finished study's fits.json, a law, or the paper's law by name) as the round rule's
    params, loaded at config time so that a missing file or a refused law is named before any rung trains.
    None without `sweep.prior`, so that the rounds' params stay as they were and a sweep under way redoes no
    round."""
    sweep = config.get("sweep", {"mode": "full"})
    if sweep["mode"] != "adaptive" or sweep.get("prior") is None:
        return None
    spec = sweep["prior"]
    sets = list(config["problem_sets"])
    per_set = isinstance(spec, dict) and not {"L", "k", "log10_c0", "b"} & set(spec)
    unknown = sorted(set(spec) - set(sets)) if per_set else []
    if unknown:
        raise ConfigError(f"sweep.prior names problem sets {unknown} that problem_sets does not define ({sets})")
    priors = {}
    for name in sets:
        if per_set and name not in spec:
            continue
        key = f"sweep.prior.{name}" if per_set else "sweep.prior"
        try:
            priors[name] = load_prior(spec[name] if per_set else spec, config["fits"]["metric"]).to_params()
        except AdaptiveError as error:
            raise ConfigError(f"{key}: {error}") from None
    return priors


def ablations_of(config: Config) -> list[RecipeAblation]:
    """The configured recipe ablations (`ablations:`), one per named study and problem set."""
    ablations = config.get("ablations", {})
    points = {name: expand_blocks(config, spec["grid"], f"ablations.{name}.grid") for name, spec in ablations.items()}
    try:
        return configured_recipe_ablations(ablations, points)
    except StudyError as error:
        raise ConfigError(str(error)) from None
