"""The interference probe on the tiny base model: cosines, the GRPO gradient's sign, the optimizer state."""

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from transformers import Trainer

from isocompute.cli import main
from isocompute.mechanism.probe import (
    Group,
    Policy,
    ProbeError,
    ProbeSettings,
    checkpoint_second_moment,
    cosine_matrix,
    grpo_advantages,
    minibatch_second_moment,
    preconditioner,
    probe,
    read_problems,
)
from isocompute.study.specs import SamplingSpec

SAMPLING = SamplingSpec(temperature=1.0, top_p=1.0, max_new_tokens=4)
SMALL = ProbeSettings(lr=1e-3, problems=6, n=4, b_problem=4, minibatches=2)


@pytest.fixture(scope="module")
def policy(tiny_model: str) -> Policy:
    return Policy(tiny_model, SAMPLING, "exact")


def test_grpo_advantages_follow_trl_formula() -> None:
    """(r - group mean) / (unbiased group std + 1e-4); a group of equal rewards carries no advantage."""
    rng = np.random.default_rng(0)
    rewards = rng.integers(0, 2, size=(50, 6)).astype(float)
    rewards[0] = 1.0
    expected = (rewards - rewards.mean(1, keepdims=True)) / (rewards.std(1, ddof=1, keepdims=True) + 1e-4)
    got = grpo_advantages(torch.tensor(rewards)).numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-6)
    assert not got[0].any()


def test_cosines_lie_in_bounds_and_identical_problems_agree(policy: Policy, reachable: pd.DataFrame) -> None:
    problems = reachable.head(6).reset_index(drop=True)
    problems = pd.concat([problems, problems.iloc[[2]].assign(id="copy")], ignore_index=True)
    gradients = policy.answer_gradients(problems)
    v, shares = minibatch_second_moment(policy, reachable, SMALL)
    assert len(shares) == SMALL.minibatches and v.shape == gradients[0].shape
    assert (v > 0).any() and min(shares) < 1.0
    for metric in (None, preconditioner(v, 1e-8)):
        cosines = cosine_matrix(gradients, metric)
        finite = cosines[~np.isnan(cosines)]
        assert finite.min() >= -1.0 and finite.max() <= 1.0
        assert cosines[2, 6] == pytest.approx(1.0, abs=1e-5)
        assert cosines[0, 1] < 0.999  # different problems point in different directions


def one_step_change(policy: Policy, problem: pd.Series, rewards: list[float]) -> tuple[float, float]:
    """One Adam-like step along the GRPO gradient of a constructed group (the answer and a wrong answer):
    the change of log p(answer), exact and to first order."""
    prompt = policy.prompt_ids(problem["prompt"])
    wrong = str(int(problem["answer"]) + 1)
    group = Group(prompt, [policy.answer_ids(problem["answer"]), policy.answer_ids(wrong)], rewards)
    gradient = policy.grpo_gradient([group], "grpo")
    metric = preconditioner(gradient**2, 1e-8)  # Adam's first step: v = g^2
    step = -1e-4 * metric * gradient  # the default's lr; at 1e-3 this sign-like step leaves the linear range
    table = problem.to_frame().T
    before, after = policy.step_change(step, table)
    first_order = float(policy.answer_gradients(table)[0] @ step)
    return float(after - before), first_order


def test_one_step_along_a_group_moves_the_rewarded_answer(policy: Policy, pool: pd.DataFrame) -> None:
    problem = pool.iloc[0]
    up, up_linear = one_step_change(policy, problem, [1.0, 0.0])
    down, down_linear = one_step_change(policy, problem, [0.0, 1.0])
    assert up > 0 and up_linear > 0
    assert down < 0 and down_linear < 0
    assert up == pytest.approx(up_linear, rel=0.2) and down == pytest.approx(down_linear, rel=0.2)
    assert one_step_change(policy, problem, [1.0, 1.0]) == (0.0, 0.0)  # no variance, no step
    after = policy.answer_log_probs(problem.to_frame().T)
    assert policy.step_change(torch.zeros(policy.size), problem.to_frame().T)[0] == pytest.approx(after)


def test_probe_reports_blocks_and_one_step_changes(tiny_model: str, reachable: pd.DataFrame) -> None:
    sets = {"small": reachable.iloc[:20], "large": reachable.iloc[20:]}
    result, pairs = probe(tiny_model, sets, SMALL, SAMPLING, "exact")
    json.dumps(result)
    assert set(result["cosines"]["adam"]) == {"all", "small x small", "small x large", "large x large"}
    assert len(pairs) == math.comb(12, 2)
    assert pairs[["cosine_adam", "cosine_plain"]].abs().max().max() <= 1.0
    assert result["cosines"]["adam"]["small x large"]["pairs"] == 36
    steps = {(s["along"], s["on"]): s for s in result["one_step"]}
    assert set(steps) == {(a, b) for a in sets for b in sets}
    for entry in steps.values():
        assert 0.0 <= entry["share_of_problems_down"] <= 1.0
    assert result["preconditioner"]["source"] == "grpo_minibatches"
    assert result["preconditioner"]["share_never_moved"] < 1.0


def test_checkpoint_optimizer_state_is_matched_to_parameters(
    policy: Policy, pool: pd.DataFrame, tmp_path: Path
) -> None:
    """The Trainer's AdamW after one step holds v = (1 - beta2) g^2: bias-corrected, that is g^2 per parameter."""
    model = policy.model
    decay = set(Trainer.get_decay_parameter_names(None, model))
    named = list(model.named_parameters())
    groups = [
        {"params": [p for n, p in named if n in decay], "weight_decay": 0.1},
        {"params": [p for n, p in named if n not in decay], "weight_decay": 0.0},
    ]
    saved = [p.detach().clone() for p in policy.parameters]
    optimizer = torch.optim.AdamW(groups, lr=1e-3)
    table = pool.head(3)
    gradient = policy.answer_gradients(table).sum(0)
    offset = 0
    for param in policy.parameters:
        param.grad = gradient[offset : offset + param.numel()].view_as(param).clone()
        offset += param.numel()
    optimizer.step()
    torch.save(optimizer.state_dict(), tmp_path / "optimizer.pt")
    with torch.no_grad():
        for param, value in zip(policy.parameters, saved):
            param.copy_(value)
            param.grad = None
    v, eps, steps = checkpoint_second_moment(policy, tmp_path)
    assert steps == 1 and eps == 1e-8
    torch.testing.assert_close(v, gradient**2, rtol=1e-4, atol=1e-12)
    with pytest.raises(ProbeError, match="no optimizer state"):
        checkpoint_second_moment(policy, tmp_path / "missing")


def test_bad_inputs_fail_before_any_gradient(tiny_model: str, pool: pd.DataFrame, tmp_path: Path) -> None:
    path = tmp_path / "table.parquet"
    pool.drop(columns="answer").to_parquet(path)
    with pytest.raises(ProbeError, match=r"table.parquet: missing column\(s\) \['answer'\]"):
        read_problems(path)
    tight = ProbeSettings(lr=1e-3, problems=6, max_gradient_bytes=1)
    with pytest.raises(ProbeError, match="probe fewer problems"):
        probe(tiny_model, {"all": pool}, tight, SAMPLING, "exact")
    assert main(["probe", tiny_model, "no-name", "--out", str(tmp_path)]) == 2


def test_group_gradients_average_to_the_batch_gradient(policy: Policy, reachable: pd.DataFrame) -> None:
    """The noise scale's rows (`checkpoint_group_gradients`): one per problem's own group, zero exactly for
    the groups whose rewards are all equal, and under the grpo loss (a mean over equal-sized groups) their
    mean is TRL's gradient on the whole batch of the same groups."""
    from isocompute.mechanism.noise_scale import checkpoint_group_gradients

    problems = reachable.head(12)
    groups = policy.sample_groups(problems, 4, seed=3, batch_size=1024)
    rows = checkpoint_group_gradients(policy, problems, 4, seed=3, loss_type="grpo")
    assert rows.shape == (12, policy.size)
    silent = [len(set(g.rewards)) == 1 for g in groups]
    assert 0 < sum(silent) < 12
    assert [not row.any() for row in rows] == silent
    batch = policy.grpo_gradient(groups, "grpo").double().numpy()
    # Both sides are float32 sums in different orders (12 rows averaged, one batch): elements near zero agree
    # to float32's resolution at the gradient's scale, not to 1e-9 (seen: 2.9e-9 apart, on 3 of 9,856).
    resolution = 12 * np.finfo(np.float32).eps * np.abs(batch).max()
    np.testing.assert_allclose(rows.mean(0), batch, rtol=1e-4, atol=resolution)
