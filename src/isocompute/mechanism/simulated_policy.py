"""The simulated policy: the paper's theory section made executable, trained by the pipeline's exact update.

Each problem i has K answers, one of them correct (c_i). Its logits are

    z_i = z0_i + private * theta_i + features * W phi_i + bias * b

z0_i the base model's logits (set so that softmax(z0_i / T) gives the problem's initial pass rate, the
wrong answers sharing the rest evenly), theta_i a private (tabular) row, phi_i fixed unit features whose
pairwise overlap sets how much one problem's update moves another (aliasing), W a shared matrix and b a
shared "default answer" bias. theta, W and b start at zero, so z0 is the whole base model. Under Adam a
parameter moves by about lr per step whatever its gradient's scale, so the three scales are the relative
learning rates of the private, feature and bias channels: `features = bias = 0` is the tabular limit of the
paper's theory, where problems never interact.

The update is TRL 1.16's GRPO step with one-token answers (so its per-sequence token means are the token
itself): on-policy (the clipped ratio is 1), advantage (r - group mean) / (unbiased group std + 1e-4), loss
the mean over the B = B_problem * n rollouts of -A log pi(y) + kl_coef * k3(y) (k3 = exp(ref - logp) -
(ref - logp) - 1 against the base model), minus entropy_coef times the mean entropy of the rollouts'
distributions; gradient-norm clipping at max_grad_norm; AdamW (0.9, 0.999, 1e-8, no weight decay) with
the linear warm-up of transformers' `constant_with_warmup` (the first step runs at lr 0). Every problem's
rollouts come from softmax(z_i / T). B_problem distinct problems per step from a shuffle per epoch (the
last incomplete batch of an epoch dropped), as TRL's `RepeatSampler`.

Several runs with the same (B_problem, n) are stepped together (a leading replica axis) to amortize
numpy's per-call cost; each replica has its own generator, so a run's numbers do not depend on which
runs share its batch.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from isocompute.errors import IsoComputeError

# TRL's GRPO: the constant added to the group's standard deviation.
STD_EPSILON = 1e-4
# One-token answers: these loss types all divide the summed token losses by the number of rollouts.
MEAN_LOSS_TYPES = ("grpo", "bnpo", "dapo")
LOSS_TYPES = (*MEAN_LOSS_TYPES, "dr_grpo")


class SimulationError(IsoComputeError, ValueError):
    """A simulated-policy setting that cannot run; the message names the config key."""


@dataclass(frozen=True)
class Channels:
    """The relative learning rates of a policy's private, feature and bias channels, and the features' overlap."""

    private: float
    features: float
    overlap: float
    bias: float


@dataclass(frozen=True)
class Update:
    """The recipe of one GRPO step: what the pipeline's `training:` block and a recipe set."""

    lr: float
    warmup_steps: int
    kl_coef: float
    entropy_coef: float
    loss_type: str
    max_completion_length: int
    max_grad_norm: float
    temperature: float
    betas: tuple[float, float] = (0.9, 0.999)
    eps: float = 1e-8

    def loss_scale(self, batch: int) -> float:
        """What TRL divides the summed one-token policy and KL losses by: B, or B * L_max for dr_grpo."""
        if self.loss_type not in LOSS_TYPES:
            raise SimulationError(f"training.loss_type: {self.loss_type!r} is not simulated; known: {list(LOSS_TYPES)}")
        return batch * (self.max_completion_length if self.loss_type == "dr_grpo" else 1)

    def lr_at(self, step: int) -> float:
        """transformers' constant_with_warmup at optimizer step `step` (1-based): lr * min(1, (step - 1) / warmup)."""
        if step - 1 < self.warmup_steps:
            return self.lr * (step - 1) / max(1, self.warmup_steps)
        return self.lr


def base_logits(pass_rates: np.ndarray, correct: np.ndarray, answers: int, temperature: float) -> np.ndarray:
    """Logits whose softmax at `temperature` puts `pass_rates` on the correct answer and the rest evenly on the others."""
    p = np.asarray(pass_rates, dtype=float)
    if p.size and (p.min() <= 0 or p.max() >= 1):
        raise SimulationError("initial pass rates must lie strictly inside (0, 1)")
    logits = np.zeros((p.size, answers))
    logits[np.arange(p.size), correct] = temperature * np.log(p * (answers - 1) / (1 - p))
    return logits


def unit_features(count: int, dim: int, overlap: float, rng: np.random.Generator) -> np.ndarray:
    """`count` unit vectors whose pairwise cosine is `overlap` on average: a shared direction plus a private one.

    phi_i = sqrt(overlap) s + sqrt(1 - overlap) v_i with v_i random unit vectors (mutual cosine about
    1 / sqrt(dim), the residual aliasing of a finite width).
    """
    if not 0.0 <= overlap <= 1.0:
        raise SimulationError(f"interference overlap {overlap} must lie in [0, 1]")
    shared = rng.standard_normal(dim)
    shared /= np.linalg.norm(shared)
    private = rng.standard_normal((count, dim))
    private /= np.linalg.norm(private, axis=1, keepdims=True)
    return np.sqrt(overlap) * shared + np.sqrt(1 - overlap) * private


def softmax(logits: np.ndarray) -> np.ndarray:
    shifted = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return shifted / shifted.sum(axis=-1, keepdims=True)


def log_softmax(logits: np.ndarray) -> np.ndarray:
    shifted = logits - logits.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


def grpo_advantages(rewards: np.ndarray) -> np.ndarray:
    """TRL's group advantage over the last axis: (r - mean) / (unbiased std + 1e-4)."""
    mean = rewards.mean(axis=-1, keepdims=True)
    return (rewards - mean) / (rewards.std(axis=-1, ddof=1, keepdims=True) + STD_EPSILON)


def logit_gradient(
    logits: np.ndarray, ref_logits: np.ndarray, samples: np.ndarray, advantages: np.ndarray, update: Update, batch: int
) -> np.ndarray:
    """d loss / d logits for groups of one-token rollouts (shape (..., n) samples, (..., K) logits).

    loss = sum over rollouts of [-A log pi(y) + kl_coef * k3(y)] / loss_scale - entropy_coef * mean entropy,
    pi = softmax(logits / T), every rollout's entropy that of its problem's distribution. The sum of
    -A_k over a group multiplies pi (not assumed zero: TRL's advantages sum to zero only up to rounding).
    """
    answers = logits.shape[-1]
    scaled = logits / update.temperature
    logp = log_softmax(scaled)
    pi = np.exp(logp)
    weight = -advantages
    if update.kl_coef:
        ref_logp = log_softmax(ref_logits / update.temperature)
        delta = np.take_along_axis(ref_logp, samples, -1) - np.take_along_axis(logp, samples, -1)
        weight = weight + update.kl_coef * (1.0 - np.exp(delta))  # d k3 / d logp
    onehot = samples[..., None] == np.arange(answers)
    per_answer = (weight[..., None] * onehot).sum(axis=-2)
    grad = (per_answer - weight.sum(axis=-1, keepdims=True) * pi) / update.loss_scale(batch)
    if update.entropy_coef:
        entropy = -(pi * logp).sum(axis=-1, keepdims=True)
        rollouts = samples.shape[-1]
        grad = grad + update.entropy_coef * rollouts / batch * pi * (logp + entropy)  # -coef * d mean(H)
    return grad / update.temperature


class SimulatedPolicies:
    """R simulated policies trained side by side with the same (B_problem, n): one replica per run.

    Each replica has its own problems' base logits and correct answers, its own features and channels,
    and its own generator (problem shuffles and rollouts).
    """

    def __init__(
        self,
        base: np.ndarray,
        correct: np.ndarray,
        features: np.ndarray,
        channels: Sequence[Channels],
        train: np.ndarray,
        update: Update,
        b_problem: int,
        n: int,
        seeds: Sequence[int],
    ) -> None:
        replicas, problems, answers = base.shape
        if len(channels) != replicas or len(seeds) != replicas:
            raise SimulationError("one channel setting and one seed per replica")
        if b_problem > len(train):
            raise SimulationError(f"grid.b_problem = {b_problem} exceeds problems.train_size = {len(train)}")
        if n < 2:
            raise SimulationError(f"grid.n = {n}: a GRPO group needs n >= 2 (TRL's unbiased std)")
        self.base, self.correct, self.features, self.train = base, correct, features, train
        self.update, self.b_problem, self.n = update, b_problem, n
        self.scales = {
            name: np.array([getattr(c, name) for c in channels], dtype=float)[:, None, None]
            for name in ("private", "features", "bias")
        }
        dim = features.shape[-1]
        # theta has rows for the training problems only: a held-out problem never gets a private gradient.
        self.params = {
            "theta": np.zeros((replicas, len(train), answers)),
            "W": np.zeros((replicas, answers, dim)),
            "b": np.zeros((replicas, 1, answers)),
        }
        self.tensors = {name: torch.from_numpy(p) for name, p in self.params.items()}  # the same memory
        for tensor in self.tensors.values():
            tensor.grad = torch.zeros_like(tensor)
        self.grads = {name: tensor.grad.numpy() for name, tensor in self.tensors.items()}  # written in place
        self.optimizer = torch.optim.AdamW(
            list(self.tensors.values()), lr=0.0, betas=update.betas, eps=update.eps, weight_decay=0.0, fused=True
        )
        self.slot = np.full(problems, -1)
        self.slot[train] = np.arange(len(train))
        self.rngs = [np.random.default_rng(seed) for seed in seeds]
        self.orders: list[list[np.ndarray]] = [[] for _ in seeds]
        self.step = 0
        self.rows = np.arange(replicas)[:, None]

    @property
    def batch(self) -> int:
        return self.b_problem * self.n

    def logits(self, problems: np.ndarray | None = None) -> np.ndarray:
        """z of every replica on `problems` (indices per replica, (R, m)), or on all problems."""
        if problems is None:
            problems = np.broadcast_to(np.arange(self.base.shape[1]), self.base.shape[:2])
        slot = self.slot[problems]
        theta = self.params["theta"][self.rows, np.maximum(slot, 0)] * (slot >= 0)[..., None]
        shared = np.einsum("rmd,rkd->rmk", self.features[self.rows, problems], self.params["W"])
        private, features, bias = self.scales["private"], self.scales["features"], self.scales["bias"]
        return self.base[self.rows, problems] + private * theta + features * shared + bias * self.params["b"]

    def pass_rates(self) -> np.ndarray:
        """Exact probability of the correct answer, per replica and problem (R, problems)."""
        pi = softmax(self.logits() / self.update.temperature)
        return np.take_along_axis(pi, self.correct[..., None], -1)[..., 0]

    def _next_problems(self) -> np.ndarray:
        """B_problem distinct training problems per replica: the next chunk of the replica's epoch shuffle."""
        chosen = []
        for r, rng in enumerate(self.rngs):
            if not self.orders[r]:
                order = self.train[rng.permutation(len(self.train))]
                whole = len(order) // self.b_problem
                self.orders[r] = list(order[: whole * self.b_problem].reshape(whole, self.b_problem))[::-1]
            chosen.append(self.orders[r].pop())
        return np.stack(chosen)

    def advance(self) -> dict[str, np.ndarray]:
        """One optimizer step of every replica; returns each replica's mean reward and zero-std group share,
        and the step's problems and sampled answers."""
        self.step += 1
        problems = self._next_problems()
        z = self.logits(problems)
        pi = softmax(z / self.update.temperature)
        uniforms = np.stack([rng.random((self.b_problem, self.n)) for rng in self.rngs])
        cumulative = np.cumsum(pi, axis=-1)
        samples = np.minimum((uniforms[..., None] >= cumulative[..., None, :]).sum(-1), pi.shape[-1] - 1)
        rewards = (samples == self.correct[self.rows, problems][..., None]).astype(float)
        advantages = grpo_advantages(rewards)
        grad_z = logit_gradient(z, self.base[self.rows, problems], samples, advantages, self.update, self.batch)
        chosen = (self.rows, self.slot[problems])
        self.grads["theta"][chosen] = self.scales["private"] * grad_z  # zero on every other row
        np.einsum("rmk,rmd->rkd", grad_z, self.features[self.rows, problems], out=self.grads["W"])
        self.grads["W"] *= self.scales["features"]
        self.grads["b"][:] = self.scales["bias"] * grad_z.sum(axis=1, keepdims=True)
        self._adamw(self.grads["theta"][chosen])
        self.grads["theta"][chosen] = 0.0
        return {
            "reward": rewards.mean(axis=(1, 2)),
            "frac_reward_zero_std": (rewards.std(axis=-1) == 0).mean(axis=1),
            "problems": problems,
            "samples": samples,
        }

    def _adamw(self, theta_rows: np.ndarray) -> None:
        """torch's clip_grad_norm_ (per replica: each run is its own model), then torch's AdamW, no weight decay.

        theta's gradient is zero outside this step's rows (`theta_rows`), so its norm is theirs.
        """
        squares = [theta_rows, self.grads["W"], self.grads["b"]]
        norm = np.sqrt(sum((g**2).reshape(len(g), -1).sum(axis=1) for g in squares))
        clip = np.minimum(1.0, self.update.max_grad_norm / (norm + 1e-6))[:, None, None]
        if (clip < 1.0).any():
            for grad in self.grads.values():
                grad *= clip
        self.optimizer.param_groups[0]["lr"] = self.update.lr_at(self.step)
        self.optimizer.step()
