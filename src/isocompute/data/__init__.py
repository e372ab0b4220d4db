"""The problems and the base model a study starts from: the built-in tasks, the problem table, difficulty
scoring and the Easy/Hard problem sets, the tokenizer and the tiny base model.

Public names load from their modules on first use (`isocompute.exports`).
"""

from isocompute.exports import lazy_exports

EXPORTS = {
    "pretrain_base_model": "base_model",
    "BucketTooSmallError": "difficulty",
    "bucket_sizes": "difficulty",
    "build_problem_set": "difficulty",
    "pass_at_stages": "difficulty",
    "score_difficulty": "difficulty",
    "select": "difficulty",
    "shard_of": "difficulty",
    "staged_pass_at": "difficulty",
    "validation_reserve": "difficulty",
    "ProblemTableError": "problems",
    "load_problem_table": "problems",
    "validate_problem_table": "problems",
    "DEFAULT_ANSWER": "skill_lookup",
    "SkillLookupTask": "skill_lookup",
    "check_skill_lookup": "skill_lookup",
    "GURU_COLUMNS": "table_schema",
    "LOCAL_FORMATS": "table_schema",
    "PROBLEM_COLUMNS": "table_schema",
    "ADDITION": "tasks",
    "ALPHABET": "tasks",
    "AdditionTask": "tasks",
    "SKILL_LOOKUP": "tasks",
    "SYNTHETIC_SOURCES": "tasks",
    "make_addition_pool": "tasks",
    "synthetic_task": "tasks",
    "build_char_tokenizer": "tokenizer",
}
__getattr__, __dir__ = lazy_exports(__name__, EXPORTS)
