"""B(n) at the base model and every checkpoint of one run of a study, and its agreement with the study's
frontier (rule measure_noise_scale)."""

import json
import logging
from pathlib import Path

import pandas as pd

from isocompute.files import write_json, write_table
from isocompute.mechanism.noise_scale import NoiseSettings, agreement_table, measure_run
from isocompute.pipeline.config import sampling_spec
from isocompute.script_setup import base_model_of, start_job

start_job(snakemake.log[0])
settings = snakemake.params.settings
fits = json.loads(Path(snakemake.input.fits).read_text())
fit = fits["fits"][snakemake.params.metric]["compute_rollouts"]
grid = sorted({int(curve["key"]["n"]) for curve in fit["curves"]})
noise = NoiseSettings(
    n_values=tuple(settings["n"] or grid),
    groups=settings["groups"],
    replicas=settings["replicas"],
    loss_type=snakemake.params.loss_type,
    seed=snakemake.params.seed,
)
run_dir = Path(snakemake.input.checkpoints).parent
manifest = json.loads(Path(snakemake.input.checkpoints).read_text())
checkpoints = {0.0: base_model_of(snakemake)}
checkpoints |= {float(c["compute_rollouts"]): str(run_dir / c["path"]) for c in manifest}
scales, predictions = measure_run(
    checkpoints,
    pd.read_parquet(snakemake.input.train),
    noise,
    sampling_spec(snakemake.params.sampling),
    snakemake.params.checker,
)
views = {}
for view, predicted in predictions.items():
    table, shares = agreement_table(predicted, fit["optimum_points"], list(noise.n_values))
    views[view] = {"shares": shares, "points": table.to_dict(orient="records")}
    logging.info("%s view: agreement %s\n%s", view, shares, table.to_string())
write_table(scales, snakemake.output.scales)
write_json(
    {
        "kind": "prediction",
        "run": snakemake.params.run,
        "metric": snakemake.params.metric,
        "groups": noise.groups,
        "n": list(noise.n_values),
        "views": views,
    },
    snakemake.output.agreement,
)
