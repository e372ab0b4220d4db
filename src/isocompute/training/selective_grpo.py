"""GRPO whose loss takes a chosen part of the sampled completions: the zero-variance filter and the
decoupled baseline (paper Figs. 3 and 22), as one small subclass of TRL's `GRPOTrainer`.

TRL puts every sampled completion into the loss. A group whose rewards are all equal gets advantage 0, so
it adds nothing to the policy gradient, but it still counts in the loss's averages and still feels the KL
and entropy terms. The study's recipe ablations ask for:

- the `full` zero-variance filter: such groups leave the loss entirely (policy, KL, entropy) and the loss is
  averaged over the step's remaining completions; nothing is sampled to refill the batch, and compute still
  counts every sampled rollout;
- the `regularizers` filter: the policy term exactly as TRL computes it, KL and entropy over the groups
  with non-zero variance only;
- the decoupled baseline: TRL samples n_baseline completions per problem (its `num_generations`) and takes
  each group's mean and standard deviation over all of them; a seeded random n_update of each group enter
  the loss, which is averaged over those.

One mechanism serves all three. After TRL has sampled and scored a step, every completion of the step gets
two flags, decided on the rewards gathered from all processes (a group can span processes): in the policy
term, and in the KL and entropy terms. A completion out of the policy term gets advantage 0 (a zero-variance
group has it already), so TRL's own policy term carries only the chosen ones. With the flags travel the
step's normalizers (completions and tokens in each term, over every process and micro-batch), so that each
micro-batch adds its share of the step's average: gradient accumulation and several processes sum to
exactly the loss of the step as one batch. TRL computes the policy term; the KL and entropy terms are
computed here, with TRL's formulas, over the flagged completions; TRL's logged `kl` and `entropy` stay over
every sampled completion, so the training-health curves of all recipes measure the same thing.

The same normalizers make the loss of a step independent of how its completions are laid out over
processes and micro-batches, so this trainer also takes every run whose step is split (`LossSelection()`:
every completion in every term), and groups its micro-batches by completion length
(`isocompute.training.length_grouping`), which cuts the padded tokens of every forward and backward. Which loss
types allow that, and why:

- `grpo` (each completion's token mean, averaged over completions) and `dr_grpo` (tokens summed over
  completions x max_completion_length): per completion, over micro-batches of equal row counts: the same
  whichever completions share a micro-batch;
- `dapo`: tokens summed over the whole step's token count (`num_items_in_batch`, over every process): the
  same;
- the KL and entropy terms: over the step's completions or tokens here (TRL averages the entropy bonus per
  micro-batch, which would weigh a short micro-batch's tokens up);
- `bnpo` divides each micro-batch by its own token count: which tokens share a divisor is the loss type
  itself (normalized over the step it is `dapo`), so its micro-batches are not grouped, unless the policy
  term is re-averaged over the step anyway (the `full` filter, a decoupled baseline). Nor are they with an
  MoE load-balancing loss (averaged per micro-batch) or a vision-language model.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import torch
from trl import GRPOTrainer
from trl.trainer.utils import nanstd, shuffle_sequence_dict

from isocompute.training.length_grouping import length_grouped

LOG = logging.getLogger(__name__)

# The keys this trainer adds to TRL's batch; TRL's own loss never sees them.
SELECTION_KEYS = ("in_regularizers", "policy_weight", "kl_weight", "entropy_weight")
# TRL loss types whose aggregation this trainer reproduces: a mean over each completion's tokens (grpo),
# or a sum over tokens with one normalizer for the batch (the rest).
LOSS_TYPES = ("grpo", "bnpo", "dr_grpo", "dapo")


@dataclass(frozen=True)
class LossSelection:
    """Which sampled completions enter the loss: the zero-variance filter's mode (None: off, "full",
    "regularizers") and, for a decoupled baseline, the n_update of each group that enter it (seeded).
    `LossSelection()` puts every completion into every term: TRL's loss, normalized over the whole step."""

    zero_variance: str | None = None
    n_update: int | None = None
    seed: int = 0

    @property
    def reaverages_policy(self) -> bool:
        """Whether the policy term is averaged over its own completions rather than over all sampled ones."""
        return self.zero_variance == "full" or self.n_update is not None

    def flags(self, rewards: torch.Tensor, group: int, step: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Per completion of the whole step (groups of `group` consecutive rewards): in the policy term, and
        in the KL and entropy terms.

        A group has zero variance where TRL's `frac_reward_zero_std` says so (its reward standard deviation
        is close to 0). The decoupled baseline's draw depends only on the seed and the step, so a resumed
        run draws the same completions.
        """
        grouped = rewards.view(-1, group)
        varies = ~torch.isclose(nanstd(grouped, dim=1), torch.zeros((), device=rewards.device))
        varies = varies.repeat_interleave(group)
        policy = torch.ones_like(varies)
        if self.n_update is not None:
            generator = torch.Generator().manual_seed(self.seed * 1_000_003 + step)
            ranks = torch.rand(grouped.shape, generator=generator).argsort(dim=1).argsort(dim=1)
            policy = (ranks < self.n_update).flatten().to(rewards.device)
        if self.zero_variance == "full":
            policy = policy & varies
        regularizers = policy & varies if self.zero_variance == "regularizers" else policy
        return policy, regularizers


class SelectiveGRPOTrainer(GRPOTrainer):
    """TRL's `GRPOTrainer` with a `LossSelection` deciding which sampled completions enter the loss."""

    def __init__(self, *args: Any, selection: LossSelection, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        unsupported = {
            f"loss_type={self.loss_type}": self.loss_type not in LOSS_TYPES,
            "top_entropy_quantile < 1": self.top_entropy_quantile < 1.0,
            "use_adaptive_entropy": self.use_adaptive_entropy,
            "importance_sampling_level=sequence": self.importance_sampling_level != "token",
            # The step's normalizers and the length-grouped micro-batches take one generation batch to be
            # one optimizer step, used once: otherwise a step mixes two batches' normalizers, or reuses one.
            "steps_per_generation != gradient_accumulation_steps": self.args.steps_per_generation
            != self.args.gradient_accumulation_steps,
            "num_iterations != 1": self.num_iterations != 1,
        }
        if any(unsupported.values()):
            raise ValueError(
                "the step-level loss (zero-variance filter, decoupled baseline, length-grouped micro-batches) "
                f"does not support {[k for k, v in unsupported.items() if v]}"
            )
        if selection.n_update is not None and not 0 < selection.n_update < self.num_generations:
            raise ValueError(f"n_update={selection.n_update} must lie in [1, num_generations={self.num_generations})")
        self.selection = selection
        self._step_rewards: torch.Tensor | None = None
        self._loss_forward: tuple[torch.Tensor, torch.Tensor] | None = None
        ungrouped = {
            "loss_type=bnpo normalizes each micro-batch by its own token count": self.loss_type == "bnpo"
            and not selection.reaverages_policy,
            "an MoE load-balancing loss is averaged per micro-batch": self.aux_loss_enabled,
            "a vision-language model's inputs are not cut": self._is_vlm,
        }
        reasons = [reason for reason, applies in ungrouped.items() if applies]
        self.groups_by_length = self.args.steps_per_generation > 1 and not reasons
        if self.args.steps_per_generation > 1 and reasons:
            LOG.warning("micro-batches not grouped by completion length (TRL's own): %s", "; ".join(reasons))

    def _calculate_rewards(self, inputs: Any, prompts: Any, completions: Any, completion_ids_list: Any) -> torch.Tensor:
        """TRL's rewards of the whole step (gathered from every process), kept for the selection."""
        self._step_rewards = super()._calculate_rewards(inputs, prompts, completions, completion_ids_list)
        return self._step_rewards

    def _generate_and_score_completions(self, inputs: Any) -> dict[str, Any]:
        batch = super()._generate_and_score_completions(inputs)
        if not self.model.training:
            return batch
        per_function = self._step_rewards
        # The reward TRL normalizes per group (its `sum_then_normalize`): weighted sum, NaN where unscorable.
        rewards = (per_function * self.reward_weights.to(per_function.device)).nansum(dim=1)
        rewards[torch.isnan(per_function).all(dim=1)] = torch.nan
        return {**batch, **self.select(rewards, batch)}

    def select(self, rewards: torch.Tensor, batch: Mapping[str, Any]) -> dict[str, torch.Tensor]:
        """This process's share of the step's selection: advantages zeroed outside the policy term, the
        per-completion flag of the KL and entropy terms, and the step's weight of each term's unit.

        `rewards` are the whole step's, in process order (as TRL gathers them); `batch` is this process's.
        """
        mask = _loss_mask(batch)
        local = mask.size(0)
        tokens = self.accelerator.gather(mask.sum(-1).float())
        policy, regularizers = self.selection.flags(rewards, self.num_generations, self.state.global_step)
        mine = slice(self.accelerator.process_index * local, (self.accelerator.process_index + 1) * local)
        processes = self.accelerator.num_processes
        selected = {
            "advantages": batch["advantages"] * policy[mine].to(batch["advantages"].dtype),
            "in_regularizers": regularizers[mine].float(),
            "kl_weight": self._unit_weight(regularizers, tokens),
            "entropy_weight": torch.tensor(processes / max(float(tokens[regularizers].sum()), 1.0), device=mask.device),
        }
        if self.selection.reaverages_policy:
            selected["policy_weight"] = self._unit_weight(policy, tokens)
        return selected

    def _unit_weight(self, chosen: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
        """The weight of one unit of the loss type's sum (a completion's token mean for grpo, a token
        otherwise) when the step's average is taken over the `chosen` completions of every process.

        Each process's gradient is averaged over processes, hence the factor of their number.
        """
        processes = self.accelerator.num_processes
        completions = max(float(chosen.sum()), 1.0)
        if self.loss_type == "grpo":
            weight = processes / completions
        elif self.loss_type == "dr_grpo":
            weight = processes / (completions * self.max_completion_length)
        else:
            weight = processes / max(float(tokens[chosen].sum()), 1.0)
        return torch.tensor(weight, device=tokens.device)

    def _prepare_inputs(self, generation_batch: Any) -> dict[str, Any]:
        """TRL's, with the generation batch's micro-batches grouped by completion length (`length_grouped`).

        TRL's shuffle stays before the (stable) sort: it draws from the global generator that also samples
        the next completions, so grouping leaves every later sample as it would have been.
        """
        if not (self.model.training and self.groups_by_length):
            return super()._prepare_inputs(generation_batch)
        micro_batches = self.args.steps_per_generation
        if self._step % (micro_batches * self.num_iterations) == 0 or self._buffered_inputs is None:
            batch = shuffle_sequence_dict(self._generate_and_score_completions(generation_batch))
            self._buffered_inputs = length_grouped(batch, micro_batches, self.pad_to_multiple_of)
        return self._buffered_inputs[self._step % micro_batches]

    def _get_per_token_logps_and_entropies(
        self, model: Any, input_ids: torch.Tensor, attention_mask: torch.Tensor, logits_to_keep: int,
        batch_size: int | None = None, **kwargs: Any,
    ) -> Any:  # fmt: skip
        """TRL's forward. The loss's own (the one with entropies) is kept for the KL and entropy terms; the
        chunked ones without gradient over a whole generation batch (the reference's, the old policy's) run
        on length-grouped chunks, each cut to its own widths, their log-probs put back in TRL's rows and
        columns (zero beyond a chunk's width, as TRL's own are where a position has no label). The chunks
        are exact for every loss type: each row's log-probs depend on that row alone."""
        rows = input_ids.size(0)
        extra = any(value is not None and value is not False for value in kwargs.values())
        if batch_size is None or rows <= batch_size or rows % batch_size or extra:
            result = super()._get_per_token_logps_and_entropies(
                model, input_ids, attention_mask, logits_to_keep, batch_size, **kwargs
            )
            if kwargs.get("compute_entropy"):
                self._loss_forward = (result[0], result[1])
            return result
        prompt, completion = slice(None, -logits_to_keep), slice(-logits_to_keep, None)
        batch = {"prompt_ids": input_ids[:, prompt], "prompt_mask": attention_mask[:, prompt],
                 "completion_ids": input_ids[:, completion], "completion_mask": attention_mask[:, completion],
                 "row": torch.arange(rows, device=input_ids.device)}  # fmt: skip
        logps = None
        for chunk in length_grouped(batch, rows // batch_size, self.pad_to_multiple_of):
            width = chunk["completion_ids"].size(1)
            ids = torch.cat([chunk["prompt_ids"], chunk["completion_ids"]], dim=1)
            mask = torch.cat([chunk["prompt_mask"], chunk["completion_mask"]], dim=1)
            chunk_logps, _, _ = super()._get_per_token_logps_and_entropies(model, ids, mask, width)
            logps = chunk_logps.new_zeros((rows, logits_to_keep)) if logps is None else logps
            logps[chunk["row"], :width] = chunk_logps
        return logps, None, None

    def _compute_loss(self, model: Any, inputs: dict[str, Any]) -> torch.Tensor:
        if "in_regularizers" not in inputs:  # evaluation batches: TRL's loss
            return super()._compute_loss(model, inputs)
        beta, entropy_bonus = self.beta, self._entropy_bonus_enabled
        with self._policy_term_only():
            loss = super()._compute_loss(model, {k: v for k, v in inputs.items() if k not in SELECTION_KEYS})
        logps, entropies = self._loss_forward
        mask = _loss_mask(inputs)
        if "policy_weight" in inputs:
            loss = loss * inputs["policy_weight"] * self._trl_policy_normalizer(inputs, mask)
        chosen = inputs["in_regularizers"].unsqueeze(1) * mask
        if beta != 0.0:
            # TRL's KL estimator (k3) against the reference model, with its importance-sampling correction
            # (`use_bias_correction_kl`, on by default) by the token's ratio to the sampling policy.
            delta = inputs["ref_per_token_logps"] - logps
            per_token_kl = torch.exp(delta) - delta - 1
            if self.args.use_bias_correction_kl:
                old = inputs.get("old_per_token_logps")
                per_token_kl = per_token_kl * torch.exp(logps - (logps.detach() if old is None else old))
            loss = loss + beta * inputs["kl_weight"] * self._summed(per_token_kl, chosen)
            self._metrics["train"]["kl"].append(self._step_share(per_token_kl, mask, inputs))
        if entropy_bonus:
            loss = loss - self.entropy_coef * inputs["entropy_weight"] * (entropies * chosen).sum()
        self._metrics["train"]["entropy"][-1] = self._step_share(entropies, mask, inputs)  # TRL's, replaced
        return loss

    def _step_share(self, per_token: torch.Tensor, mask: torch.Tensor, inputs: Mapping[str, Any]) -> float:
        """The micro-batch's tokens' sum (over every process) over the step's tokens, times the step's
        micro-batches: TRL's log averages a step's values, which then give the token mean over the whole
        step. TRL logs each micro-batch's own token mean, which grouping by length would tilt towards the
        short completions; with one micro-batch the two are the same number."""
        total = self.accelerator.reduce((per_token.detach() * mask).sum(), reduction="sum")
        step_tokens = inputs["num_items_in_batch"].clamp(min=1)
        return float(total * self.current_gradient_accumulation_steps / step_tokens)

    @contextmanager
    def _policy_term_only(self) -> Any:
        """TRL's loss without its KL and entropy terms, which `_compute_loss` adds over its own completions."""
        beta, entropy_bonus = self.beta, self._entropy_bonus_enabled
        self.beta, self._entropy_bonus_enabled = 0.0, False
        try:
            yield
        finally:
            self.beta, self._entropy_bonus_enabled = beta, entropy_bonus

    def _summed(self, per_token: torch.Tensor, chosen: torch.Tensor) -> torch.Tensor:
        """The loss type's sum over the chosen completions: of each one's token mean (grpo) or of its tokens."""
        per_completion = (per_token * chosen).sum(-1)
        if self.loss_type == "grpo":
            per_completion = per_completion / chosen.sum(-1).clamp(min=1.0)
        return per_completion.sum()

    def _trl_policy_normalizer(self, inputs: Mapping[str, Any], mask: torch.Tensor) -> torch.Tensor | float:
        """What TRL 1.16's `_compute_loss` divides a training micro-batch's summed policy term by (after each
        completion's token mean, for grpo): multiplied back, so that `policy_weight` sets the average."""
        accumulation = self.current_gradient_accumulation_steps
        completions = inputs["completion_ids"].size(0)
        if self.loss_type == "grpo":
            return completions * accumulation
        if self.loss_type == "dr_grpo":
            return completions * self.max_completion_length * accumulation
        if self.loss_type == "bnpo":
            return mask.sum().clamp(min=1.0) * accumulation
        items = inputs["num_items_in_batch"].clamp(min=1.0) / self.accelerator.num_processes
        return items * accumulation / self.args.steps_per_generation  # dapo


def _loss_mask(batch: Mapping[str, Any]) -> torch.Tensor:
    """The tokens TRL's loss counts: the completion's, less any tool output."""
    mask = batch["completion_mask"]
    return mask if batch.get("tool_mask") is None else mask * batch["tool_mask"]
