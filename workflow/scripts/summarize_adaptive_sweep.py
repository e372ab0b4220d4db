"""What an adaptive sweep spent, arm by arm, and its frontier with each arm's stop marked (rule summarize_adaptive_sweep)."""

import json
from pathlib import Path

from isocompute.adaptive.decisions import adaptive_summary
from isocompute.adaptive.rungs import AdaptiveSettings, reached_rungs
from isocompute.figures.scaling import plot_sweep_frontier
from isocompute.files import write_json
from isocompute.pipeline.config import figure_style
from isocompute.script_setup import start_job

start_job(snakemake.log[0])
params = snakemake.params
rounds = [json.loads(Path(path).read_text()) for path in snakemake.input.rounds]
# the rung each arm ended at: the last, where the last round kept it running
ended = reached_rungs([int(n) for n in params.arms], rounds[-1], len(params.caps) - 1)
arms = {}
for n, arm in params.arms.items():
    steps = arm["rung_steps"]
    reached = steps[ended[int(n)]]
    arms[int(n)] = {
        "runs": arm["runs"],
        "steps": reached,
        "compute_reached": reached * arm["batch"],
        "compute_full": steps[-1] * arm["batch"],
    }
summary = adaptive_summary(rounds, rounds[-1]["audit"], AdaptiveSettings(**params.settings), params.caps, arms)
write_json(summary, snakemake.output.summary)
fit = json.loads(Path(snakemake.input.fits).read_text())["fits"][params.metric]["compute_rollouts"]
where = f"{snakemake.wildcards.problem_set} / {snakemake.wildcards.study}"
plot_sweep_frontier(fit, summary, fit["base_reward"], where, figure_style(params.figures), [snakemake.output.figure])
