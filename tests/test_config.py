"""Bad config stops before any job runs, with a message that names the key."""

import copy
import re
import subprocess
from pathlib import Path

import pytest
import yaml
from conftest import REPO
from snakemake.utils import update_config

from isocompute.pipeline import config as config_module
from isocompute.pipeline.config import (
    ConfigError,
    ablations_of,
    check_config,
    conda_env,
    launch_spec,
    output_roots,
    params_form,
    recipe_name,
    rule_resources,
    run_lr,
    run_params,
    studies_of,
    training_spec,
    validate_config,
    with_layout,
)
from isocompute.study import upgrades
from isocompute.study.cluster_rules import UnregisteredRuleError, resource_keys
from isocompute.study.grid import GridPoint, learning_rate

DEFAULT = yaml.safe_load((REPO / "config" / "config.yaml").read_text())


def with_change(path: str, value: object) -> dict:
    config = copy.deepcopy(DEFAULT)
    *parents, last = path.split(".")
    node = config
    for key in parents:
        node = node[int(key)] if isinstance(node, list) else node[key]
    node[last] = value
    return config


def test_default_config_is_valid() -> None:
    points = check_config(DEFAULT)
    assert {p.n for p in points} == {2, 4, 8, 16, 32}


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        (
            "grid.0.n",
            [2, 10000],
            r"grid\[0\]: b_problem=16 \* n=10000 = 160000 exceeds problem_sets\.easy\.max_batch",
        ),
        ("grid.0.problem_sets", ["medium"], r"grid\[0\]\.problem_sets names 'medium'"),
        (
            "problems.synthetic_addition.size",
            900,
            r"problem_sets\.easy: train size 2000 exceeds the 720 problems of problems\.synthetic_addition\.size=900",
        ),
        ("problem_sets.mixed", {"mix": {"easy": 0.7, "hard": 0.2}, "train_size": 400, "val_size": 100},
         r"problem_sets\.mixed\.mix: the shares sum to 0\.9, not 1"),
        ("problem_sets.mixed", {"mix": {"easy": 0.5, "medium": 0.5}, "train_size": 400, "val_size": 100},
         r"problem_sets\.mixed\.mix names 'medium', which is not a problem set"),
        ("problem_sets.xhard", {"pass_at": {"k": 8, "max": 0}, "train_size": 400, "val_size": 100},
         r"problem_sets\.xhard\.pass_at\.k=8 must exceed difficulty\.samples=16"),
        ("problem_sets.medium", {"avg_range": [0.1, 0.3], "train_size": 400, "val_size": 100},
         r"problem_sets\.medium\.recipe is required"),
        ("problem_sets.small", {"avg_range": [0.1, 0.3], "sizes": [100, 400], "val_size": 100, "recipe": "kl_entropy",
                                "max_batch": 4096}, r"train size 100 of problem_sets\.small\.sizes \(set small_size100\)"),
        (
            "problem_sets.easy.recipe",
            "missing",
            r"problem_sets\.easy\.recipe='missing' is not a key of recipes",
        ),
        ("problem_sets.hard.avg_range", [0.5, 0.1], r"problem_sets\.hard\.avg_range: lower bound"),
        ("fits.metric", "avg@8", r"fits\.metric='avg@8' needs evaluation\.k=8"),
        ("training.compute_min", 10**9, r"training\.compute_min exceeds training\.compute_max"),
        ("evaluation.train_sample_size", 10**6, r"evaluation\.train_sample_size=1000000 exceeds"),
        (
            "training.processes",
            3,
            r"grid point bp4_n32_seed0 of easy: B = b_problem \* n = 128 is not divisible by training\.processes = 3",
        ),
        (
            "training.accelerate_config",
            "config/accelerate/zero9.yaml",
            r"training\.accelerate_config: no file",
        ),
        (
            "generation.vllm_engine_kwargs",
            {"seed": 1, "dtype": "float32"},
            r"vllm_engine_kwargs may not set \['seed'\]",
        ),
        (
            "resources.train_grpo",
            {"gpu": 2},
            r"resources\.train_grpo\.gpu=2 does not match the 1 GPUs a run uses",
        ),
        ("resources.evaluate_run", {"gpu": 1}, None),
        ("training.report_to", ["tensorboard"], None),
    ],
)
def test_semantic_errors_name_the_key(path: str, value: object, message: str | None) -> None:
    if message is None:  # the control: a consistent setting passes
        check_config(with_change(path, value))
        return
    with pytest.raises(ConfigError, match=message):
        check_config(with_change(path, value))


def test_job_settings_reach_the_launch_spec_and_runtime_may_grow_per_attempt() -> None:
    config = with_change("training.report_to", ["tensorboard", "none"])
    config["training"]["time_limit_margin"] = 30
    config["resources"]["train_grpo"] = {"runtime": [60, 240]}
    validate_config(config, REPO / "workflow/schemas/config.schema.yaml")
    launch = launch_spec(config["training"])
    assert (launch.report_to, launch.time_limit_margin) == (("tensorboard",), 30.0)
    assert launch_spec(DEFAULT["training"]).report_to == ()
    runtime = rule_resources(config, "train_grpo")["runtime"]
    assert [runtime(None, attempt) for attempt in (1, 2, 3)] == [60, 240, 240]
    assert rule_resources(DEFAULT, "train_grpo")["runtime"] == 60
    # One machine per job: SLURM may not split a job's GPUs across nodes (`--nodes=1`).
    assert rule_resources(DEFAULT, "train_grpo")["nodes"] == rule_resources(DEFAULT, "evaluate_run")["nodes"] == 1
    # One task per GPU job: the SLURM plugin 2.6.1 (Python < 3.13) would add `--ntasks-per-gpu=1` otherwise,
    # multiplying the job's CPUs by its GPUs; CPU jobs get the plugin's `--ntasks=1` by themselves.
    config["resources"]["train_grpo"] = {"gpu": 8, "cpus_per_task": 64}
    assert rule_resources(config, "train_grpo")["tasks_per_gpu"] == 0
    # One task however many GPUs: no plugin release may ask `--ntasks-per-gpu` (srun would start a job per GPU).
    assert rule_resources(preset("paper.yaml"), "train_grpo")["tasks_per_gpu"] == 0
    assert "tasks_per_gpu" not in rule_resources(DEFAULT, "train_grpo")


def test_the_schema_allows_resources_for_exactly_the_registered_cluster_rules() -> None:
    schema = yaml.safe_load((REPO / "workflow/schemas/config.schema.yaml").read_text())
    allowed = schema["properties"]["resources"]["propertyNames"]["enum"]
    assert sorted(allowed) == sorted(["default", *resource_keys()])


def test_a_rule_shares_its_resources_key_and_an_unregistered_rule_is_refused() -> None:
    config = copy.deepcopy(DEFAULT)
    config["resources"]["evaluate_run"] = {"gpu": 2, "runtime": 90}
    assert rule_resources(config, "evaluate_run_on") == rule_resources(config, "evaluate_run")
    assert rule_resources(config, "evaluate_run_on")["gpu"] == 2
    with pytest.raises(UnregisteredRuleError, match="rule plot_study_figure is not in .*CLUSTER_RULES"):
        rule_resources(config, "plot_study_figure")


def test_every_rule_that_samples_is_checked_against_tensor_parallel_size() -> None:
    for key in ("score_pass_at", "evaluate_base_model", "evaluate_run"):
        config = with_change("generation.tensor_parallel_size", 2)
        config["resources"][key] = {"gpu": 1}
        with pytest.raises(ConfigError, match=f"resources.{key}.gpu=1 is fewer than generation.tensor_parallel_size=2"):
            check_config(config)


def test_a_tracker_without_its_package_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(config_module.TRACKER_PACKAGES, "tensorboard", ("no_such_tensorboard",))
    with pytest.raises(ConfigError, match=r"training\.report_to: tensorboard needs the package no_such_tensorboard"):
        check_config(with_change("training.report_to", "tensorboard"))


def test_vllm_parallelism_must_fit_the_gpus() -> None:
    colocate = with_change(
        "training.vllm", {**DEFAULT["training"]["vllm"], "mode": "colocate", "tensor_parallel_size": 2}
    )
    with pytest.raises(
        ConfigError, match=r"training\.vllm\.tensor_parallel_size=2 must divide training\.processes=1"
    ):
        check_config(colocate)
    server = with_change("training.vllm", {**DEFAULT["training"]["vllm"], "mode": "server", "server_gpus": 2})
    server["resources"]["train_grpo"] = {"gpu": 2}
    with pytest.raises(ConfigError, match=r"resources\.train_grpo\.gpu=2 does not match the 3 GPUs"):
        check_config(server)
    server["resources"]["train_grpo"] = {"gpu": 3}
    check_config(server)
    server["training"]["vllm"]["sleep_mode"] = True
    with pytest.raises(ConfigError, match=r"training\.vllm\.sleep_mode applies to mode colocate only"):
        check_config(server)
    short = with_change("training.vllm", {**DEFAULT["training"]["vllm"], "max_model_len": 4})
    with pytest.raises(ConfigError, match=r"training\.vllm\.max_model_len=4 leaves no room for a prompt beside sampling\.max_new_tokens=\d+"):
        check_config(short)
    tensor = with_change("generation.tensor_parallel_size", 4)
    tensor["resources"]["score_difficulty"] = {"gpu": 2}
    with pytest.raises(
        ConfigError,
        match=r"resources\.score_difficulty\.gpu=2 is fewer than generation\.tensor_parallel_size=4",
    ):
        check_config(tensor)


def preset(*names: str) -> dict:
    """The default merged with presets, as `snakemake --configfile` merges them."""
    config = copy.deepcopy(DEFAULT)
    for name in names:
        update_config(config, yaml.safe_load((REPO / "config" / "presets" / name).read_text()))
    return config


def test_jobs_that_hold_a_gpu_get_the_gpu_software_environment() -> None:
    """With `--sdm conda`, a rule whose configured resources hold a GPU gets CUDA torch, vLLM and DeepSpeed;
    every other rule the CPU build. Both environment files exist where the rules name them."""
    paper = preset("paper.yaml")
    assert conda_env(paper, "train_grpo") == conda_env(paper, "evaluate_run") == "../envs/isocompute-gpu.yaml"
    assert conda_env(DEFAULT, "train_grpo") == conda_env(paper, "pretrain_base_model") == "../envs/isocompute.yaml"
    gpu_env = yaml.safe_load((REPO / "rules" / conda_env(paper, "train_grpo")).read_text())
    cpu_env = yaml.safe_load((REPO / "rules" / conda_env(DEFAULT, "train_grpo")).read_text())
    # one Python for both, so every job of a study runs the same pins (pyproject.toml pins numpy, pandas and
    # the SLURM plugin by Python)
    assert "python =3.11" in gpu_env["dependencies"] and "python =3.11" in cpu_env["dependencies"]
    assert gpu_env["dependencies"][-1]["pip"] == ["-e ..[vllm,deepspeed,tracking]"]
    assert (REPO / "rules" / conda_env(DEFAULT, "train_grpo")).is_file()


def test_check_extras_resolves_the_cluster_install_on_every_python_the_docs_name() -> None:
    """`.ci/check-extras` (CI) runs pip's resolver on the cluster install line for each Python in its list;
    that list is the one the install step of the running-at-scale guide names."""
    guide = (REPO / "docs/guide/running-at-scale.md").read_text()
    named = re.search(r"must import there\), with Python ([0-9., or]+):", guide).group(1)
    checked = re.search(r"^versions=\(([^)]*)\)$", (REPO / ".ci/check-extras").read_text(), re.M).group(1)
    assert re.findall(r"3\.\d+", named) == checked.split() == ["3.11", "3.12", "3.13"]


@pytest.mark.parametrize(("ci", "code"), [("true", 1), ("", 0)])
def test_a_failed_cluster_install_fails_only_a_ci_run(tmp_path: Path, ci: str, code: int) -> None:
    """`.ci/install-cluster-cpu` where the install fails (a python3 that cannot run): in CI (CI=true) it exits
    1, so the run fails instead of passing with the cluster path's tests skipped; elsewhere it exits 0, as
    before, and those tests skip. Run on a copy, so the repository's environment is never touched."""
    script = tmp_path / ".ci/install-cluster-cpu"
    script.parent.mkdir()
    script.write_text((REPO / ".ci/install-cluster-cpu").read_text())
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin/python3").write_text("#!/bin/sh\nexit 1\n")
    (tmp_path / "bin/python3").chmod(0o755)
    environment = {"PATH": f"{tmp_path / 'bin'}:/usr/bin:/bin", "CI": ci}
    result = subprocess.run(["bash", str(script)], capture_output=True, text=True, env=environment)
    assert result.returncode == code, result.stdout + result.stderr
    assert "install-cluster-cpu: failed" in result.stdout
    assert ("CI=true: the run fails here" in result.stdout) == (ci == "true")


def test_paper_preset_is_the_papers_grid() -> None:
    config = preset("paper.yaml")
    validate_config(config, REPO / "workflow" / "schemas" / "config.schema.yaml")
    points = check_config(config)
    for problem_set, limit, count in (("easy", 65536, 39), ("hard", 16384, 27)):
        mine = [p for p in points if p.problem_set == problem_set]
        assert len(mine) == count and max(p.batch for p in mine) == limit
        assert {p.b_problem for p in mine} == {2**i for i in range(5, 11)}
        assert {p.n for p in mine} == {2**i for i in range(3, 12 if problem_set == "easy" else 10)}
    training = config["training"]
    assert learning_rate(1024, training["lr_base"], training["lr_batch_ref"], training["lr_rule"]) == 1e-6
    assert (config["sampling"]["temperature"], config["sampling"]["max_new_tokens"]) == (0.6, 8192)
    assert config["base_model"]["pretrained"] == "Qwen/Qwen2.5-7B-Instruct"


@pytest.mark.parametrize(
    ("overlay", "model"),
    [
        ("qwen3_4b_instruct.yaml", "Qwen/Qwen3-4B-Instruct-2507"),
        ("llama3.1_8b_instruct.yaml", "meta-llama/Llama-3.1-8B-Instruct"),
    ],
)
def test_other_base_model_presets_layer_over_the_paper(overlay: str, model: str) -> None:
    config = preset("paper.yaml", overlay)
    validate_config(config, REPO / "workflow" / "schemas" / "config.schema.yaml")
    points = check_config(config)
    assert config["base_model"]["pretrained"] == model and config["problem_sets"]["hard"]["avg_range"] == [
        0.0,
        0.0,
    ]
    assert sorted({p.n for p in points}) == [8, 16, 32, 64, 128, 256] and {p.b_problem for p in points} == {
        32
    }


def test_dropping_points_over_max_batch_is_explicit() -> None:
    config = with_change("grid.0.n", [2, 10000])
    config["grid"][0]["drop_over_max_batch"] = True
    n_values = {p.n for p in check_config(config)}
    assert 2 in n_values and 10000 not in n_values


def dry_run(tmp_path: Path, extra: str) -> subprocess.CompletedProcess[str]:
    bad = tmp_path / "bad.yaml"
    bad.write_text(extra)
    return subprocess.run(
        ["snakemake", "-n", "--cores", "1", "--configfile", str(bad)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize(
    ("extra", "named"),
    [
        ("training:\n  learning_rate: 0.1\n", "learning_rate"),
        ("difficulty:\n  samples: sixteen\n", "sixteen"),
        (
            "grid:\n  - {problem_sets: [hard], b_problem: [1024], n: [32], seeds: [0]}\n",
            "problem_sets.hard.max_batch",
        ),
    ],
)
def test_snakemake_refuses_bad_config_before_any_job(tmp_path: Path, extra: str, named: str) -> None:
    result = dry_run(tmp_path, extra)
    assert result.returncode != 0
    output = result.stdout + result.stderr
    assert named in output
    assert "Job stats" not in output


def test_long_embedded_preset_is_the_fixed_b_problem_study_beside_the_default() -> None:
    config = preset("embedded_long.yaml")
    validate_config(config, REPO / "workflow" / "schemas" / "config.schema.yaml")
    points = check_config(config)
    n_by_set = {s: sorted(p.n for p in points if p.problem_set == s) for s in ("easy", "hard")}
    assert n_by_set == {"easy": [2, 4, 8, 16, 32], "hard": [2, 4, 16]} and {p.b_problem for p in points} == {16}
    assert [(s.problem_set, s.kind) for s in studies_of(config, points)] == [("easy", "fixed_b_problem"),
                                                                            ("hard", "fixed_b_problem")]  # fmt: skip
    assert output_roots(config)["results"] != output_roots(DEFAULT)["results"]
    assert config["training"]["compute_max"] == 8 * DEFAULT["training"]["compute_max"]
    # The same recipe as the default: only the task, the pool, the window and the validation size differ.
    assert config["training"]["lr_base"] == DEFAULT["training"]["lr_base"] and config["recipes"] == DEFAULT["recipes"]


def test_cpu_ablation_preset_runs_figures_3_4_and_22_only() -> None:
    config = preset("ablations_cpu.yaml")
    validate_config(config, REPO / "workflow" / "schemas" / "config.schema.yaml")
    points = check_config(config)
    assert len(points) == 17 and studies_of(config, points) == []
    ablations = {(a.problem_set, a.name): a for a in ablations_of(config)}
    assert set(ablations) == {("easy", "regularization"), ("hard", "regularization"), ("easy", "learning_rate"),
                              ("easy", "decoupled_baseline")}  # fmt: skip
    recipes = {recipe_name(config, p) for p in ablations[("hard", "regularization")].runs}
    assert recipes == {"kl_entropy", "unregularized", "kl_entropy_zv_regularizers", "kl_entropy_zv_full"}
    rates = sorted(run_lr(config, p).at(p.update_batch) for p in ablations[("easy", "learning_rate")].runs)
    assert rates == pytest.approx([3e-5, 1e-4, 1e-4, 2e-4, 3e-4, 4e-4, 1e-3])


def test_paper_recipe_ablations_add_their_own_runs_and_share_the_grids() -> None:
    grid = check_config(preset("paper.yaml"))
    config = preset("paper.yaml", "paper_ablations.yaml")
    validate_config(config, REPO / "workflow" / "schemas" / "config.schema.yaml")
    points = check_config(config)
    added = set(points) - set(grid)
    assert len(added) == 13 and not any(p.is_default for p in added)
    assert studies_of(config, points) == studies_of(preset("paper.yaml"), grid)
    decoupled = next(p for p in added if p.n_baseline)
    assert (decoupled.b_problem, decoupled.n, decoupled.n_baseline, decoupled.batch) == (128, 64, 256, 32768)


def test_a_runs_params_hold_only_its_own_recipe_and_learning_rate() -> None:
    config = preset("ablations_cpu.yaml")
    default, filtered = GridPoint("easy", 16, 8, 0), GridPoint("easy", 16, 8, 0, recipe="kl_entropy_zv_full")
    before = run_params(config, default)
    assert before["recipe"] == {"kl_coef": 0.001, "entropy_coef": 0.001, "zero_variance_filter": None}
    assert "recipes" not in before and "problem_sets" not in before
    changed = copy.deepcopy(config)
    changed["recipes"]["kl_entropy_zv_full"]["kl_coef"] = 0.01  # another run's recipe
    changed["ablations"]["more"] = {"kind": "regularization", "grid": [
        {"problem_sets": ["easy"], "b_problem": [4], "n": [8], "seeds": [0], "recipes": ["unregularized", "kl_entropy"]}]}  # fmt: skip
    assert run_params(changed, default) == before
    assert run_params(changed, filtered)["recipe"]["kl_coef"] == 0.01
    rules = GridPoint("easy", 16, 32, 0, lr_rule="linear", lr_base=1e-4, lr_batch_ref=128)
    changed["training"]["lr_base"] = 3e-4  # the default learning rate: not this run's
    assert run_params(changed, rules) == run_params(config, rules)
    assert run_params(changed, default)["training"]["lr_base"] == 3e-4
    # vLLM's sleep mode and context are layout: never params (a change reruns nothing); the job reads them
    # from the config (`with_layout`), as train_grpo.py does.
    config["training"]["vllm"]["mode"] = "colocate"
    for values in ({"sleep_mode": False, "max_model_len": None}, {"sleep_mode": True, "max_model_len": 10240}):
        config["training"]["vllm"].update(values)
        params = run_params(config, default)
        assert {"sleep_mode", "max_model_len"}.isdisjoint(params["training"]["vllm"])
        job = {**params, "training": with_layout(params["training"], config["training"], "training")}
        engine = training_spec(job).rollout_engine
        assert engine is not None and (engine.sleep_mode, engine.max_model_len) == tuple(values.values())


# Layout: how jobs are laid out on devices. None of it may reach a job's params (it would rerun the job).
LAYOUT_CHANGES = {
    "training.vllm.gpu_memory_utilization": 0.21,
    "training.vllm.tensor_parallel_size": 2,
    "training.vllm.server_gpus": 4,
    "training.vllm.enable_sleep_mode": True,  # a key added to the block later is layout too
    "training.processes": 8,
    "training.per_device_batch_max": 16,
    "generation.tensor_parallel_size": 2,
    "generation.vllm_engine_kwargs": {"enforce_eager": True, "max_model_len": 10240},
}
# What jobs compute: each of these must change the params of the jobs that read it.
MATH_CHANGES = {
    "training.vllm.mode": "colocate",
    "training.vllm.importance_sampling_cap": 3.0,
    "training.loss_type": "dr_grpo",
    "generation.backend": "transformers",
    "generation.batch_size": 64,  # the transformers sampler's random stream runs across its batches
}


def job_params(config: dict) -> tuple[dict, dict]:
    """A training job's settings and a sampling job's `generation`, as the rules pass them."""
    generation = upgrades.without_added(params_form(config["generation"], "generation"), "generation")
    return run_params(config, GridPoint("easy", 16, 8, 0)), generation


@pytest.mark.parametrize(("path", "value"), sorted(LAYOUT_CHANGES.items()))
def test_a_layout_change_leaves_every_jobs_params_as_they_were(path: str, value: object) -> None:
    assert job_params(with_change(path, value)) == job_params(DEFAULT)


@pytest.mark.parametrize(("path", "value"), sorted(MATH_CHANGES.items()))
def test_a_change_of_what_jobs_compute_changes_their_params(path: str, value: object) -> None:
    assert job_params(with_change(path, value)) != job_params(DEFAULT)


def test_the_params_of_a_study_started_before_layout_left_them_keep_their_stored_form() -> None:
    """Snakemake compares the `repr` it stored: at the default layout the params are the config's blocks as
    they were passed before, key for key and in order; a job gets the config's layout back."""
    training, generation = job_params(DEFAULT)
    added = {path.rsplit(".", 1)[1] for path in upgrades.ADDED_SETTINGS if path.startswith("training.vllm.")}
    before = {key: value for key, value in DEFAULT["training"]["vllm"].items() if key not in added}
    assert repr(training["training"]["vllm"]) == repr(before)
    assert repr(generation) == repr(DEFAULT["generation"])
    for path, frozen in upgrades.FROZEN_LAYOUT.items():
        block, *keys = path.split(".")
        node = DEFAULT[block]
        for key in keys:
            node = node[key]
        assert node == frozen, path
    changed = with_change("training.vllm.gpu_memory_utilization", 0.21)
    changed["generation"]["vllm_engine_kwargs"] = {"enforce_eager": True}
    training, generation = job_params(changed)
    relaid = with_layout(training["training"], changed["training"], "training")
    assert relaid["vllm"] == changed["training"]["vllm"]
    assert with_layout(generation, changed["generation"], "generation") == changed["generation"]


def snakemake_merge(*overrides: dict) -> dict:
    """The config as Snakemake merges config files over config.yaml: the keys the files name first, in the
    order named, then config.yaml's other keys in its order (the order a param's stored `repr` has)."""
    named: dict = {}
    for override in overrides:
        update_config(named, copy.deepcopy(override))
    config = copy.deepcopy(named)
    update_config(config, copy.deepcopy(DEFAULT))
    update_config(config, copy.deepcopy(named))
    return config


@pytest.mark.parametrize("study", [".test/config_micro/config.yaml", "config/presets/paper.yaml"])
def test_a_config_file_that_names_layout_keys_leaves_the_params_in_their_stored_order(study: str) -> None:
    started = yaml.safe_load((REPO / study).read_text())
    layout = {
        "training": {"processes": 2, "vllm": {"gpu_memory_utilization": 0.21, "server_gpus": 2}},
        "generation": {"tensor_parallel_size": 2, "vllm_engine_kwargs": {"enforce_eager": True}},
    }
    before, after = job_params(snakemake_merge(started)), job_params(snakemake_merge(started, layout))
    assert repr(after) == repr(before)


@pytest.mark.parametrize(
    ("ablation", "message"),
    [
        ({"kind": "regularization", "grid": [{"problem_sets": ["easy"], "b_problem": [4], "n": [8], "seeds": [0],
          "recipes": ["kl_entropy", "missing"]}]}, r"ablations\.x\.grid\[0\]\.recipes names 'missing'"),  # fmt: skip
        ({"kind": "regularization", "grid": [{"problem_sets": ["easy"], "b_problem": [4], "n": [8], "seeds": [0]}]},
         r"ablations\.x on easy has one run"),  # fmt: skip
        ({"kind": "decoupled_baseline", "grid": [{"problem_sets": ["easy"], "b_problem": [4], "n": [8, 16],
          "seeds": [0]}]}, r"a decoupled_baseline study needs a run with n_baseline"),  # fmt: skip
        ({"kind": "learning_rate", "grid": [{"problem_sets": ["easy"], "b_problem": [4], "n": [8], "seeds": [0],
          "lr": [{"rule": "sqrt"}, {"rule": "linear"}]}]}, None),  # fmt: skip
    ],
)
def test_ablation_errors_name_the_key(ablation: dict, message: str | None) -> None:
    config = copy.deepcopy(DEFAULT)
    config["ablations"] = {"x": ablation}
    if message is None:
        assert len(ablations_of(config)) == 1 and len(check_config(config)) == len(check_config(DEFAULT)) + 2
        return
    with pytest.raises(ConfigError, match=message):
        check_config(config)


def test_an_ablation_may_not_take_a_scaling_studys_name() -> None:
    config = preset("ablations_cpu.yaml")
    config["ablations"]["bp16"] = config["ablations"].pop("regularization")
    with pytest.raises(ConfigError, match=r"ablations\.bp16: the name is a scaling study's"):
        check_config(config)
    config["grid"], config["ablations"] = [], {}
    with pytest.raises(ConfigError, match="grid and ablations ask for no run"):
        check_config(config)


def test_data_ablation_sets_resolve_to_their_own_definitions() -> None:
    config = copy.deepcopy(DEFAULT)
    config["problem_sets"].update(
        {
            "xhard": {"pass_at": {"k": 128, "max": 0}, "train_size": 300, "val_size": 100},
            "mix_70_30": {"mix": {"easy": 0.7, "hard": 0.3}, "train_size": 500, "val_size": 300},
            "easy_sizes": {"avg_range": [0.3, 0.6], "sizes": [250, 1000], "val_size": 300, "recipe": "kl_entropy",
                           "max_batch": 65536},  # fmt: skip
        }
    )
    config["grid"] = [{"problem_sets": ["xhard", "mix_70_30", "easy_sizes"], "b_problem": [16], "n": [4, 8], "seeds": [0]}]
    config["studies"] = {"fixed_b_problem": [16], "fixed_batch": [], "joint": False}
    points = check_config(config)
    sets = config_module.problem_sets(config)
    assert {"easy_sizes_size250", "easy_sizes_size1000"} <= set(sets) and "easy_sizes" not in sets
    assert {p.problem_set for p in points} == {"xhard", "mix_70_30", "easy_sizes_size250", "easy_sizes_size1000"}
    # Mixtures and the extremely hard set take the Hard recipe and batch limit.
    assert sets["xhard"]["recipe"] == sets["mix_70_30"]["recipe"] == "unregularized"
    assert recipe_name(config, GridPoint("mix_70_30", 16, 4, 0)) == "unregularized"
    assert sets["mix_70_30"]["build"]["parts"] == [
        {"avg_range": [0.3, 0.6], "share": 0.7},
        {"avg_range": [0.0, 0.0625], "share": 0.3},
    ]
    assert config_module.pass_at_ks(sets["xhard"]["build"]) == [128]
    # Adding a set changes no other set's build, nor any run's params.
    before = config_module.problem_sets(DEFAULT)
    assert all(sets[name]["build"] == before[name]["build"] for name in before)
    assert run_params(config, GridPoint("easy", 16, 8, 0)) == run_params(DEFAULT, GridPoint("easy", 16, 8, 0))


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"sets": {"medium": ["easy"]}, "out_of_domain": {}}, r"extra_evaluation\.sets names 'medium', not a problem set"),
        ({"sets": {"easy": ["aime"]}, "out_of_domain": {}}, r"extra_evaluation\.sets\.easy names 'aime': neither"),
        ({"sets": {"easy": ["easy"]}, "out_of_domain": {}}, r"extra_evaluation\.sets\.easy names 'easy'"),
        ({"sets": {}, "out_of_domain": {"hard": {"path": "x.parquet"}}}, r"out_of_domain\.hard: the name is a problem set's"),
        ({"sets": {"easy": ["hard", "aime"]}, "out_of_domain": {"aime": {"path": "org/aime"}}}, None),
    ],
)
def test_extra_evaluation_names_the_key(extra: dict, message: str | None) -> None:
    config = with_change("extra_evaluation", extra)
    if message is None:
        check_config(config)
        assert config_module.evaluation_sets(config) == {"easy": ["hard", "aime"]}
        assert config_module.out_of_domain_tables(config)["aime"] == {
            "path": "org/aime", "split": "train", "schema": "problem_table", "data_files": None}  # fmt: skip
        return
    with pytest.raises(ConfigError, match=message):
        check_config(config)


PRESETS = sorted((REPO / "config" / "presets").glob("*.yaml"))
SIMULATED_PRESETS = sorted((REPO / "config" / "simulated").glob("*.yaml"))


def layered_under(path: Path) -> list[Path]:
    """The presets a preset's own header merges it over (`--configfile paper.yaml this.yaml`), itself last."""
    for line in path.read_text().splitlines():
        if not line.startswith("#"):
            break
        if "--configfile" in line:
            named = [REPO / word for word in line.split("--configfile", 1)[1].split() if word.startswith("config/presets/")]
            assert named and named[-1] == path, f"{path.name}: its header runs {named}, not itself last"
            return named
    return [path]


@pytest.mark.parametrize("path", PRESETS, ids=lambda path: path.name)
def test_every_preset_is_a_snakemake_config(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every file in config/presets/ is a `snakemake --configfile` config: merged over the default (and the
    presets its header layers it over), it passes the schema and the cross-key checks the workflow runs before
    any job. The simulated policy's files (`isocompute simulate`) live in config/simulated/ instead."""
    monkeypatch.chdir(REPO)
    config = copy.deepcopy(DEFAULT)
    for layer in layered_under(path):
        update_config(config, yaml.safe_load(layer.read_text()))
    validate_config(config, REPO / "workflow" / "schemas" / "config.schema.yaml")
    points = check_config(config)
    studies_of(config, points)
    ablations_of(config)


@pytest.mark.parametrize("path", SIMULATED_PRESETS, ids=lambda path: path.name)
def test_every_simulated_preset_passes_the_simulators_check(path: Path) -> None:
    """Every file in config/simulated/ is an `isocompute simulate` preset: its keys pass the simulator's check."""
    from isocompute.mechanism.simulated_study import load_preset

    assert load_preset(path)["results_root"].startswith("results_simulated")


def test_simulated_presets_are_not_snakemake_configs() -> None:
    assert SIMULATED_PRESETS, "config/simulated/ holds the simulated policy's presets"
    for path in SIMULATED_PRESETS:
        config = copy.deepcopy(DEFAULT)
        update_config(config, yaml.safe_load(path.read_text()))
        with pytest.raises(ConfigError):
            validate_config(config, REPO / "workflow" / "schemas" / "config.schema.yaml")
