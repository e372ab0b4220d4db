"""The interference probe on the base model and one or more problem sets' training problems (rule probe_interference)."""

import logging

from isocompute.mechanism.probe import ProbeSettings, probe, read_problems, write_probe
from isocompute.pipeline.config import sampling_spec
from isocompute.script_setup import base_model_of, start_job
from isocompute.study.grid import learning_rate

start_job(snakemake.log[0])
params = snakemake.params
training = params.training
# One Adam step of the study's size: the learning-rate rule at the probe's B = b_problem * n.
batch = ProbeSettings.b_problem * ProbeSettings.n
settings = ProbeSettings(
    lr=learning_rate(batch, training["lr_base"], training["lr_batch_ref"], training["lr_rule"]),
    loss_type=training["loss_type"],
    seed=params.seed,
)
sets = {name: read_problems(path) for name, path in zip(params.sets, snakemake.input.sets)}
result, pairs = probe(
    base_model_of(snakemake), sets, settings, sampling_spec(params.sampling), params.checker
)
write_probe(result, pairs, snakemake.output.probe, snakemake.output.pairs)
logging.info("cosines (Adam metric): %s", {k: v.get("mean") for k, v in result["cosines"]["adam"].items()})
logging.info("one step: %s", result["one_step"])
