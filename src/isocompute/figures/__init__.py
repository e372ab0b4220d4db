"""The figures, each reproducing one of the paper's, drawn from the tables and fits JSON the other stages
write.

Its public names are re-exported here (`isocompute.figures.NAME`), each loaded from its module on first
use; a name that is also a module's name (`frontier.frontier`) is reached through its module.
"""

from isocompute.exports import lazy_exports

# Each public name and the module that defines it, loaded on first use: importing one module of
# the subpackage never imports the others (torch, TRL or Snakemake among them).
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
    "AXIS_LABELS": "scaling",
    "MAX_COMPUTE_TICKS": "scaling",
    "frontier_panel": "scaling",
    "law_label": "scaling",
    "log_compute_axis": "scaling",
    "optimum_panel": "scaling",
    "plot_sweep_frontier": "scaling",
}
__getattr__, __dir__ = lazy_exports(__name__, EXPORTS)
