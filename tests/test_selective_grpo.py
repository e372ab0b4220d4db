"""The zero-variance filter and the decoupled baseline: the subclass's loss on a hand-made batch of a tiny
real model, term by term against a hand computation, and TRL's own advantages over every sampled rollout."""

from __future__ import annotations

import copy
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import torch
from trl.trainer.utils import split_tensor_dict

from isocompute.sampling.answers import reward_function
from isocompute.study.grid import GridPoint
from isocompute.study.specs import LaunchSpec, Recipe, SamplingSpec, TrainingSpec
from isocompute.training.launch import free_port
from isocompute.training.selective_grpo import LossSelection, SelectiveGRPOTrainer
from isocompute.training.trainer import build_trainer
from isocompute.training.trl_args import grpo_args

# Two problems, four completions each: the first group all correct (zero variance), the second mixed.
REWARDS = torch.tensor([1.0, 1.0, 1.0, 1.0, 0.0, 1.0, 0.0, 1.0])
VARIES = [False] * 4 + [True] * 4
# As TRL gives them: 0 for the zero-variance group; hand-picked (not summing to 0) for the other.
ADVANTAGES = torch.tensor([0.0, 0.0, 0.0, 0.0, -0.8, 1.2, -0.3, 0.9])
LENGTHS = [5, 3, 4, 2, 5, 1, 3, 4]  # completion tokens: token means and sequence means differ
BETA, ENTROPY = 0.3, 0.2
DECOUPLED = GridPoint("easy", 2, 2, 0, n_baseline=4)  # 2 of 4 rollouts per problem in the loss
SELECTIONS = {"full": (LossSelection("full"), None), "decoupled": (LossSelection(None, 2, 0), DECOUPLED)}


def spec(loss_type: str = "grpo") -> TrainingSpec:
    return TrainingSpec(1e-4, 8, 0, 8, 64, 2, loss_type, SamplingSpec(1.0, 1.0, 5))


def trainer(tiny_model: str, pool: pd.DataFrame, tmp_path: Path, selection: LossSelection | None,
            loss_type: str = "grpo", per_device_max: int = 8, point: GridPoint | None = None,
            processes: int = 1) -> object:  # fmt: skip
    """A trainer of the real model with KL and entropy terms, as `build_trainer` makes it for a run."""
    launch = LaunchSpec(processes, per_device_max, activation_checkpointing=False, accelerate_config=None)
    point = point or GridPoint("easy", 2, 4, 0)
    args = grpo_args(point, spec(loss_type), Recipe(BETA, ENTROPY), tmp_path, launch)
    built = build_trainer(tiny_model, pool, args, [], reward_function("exact"), selection=selection)
    built.model.train()
    built.current_gradient_accumulation_steps = args.gradient_accumulation_steps
    return built


def hand_batch(built: object, pool: pd.DataFrame) -> dict[str, torch.Tensor]:
    """TRL's batch layout for the eight completions, with reference log-probs a known shift from the model's."""
    tokenizer = built.processing_class
    prompts = [tokenizer(p)["input_ids"] for p in pool["prompt"][:2]]
    width = max(map(len, prompts))
    prompt_ids = torch.tensor([[tokenizer.pad_token_id] * (width - len(p)) + p for p in prompts for _ in range(4)])
    prompt_mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts for _ in range(4)])
    completion_ids = torch.randint(3, 12, (8, 5), generator=torch.Generator().manual_seed(0))
    completion_mask = torch.tensor([[1] * n + [0] * (5 - n) for n in LENGTHS])
    batch = {"prompt_ids": prompt_ids, "prompt_mask": prompt_mask, "completion_ids": completion_ids,
             "completion_mask": completion_mask, "advantages": ADVANTAGES.clone(),
             "num_items_in_batch": completion_mask.sum()}  # fmt: skip
    logps, _ = forward(built, batch)
    shift = torch.linspace(-0.4, 0.5, 40).view(8, 5)
    batch["ref_per_token_logps"] = logps.detach() + shift
    return batch


def forward(built: object, batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    """The model's per-token log-probs and entropies of the completions (the loss's own forward)."""
    input_ids = torch.cat([batch["prompt_ids"], batch["completion_ids"]], dim=1)
    attention = torch.cat([batch["prompt_mask"], batch["completion_mask"]], dim=1)
    logps, entropies, _ = built._get_per_token_logps_and_entropies(
        built.model, input_ids, attention, batch["completion_ids"].size(1), compute_entropy=True
    )
    return logps, entropies


def hand_terms(built: object, batch: dict[str, torch.Tensor], policy: list[bool], regular: list[bool],
               policy_over_all: bool) -> dict[str, float]:  # fmt: skip
    """Each term by hand, on-policy (TRL's ratio is 1, so a token's policy loss is -A): the policy term's
    mean of per-completion means, over all completions or over its own; KL's mean of per-completion means
    and entropy's mean over tokens, over the regularized completions."""
    logps, entropies = forward(built, batch)
    mask = batch["completion_mask"].float()
    delta = batch["ref_per_token_logps"] - logps
    kl = ((torch.exp(delta) - delta - 1) * mask).sum(1) / mask.sum(1)
    in_policy = torch.tensor(policy)
    in_regularizers = torch.tensor(regular)
    policy_count = len(policy) if policy_over_all else int(in_policy.sum())
    return {
        "policy": float(-ADVANTAGES[in_policy].sum() / policy_count),
        "kl": float(kl[in_regularizers].mean()),
        "entropy": float((entropies * mask)[in_regularizers].sum() / mask[in_regularizers].sum()),
    }


def loss_terms(built: object, batch: dict[str, torch.Tensor]) -> dict[str, float]:
    """The trainer's loss split into its terms: by switching the KL and entropy coefficients off and on."""

    def loss(beta: float, entropy: float) -> float:
        built.beta, built.entropy_coef = beta, entropy
        return float(built._compute_loss(built.model, dict(batch)))

    policy = loss(0.0, 0.0)
    return {"policy": policy, "kl": (loss(BETA, 0.0) - policy) / BETA, "entropy": (policy - loss(0.0, ENTROPY)) / ENTROPY}


def selected(built: SelectiveGRPOTrainer, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    return {**batch, **built.select(REWARDS, batch)}


def test_trl_without_the_filter_matches_the_hand_computation(tiny_model: str, pool: pd.DataFrame, tmp_path: Path) -> None:
    """The control: TRL's own loss, every completion in every term."""
    built = trainer(tiny_model, pool, tmp_path, None)
    batch = hand_batch(built, pool)
    expected = hand_terms(built, batch, [True] * 8, [True] * 8, policy_over_all=True)
    assert loss_terms(built, batch) == pytest.approx(expected, rel=1e-4, abs=1e-6)


def test_regularizers_filter_keeps_trls_policy_term_and_regularizes_only_varying_groups(
    tiny_model: str, pool: pd.DataFrame, tmp_path: Path
) -> None:
    built = trainer(tiny_model, pool, tmp_path, LossSelection("regularizers"))
    batch = selected(built, hand_batch(built, pool))
    assert batch["in_regularizers"].tolist() == [float(v) for v in VARIES] and "policy_weight" not in batch
    expected = hand_terms(built, batch, [True] * 8, VARIES, policy_over_all=True)
    assert loss_terms(built, batch) == pytest.approx(expected, rel=1e-4, abs=1e-6)
    # The policy term is TRL's: -(sum of advantages) / 8 completions, not / 4.
    assert expected["policy"] == pytest.approx(-1.0 / 8)


def test_full_filter_takes_zero_variance_groups_out_of_every_term(
    tiny_model: str, pool: pd.DataFrame, tmp_path: Path
) -> None:
    built = trainer(tiny_model, pool, tmp_path, LossSelection("full"))
    batch = selected(built, hand_batch(built, pool))
    assert float(batch["policy_weight"]) == pytest.approx(1 / 4) and float(batch["kl_weight"]) == pytest.approx(1 / 4)
    assert float(batch["entropy_weight"]) == pytest.approx(1 / sum(LENGTHS[4:]))
    expected = hand_terms(built, batch, VARIES, VARIES, policy_over_all=False)
    assert loss_terms(built, batch) == pytest.approx(expected, rel=1e-4, abs=1e-6)
    assert expected["policy"] == pytest.approx(-1.0 / 4)


def test_full_filter_is_trl_on_the_remaining_completions_alone(
    tiny_model: str, pool: pd.DataFrame, tmp_path: Path
) -> None:
    """Same loss and same gradient as TRL's own trainer given only the non-zero-variance groups."""
    filtered = trainer(tiny_model, pool, tmp_path / "full", LossSelection("full"))
    plain = trainer(tiny_model, pool, tmp_path / "plain", None)
    batch = hand_batch(filtered, pool)
    loss = filtered._compute_loss(filtered.model, selected(filtered, batch))
    loss.backward()
    kept = {key: value[4:] if value.ndim else value for key, value in batch.items()}
    reference = plain._compute_loss(plain.model, kept)
    reference.backward()
    assert float(loss) == pytest.approx(float(reference), rel=1e-5)
    for mine, theirs in zip(filtered.model.parameters(), plain.model.parameters()):
        torch.testing.assert_close(mine.grad, theirs.grad, rtol=1e-4, atol=1e-7)


@pytest.mark.parametrize("loss_type", ["grpo", "dapo", "bnpo", "dr_grpo"])
def test_gradient_accumulation_adds_up_to_the_one_batch_step(
    tiny_model: str, pool: pd.DataFrame, tmp_path: Path, loss_type: str
) -> None:
    """Two micro-batches with different numbers of remaining completions and tokens, weighted by them."""
    whole = trainer(tiny_model, pool, tmp_path / "whole", LossSelection("full"), loss_type)
    accumulated = trainer(tiny_model, pool, tmp_path / "acc", LossSelection("full"), loss_type, per_device_max=4)
    assert accumulated.current_gradient_accumulation_steps == 2
    batch = selected(whole, hand_batch(whole, pool))
    whole._compute_loss(whole.model, dict(batch)).backward()
    # A micro-batch of one zero-variance and three varying completions, then the rest.
    order = torch.tensor([0, 4, 5, 6, 1, 2, 3, 7])
    shuffled = {key: value[order] if value.ndim else value for key, value in batch.items()}
    total = sum(accumulated._compute_loss(accumulated.model, part) for part in split_tensor_dict(shuffled, 2))
    total.backward()
    assert float(total) == pytest.approx(float(whole._compute_loss(whole.model, dict(batch))), rel=1e-5)
    for mine, theirs in zip(accumulated.model.parameters(), whole.model.parameters()):
        torch.testing.assert_close(mine.grad, theirs.grad, rtol=1e-4, atol=1e-7)


def test_decoupled_baseline_averages_over_the_updated_completions(
    tiny_model: str, pool: pd.DataFrame, tmp_path: Path
) -> None:
    selection, point = SELECTIONS["decoupled"]
    built = trainer(tiny_model, pool, tmp_path, selection, point=point)
    batch = selected(built, hand_batch(built, pool))
    chosen = batch["in_regularizers"].bool()
    assert chosen.view(2, 4).sum(1).tolist() == [2, 2]
    # Out of the update, advantages are 0; in it, they are the baseline's (TRL's, over all four).
    assert batch["advantages"].tolist() == torch.where(chosen, ADVANTAGES, 0.0).tolist()
    assert float(batch["policy_weight"]) == pytest.approx(1 / (2 * 2))  # B_problem * n_update
    expected = hand_terms(built, batch, chosen.tolist(), chosen.tolist(), policy_over_all=False)
    assert loss_terms(built, batch) == pytest.approx(expected, rel=1e-4, abs=1e-6)
    # The draw is the seed's and the step's: the same again, another at the next step.
    again = built.select(REWARDS, hand_batch(built, pool))["in_regularizers"]
    assert again.tolist() == batch["in_regularizers"].tolist()
    draws = {tuple(LossSelection(None, 2, 0).flags(REWARDS, 4, step)[0].tolist()) for step in range(8)}
    assert len(draws) > 1


def test_decoupled_baseline_takes_advantages_from_every_sampled_rollout(
    tiny_model: str, pool: pd.DataFrame, tmp_path: Path
) -> None:
    """TRL samples n_baseline per problem and normalizes over all of them; compute counts all of them, the
    learning rate only the B_problem * n_update completions in the loss."""
    rewards = [0.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]

    def known(completions: list[str], **_: object) -> list[float]:
        return rewards[: len(completions)]

    args = grpo_args(DECOUPLED, spec(), Recipe(0.0, 0.0), tmp_path)
    assert (args.num_generations, args.per_device_train_batch_size, args.max_steps) == (4, 8, 64 // 8)
    assert args.learning_rate == pytest.approx(1e-4 * (4 / 8) ** 0.5)
    built = build_trainer(tiny_model, pool, args, [], known, selection=LossSelection(None, 2, 0))
    built.model.train()
    rows = [built.train_dataset[0]] * 4 + [built.train_dataset[1]] * 4
    batch = built._generate_and_score_completions(rows)
    first = torch.tensor(rewards[:4])
    baseline = (first - first.mean()) / (first.std() + 1e-4)  # mean and (unbiased) std of all four
    chosen = batch["in_regularizers"].bool()
    expected = torch.cat([torch.where(chosen[:4], baseline, 0.0), torch.zeros(4)])  # second group: no variance
    torch.testing.assert_close(batch["advantages"], expected)
    assert chosen.view(2, 4).sum(1).tolist() == [2, 2]
    assert float(batch["policy_weight"]) == pytest.approx(1 / 4)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the CPU (gloo) launch")
@pytest.mark.parametrize("mode", sorted(SELECTIONS))
def test_two_processes_add_up_to_the_one_batch_step(tiny_model: str, pool: pd.DataFrame, tmp_path: Path, mode: str) -> None:
    """Each of two ranks (real `accelerate launch`, gloo) holds half the step; the selection is decided on
    both halves' rewards (a zero-variance group on one rank, the other group on the other), and the ranks'
    averaged gradient is the one-process gradient of the whole step."""
    pool.to_parquet(tmp_path / "pool.parquet")
    out = tmp_path / "ranks.pt"
    command = [sys.executable, "-m", "accelerate.commands.launch", "--num_processes", "2", "--num_machines", "1",
               "--main_process_port", str(free_port()), "--dynamo_backend", "no", "--mixed_precision", "no",
               "--multi_gpu", str(Path(__file__).parent / "selective_ranks.py"), tiny_model,
               str(tmp_path / "pool.parquet"), str(out), mode]  # fmt: skip
    subprocess.run(command, check=True, timeout=600, capture_output=True)
    ranks = torch.load(out)
    selection, point = SELECTIONS[mode]
    single = trainer(tiny_model, pool, tmp_path / "one", selection, point=point)
    loss = single._compute_loss(single.model, selected(single, hand_batch(single, pool)))
    loss.backward()
    assert float(ranks["loss"]) == pytest.approx(float(loss), rel=1e-5)
    for theirs, mine in zip(ranks["grads"], single.model.parameters()):
        torch.testing.assert_close(theirs, mine.grad, rtol=1e-4, atol=1e-7)


def test_settings_the_subclass_does_not_reproduce_are_refused(
    tiny_model: str, pool: pd.DataFrame, tmp_path: Path
) -> None:
    with pytest.raises(ValueError, match="n_update=4 must lie in"):
        trainer(tiny_model, pool, tmp_path, LossSelection(None, 4, 0))


@pytest.mark.parametrize(
    "setting, named",
    [({"steps_per_generation": 1}, "steps_per_generation != gradient_accumulation_steps"), ({"num_iterations": 2}, "num_iterations != 1")],
)
def test_the_step_level_loss_refuses_a_generation_batch_that_is_not_one_optimizer_step(
    tiny_model: str, pool: pd.DataFrame, tmp_path: Path, setting: dict, named: str
) -> None:
    """Two micro-batches per step (as length grouping takes them): TRL's mapping works, and breaking either
    half of it (a generation per micro-batch, or a generation batch used twice) is refused."""
    launch = LaunchSpec(1, 4, activation_checkpointing=False, accelerate_config=None)
    args = grpo_args(GridPoint("easy", 2, 4, 0), spec(), Recipe(BETA, ENTROPY), tmp_path, launch)
    assert args.gradient_accumulation_steps == args.steps_per_generation == 2
    build_trainer(tiny_model, pool, args, [], reward_function("exact"), selection=LossSelection())
    broken = copy.copy(args)
    for key, value in setting.items():
        setattr(broken, key, value)
    with pytest.raises(ValueError, match=re.escape(named)):
        build_trainer(tiny_model, pool, broken, [], reward_function("exact"), selection=LossSelection())
