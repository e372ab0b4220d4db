"""Build and pre-train the embedded default's base model (rule pretrain_base_model)."""

import logging

from isocompute.data.base_model import pretrain_base_model
from isocompute.files import write_table
from isocompute.pipeline.config import base_model_spec
from isocompute.script_setup import start_job

start_job(snakemake.log[0])
spec = base_model_spec(snakemake.params.settings)
losses = pretrain_base_model(spec, snakemake.output.model, snakemake.params.seed)
write_table(losses, snakemake.output.losses)
logging.info("final supervised loss %.4f after %d steps", losses["loss"].iloc[-1], len(losses))
