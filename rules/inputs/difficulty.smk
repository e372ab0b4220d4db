# The input functions and values of rules/difficulty.smk's rules (the Snakemake linter keeps functions out of
# files with rules).
def get_difficulty_shards():
    return expand(
        results("difficulty/shards/shard{shard}.parquet"),
        shard=range(config["difficulty"]["shards"]),
    )
