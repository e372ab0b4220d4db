"""Write the synthetic problem pool (rule make_problem_pool)."""

import logging

from isocompute.problems import validate_problem_table, write_table
from isocompute.tasks import make_addition_pool
from isocompute.workflow import start_job

start_job(snakemake.log[0])
task = snakemake.params.task
pool = make_addition_pool(task["size"], task["min_digits"], task["max_digits"], snakemake.params.seed)
write_table(validate_problem_table(pool, "synthetic_addition"), snakemake.output.pool)
logging.info("wrote %d problems to %s", len(pool), snakemake.output.pool)
