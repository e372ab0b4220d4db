"""The fits: per-curve sigmoids, the frontier, the law of n*(C) from the whole estimator, the bootstrap, the
held-out check, the fits JSON and the recommendation.

Its public names are re-exported here (`isocompute.fits.NAME`), each loaded from its module on first
use; a name that is also a module's name (`frontier.frontier`) is reached through its module.
"""

from isocompute.exports import lazy_exports

# Each public name and the module that defines it, loaded on first use: importing one module of
# the subpackage never imports the others (torch, TRL or Snakemake among them).
EXPORTS = {
    "Replica": "bootstrap",
    "resample_evals": "bootstrap",
    "residual_replicas": "bootstrap",
    "FitOptions": "curves",
    "StudyFit": "curves",
    "curve_points": "curves",
    "fit_curves": "curves",
    "json_records": "curves",
    "TRAIN_METRICS": "data_ablation",
    "data_figure_instances": "data_ablation",
    "fit_train_metrics": "data_ablation",
    "nstar_by_size": "data_ablation",
    "smoothed_reward": "data_ablation",
    "train_evals": "data_ablation",
    "fit_configured_study": "fits_json",
    "fit_study": "fits_json",
    "Bounds": "forms",
    "FitFailure": "forms",
    "Key": "forms",
    "OptimumFit": "forms",
    "RewardFit": "forms",
    "fit_reward": "forms",
    "fit_to_json": "forms",
    "levels": "forms",
    "optimum_curve": "forms",
    "optimum_fit_from_json": "forms",
    "optimum_name": "forms",
    "parameter_intervals": "forms",
    "record_breaking": "forms",
    "reward_curve": "forms",
    "reward_fit_from_json": "forms",
    "Curve": "frontier",
    "SAME_COMPUTE_DECADES": "frontier",
    "distinct_computes": "frontier",
    "holdout_check": "holdout",
    "LAW_MIN_POINTS": "law",
    "LawVerdict": "law",
    "RESOLVED_SHARE": "law",
    "decade_weights": "law",
    "fit_law": "law",
    "judge_law": "law",
    "NoRecommendation": "recommend",
    "describe_recommendation": "recommend",
    "power_of_two": "recommend",
    "recommend_or_reason": "recommend",
    "COMPUTE": "table_fit",
    "InputError": "table_fit",
    "REQUIRED": "table_fit",
    "TableFit": "table_fit",
    "fit_table": "table_fit",
    "read_columns": "table_fit",
    "Ties": "ties",
    "bootstrap_ties": "ties",
}
__getattr__, __dir__ = lazy_exports(__name__, EXPORTS)
