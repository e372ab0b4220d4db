"""An adaptive sweep's run under the run's own names (rule finish_adaptive_run): its last rung's training table
and checkpoints, and every rung's evaluations together, so fits, figures and diagnostics read it as they
read a run of the full grid."""

import json
import logging
from pathlib import Path

import pandas as pd

from isocompute.files import read_tables, write_json, write_table
from isocompute.script_setup import start_job

start_job(snakemake.log[0])
inputs, outputs = snakemake.input, snakemake.output
write_table(pd.read_parquet(inputs.log_table), outputs.log_table)
write_json(json.loads(Path(inputs.checkpoints).read_text()), outputs.checkpoints)
for name in ("evals", "val_counts", "train_pass_rates"):
    write_table(read_tables(inputs[name]), outputs[name])
logging.info("%s: the rungs it trained: %s", snakemake.wildcards.run, snakemake.params.rungs)
