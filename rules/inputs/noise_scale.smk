# The input functions of rules/noise_scale.smk's rules (the Snakemake linter keeps functions out of
# files with rules).
NOISE_STUDIES = [s for s in STUDIES if s.kind == "fixed_b_problem"]


def noise_scale_run(wildcards):
    """The one run whose checkpoints are measured (`noise_scale.run_n`, default the middle n). Imported
    here, not with common.smk's imports: it loads torch, which no other DAG needs to build.
    """
    from isocompute.mechanism.noise_scale import measured_run

    return measured_run(study_of(wildcards).runs(GRID), config["noise_scale"]["run_n"])


def get_noise_scale_inputs(wildcards):
    run = noise_scale_run(wildcards)
    return {
        "checkpoints": results(f"train/{run.problem_set}/{run.run}/checkpoints.json"),
        "train": results(f"problem_sets/{run.problem_set}/train.parquet"),
        "fits": study_fits(study_of(wildcards)),
        "model": get_base_model_input(),
    }


def noise_scale_paths():
    return [
        results(f"noise_scale/{s.problem_set}/{s.name}/agreement.json")
        for s in NOISE_STUDIES
    ]
