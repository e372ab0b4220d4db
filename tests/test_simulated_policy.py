"""The simulated policy: TRL's advantage and loss gradient, the optimizer's schedule, exact metrics, determinism,
the tabular limit and the preset's errors."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
import yaml
from transformers import get_constant_schedule_with_warmup
from trl.trainer.utils import entropy_from_logits, nanstd

from isocompute.cli import main
from isocompute.mechanism.simulated_policy import (
    Channels,
    SimulatedPolicies,
    SimulationError,
    Update,
    base_logits,
    grpo_advantages,
    logit_gradient,
    softmax,
    unit_features,
)
from isocompute.mechanism.simulated_study import check_preset, exact_metrics, load_preset, simulate
from isocompute.sampling.metrics import summarize_counts

PRESET = Path(__file__).parents[1] / "config" / "simulated" / "simulated.yaml"


def recipe(loss_type: str = "grpo", kl_coef: float = 0.05, entropy_coef: float = 0.02, temperature: float = 0.7) -> Update:
    return Update(lr=0.01, warmup_steps=3, kl_coef=kl_coef, entropy_coef=entropy_coef, loss_type=loss_type,
                  max_completion_length=5, max_grad_norm=1.0, temperature=temperature)  # fmt: skip


def trl_advantages(rewards: torch.Tensor, n: int) -> torch.Tensor:
    """TRL 1.16's `sum_then_normalize` group advantage, line for line (scale_rewards = group)."""
    mean = torch.nanmean(rewards.view(-1, n), dim=1).repeat_interleave(n, dim=0)
    std = nanstd(rewards.view(-1, n), dim=1).repeat_interleave(n, dim=0)
    return (rewards - mean) / (std + 1e-4)


def trl_loss(logits: torch.Tensor, ref: torch.Tensor, samples: torch.Tensor, advantages: torch.Tensor, update: Update) -> torch.Tensor:
    """TRL 1.16's `_compute_loss` for one-token completions, on-policy (old logps = logps.detach())."""
    n = samples.shape[1]
    scaled = logits.repeat_interleave(n, dim=0) / update.temperature
    logps = torch.log_softmax(scaled, -1).gather(-1, samples.reshape(-1, 1))
    ref_logps = torch.log_softmax(ref.repeat_interleave(n, dim=0) / update.temperature, -1).gather(-1, samples.reshape(-1, 1))
    mask = torch.ones_like(logps)
    adv = advantages.reshape(-1, 1)
    coef_1 = torch.exp(logps - logps.detach())
    coef_2 = torch.clamp(coef_1, 1 - 0.2, 1 + 0.2)
    per_token = -torch.min(coef_1 * adv, coef_2 * adv)
    if update.kl_coef:
        per_token = per_token + update.kl_coef * (torch.exp(ref_logps - logps) - (ref_logps - logps) - 1)
    if update.loss_type == "grpo":
        loss = ((per_token * mask).sum(-1) / mask.sum(-1).clamp(min=1.0)).mean()
    elif update.loss_type == "dr_grpo":
        loss = (per_token * mask).sum() / (per_token.size(0) * update.max_completion_length)
    else:
        loss = (per_token * mask).sum() / mask.sum().clamp(min=1.0)
    entropies = entropy_from_logits(scaled).reshape(-1, 1)
    return loss - update.entropy_coef * (entropies * mask).sum() / mask.sum().clamp(min=1.0)


@pytest.mark.parametrize("n", [2, 3, 8])
def test_advantages_match_trl_on_random_groups(n: int) -> None:
    rng = np.random.default_rng(n)
    rewards = (rng.random((50, n)) < rng.random((50, 1))).astype(float)
    expected = trl_advantages(torch.from_numpy(rewards.reshape(-1)), n).numpy().reshape(50, n)
    # TRL's Bessel factor count / (count - 1) is a float32 (count is an integer tensor): agreement to ~1e-8.
    np.testing.assert_allclose(grpo_advantages(rewards), expected, rtol=1e-7, atol=1e-12)


@pytest.mark.parametrize(
    "update",
    [recipe(), recipe("dr_grpo"), recipe("bnpo", kl_coef=0.0), recipe("dapo", entropy_coef=0.0, temperature=1.0)],
    ids=["grpo_kl_entropy", "dr_grpo", "bnpo_entropy", "dapo_plain"],
)
def test_logit_gradient_matches_autograd_of_trl_loss(update: Update) -> None:
    """The simulator's closed-form gradient equals torch autograd of TRL's loss on a tiny softmax policy."""
    rng = np.random.default_rng(7)
    problems, answers, n = 6, 5, 4
    logits = rng.normal(size=(problems, answers)) * 2
    ref = logits + rng.normal(size=(problems, answers)) * 0.5
    samples = np.stack([rng.choice(answers, n, p=p) for p in softmax(logits / update.temperature)])
    rewards = (samples == rng.integers(0, answers, (problems, 1))).astype(float)
    advantages = grpo_advantages(rewards)
    leaf = torch.tensor(logits, requires_grad=True)
    trl_loss(leaf, torch.tensor(ref), torch.from_numpy(samples), torch.from_numpy(advantages), update).backward()
    ours = logit_gradient(logits, ref, samples, advantages, update, batch=problems * n)
    np.testing.assert_allclose(ours, leaf.grad.numpy(), rtol=1e-9, atol=1e-12)


def test_learning_rate_follows_transformers_constant_with_warmup() -> None:
    """The first step runs at lr 0, then linearly up to lr at step warmup + 1, as the pipeline's scheduler."""
    update = recipe()
    parameter = torch.nn.Parameter(torch.zeros(1))
    optimizer = torch.optim.AdamW([parameter], lr=update.lr)
    schedule = get_constant_schedule_with_warmup(optimizer, update.warmup_steps)
    for step in range(1, 8):
        assert update.lr_at(step) == pytest.approx(optimizer.param_groups[0]["lr"])
        optimizer.step()
        schedule.step()


def policies(channels: Channels, seeds: list[int], n: int = 4, b_problem: int = 3, update: Update | None = None) -> SimulatedPolicies:
    rng = np.random.default_rng(0)
    problems, answers = 12, 4
    correct = rng.integers(0, answers, problems)
    base = base_logits(rng.uniform(0.2, 0.7, problems), correct, answers, 1.0)
    replicas = len(seeds)
    return SimulatedPolicies(
        base=np.broadcast_to(base, (replicas, problems, answers)),
        correct=np.broadcast_to(correct, (replicas, problems)),
        features=np.stack([unit_features(problems, 6, channels.overlap, np.random.default_rng(1))] * replicas),
        channels=[channels] * replicas,
        train=np.arange(8),
        update=update or recipe(temperature=1.0),
        b_problem=b_problem,
        n=n,
        seeds=seeds,
    )


def test_steps_are_torch_adamw_on_the_trl_gradient() -> None:
    """A replica's parameters, step after step, equal torch AdamW (clipping, warm-up) fed autograd of TRL's loss
    on the same rollouts."""
    sim = policies(Channels(private=0.7, features=1.3, overlap=0.4, bias=0.9), [5], update=recipe(temperature=1.0))
    theta = torch.zeros(8, 4, dtype=torch.float64, requires_grad=True)
    W = torch.zeros(4, 6, dtype=torch.float64, requires_grad=True)
    b = torch.zeros(4, dtype=torch.float64, requires_grad=True)
    optimizer = torch.optim.AdamW([theta, W, b], lr=sim.update.lr, weight_decay=0.0)
    schedule = get_constant_schedule_with_warmup(optimizer, sim.update.warmup_steps)
    features, base = torch.tensor(sim.features[0]), torch.tensor(sim.base[0])
    for _ in range(6):
        step = sim.advance()
        problems, samples = step["problems"][0], step["samples"][0]
        logits = base[problems] + 0.7 * theta[problems] + 1.3 * features[problems] @ W.T + 0.9 * b
        rewards = (samples == sim.correct[0, problems][:, None]).astype(float)
        optimizer.zero_grad()
        advantages = torch.from_numpy(grpo_advantages(rewards))
        trl_loss(logits, base[problems], torch.from_numpy(samples), advantages, sim.update).backward()
        torch.nn.utils.clip_grad_norm_([theta, W, b], sim.update.max_grad_norm)
        optimizer.step()
        schedule.step()
        np.testing.assert_allclose(sim.params["theta"][0], theta.detach().numpy(), atol=1e-10)
        np.testing.assert_allclose(sim.params["W"][0], W.detach().numpy(), atol=1e-10)
        np.testing.assert_allclose(sim.params["b"][0, 0], b.detach().numpy(), atol=1e-10)
    assert np.abs(sim.params["W"]).max() > 1e-4 and np.abs(sim.params["b"]).max() > 1e-4  # the shared channels moved


def test_each_epoch_visits_every_problem_once_in_distinct_batches() -> None:
    sim = policies(Channels(1.0, 0.0, 0.0, 0.0), [0], b_problem=3)
    chunks = [sim._next_problems()[0] for _ in range(4)]  # 8 problems: 2 whole batches per epoch
    for epoch in (chunks[:2], chunks[2:]):
        seen = np.concatenate(epoch)
        assert len(set(seen.tolist())) == 6 and set(seen.tolist()) <= set(range(8))


def test_tabular_limit_leaves_held_out_problems_and_other_rows_alone() -> None:
    sim = policies(Channels(private=1.0, features=0.0, overlap=0.5, bias=0.0), [3])
    before = sim.pass_rates()
    for _ in range(30):
        sim.advance()
    after = sim.pass_rates()
    np.testing.assert_array_equal(after[0, 8:], before[0, 8:])  # held-out problems: no private row, no sharing
    assert np.abs(after[0, :8] - before[0, :8]).max() > 0.01
    assert np.all(sim.params["W"] == 0) and np.all(sim.params["b"] == 0)


def test_shared_channels_move_held_out_problems() -> None:
    sim = policies(Channels(private=1.0, features=1.0, overlap=0.5, bias=1.0), [3])
    before = sim.pass_rates()
    for _ in range(30):
        sim.advance()
    assert np.abs(sim.pass_rates()[0, 8:] - before[0, 8:]).max() > 1e-3


def test_exact_metrics_are_the_expectations_of_the_count_metrics() -> None:
    """avg@k, best@k, worst@k of exact p equal the mean of the count-based metrics over Binomial(k, p) counts."""
    from scipy.stats import binom

    p, k = np.array([0.0, 0.1, 0.5, 0.93, 1.0]), 4
    expected: dict[str, float] = {}
    for counts in np.ndindex(*(k + 1,) * len(p)):
        weight = np.prod(binom.pmf(counts, k, p))
        for name, value in summarize_counts(np.array(counts), k).items():
            expected[name] = expected.get(name, 0.0) + weight * value
    exact = exact_metrics(p, k)
    assert exact == pytest.approx(expected, abs=1e-12)
    assert exact["best@4"] == pytest.approx(np.mean(1 - (1 - p) ** 4))


def tiny_preset(tmp_path: Path, **changes: object) -> dict:
    config = yaml.safe_load(PRESET.read_text())
    config.update(results_root=str(tmp_path / "results_simulated"))
    config["problems"].update(train_size=40, val_size=20)
    config["training"].update(compute_max=2048, checkpoint_points=4)
    config["grid"].update(n=[2, 8], seeds=[0, 1])
    config["interference"] = {"tabular": config["interference"]["tabular"], "shared": {"private": 1.0, "features": 1.0, "overlap": 0.5, "bias": 1.0}}
    config["fits"].update(bootstrap=5, zero_pass_n=[2, 8])
    for key, value in changes.items():
        config[key] = value
    check_preset(config)
    return config


def test_simulation_is_deterministic_and_independent_of_the_batch_and_workers(tmp_path: Path) -> None:
    one = tiny_preset(tmp_path / "a")
    simulate(one, log=lambda _: None)
    two = tiny_preset(tmp_path / "b")
    simulate(two, workers=2, log=lambda _: None)
    run = "evaluation/shared/bp16_n2_seed1"
    names = ("evals.parquet", "val_counts.parquet", "on_train/evals.parquet", "train_pass_rates.parquet")
    first = {name: pd.read_parquet(Path(one["results_root"]) / run / name) for name in names}
    for name in names:
        pd.testing.assert_frame_equal(first[name], pd.read_parquet(Path(two["results_root"]) / run / name))
    seeds = [pd.read_parquet(Path(one["results_root"]) / f"evaluation/shared/bp16_n2_seed{s}/on_train/evals.parquet") for s in (0, 1)]
    assert not np.allclose(seeds[0]["avg@4"], seeds[1]["avg@4"])  # the seed changes the run
    # seed 1 alone, in the same root: the same numbers, and the gathered table holds only this grid's runs
    alone = tiny_preset(tmp_path / "a")
    alone["grid"]["seeds"] = [1]
    simulate(alone, log=lambda _: None)
    for name in names:
        pd.testing.assert_frame_equal(first[name], pd.read_parquet(Path(one["results_root"]) / run / name))
    assert set(pd.read_csv(Path(one["results_root"]) / "evaluation/shared/evals.csv")["seed"]) == {1}


def test_tables_have_the_pipeline_columns_and_say_simulated_policy(tmp_path: Path) -> None:
    config = tiny_preset(tmp_path)
    simulate(config, log=lambda _: None)
    run = Path(config["results_root"]) / "evaluation/tabular/bp16_n8_seed0"
    evals = pd.read_parquet(run / "evals.parquet")
    keys = ["run", "problem_set", "b_problem", "n", "seed", "recipe", "lr_rule", "lr_base", "lr_batch_ref", "n_baseline",
            "step", "compute_rollouts", "compute_tokens"]  # fmt: skip
    assert list(evals.columns) == [*keys, "avg@4", "best@4", "worst@4", "mean_response_tokens", "policy"]
    assert set(evals["policy"]) == {"simulated policy"}
    counts = pd.read_parquet(run / "val_counts.parquet")
    assert list(counts.columns) == ["id", "n_correct", "mean_response_tokens", *keys, "policy"]
    assert counts["n_correct"].between(0, 4).all() and counts.groupby("step")["id"].nunique().eq(20).all()
    assert len(pd.read_parquet(run / "train_pass_rates.parquet").query("step == step.max()")) == 40
    # the tabular limit: held-out problems never move
    assert evals["avg@4"].nunique() == 1
    assert pd.read_parquet(run / "on_train/evals.parquet")["avg@4"].iloc[-1] != evals["avg@4"].iloc[-1]


def test_simulate_command_fits_every_level(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tiny_preset(tmp_path)
    preset = tmp_path / "preset.yaml"
    preset.write_text(yaml.safe_dump(config, sort_keys=False))
    assert main(["simulate", str(preset), "--workers", "1"]) == 0  # one process; the refit below in two
    root = Path(config["results_root"])
    for level in ("tabular", "shared"):
        assert (root / f"fits/{level}/bp16/fits.json").exists() and (root / f"fits/{level}/bp16/on_train/fits.json").exists()
    table = pd.read_csv(root / "figures/phase_diagram_train.csv")
    assert list(table["level"]) == ["tabular", "shared"] and set(table["policy"]) == {"simulated policy"}
    assert (root / "figures/phase_diagram.png").stat().st_size > 0
    skew = pd.read_csv(root / "figures/zero_pass_skew.csv")
    assert set(skew["level"]) == {"tabular", "shared"} and (skew["n2"].between(0, 1)).all()
    assert "tabular bp16 train:" in capsys.readouterr().out
    first = pd.read_csv(root / "fits/n_star.csv")
    assert main(["simulate", str(preset), "--fit-only", "--workers", "2"]) == 0  # a refit, in two processes
    pd.testing.assert_frame_equal(pd.read_csv(root / "fits/n_star.csv"), first)
    assert (root / "timings_fit.json").exists()


def test_simulate_uses_every_available_core_unless_told(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[int] = []
    monkeypatch.setattr("isocompute.mechanism.simulated_study.run_preset", lambda path, workers, **_: seen.append(workers))
    assert main(["simulate", "preset.yaml"]) == 0 and main(["simulate", "preset.yaml", "--workers", "1"]) == 0
    assert seen == [len(os.sched_getaffinity(0)), 1]


@pytest.mark.parametrize(
    ("section", "key", "value", "message"),
    [
        ("training", "lr_base", None, "training.lr_base: missing"),
        ("training", "loss_type", "sapo", "training.loss_type"),
        ("training", "lr_rule", "cubic", "training.lr_rule"),
        ("policy", "answers", "eight", "policy.answers"),
        ("grid", "n", [], "grid.n"),
        ("fits", "zero_pass_n", [4, 3], "fits.zero_pass_n"),
    ],
)
def test_preset_errors_name_the_key(tmp_path: Path, section: str, key: str, value: object, message: str) -> None:
    config = yaml.safe_load(PRESET.read_text())
    if value is None:
        del config[section][key]
    else:
        config[section][key] = value
    with pytest.raises(SimulationError, match=message.replace(".", r"\.")):
        check_preset(config)


def test_preset_errors_for_levels_and_initial_pass_rates(tmp_path: Path) -> None:
    config = yaml.safe_load(PRESET.read_text())
    config["interference"]["tabular"].pop("bias")
    with pytest.raises(SimulationError, match=r"interference\.tabular\.bias"):
        check_preset(config)
    config = yaml.safe_load(PRESET.read_text())
    config["problems"]["initial"] = {"table": str(tmp_path / "missing.parquet")}
    config["results_root"] = str(tmp_path / "out")
    path = tmp_path / "preset.yaml"
    path.write_text(yaml.safe_dump(config))
    with pytest.raises(SimulationError, match=r"problems\.initial\.table: .*missing\.parquet"):
        simulate(load_preset(path))
    assert not (tmp_path / "out" / "evaluation").exists() or not any((tmp_path / "out" / "evaluation").rglob("evals.parquet"))


def test_initial_pass_rates_from_a_difficulty_table(tmp_path: Path) -> None:
    table = pd.DataFrame({"id": [f"p{i}" for i in range(30)], "n_correct": np.arange(30) % 17, "n_samples": 16})
    table.to_parquet(tmp_path / "problem_difficulty.parquet")
    config = tiny_preset(tmp_path)
    config["problems"].update(train_size=6, val_size=4, initial={"table": str(tmp_path / "problem_difficulty.parquet"), "avg_range": [0.3, 0.6]})
    from isocompute.mechanism.simulated_study import make_problems

    rates = make_problems(config).pass_rates
    assert len(rates) == 10 and 0.05 < rates.mean() < 0.9
    config["problems"]["train_size"] = 20
    with pytest.raises(SimulationError, match=r"problems\.initial\.avg_range: \d+ problems"):
        make_problems(config)
