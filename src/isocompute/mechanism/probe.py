"""The interference probe: do updates on one training problem help or hurt the others, as Adam steps them?

The paper explains a compute-optimal n that rises with compute by *interference across problems*: with
shared parameters, an update that raises one problem's success can lower another's, and large n spreads
the updates more evenly. Whether a model and data set have that property can be measured before any
study is run, in seconds on a small model:

- per problem i, the gradient g_i of log pi(answer_i + eos | prompt_i), teacher-forced, at the sampling
  temperature and on the prompt token ids that bucketing, evaluation and training see
  (`isocompute.sampling.prompts.prompt_token_ids`);
- Adam's preconditioner P = 1 / (sqrt(v) + eps), where v is either the mean of the squared gradients of
  `minibatches` GRPO-like minibatches at the model (what Adam's bias-corrected second moment is after that
  many steps with beta2 = 0.999, if the parameters had not moved), or a checkpoint's own `exp_avg_sq`;
- the cosines cos(g_i, g_j) under P (the metric Adam's step induces: one step along g_i changes log p_j
  by lr * g_j' P g_i to first order), their distribution, negative tail, and means within and across sets;
- one Adam-sized step along a set A's GRPO gradient (n completions sampled per problem of A, TRL's group
  advantages, TRL's policy-gradient loss; the step -lr * P * grad, which is Adam's first step with this v),
  and the change of mean log p(answer + eos) on every set B, exact and to first order.

Parameters that none of the minibatches moved (v = 0) are left out of the metric: Adam's first moment is
zero there too, so a step never moves them, and 1 / eps would otherwise swamp every cosine.
The per-problem gradients are held in memory (problems x parameters floats), so the probe is for small
models; it refuses, before any gradient, when that matrix exceeds `max_gradient_bytes`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch
from transformers import Trainer
from trl.trainer.utils import nanstd

from isocompute.errors import IsoComputeError
from isocompute.files import read_table, write_json, write_table
from isocompute.sampling.answers import is_correct
from isocompute.sampling.generation import generate_token_ids, load_for_sampling
from isocompute.sampling.prompts import prompt_token_ids
from isocompute.study.specs import SamplingSpec

# TRL's constant in the group advantage (r - mean) / (std + 1e-4), and torch AdamW's default eps.
ADVANTAGE_EPS = 1e-4
ADAM_EPS = 1e-8
QUANTILES = (0.01, 0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99)
# Thresholds of the negative tail the summary reports the share of pairs below (and +0.1 above).
TAIL = (0.0, -0.1, -0.3)
LOSS_TYPES = ("grpo", "bnpo", "dr_grpo")
REQUIRED_COLUMNS = ("id", "prompt", "answer")


class ProbeError(IsoComputeError, ValueError):
    """An input the probe cannot use; the message names the file, column or setting."""


@dataclass(frozen=True)
class ProbeSettings:
    """What the probe samples and how large its step is.

    `problems` per set enter the cosines and the one-step changes; the preconditioner's `minibatches`
    draw `b_problem` problems each from all of the sets' training problems, `n` completions per problem
    (the same n as the one-step GRPO gradient). `lr` is the step size, by default the recipe's learning
    rate at B = b_problem * n.
    """

    lr: float
    problems: int = 100
    n: int = 8
    b_problem: int = 16
    minibatches: int = 20
    loss_type: str = "grpo"
    seed: int = 0
    batch_size: int = 1024
    max_gradient_bytes: int = 4 << 30


@dataclass(frozen=True)
class Group:
    """One problem's n sampled completions (token ids, eos included where it came) and their rewards."""

    prompt_ids: list[int]
    completions: list[list[int]]
    rewards: list[float]


class Policy:
    """A saved causal LM with its tokenizer, the sampling settings and the answer checker."""

    def __init__(self, model_path: str, sampling: SamplingSpec, checker: str) -> None:
        self.model, self.tokenizer = load_for_sampling(model_path, sampling)
        self.sampling = sampling
        self.checker = checker
        self.parameters = [p for p in self.model.parameters() if p.requires_grad]

    @property
    def size(self) -> int:
        return sum(p.numel() for p in self.parameters)

    def prompt_ids(self, prompt: str) -> list[int]:
        return prompt_token_ids(self.tokenizer, [prompt], self.sampling.chat_template)[0]

    def answer_ids(self, answer: str) -> list[int]:
        """The answer as the model would have to emit it: its tokens, then eos."""
        return [
            *self.tokenizer(str(answer), add_special_tokens=False)["input_ids"],
            self.tokenizer.eos_token_id,
        ]

    def token_log_probs(
        self, rows: Sequence[tuple[list[int], list[int]]]
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Per (prompt, completion) row: each completion token's log-probability at the sampling
        temperature, and the mask of completion tokens. Right padding keeps every token at the position
        it has unpadded, so the numbers equal one unbatched forward pass per row."""
        pad = self.tokenizer.pad_token_id
        length = max(len(p) + len(c) for p, c in rows)
        ids = torch.full((len(rows), length), pad, dtype=torch.long)
        attention = torch.zeros_like(ids)
        completion = torch.zeros((len(rows), length - 1))
        for row, (prompt, tokens) in enumerate(rows):
            ids[row, : len(prompt) + len(tokens)] = torch.tensor([*prompt, *tokens])
            attention[row, : len(prompt) + len(tokens)] = 1
            completion[row, len(prompt) - 1 : len(prompt) + len(tokens) - 1] = 1
        logits = self.model(input_ids=ids, attention_mask=attention).logits[:, :-1].float()
        log_probs = torch.log_softmax(logits / self.sampling.temperature, dim=-1)
        picked = log_probs.gather(-1, ids[:, 1:].unsqueeze(-1)).squeeze(-1)
        return picked * completion, completion

    def flat_gradient(self, objective: torch.Tensor) -> torch.Tensor:
        """d objective / d parameters, flattened in `self.parameters` order (zeros where unused)."""
        grads = torch.autograd.grad(objective, self.parameters, allow_unused=True)
        return torch.cat(
            [(torch.zeros_like(p) if g is None else g).reshape(-1) for g, p in zip(grads, self.parameters)]
        )

    def answer_log_probs(self, problems: pd.DataFrame) -> torch.Tensor:
        """log pi(answer + eos | prompt) per problem, teacher-forced, without gradients."""
        rows = [
            (self.prompt_ids(p), self.answer_ids(a)) for p, a in zip(problems["prompt"], problems["answer"])
        ]
        with torch.no_grad():
            picked, _ = self.token_log_probs(rows)
        return picked.sum(-1)

    def answer_gradients(self, problems: pd.DataFrame) -> torch.Tensor:
        """One row per problem: the gradient of its log pi(answer + eos | prompt)."""
        rows = []
        for prompt, answer in zip(problems["prompt"], problems["answer"]):
            picked, _ = self.token_log_probs([(self.prompt_ids(prompt), self.answer_ids(answer))])
            rows.append(self.flat_gradient(picked.sum()))
        return torch.stack(rows)

    def sample_groups(self, problems: pd.DataFrame, n: int, seed: int, batch_size: int) -> list[Group]:
        """n completions per problem as evaluation samples them (left-padded `generate`), with their token
        ids kept: the policy gradient needs the tokens, not the decoded text."""
        torch.manual_seed(seed)
        groups = []
        per_batch = max(1, batch_size // n)
        table = list(zip(problems["prompt"], problems["answer"]))
        for start in range(0, len(table), per_batch):
            chunk = table[start : start + per_batch]
            prompts = prompt_token_ids(self.tokenizer, [p for p, _ in chunk], self.sampling.chat_template)
            generated, lengths = generate_token_ids(self.model, self.tokenizer, prompts, n)
            for row, (prompt_ids, (_, answer)) in enumerate(zip(prompts, chunk)):
                completions = [generated[row * n + j, : lengths[row * n + j]].tolist() for j in range(n)]
                texts_j = self.tokenizer.batch_decode(completions, skip_special_tokens=True)
                rewards = [float(is_correct(text, str(answer), self.checker)) for text in texts_j]
                groups.append(Group(prompt_ids, completions, rewards))
        return groups

    def grpo_gradient(self, groups: Sequence[Group], loss_type: str) -> torch.Tensor:
        """The gradient of TRL's GRPO loss on these groups, on-policy (ratio 1, no KL or entropy term:
        at the model the samples came from the KL term's gradient is zero, and the default's entropy
        coefficient is 1e-3)."""
        rows = [(g.prompt_ids, c) for g in groups for c in g.completions]
        advantages = grpo_advantages(torch.tensor([g.rewards for g in groups])).reshape(-1)
        if not rows or not advantages.abs().sum():
            return torch.zeros(self.size)
        picked, mask = self.token_log_probs(rows)
        per_token = -advantages.unsqueeze(1) * picked
        if loss_type == "grpo":
            loss = ((per_token * mask).sum(-1) / mask.sum(-1).clamp(min=1.0)).mean()
        elif loss_type == "bnpo":
            loss = (per_token * mask).sum() / mask.sum().clamp(min=1.0)
        elif loss_type == "dr_grpo":
            loss = (per_token * mask).sum() / (len(rows) * self.sampling.max_new_tokens)
        else:
            raise ProbeError(f"training.loss_type {loss_type!r}: the probe knows {list(LOSS_TYPES)}")
        return self.flat_gradient(loss)

    def step_change(self, step: torch.Tensor, problems: pd.DataFrame) -> tuple[torch.Tensor, torch.Tensor]:
        """Per problem: log pi(answer + eos | prompt) before and after adding `step` to the parameters.
        The parameters are restored afterwards."""
        before = self.answer_log_probs(problems)
        saved = [p.detach().clone() for p in self.parameters]
        with torch.no_grad():
            offset = 0
            for param in self.parameters:
                param.add_(step[offset : offset + param.numel()].view_as(param))
                offset += param.numel()
        try:
            after = self.answer_log_probs(problems)
        finally:
            with torch.no_grad():
                for param, value in zip(self.parameters, saved):
                    param.copy_(value)
        return before, after


def grpo_advantages(rewards: torch.Tensor) -> torch.Tensor:
    """TRL's group advantage (scale_rewards "group"): (r - group mean) / (unbiased group std + 1e-4)."""
    mean = rewards.mean(dim=1, keepdim=True)
    return (rewards - mean) / (nanstd(rewards, dim=1).unsqueeze(1) + ADVANTAGE_EPS)


def zero_std_share(groups: Sequence[Group]) -> float:
    """The share of groups whose rewards are all equal (TRL's `frac_reward_zero_std`): no gradient."""
    return float(np.mean([len(set(g.rewards)) == 1 for g in groups])) if groups else math.nan


def minibatch_second_moment(
    policy: Policy, pool: pd.DataFrame, settings: ProbeSettings
) -> tuple[torch.Tensor, list[float]]:
    """Adam's bias-corrected second moment after `settings.minibatches` steps, if the parameters stood
    still: the mean of the squared GRPO gradients of minibatches of `b_problem` distinct problems drawn
    from `pool`. Returns v and each minibatch's share of zero-variance groups."""
    rng = np.random.default_rng(settings.seed)
    total = torch.zeros(policy.size)
    shares = []
    for index in range(settings.minibatches):
        chosen = pool.iloc[rng.choice(len(pool), size=min(settings.b_problem, len(pool)), replace=False)]
        groups = policy.sample_groups(chosen, settings.n, settings.seed + 1 + index, settings.batch_size)
        total += policy.grpo_gradient(groups, settings.loss_type) ** 2
        shares.append(zero_std_share(groups))
    return total / settings.minibatches, shares


def checkpoint_second_moment(policy: Policy, checkpoint: str | Path) -> tuple[torch.Tensor, float, int]:
    """A Trainer checkpoint's bias-corrected `exp_avg_sq` (its `optimizer.pt`), in the probe's parameter
    order, with the optimizer's eps and step.

    The Trainer groups parameters with weight decay first and those without after
    (`Trainer.get_decay_parameter_names`), each in `named_parameters` order; the state's indices follow
    that order, and every shape is checked against the parameter it is matched to.
    """
    path = Path(checkpoint) / "optimizer.pt"
    if not path.exists():
        raise ProbeError(f"{path}: no optimizer state (a single-process Trainer checkpoint holds one)")
    state = torch.load(path, map_location="cpu", weights_only=True)
    decay = set(Trainer.get_decay_parameter_names(None, policy.model))  # uses no Trainer state
    named = [(name, p) for name, p in policy.model.named_parameters() if p.requires_grad]
    ordered = [p for name, p in named if name in decay] + [p for name, p in named if name not in decay]
    indices = [index for group in state["param_groups"] for index in group["params"]]
    if len(indices) != len(ordered):
        raise ProbeError(
            f"{path}: {len(indices)} parameters in the optimizer state, the model has {len(ordered)}"
        )
    beta2 = state["param_groups"][0]["betas"][1]
    eps = float(state["param_groups"][0]["eps"])
    by_param: dict[int, torch.Tensor] = {}
    steps = 0
    for index, param in zip(indices, ordered):
        entry = state["state"].get(index)
        if entry is None:
            by_param[id(param)] = torch.zeros_like(param)
            continue
        if entry["exp_avg_sq"].shape != param.shape:
            raise ProbeError(
                f"{path}: state {index} has shape {tuple(entry['exp_avg_sq'].shape)}, its parameter {tuple(param.shape)}"
            )
        steps = int(entry["step"])
        by_param[id(param)] = entry["exp_avg_sq"].float() / (1 - beta2**steps)
    return torch.cat([by_param[id(p)].reshape(-1) for p in policy.parameters]), eps, steps


def preconditioner(second_moment: torch.Tensor, eps: float) -> torch.Tensor:
    """Adam's diagonal 1 / (sqrt(v) + eps), zero where v = 0 (parameters Adam does not move)."""
    return torch.where(second_moment > 0, 1.0 / (second_moment.sqrt() + eps), torch.zeros_like(second_moment))


def cosine_matrix(gradients: torch.Tensor, metric: torch.Tensor | None = None) -> np.ndarray:
    """Pairwise cosines of the rows under the diagonal metric (plain cosines without one). A zero row
    (a problem whose gradient vanishes in the metric) has no direction: its cosines are NaN."""
    rows = gradients if metric is None else gradients * metric.sqrt()
    norms = rows.norm(dim=1, keepdim=True)
    unit = torch.where(
        norms > 0, rows / norms.clamp(min=torch.finfo(rows.dtype).tiny), torch.full_like(rows, math.nan)
    )
    return (unit @ unit.T).clamp(-1.0, 1.0).double().numpy()


def summarize_cosines(values: np.ndarray) -> dict[str, Any]:
    """The distribution of a set of cosines: mean, quantiles and the share in the negative tail."""
    values = values[~np.isnan(values)]
    if not values.size:
        return {"pairs": 0}
    negative = values[values < 0]
    return {
        "pairs": int(values.size),
        "mean": float(values.mean()),
        "min": float(values.min()),
        "quantiles": {f"{q:g}": float(np.quantile(values, q)) for q in QUANTILES},
        **{f"share_below_{t:g}": float((values < t).mean()) for t in TAIL},
        "share_above_0.1": float(
            (values > 0.1).mean()
        ),  # the positive tail, against which the negative one reads
        "mean_of_negative": float(negative.mean()) if negative.size else None,
    }


def pair_table(ids: Sequence[str], labels: Sequence[str], cosines: Mapping[str, np.ndarray]) -> pd.DataFrame:
    """One row per pair of distinct problems: their ids and sets, the block ("easy x easy" within a set,
    "easy x hard" across, sets in the order given) and each named cosine matrix's value."""
    order = {name: index for index, name in enumerate(dict.fromkeys(labels))}
    first, second = np.triu_indices(len(ids), k=1)
    labels = np.asarray(labels)
    swap = np.array([order[a] > order[b] for a, b in zip(labels[first], labels[second])], dtype=bool)
    low = np.where(swap, labels[second], labels[first])
    high = np.where(swap, labels[first], labels[second])
    return pd.DataFrame(
        {
            "id_a": np.asarray(ids)[first],
            "id_b": np.asarray(ids)[second],
            "block": [f"{a} x {b}" for a, b in zip(low, high)],
            **{f"cosine_{name}": matrix[first, second] for name, matrix in cosines.items()},
        }
    )


def block_summaries(pairs: pd.DataFrame, column: str) -> dict[str, dict[str, Any]]:
    """The distribution of one cosine column over all pairs, and per block."""
    blocks = {"all": summarize_cosines(pairs[column].to_numpy())}
    for block, group in pairs.groupby("block", sort=False):
        blocks[str(block)] = summarize_cosines(group[column].to_numpy())
    return blocks


def read_problems(path: str | Path) -> pd.DataFrame:
    """A problem table with `id`, `prompt` and `answer`, checked before any model loads."""
    try:
        table = read_table(path)
    except FileNotFoundError as error:
        raise ProbeError(str(error)) from None
    missing = [c for c in REQUIRED_COLUMNS if c not in table.columns]
    if missing:
        raise ProbeError(
            f"{path}: missing column(s) {missing} (a problem table has {list(REQUIRED_COLUMNS)})"
        )
    if table.empty:
        raise ProbeError(f"{path}: no problems")
    return table.loc[:, list(REQUIRED_COLUMNS)].reset_index(drop=True)


def probe(
    model_path: str,
    sets: Mapping[str, pd.DataFrame],
    settings: ProbeSettings,
    sampling: SamplingSpec,
    checker: str,
    optimizer_checkpoint: str | None = None,
) -> tuple[dict[str, Any], pd.DataFrame]:
    """The probe on one model and one or more named problem sets (their training problems); see the
    module's docstring for what it measures. Returns a JSON-ready dict and the table of problem pairs
    with their cosines (`pair_table`)."""
    if not sets:
        raise ProbeError("the probe needs at least one problem set")
    if settings.loss_type not in LOSS_TYPES:
        raise ProbeError(f"loss_type {settings.loss_type!r}: the probe knows {list(LOSS_TYPES)}")
    policy = Policy(model_path, sampling, checker)
    chosen = {
        name: table.sample(n=min(settings.problems, len(table)), random_state=settings.seed).reset_index(
            drop=True
        )
        for name, table in sets.items()
    }
    count = sum(len(t) for t in chosen.values())
    needed = count * policy.size * 4
    if needed > settings.max_gradient_bytes:
        raise ProbeError(
            f"{count} problems x {policy.size:,} parameters need {needed / 2**30:.1f} GiB of gradients, above "
            f"max_gradient_bytes ({settings.max_gradient_bytes / 2**30:.1f} GiB): probe fewer problems"
        )
    if optimizer_checkpoint:
        v, eps, steps = checkpoint_second_moment(policy, optimizer_checkpoint)
        source: dict[str, Any] = {
            "source": "checkpoint",
            "checkpoint": str(optimizer_checkpoint),
            "step": steps,
        }
    else:
        pool = pd.concat(sets.values(), ignore_index=True)
        v, shares = minibatch_second_moment(policy, pool, settings)
        eps = ADAM_EPS
        source = {
            "source": "grpo_minibatches",
            "minibatches": settings.minibatches,
            "zero_std_share": float(np.mean(shares)),
        }
    metric = preconditioner(v, eps)
    source |= {"eps": eps, "parameters": policy.size, "share_never_moved": float((v == 0).float().mean())}
    gradients = {name: policy.answer_gradients(table) for name, table in chosen.items()}
    stacked = torch.cat(list(gradients.values()))
    labels = [name for name, table in chosen.items() for _ in range(len(table))]
    ids = [str(i) for table in chosen.values() for i in table["id"]]
    pairs = pair_table(ids, labels, {"adam": cosine_matrix(stacked, metric), "plain": cosine_matrix(stacked)})
    result: dict[str, Any] = {
        "model": str(model_path),
        "settings": asdict(settings),
        "sampling": asdict(sampling),
        "preconditioner": source,
        "sets": {},
        "cosines": {name: block_summaries(pairs, f"cosine_{name}") for name in ("adam", "plain")},
        "one_step": [],
    }
    for index, (name, table) in enumerate(chosen.items()):
        log_p = policy.answer_log_probs(table)
        groups = policy.sample_groups(table, settings.n, settings.seed + 10_000 + index, settings.batch_size)
        step = -settings.lr * metric * policy.grpo_gradient(groups, settings.loss_type)
        result["sets"][name] = {
            "problems": len(table),
            "mean_log_p": float(log_p.mean()),
            "mean_p": float(log_p.exp().mean()),
            "grpo_zero_std_share": zero_std_share(groups),
            "grpo_mean_reward": float(np.mean([g.rewards for g in groups])),
        }
        for on, other in chosen.items():
            before, after = policy.step_change(step, other)
            change = after - before
            result["one_step"].append(
                {
                    "along": name,
                    "on": on,
                    "lr": settings.lr,
                    "change_mean_log_p": float(change.mean()),
                    "first_order_change_mean_log_p": float(gradients[on].mean(0) @ step),
                    "change_mean_p": float(after.exp().mean() - before.exp().mean()),
                    "share_of_problems_down": float((change < 0).float().mean()),
                }
            )
    return result, pairs


def write_probe(
    result: Mapping[str, Any], pairs: pd.DataFrame, json_path: str | Path, pairs_path: str | Path
) -> None:
    """The probe's JSON and its table of pairs, each written atomically."""
    write_table(pairs, pairs_path)
    write_json(result, json_path)
