"""What a study is, in the terms every stage shares: the typed settings, the grid of runs and its compute
points, the three studies (questions) and their names, the recipe ablations' runs, the rules that hold
GPUs, and the settings added by upgrades.

Public names load from their modules on first use (`isocompute.exports`).
"""

from isocompute.exports import lazy_exports

EXPORTS = {
    "CLUSTER_RULES": "cluster_rules",
    "UnregisteredRuleError": "cluster_rules",
    "cluster_rule": "cluster_rules",
    "resource_keys": "cluster_rules",
    "GridError": "grid",
    "GridPoint": "grid",
    "LR_RULES": "grid",
    "LearningRate": "grid",
    "batch_split": "grid",
    "checkpoint_steps": "grid",
    "expand_grid": "grid",
    "learning_rate": "grid",
    "total_steps": "grid",
    "GENERATION_LAYOUT_KEYS": "layout",
    "LAUNCH_KEYS": "layout",
    "VLLM_RECIPE_KEYS": "layout",
    "is_layout": "layout",
    "without_layout": "layout",
    "RecipeAblation": "recipe_ablations",
    "configured_recipe_ablations": "recipe_ablations",
    "BaseModelSpec": "specs",
    "Bucket": "specs",
    "FigureStyle": "specs",
    "LaunchSpec": "specs",
    "ProblemSetSpec": "specs",
    "Recipe": "specs",
    "RolloutEngine": "specs",
    "SamplingSpec": "specs",
    "SyntheticTask": "specs",
    "TrainingSpec": "specs",
    "NAME_FORMS": "studies",
    "NAME_PATTERN": "studies",
    "Study": "studies",
    "StudyError": "studies",
    "configured_studies": "studies",
    "parse_study": "studies",
    "study_name": "studies",
    "changed_settings": "upgrades",
}
__getattr__, __dir__ = lazy_exports(__name__, EXPORTS)
