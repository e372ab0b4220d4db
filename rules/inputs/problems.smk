# The input functions and values of rules/problems.smk's rules (the Snakemake linter keeps functions out of
# files with rules).
def get_problem_pool():
    return results("problems/pool.parquet")
