"""What the Snakemake workflow asks of the library when it loads and when it ends: the config validated and
converted to the typed settings every stage takes, the input files checked before any job, and the
catalogue of results/ that the results index is written from.

Public names load from their modules on first use (`isocompute.exports`).
"""

from isocompute.exports import lazy_exports

EXPORTS = {
    "describe_artifact": "artifacts",
    "write_index": "artifacts",
    "Config": "config",
    "ConfigError": "config",
    "ablations_of": "config",
    "base_model_spec": "config",
    "check_config": "config",
    "conda_env": "config",
    "evaluation_sets": "config",
    "figure_style": "config",
    "grid_points": "config",
    "launch_spec": "config",
    "output_roots": "config",
    "params_form": "config",
    "pool_params": "config",
    "pool_source": "config",
    "pretraining_settings": "config",
    "problem_set_spec": "config",
    "problem_sets": "config",
    "recipe_name": "config",
    "recipe_spec": "config",
    "rule_resources": "config",
    "run_lr": "config",
    "run_params": "config",
    "sampling_spec": "config",
    "studies_of": "config",
    "training_gpus": "config",
    "training_spec": "config",
    "validate_config": "config",
    "with_layout": "config",
    "model_problem": "inputs",
    "table_problem": "inputs",
}
__getattr__, __dir__ = lazy_exports(__name__, EXPORTS)
