# The input functions and values of rules/problem_sets.smk's rules (the Snakemake linter keeps functions out of
# files with rules).
def get_problem_set_inputs(wildcards):
    """The pool and bucketing, and the staged pass@k tables a pass_at set (or mixture with one) reads."""
    build = PROBLEM_SETS[wildcards.problem_set]["build"]
    return {
        "pool": get_problem_pool(),
        "difficulty": results("difficulty/problem_difficulty.parquet"),
        "pass_at": [
            results(f"difficulty/pass_at{k}.parquet")
            for k in study_config.pass_at_ks(build)
        ],
    }
