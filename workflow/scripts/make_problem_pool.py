"""Write the synthetic problem pool (rule make_problem_pool)."""

import logging

from isocompute.data.problems import validate_problem_table
from isocompute.data.tasks import synthetic_task
from isocompute.files import write_table
from isocompute.pipeline.config import pool_source
from isocompute.script_setup import start_job

start_job(snakemake.log[0])
source = pool_source(dict(snakemake.params.items()))
pool = synthetic_task(source, snakemake.params.task).pool(snakemake.params.seed)
write_table(validate_problem_table(pool, source), snakemake.output.pool)
logging.info("wrote %d problems to %s", len(pool), snakemake.output.pool)
