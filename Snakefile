# IsoCompute: given a sampling budget for RL training, how to split it between rollouts per problem (n),
# problems per batch (B_problem) and optimizer steps (M). `snakemake --cores all` runs the embedded default.
from snakemake.utils import min_version

min_version("9.0")


configfile: "config/config.yaml"


report: "workflow/report/workflow.rst"


include: "rules/common.smk"
include: "rules/problems.smk"
include: "rules/base_model.smk"
include: "rules/difficulty.smk"
include: "rules/problem_sets.smk"
include: "rules/train.smk"
include: "rules/evaluate.smk"
include: "rules/adaptive.smk"
include: "rules/fit.smk"
include: "rules/figures.smk"
include: "rules/data_ablations.smk"
include: "rules/diagnostics.smk"
include: "rules/noise_scale.smk"
include: "rules/targets.smk"


rule all:
    default_target: True
    input:
        get_final_output(),
