"""The study's typed settings, one frozen dataclass per part of the config.

They live apart from the code that uses them so that reading the config (which every `snakemake`
invocation does) imports no torch, transformers or TRL.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd


class SyntheticTask(Protocol):
    """What the pipeline asks of a built-in task. `size` and `size_setting` (the settings that fix the size,
    for error messages) let the config check the sets against the pool before any job runs."""

    @property
    def size(self) -> int: ...

    @property
    def size_setting(self) -> str: ...

    @property
    def sequence_length(self) -> int:
        """About the longest prompt + answer + eos; the base model's positions are a multiple of it."""
        ...

    def pool(self, seed: int) -> pd.DataFrame:
        """The problem table (`id`, `prompt`, `answer`), prompts unique."""
        ...

    def pretraining_sampler(self, seed: int) -> Callable[[np.random.Generator], tuple[str, str]]:
        """A function drawing one supervised (prompt, label) pair per call from the generator it is given."""
        ...


@dataclass(frozen=True)
class SamplingSpec:
    """How completions are drawn; the same settings serve bucketing, training and evaluation."""

    temperature: float
    top_p: float
    max_new_tokens: int
    chat_template: bool = False


@dataclass(frozen=True)
class BaseModelSpec:
    """Architecture and supervised-training budget of the built-in base model, and the synthetic task it is
    pre-trained on."""

    hidden_size: int
    intermediate_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    train_steps: int
    batch_size: int
    learning_rate: float
    task: SyntheticTask


@dataclass(frozen=True)
class Bucket:
    """Problems by the base model's difficulty: avg@k of the bucketing samples in [low, high] (both ends
    included), or, with `pass_k`, pass@pass_k <= pass_max (staged sampling, `isocompute.data.difficulty`)."""

    low: float = 0.0
    high: float = 1.0
    pass_k: int | None = None
    pass_max: float = 0.0

    def condition(self, avg_column: str = "avg@16") -> str:
        """The bucket's membership rule as a reader would write it, for messages and tables."""
        if self.pass_k is not None:
            return f"pass@{self.pass_k} <= {self.pass_max}"
        return f"{avg_column} in [{self.low}, {self.high}]"


@dataclass(frozen=True)
class ProblemSetSpec:
    """A problem set: one bucket, or a mixture of buckets with their shares, and the sizes drawn from it.

    `key` is the config key the set comes from (`problem_sets.<name>`, or `...sizes` for one size of a
    size sweep), for error messages.
    """

    name: str
    parts: tuple[tuple[Bucket, float], ...]
    train_size: int
    val_size: int
    key: str = ""


@dataclass(frozen=True)
class Recipe:
    """A run's regularization: KL coefficient (TRL's beta), entropy bonus, and the zero-variance filter.

    `zero_variance_filter` (paper Fig. 3): None leaves TRL's loss as it is; "full" takes groups whose rewards
    are all equal out of the loss entirely; "regularizers" keeps TRL's policy term but lets KL and entropy
    act only on groups with non-zero variance (`isocompute.training.selective_grpo`).
    """

    kl_coef: float
    entropy_coef: float
    zero_variance_filter: str | None = None


@dataclass(frozen=True)
class RolloutEngine:
    """vLLM inside TRL for the training rollouts, and the truncated importance sampling that corrects for it.

    `mode` is TRL's `vllm_mode`: "colocate" shares the training GPUs, "server" runs `trl vllm-serve` on
    `server_gpus` GPUs of the job. `importance_sampling` is TRL's `vllm_importance_sampling_mode`
    ("token_truncate" is TIS, as in the paper) or None for no correction.

    `gpu_memory_utilization` is the colocated engine's share of each training GPU; a server owns its GPUs and
    takes `trl vllm-serve`'s own default. `sleep_mode` (colocate only) is TRL's `vllm_enable_sleep_mode`:
    the engine frees its weights and KV cache after generating, so the backward and the optimizer step get
    that share back, at the cost of reloading them every step. `max_model_len` is vLLM's context (prompt
    plus completion), which sizes its KV cache; None takes the model's own (32,768 for Qwen2.5-7B).
    None of the three changes what a run computes.
    """

    mode: str
    gpu_memory_utilization: float
    tensor_parallel_size: int
    server_gpus: int
    importance_sampling: str | None
    importance_sampling_cap: float
    sleep_mode: bool = False
    max_model_len: int | None = None

    @property
    def own_gpus(self) -> int:
        """GPUs the engine takes beside the training processes: the server's, in server mode."""
        return self.server_gpus if self.mode == "server" else 0


@dataclass(frozen=True)
class LaunchSpec:
    """How one run is laid out on devices and jobs; none of it changes what a run computes, so a run
    resumes across a change of GPU count (under DeepSpeed only on the count a checkpoint was saved at:
    `launch.check_world_size`).

    `processes` > 1 (or a vLLM server) runs the training under `accelerate launch`, with the accelerate
    config file `accelerate_config` (DeepSpeed ZeRO, FSDP) where set. `resume_every_minutes` adds a rolling
    checkpoint so that a job stopped between two compute points loses at most that much wall-clock time
    (`resume_every_steps`, deprecated, the same every that many steps).
    `time_limit_margin` is the seconds kept free before a SLURM job's time limit beyond one step and one
    save; `report_to` the experiment trackers (TRL's `report_to`; empty: none).
    """

    processes: int
    per_device_batch_max: int
    activation_checkpointing: bool
    accelerate_config: str | None
    resume_every_minutes: float | None = None
    resume_every_steps: int | None = None
    time_limit_margin: float = 120.0
    report_to: tuple[str, ...] = ()


@dataclass(frozen=True)
class TrainingSpec:
    """What a run computes beyond its grid point and recipe: the study's shared settings and the run's own
    learning rate, lr = lr_base * f(B / lr_batch_ref) with f of `lr_rule` (`isocompute.study.grid.learning_rate`)."""

    lr_base: float
    lr_batch_ref: int
    warmup_steps: int
    compute_min: int
    compute_max: int
    checkpoint_points: int
    loss_type: str
    sampling: SamplingSpec
    rollout_engine: RolloutEngine | None = None
    lr_rule: str = "sqrt"


@dataclass(frozen=True)
class FigureStyle:
    """Plotting options from config; changing them reruns only the figures."""

    palette: str
    dpi: int
    width: float
    height: float
    context: str
