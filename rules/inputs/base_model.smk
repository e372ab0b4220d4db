# The input functions and values of rules/base_model.smk's rules (the Snakemake linter keeps functions out of
# files with rules).
def get_base_model_input():
    """A file dependency only when the pipeline builds the model itself."""
    return [] if config["base_model"]["pretrained"] else [results("base_model/model")]
