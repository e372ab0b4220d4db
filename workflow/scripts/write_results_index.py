"""Write results/README.md, the index of every artifact (rule write_results_index)."""

import logging
from pathlib import Path

from isocompute.pipeline.artifacts import write_index
from isocompute.script_setup import start_job

start_job(snakemake.log[0])
unknown = write_index(Path(snakemake.output.index).parent, snakemake.output.index)
if unknown:
    logging.warning("files under results/ that the catalogue does not describe: %s", unknown)
