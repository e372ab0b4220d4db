"""The figures, each reproducing one of the paper's, drawn from the tables and fits JSON the other stages
write.

Public names load from their modules on first use (`isocompute.exports`).
"""

from isocompute.exports import lazy_exports

EXPORTS = {
    "CompareError": "compare",
    "DEFAULT_STYLE": "compare",
    "read_fits": "compare",
    "plot_extremely_hard": "data_ablation",
    "plot_mixtures": "data_ablation",
    "plot_train_vs_val": "data_ablation",
    "plot_probe": "mechanism",
    "plot_training_diagnostics": "mechanism",
    "HEALTH_PANELS": "recipe_ablation",
    "lr_label": "recipe_ablation",
    "render": "recipe_ablation",
    "run_labels": "recipe_ablation",
    "DATA_FIGURES": "registry",
    "FIGURES": "registry",
    "INPUTS": "registry",
    "ON_OTHER_SETS": "registry",
    "AXIS_LABELS": "scaling",
    "MAX_COMPUTE_TICKS": "scaling",
    "frontier_panel": "scaling",
    "law_label": "scaling",
    "log_compute_axis": "scaling",
    "optimum_panel": "scaling",
    "plot_sweep_frontier": "scaling",
}
__getattr__, __dir__ = lazy_exports(__name__, EXPORTS)
