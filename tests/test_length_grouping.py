"""Length-grouped micro-batches: on a tiny real model and a made-up long-tailed batch, the step's loss and
gradient from grouped, cut micro-batches equal those of TRL's unsorted full-width micro-batches and of TRL's
own trainer on the step as one batch; the chunked reference forward equals TRL's; a real training step too.

Tolerances: float32 on the CPU. The same sums are taken in another order (other rows share a micro-batch,
kernels see other widths, a prompt left-padded by fewer columns starts at another rotary position), so
results agree to rounding: a relative 1e-5 on the loss (about 100 float32 epsilons over sums of some
hundred terms) and 1e-4 relative with 1e-7 absolute on each gradient entry, as in test_selective_grpo,
which leaves room for entries that are small differences of large terms.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pandas as pd
import pytest
import torch
from trl import GRPOTrainer
from trl.trainer.utils import split_tensor_dict

from isocompute.sampling.answers import reward_function
from isocompute.study.grid import GridPoint
from isocompute.study.specs import LaunchSpec, Recipe, SamplingSpec, TrainingSpec
from isocompute.training.length_grouping import length_grouped, tokens
from isocompute.training.selective_grpo import LossSelection
from isocompute.training.run_spec import RunSpec
from isocompute.training.trainer import build_trainer, loss_selection
from isocompute.training.trl_args import grpo_args

POINT = GridPoint("easy", 4, 4, 0)  # 16 completions per step
MICRO = 4  # completions per micro-batch: 4 micro-batches, TRL's steps_per_generation
# Completion lengths with a long tail: most short, two at the batch's width (the "maximum length").
LENGTHS = [2, 3, 24, 1, 4, 2, 5, 3, 2, 6, 1, 3, 24, 2, 4, 3]
WIDTH = max(LENGTHS)
EASY = Recipe(kl_coef=0.3, entropy_coef=0.2)  # both regularizers on, large enough to matter


def spec(loss_type: str) -> TrainingSpec:
    return TrainingSpec(1e-4, 8, 0, 16, 64, 2, loss_type, SamplingSpec(1.0, 1.0, WIDTH))


def trainer(tiny_model: str, pool: pd.DataFrame, tmp_path: Path, loss_type: str, per_device_max: int,
            selection: LossSelection | None = None, recipe: Recipe = EASY) -> GRPOTrainer:  # fmt: skip
    """TRL's trainer (`selection` None) or the project's, as `build_trainer` makes them for a run."""
    launch = LaunchSpec(1, per_device_max, activation_checkpointing=False, accelerate_config=None)
    args = grpo_args(POINT, spec(loss_type), recipe, tmp_path, launch)
    built = build_trainer(tiny_model, pool, args, [], reward_function("exact"), selection=selection)
    built.model.train()
    built.current_gradient_accumulation_steps = args.gradient_accumulation_steps
    return built


def long_tailed_batch(built: GRPOTrainer, pool: pd.DataFrame) -> dict[str, torch.Tensor]:
    """TRL's batch layout for 16 completions of 4 prompts of different lengths (left-padded), completions
    right-padded to the longest, with old-policy and reference log-probs a known shift from the model's."""
    tokenizer = built.processing_class
    prompts = [tokenizer(p)["input_ids"] for p in pool["prompt"][[1, 0, 2, 5]]]
    prompts = [p + p[:extra] for p, extra in zip(prompts, [0, 3, 1, 6])]  # lengths 4 to 11
    width = max(map(len, prompts))
    rows = [p for p in prompts for _ in range(POINT.n)]
    generator = torch.Generator().manual_seed(0)
    batch = {
        "prompt_ids": torch.tensor([[tokenizer.pad_token_id] * (width - len(p)) + p for p in rows]),
        "prompt_mask": torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in rows]),
        "completion_ids": torch.randint(3, 12, (len(rows), WIDTH), generator=generator),
        "completion_mask": torch.tensor([[1] * n + [0] * (WIDTH - n) for n in LENGTHS]),
        "advantages": torch.randn(len(rows), generator=generator),
    }
    batch["completion_ids"][batch["completion_mask"] == 0] = tokenizer.pad_token_id
    batch["num_items_in_batch"] = batch["completion_mask"].sum()
    with torch.no_grad():
        logps = forward(built, batch)
    batch["old_per_token_logps"] = logps + 0.3 * torch.randn(logps.shape, generator=generator)  # ratios clip
    batch["ref_per_token_logps"] = logps + torch.linspace(-0.4, 0.5, logps.numel()).view(logps.shape)
    return batch


def forward(built: GRPOTrainer, batch: dict[str, torch.Tensor], batch_size: int | None = None) -> torch.Tensor:  # fmt: skip
    input_ids = torch.cat([batch["prompt_ids"], batch["completion_ids"]], dim=1)
    attention = torch.cat([batch["prompt_mask"], batch["completion_mask"]], dim=1)
    logps, _, _ = built._get_per_token_logps_and_entropies(
        built.model, input_ids, attention, batch["completion_ids"].size(1), batch_size=batch_size
    )
    return logps


Step = tuple[float, list[torch.Tensor]]


def step(built: GRPOTrainer, micro_batches: list[dict[str, torch.Tensor]]) -> Step:
    """The step's loss and gradient, accumulated over its micro-batches as the Trainer does."""
    built.model.zero_grad()
    total = sum(built._compute_loss(built.model, part) for part in micro_batches)
    total.backward()
    return float(total), [p.grad.clone() for p in built.model.parameters()]


def assert_same_step(mine: Step, theirs: Step) -> None:
    assert mine[0] == pytest.approx(theirs[0], rel=1e-5)
    for a, b in zip(mine[1], theirs[1]):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-7)


def test_rows_are_ordered_by_length_and_each_micro_batch_cut_to_its_own_widths() -> None:
    prompt_lengths = torch.tensor([3, 1, 2, 3, 1, 1, 2, 1])
    completion_lengths = torch.tensor([1, 6, 2, 1, 3, 6, 1, 2])
    columns = torch.arange(6)
    batch = {
        "prompt_ids": torch.arange(8).unsqueeze(1).expand(8, 3) * 10 + torch.arange(3),
        "prompt_mask": (torch.arange(3) >= 3 - prompt_lengths.unsqueeze(1)).long(),
        "completion_ids": torch.arange(8).unsqueeze(1) * 100 + columns,
        "completion_mask": (columns < completion_lengths.unsqueeze(1)).long(),
        "advantages": torch.arange(8.0),
        "importance_sampling_ratio": torch.ones(8, 1),  # per sequence (TRL's sequence modes): never cut
        "num_items_in_batch": completion_lengths.sum(),
    }
    parts = length_grouped(batch, 4)
    # longest first, ties in their incoming order; each row's tokens travel with it
    assert [p["advantages"].tolist() for p in parts] == [[1.0, 5.0], [4.0, 2.0], [7.0, 0.0], [3.0, 6.0]]
    assert [p["completion_ids"].size(1) for p in parts] == [6, 3, 2, 1]
    assert [p["prompt_ids"].size(1) for p in parts] == [1, 2, 3, 3]
    assert parts[1]["completion_ids"].tolist() == [[400, 401, 402], [200, 201, 202]]
    assert parts[1]["prompt_ids"].tolist() == [[41, 42], [21, 22]]
    assert all(p["importance_sampling_ratio"].shape == (2, 1) for p in parts)
    assert all(p["num_items_in_batch"] is batch["num_items_in_batch"] for p in parts)
    assert sum(map(tokens, parts)) == 2 * (7 + 5 + 5 + 4) < tokens(batch)
    with pytest.raises(ValueError, match="8 rows do not split into 3 equal micro-batches"):
        length_grouped(batch, 3)


@pytest.mark.parametrize("loss_type", ["grpo", "dr_grpo", "dapo"])
def test_grouped_micro_batches_give_the_loss_and_gradient_of_unsorted_ones_and_of_one_batch(
    tiny_model: str, pool: pd.DataFrame, tmp_path: Path, loss_type: str
) -> None:
    """KL and entropy on (the Easy recipe), old-policy log-probs off the model's so ratios clip: the loss
    types the project's trainer groups. The recipes all use grpo."""
    grouped = trainer(tiny_model, pool, tmp_path / "grouped", loss_type, MICRO, LossSelection())
    assert grouped.groups_by_length and grouped.args.steps_per_generation == len(LENGTHS) // MICRO
    one_batch = trainer(tiny_model, pool, tmp_path / "one", loss_type, len(LENGTHS))
    assert type(one_batch) is GRPOTrainer and one_batch.args.steps_per_generation == 1
    batch = long_tailed_batch(one_batch, pool)
    selected = {**batch, **grouped.select(torch.zeros(len(LENGTHS)), batch)}
    order = torch.randperm(len(LENGTHS), generator=torch.Generator().manual_seed(1))
    shuffled = {key: value[order] if value.ndim else value for key, value in selected.items()}
    parts = length_grouped(shuffled, len(LENGTHS) // MICRO)
    assert [p["completion_ids"].size(1) for p in parts] == [24, 4, 3, 2]
    unsorted = split_tensor_dict(shuffled, len(LENGTHS) // MICRO)  # TRL's own split: every one 24 wide
    assert sum(map(tokens, parts)) < 0.6 * sum(map(tokens, unsorted))
    reference = step(one_batch, [batch])
    assert_same_step(step(grouped, parts), reference)
    assert_same_step(step(grouped, unsorted), reference)


def test_grouped_chunks_of_the_reference_forward_give_trls_full_width_log_probs(
    tiny_model: str, pool: pd.DataFrame, tmp_path: Path
) -> None:
    """The forward TRL makes without gradient over the whole generation batch (reference, old policy)."""
    grouped = trainer(tiny_model, pool, tmp_path / "grouped", "grpo", MICRO, LossSelection())
    plain = trainer(tiny_model, pool, tmp_path / "plain", "grpo", MICRO)
    batch = long_tailed_batch(plain, pool)
    with torch.no_grad():
        mine, theirs = forward(grouped, batch, MICRO), forward(plain, batch, MICRO)
    assert mine.shape == theirs.shape == (len(LENGTHS), WIDTH)
    assert bool((theirs[batch["completion_mask"] == 0] == 0).all())  # TRL's: zero where no label
    torch.testing.assert_close(mine, theirs, rtol=1e-5, atol=1e-6)


def test_a_real_training_step_with_grouped_micro_batches_is_trls_one_batch_step(
    tiny_model: str, pool: pd.DataFrame, tmp_path: Path
) -> None:
    """TRL samples, scores and computes the reference forward; both trainers draw the same completions
    (grouping keeps TRL's shuffle, so the generator is where it would be) and take the same step."""
    logs = []
    for name, per_device, selection in [("plain", len(LENGTHS), None), ("grouped", MICRO, LossSelection())]:
        built = trainer(tiny_model, pool, tmp_path / name, "grpo", per_device, selection)
        built.args.max_steps = 1
        built.train()
        logs.append(built.state.log_history[0])
    assert logs[1]["num_tokens"] == logs[0]["num_tokens"] and logs[1]["reward"] == logs[0]["reward"]
    for key in ("grad_norm", "kl", "entropy"):
        assert logs[1][key] == pytest.approx(logs[0][key], rel=1e-4), key


def test_bnpo_is_not_grouped_unless_its_policy_term_is_averaged_over_the_step(
    tiny_model: str, pool: pd.DataFrame, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="isocompute.training.selective_grpo"):
        bnpo = trainer(tiny_model, pool, tmp_path / "bnpo", "bnpo", MICRO, LossSelection())
    assert not bnpo.groups_by_length
    assert "loss_type=bnpo normalizes each micro-batch by its own token count" in caplog.text
    assert trainer(tiny_model, pool, tmp_path / "full", "bnpo", MICRO, LossSelection("full")).groups_by_length


@pytest.mark.parametrize(
    ("processes", "per_device_max", "selected"), [(1, 16, False), (1, 4, True), (2, 16, True)]
)
def test_a_step_split_over_processes_or_micro_batches_takes_the_projects_trainer(
    processes: int, per_device_max: int, selected: bool
) -> None:
    launch = LaunchSpec(processes, per_device_max, activation_checkpointing=False, accelerate_config=None)
    run = RunSpec("model", POINT, spec("grpo"), EASY, "run", launch=launch)
    assert loss_selection(run) == (LossSelection() if selected else None)
