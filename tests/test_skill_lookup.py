"""The skill-lookup task: its pool, its interference dial, its pre-training by design, and its presets."""

from __future__ import annotations

import copy
import hashlib
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
import yaml
from conftest import REPO
from snakemake.utils import update_config
from transformers import AutoModelForCausalLM, AutoTokenizer

from isocompute.data.base_model import pretrain_base_model
from isocompute.data.difficulty import validation_reserve
from isocompute.data.problems import validate_problem_table
from isocompute.data.skill_lookup import DEFAULT_ANSWER, SkillLookupTask
from isocompute.data.tasks import ADDITION, SKILL_LOOKUP, AdditionTask, synthetic_task
from isocompute.pipeline.config import (
    ConfigError,
    base_model_spec,
    check_config,
    evaluation_sets,
    pool_params,
    pool_source,
    pretraining_settings,
    problem_sets,
    validate_config,
)
from isocompute.study.specs import BaseModelSpec

SCHEMA = REPO / "workflow/schemas/config.schema.yaml"
DEFAULT = yaml.safe_load((REPO / "config/config.yaml").read_text())
ARM = REPO / "config/presets/interference.yaml"
CONTROL = REPO / "config/presets/interference_control.yaml"
ALIASED = REPO / "config/presets/interference_aliased.yaml"
ALIASED_CONTROL = REPO / "config/presets/interference_aliased_control.yaml"
RARE = REPO / "config/presets/interference_rare.yaml"
RARE_CONTROL = REPO / "config/presets/interference_rare_control.yaml"
MULTIDIGIT = REPO / "config/presets/interference_multidigit.yaml"
MULTIDIGIT_CONTROL = REPO / "config/presets/interference_multidigit_control.yaml"
# What the one-digit task drew for each preset before `answer_digits` existed (commit 95737a3): a digest of
# its skills, its pool (seed 0) and 2,000 pre-training draws (`one_digit_digest`).
ONE_DIGIT_DIGESTS = {
    "interference": "1b5e477c53fadc12",
    "interference_control": "49156d70cd02c700",
    "interference_aliased": "9844c34c5e0cdd28",
    "interference_aliased_control": "9844c34c5e0cdd28",
    "interference_rare": "9b080a65db489888",
    "interference_rare_control": "c9c026c5d0e709ea",
}


def task(**changes: object) -> SkillLookupTask:
    settings = {
        "easy_skills": 20,
        "hard_skills": 30,
        "variants": 40,
        "easy_label_accuracy": [0.25, 0.65],
        "hard_label_accuracy": [0.005, 0.08],
        "default_share": 0.6,
    }
    return synthetic_task(SKILL_LOOKUP, {**settings, **changes})


def merged(*presets: Path, **changes: object) -> dict:
    config = copy.deepcopy(DEFAULT)
    for preset in presets:
        update_config(config, yaml.safe_load(preset.read_text()))
    update_config(config, changes)
    return config


def test_pool_is_every_skill_with_its_distractor_variants_and_deterministic() -> None:
    lookup = task()
    pool = validate_problem_table(lookup.pool(seed=3), SKILL_LOOKUP)
    skills = lookup.skills(seed=3)
    assert len(pool) == lookup.size == 50 * 40
    assert pool["prompt"].str.fullmatch(r"\d{5}=").all()
    by_code = pool.assign(code=pool["prompt"].str[:3]).groupby("code")
    assert (by_code.size() == 40).all() and set(by_code.groups) == set(skills["code"])
    answers = skills.set_index("code")["answer"]
    assert (pool["prompt"].str[:3].map(answers) == pool["answer"]).all()
    levels = skills.set_index("code")["level"]
    assert (pool["id"].str.extract(r"^(easy|hard)")[0] == pool["prompt"].str[:3].map(levels)).all()
    assert pool.equals(lookup.pool(seed=3))
    assert not pool.equals(lookup.pool(seed=4))


def test_the_dial_puts_easy_answers_and_hard_decoys_on_the_default_digit() -> None:
    for rho in (0.1, 0.6):
        skills = task(easy_skills=400, hard_skills=400, default_share=rho).skills(seed=0)
        easy, hard = skills[skills["level"] == "easy"], skills[skills["level"] == "hard"]
        share = float((easy["answer"] == DEFAULT_ANSWER).mean())
        assert abs(share - rho) < 3 * np.sqrt(rho * (1 - rho) / 400)
        assert (hard["decoy"] == DEFAULT_ANSWER).all() and (hard["answer"] != DEFAULT_ANSWER).all()
        # Easy decoys are never the default, so rho alone sets how much Easy learning lands on it.
        assert (easy["decoy"] != DEFAULT_ANSWER).all() and (easy["decoy"] != easy["answer"]).all()
        assert easy["label_accuracy"].between(0.25, 0.65).all()
        assert hard["label_accuracy"].between(0.005, 0.08).all()
        # Log-uniform: the Hard median sits near the geometric mean of the range, far below its middle.
        assert hard["label_accuracy"].median() < 0.03


def test_pretraining_labels_are_right_with_each_skills_accuracy() -> None:
    lookup = task(easy_skills=2, hard_skills=2, hard_label_accuracy=[0.05, 0.05])
    skills = lookup.skills(seed=1).set_index("code")
    draw = lookup.pretraining_sampler(seed=1)
    rng = np.random.default_rng(0)
    drawn = pd.DataFrame([draw(rng) for _ in range(40000)], columns=["prompt", "label"])
    drawn["code"] = drawn["prompt"].str[:3]
    assert set(drawn["code"]) == set(skills.index)
    assert drawn["prompt"].str[3:5].nunique() == 100  # fresh distractors, not the pool's variants only
    for code, group in drawn.groupby("code"):
        right = float((group["label"] == skills.loc[code, "answer"]).mean())
        assert abs(right - skills.loc[code, "label_accuracy"]) < 4 * np.sqrt(0.25 / len(group))
        assert set(group["label"]) <= {skills.loc[code, "answer"], skills.loc[code, "decoy"]}


def one_digit_digest(lookup: SkillLookupTask, seed: int) -> str:
    """A digest of what a task draws: its skills, its pool and 2,000 pre-training draws from a fixed stream."""
    draw = lookup.pretraining_sampler(seed)
    rng = np.random.default_rng(7)
    digest = hashlib.sha256()
    digest.update(lookup.pool(seed).to_csv(index=False).encode())
    digest.update(lookup.skills(seed).to_csv(index=False).encode())
    digest.update(repr([draw(rng) for _ in range(2000)]).encode())
    return digest.hexdigest()[:16]


def test_one_answer_digit_draws_exactly_what_the_task_drew_before_answer_digits() -> None:
    """The existing presets name no `answer_digits`: their pools, base models and params must not change,
    or every finished skill-lookup study would rerun (or, worse, mix two tasks under one name)."""
    for name, expected in ONE_DIGIT_DIGESTS.items():
        config = merged(REPO / f"config/presets/{name}.yaml")
        validate_config(config, SCHEMA)
        block = config["problems"][SKILL_LOOKUP]
        assert "answer_digits" not in block  # the schema fills no default into the pool's params
        lookup = synthetic_task(SKILL_LOOKUP, block)
        assert lookup.answer_digits == 1 and lookup.sequence_length == 8
        assert one_digit_digest(lookup, config["seed"]) == expected, name


def test_k_digit_answers_have_k_digits_by_the_one_digit_rules() -> None:
    lookup = task(easy_skills=300, hard_skills=300, variants=2, answer_digits=3)
    skills = lookup.skills(seed=0)
    easy, hard = skills[skills["level"] == "easy"], skills[skills["level"] == "hard"]
    assert skills["answer"].str.fullmatch(r"\d{3}").all() and skills["decoy"].str.fullmatch(r"\d{3}").all()
    assert (hard["decoy"] == DEFAULT_ANSWER * 3).all() and not hard["answer"].str.contains(
        DEFAULT_ANSWER
    ).any()
    easy_digits = pd.DataFrame([list(a) for a in easy["answer"]])
    share = float((easy_digits == DEFAULT_ANSWER).to_numpy().mean())
    assert abs(share - 0.6) < 3 * np.sqrt(0.6 * 0.4 / easy_digits.size)  # rho per digit
    for answer, decoy in zip(easy["answer"], easy["decoy"], strict=True):
        assert DEFAULT_ANSWER not in decoy and all(a != d for a, d in zip(answer, decoy, strict=True))
    pool = validate_problem_table(lookup.pool(seed=0), SKILL_LOOKUP)
    assert pool["prompt"].str.fullmatch(r"\d{5}=").all() and pool["answer"].str.fullmatch(r"\d{3}").all()
    assert lookup.sequence_length == 10
    one_digit = task(easy_skills=300, hard_skills=300, variants=2)
    assert (pool["prompt"] == one_digit.pool(seed=0)["prompt"]).mean() > 0.99  # same codes, same distractors


def test_k_digit_pretraining_labels_are_right_with_each_skills_accuracy_and_mostly_near_misses() -> None:
    """Each digit is right with q_s^(1/k), independently, so the whole label is right with q_s (the base
    pass rate by design) and the wrong labels are mostly near-misses."""
    lookup = task(
        easy_skills=1,
        hard_skills=1,
        easy_label_accuracy=[0.5, 0.5],
        hard_label_accuracy=[0.1, 0.1],
        answer_digits=3,
    )
    skills = lookup.skills(seed=2).set_index("code")
    draw = lookup.pretraining_sampler(seed=2)
    rng = np.random.default_rng(0)
    drawn = pd.DataFrame([draw(rng) for _ in range(20000)], columns=["prompt", "label"])
    for code, group in drawn.groupby(drawn["prompt"].str[:3]):
        answer, decoy, accuracy = skills.loc[code, ["answer", "decoy", "label_accuracy"]]
        right_digits = np.array(
            [[a == b for a, b in zip(label, answer, strict=True)] for label in group["label"]]
        )
        assert abs(right_digits.all(axis=1).mean() - accuracy) < 4 * np.sqrt(
            accuracy * (1 - accuracy) / len(group)
        )
        assert np.allclose(right_digits.mean(axis=0), accuracy ** (1 / 3), atol=0.02)
        # A wrong digit is the decoy's, so the labels are the 2^3 mixes of answer and decoy.
        assert all(
            all(c in (a, d) for c, a, d in zip(label, answer, decoy, strict=True)) for label in group["label"]
        )
        near_miss = float((right_digits.sum(axis=1) == 2).mean())
        assert abs(near_miss - 3 * accuracy ** (2 / 3) * (1 - accuracy ** (1 / 3))) < 0.02


def test_validation_reserve_holds_held_out_variants_of_the_training_skills() -> None:
    pool = task(variants=50).pool(seed=0)
    difficulty = pool.assign(n_correct=0, n_samples=16, **{"avg@16": 0.0})
    order, reserved = validation_reserve(difficulty, seed=0, validation_share=0.2)
    held, rest = order[reserved], order[~reserved]
    assert not set(held["prompt"]) & set(rest["prompt"])
    assert set(held["prompt"].str[:3]) <= set(rest["prompt"].str[:3])


def test_pretraining_draws_from_the_task_and_sets_the_base_pass_rates(tmp_path: Path) -> None:
    """A small model pre-trained on 3 Easy skills (labels right 80 %) and 3 Hard ones (2 %) ends with the
    buckets by design: Easy answers likely, Hard skills' mass on their decoy, the default digit."""
    lookup = task(
        easy_skills=3, hard_skills=3, easy_label_accuracy=[0.8, 0.8], hard_label_accuracy=[0.02, 0.02]
    )
    spec = BaseModelSpec(32, 64, 1, 2, 1, train_steps=300, batch_size=64, learning_rate=3e-3, task=lookup)
    pretrain_base_model(spec, tmp_path / "model", seed=0)
    model = AutoModelForCausalLM.from_pretrained(tmp_path / "model")
    tokenizer = AutoTokenizer.from_pretrained(tmp_path / "model")
    assert model.config.max_position_embeddings == 4 * lookup.sequence_length
    pool = lookup.pool(seed=0)
    ids = tokenizer(list(pool["prompt"]), add_special_tokens=False, return_tensors="pt")["input_ids"]
    with torch.no_grad():
        probabilities = model(input_ids=ids).logits[:, -1].softmax(-1)
    answer = torch.tensor(tokenizer.convert_tokens_to_ids(list(pool["answer"])))
    p_answer = probabilities.gather(1, answer[:, None]).squeeze(1).numpy()
    p_default = probabilities[:, tokenizer.convert_tokens_to_ids(DEFAULT_ANSWER)].numpy()
    easy = pool["id"].str.startswith("easy").to_numpy()
    assert p_answer[easy].mean() > 0.6 and p_answer[~easy].mean() < 0.1
    assert p_default[~easy].mean() > 0.8


def test_the_addition_default_keeps_its_params_so_no_finished_study_reruns() -> None:
    block = DEFAULT["problems"]["synthetic_addition"]
    assert pool_params(DEFAULT) == {"task": block, "seed": DEFAULT["seed"]}
    assert pretraining_settings(DEFAULT) == {
        "base_model": {"builtin": DEFAULT["base_model"]["builtin"]},
        "problems": {"synthetic_addition": block},
    }
    assert pool_source(pool_params(DEFAULT)) == ADDITION
    assert base_model_spec(pretraining_settings(DEFAULT)).task == AdditionTask(24000, 1, 4)
    arm = merged(ARM)
    assert pool_source(pool_params(arm)) == SKILL_LOOKUP
    assert base_model_spec(pretraining_settings(arm)) == base_model_spec(arm)


def test_the_two_arms_differ_only_in_the_dial_and_the_results_root() -> None:
    arm, control = yaml.safe_load(ARM.read_text()), yaml.safe_load(CONTROL.read_text())
    assert "control" in control["results_root"] and "control" not in arm["results_root"]
    assert arm["problems"]["synthetic_skill_lookup"]["default_share"] == 0.6
    assert control["problems"]["synthetic_skill_lookup"]["default_share"] == 0.1
    for config in (arm, control):
        del config["results_root"]
        del config["problems"]["synthetic_skill_lookup"]["default_share"]
    assert arm == control
    for preset in (ARM, CONTROL):
        config = merged(preset)
        validate_config(config, SCHEMA)
        grid = check_config(config)
        assert {point.problem_set for point in grid} == {"mix"}
        assert problem_sets(config)["mix"]["recipe"] == "unregularized"
        assert evaluation_sets(config) == {"mix": ["easy", "hard"]}


def test_design_d2_arms_differ_only_in_the_width_and_the_results_root() -> None:
    """Design D2's dial is the width of the built-in model (section 20 of docs/log/headline-search.md): the
    control keeps the default's width, so its pre-training and pool are those of a default-width model."""
    arm, control = yaml.safe_load(ALIASED.read_text()), yaml.safe_load(ALIASED_CONTROL.read_text())
    assert "control" in control["results_root"] and "control" not in arm["results_root"]
    assert arm["base_model"]["builtin"] == {"hidden_size": 16, "intermediate_size": 32}
    assert control["base_model"]["builtin"] == {
        key: DEFAULT["base_model"]["builtin"][key] for key in ("hidden_size", "intermediate_size")
    }
    for config in (arm, control):
        del config["results_root"]
        del config["base_model"]
    assert arm == control
    arms = [merged(ALIASED), merged(ALIASED_CONTROL)]
    for config in arms:
        validate_config(config, SCHEMA)
        assert {point.problem_set for point in check_config(config)} == {"mix"}
    assert pool_params(arms[0]) == pool_params(arms[1])
    assert base_model_spec(arms[0]).task == base_model_spec(arms[1]).task
    assert base_model_spec(arms[0]).task.size == 300 * 66


def test_rare_success_presets_are_d1s_with_only_the_hard_label_accuracy_changed() -> None:
    """Section 21 of docs/log/headline-search.md: a separately named D1 setting, so D1's presets stay as they
    were and the rare-success arms differ from them, and from each other, in one key each."""
    pairs = [(ARM, RARE, 0.6), (CONTROL, RARE_CONTROL, 0.1)]
    for d1_path, rare_path, rho in pairs:
        d1, rare = yaml.safe_load(d1_path.read_text()), yaml.safe_load(rare_path.read_text())
        assert rare["results_root"] == d1["results_root"].replace("interference", "interference_rare")
        block = rare["problems"]["synthetic_skill_lookup"]
        assert block["hard_label_accuracy"] == [0.0005, 0.005] and block["default_share"] == rho
        for config in (d1, rare):
            del config["results_root"]
            del config["problems"]["synthetic_skill_lookup"]["hard_label_accuracy"]
        assert d1 == rare
        validate_config(merged(rare_path), SCHEMA)
        check_config(merged(rare_path))
    assert "control" in yaml.safe_load(RARE_CONTROL.read_text())["results_root"]


def test_multidigit_presets_are_d1s_with_three_digit_answers() -> None:
    """Design D3 (section 22 of docs/log/headline-search.md): D1's presets with `answer_digits: 3` and room for
    three digits and eos; its two arms differ from each other in rho and the results root only."""
    pairs = [(ARM, MULTIDIGIT, 0.6), (CONTROL, MULTIDIGIT_CONTROL, 0.1)]
    for d1_path, multidigit_path, rho in pairs:
        d1, multidigit = yaml.safe_load(d1_path.read_text()), yaml.safe_load(multidigit_path.read_text())
        assert multidigit["results_root"] == d1["results_root"].replace(
            "interference", "interference_multidigit"
        )
        block = multidigit["problems"][SKILL_LOOKUP]
        assert block.pop("answer_digits") == 3 and block["default_share"] == rho
        assert multidigit["sampling"] == {"max_new_tokens": 4}
        for config in (d1, multidigit):
            del config["results_root"], config["sampling"]
        assert d1 == multidigit
        config = merged(multidigit_path)
        validate_config(config, SCHEMA)
        assert {point.problem_set for point in check_config(config)} == {"mix"}
        assert base_model_spec(config).task.sequence_length == 10
    arm, control = yaml.safe_load(MULTIDIGIT.read_text()), yaml.safe_load(MULTIDIGIT_CONTROL.read_text())
    assert "control" in control["results_root"] and "control" not in arm["results_root"]
    for config in (arm, control):
        del config["results_root"], config["problems"][SKILL_LOOKUP]["default_share"]
    assert arm == control


def test_a_multidigit_answer_without_room_for_its_eos_is_refused() -> None:
    config = merged(MULTIDIGIT, sampling={"max_new_tokens": 3})
    validate_config(config, SCHEMA)
    with pytest.raises(ConfigError, match=r"sampling\.max_new_tokens=3 is fewer than the 4 tokens"):
        check_config(config)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"variants": 101}, r"problems\.synthetic_skill_lookup\.variants"),
        ({"default_share": 1.5}, r"problems\.synthetic_skill_lookup\.default_share"),
        ({"answer_digits": 0}, r"problems\.synthetic_skill_lookup\.answer_digits"),
        ({"easy_skills": 600, "hard_skills": 500}, r"exceeds the 1000 distinct 3-digit codes"),
        ({"hard_label_accuracy": [0.0, 0.08]}, r"hard_label_accuracy=\[0\.0, 0\.08\] must satisfy 0 < low"),
        (
            {"easy_skills": 10, "hard_skills": 10},
            r"problem_sets\.mix: train size 2000 exceeds the 1600 problems of problems\.synthetic_skill_lookup \(10",
        ),
    ],
)
def test_bad_settings_stop_with_the_key_named(changes: dict, message: str) -> None:
    config = merged(ARM, problems={"synthetic_skill_lookup": changes})
    with pytest.raises(ConfigError, match=message):
        validate_config(config, SCHEMA)
        check_config(config)


@pytest.mark.slow
def test_the_workflow_builds_the_pool_and_base_model_from_the_task(tmp_path: Path) -> None:
    for part in ["Snakefile", "rules", "workflow", "config", "envs", "profiles"]:
        source = REPO / part
        (shutil.copytree if source.is_dir() else shutil.copy)(source, tmp_path / part)
    (tmp_path / "short.yaml").write_text("base_model: {builtin: {train_steps: 20}}\n")
    root = "results_interference"
    targets = [f"{root}/problems/pool.parquet", f"{root}/base_model/model"]
    result = subprocess.run(
        ["snakemake", "--cores", "1", *targets, "--configfile", str(ARM.relative_to(REPO)), "short.yaml"],
        check=False,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "PYTHONPATH": str(REPO / "src")},
    )
    assert result.returncode == 0, result.stderr[-4000:]
    arm = merged(ARM)
    expected = synthetic_task(SKILL_LOOKUP, arm["problems"][SKILL_LOOKUP]).pool(arm["seed"])
    assert pd.read_parquet(tmp_path / targets[0]).equals(expected)
    model = AutoModelForCausalLM.from_pretrained(tmp_path / targets[1])
    assert model.config.max_position_embeddings == 4 * base_model_spec(arm).task.sequence_length
