"""The study's typed settings, one frozen dataclass per part of the config.

They live apart from the code that uses them so that reading the config (which every `snakemake`
invocation does) imports no torch, transformers or TRL.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SamplingSpec:
    """How completions are drawn; the same settings serve bucketing, training and evaluation."""

    temperature: float
    top_p: float
    max_new_tokens: int


@dataclass(frozen=True)
class BaseModelSpec:
    """Architecture and supervised-training budget of the built-in base model."""

    hidden_size: int
    intermediate_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    train_steps: int
    batch_size: int
    learning_rate: float
    min_digits: int
    max_digits: int


@dataclass(frozen=True)
class ProblemSetSpec:
    """A difficulty bucket [low, high] of avg@k (both ends included) and the sizes drawn from it."""

    name: str
    low: float
    high: float
    train_size: int
    val_size: int


@dataclass(frozen=True)
class Recipe:
    """Regularization of a problem set's recipe: KL coefficient (TRL's beta) and entropy bonus."""

    kl_coef: float
    entropy_coef: float


@dataclass(frozen=True)
class TrainingSpec:
    """Settings shared by every run of the study."""

    lr_base: float
    lr_batch_ref: int
    warmup_steps: int
    compute_min: int
    compute_max: int
    checkpoint_points: int
    loss_type: str
    sampling: SamplingSpec


@dataclass(frozen=True)
class FigureStyle:
    """Plotting options from config; changing them reruns only the figures."""

    palette: str
    dpi: int
    width: float
    height: float
    context: str
