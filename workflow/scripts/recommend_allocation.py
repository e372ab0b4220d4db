"""Prescribe n, B_problem, M and lr for the configured budgets (rule recommend_allocation)."""

import json
from pathlib import Path

from isocompute.files import write_json, write_text
from isocompute.fits.recommend import describe_recommendation, recommend_or_reason
from isocompute.script_setup import start_job

start_job(snakemake.log[0])
fits = json.loads(Path(snakemake.input.fits).read_text())
advice = [recommend_or_reason(fits, float(c), snakemake.params.metric) for c in snakemake.params.compute]
source = f"{fits['study']['problem_set']} / {fits['study']['name']}"
text = [f"# Recommended allocations ({source} fits)", ""] + [f"```\n{describe_recommendation(a)}\n```\n" for a in advice]
write_text("\n".join(text), snakemake.output.advice)
write_json(advice, snakemake.output.table)
