"""Train one grid point with TRL's GRPOTrainer, under `accelerate launch` where it spans GPUs (rules train_grpo
and, an adaptive sweep's rung of it, train_grpo_rung: the same run folder, stopped at the rung's step).

A job that stops before its SLURM time limit, or that finds a trainer of an earlier attempt still alive,
says so in its log and exits non-zero: Snakemake's retry resubmits it, and it resumes.
"""

import logging
import sys

import pandas as pd

from isocompute.pipeline.config import launch_spec, recipe_spec, training_spec, with_layout
from isocompute.sampling.prompts import ContextTooShort
from isocompute.script_setup import base_model_of, start_job
from isocompute.training.launch import TrainingJob, WorldSizeChanged, run_job
from isocompute.training.runlock import TrainerAlive
from isocompute.training.timelimit import TimeLimitReached, slurm_deadline
from isocompute.training.run_spec import RunSpec

start_job(snakemake.log[0])
point = snakemake.params.point
settings = snakemake.params.settings
# The layout (the vLLM engine's memory share, parallelism, ...) from the config, not the params: a new
# layout reruns nothing.
training = with_layout(settings["training"], snakemake.config["training"], "training")
run = RunSpec(
    model_path=base_model_of(snakemake),
    point=point,
    spec=training_spec({**settings, "training": training}),
    recipe=recipe_spec(settings["recipe"]),
    run_dir=snakemake.params.run_dir,
    checker=snakemake.params.checker,
    launch=launch_spec(training),
    until_step=snakemake.params.get("until_step"),
)
job = TrainingJob(run, snakemake.input.train, snakemake.output.log_table, snakemake.output.checkpoints)
try:
    run_job(job, slurm_deadline())
except (TimeLimitReached, TrainerAlive, WorldSizeChanged, ContextTooShort) as stop:
    logging.warning("%s", stop)
    sys.exit(1)
table = pd.read_parquet(job.log_table)
logging.info("%s: %d steps, final train reward %.3f", point.run, len(table), table["reward"].iloc[-1])
