# The input functions and values of rules/evaluate.smk's rules (the Snakemake linter keeps functions out of
# files with rules).
def eval_table(eval_set):
    """The validation problems of an evaluation set: a problem set's, or an out-of-domain table."""
    if eval_set in OUT_OF_DOMAIN:
        return results(f"out_of_domain/{eval_set}.parquet")
    return results(f"problem_sets/{eval_set}/val.parquet")


def get_eval_table(wildcards):
    return eval_table(wildcards.eval_set)
