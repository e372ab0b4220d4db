"""Figure 6: compute-optimal n* against compute with its sigmoid fit (rule plot_nstar)."""

import json
from pathlib import Path

from isocompute.figures import plot_nstar
from isocompute.workflow import start_job

start_job(snakemake.log[0])
fits = json.loads(Path(snakemake.input.fits).read_text())
wildcards = snakemake.wildcards
plot_nstar(
    fits,
    f"{wildcards.problem_set}, B_problem = {wildcards.b_problem}: n*(C), {fits['metric']}",
    snakemake.params.style,
    [snakemake.output.png, snakemake.output.pdf],
)
