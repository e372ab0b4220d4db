"""The problem table's shape: the columns every data source is turned into, the columns of a GURU-style
table it can be imported from, and the local file formats read.

Kept apart from `problems` (which imports `datasets`) so that the checks at workflow load, which read only
these names, stay light.
"""

PROBLEM_COLUMNS = ("id", "prompt", "answer")
GURU_COLUMNS = ("data_source", "prompt", "reward_model")
LOCAL_FORMATS = {".parquet": "parquet", ".json": "json", ".jsonl": "json", ".csv": "csv"}
