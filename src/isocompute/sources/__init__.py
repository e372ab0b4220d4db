"""Readers of the logs a sweep already wrote (W&B exports, TensorBoard event files, MLflow stores, TRL
output folders, long tables), each turned into the project's evaluation table, so that `isocompute fit`,
`replay` and `recommend` run on a sweep trained anywhere (docs/reference/sources.md).

Each reader returns the runs as their tracker kept them (`runs.RunLog`); one mapping then gives every run
its n, b_problem and seed (`runs.run_settings`) and one assembly its rows (`evaluations.evaluation_rows`),
so every format is checked and counted alike. The heavy readers (tensorboard, mlflow) import their package
only when a source of theirs is read.

Public names load from their modules on first use (`isocompute.exports`).
"""

from isocompute.exports import lazy_exports

EXPORTS = {
    "FORMATS": "formats",
    "Imported": "formats",
    "detect": "formats",
    "import_source": "formats",
    "read_source": "formats",
    "RunLog": "runs",
    "RunSettings": "runs",
    "run_settings": "runs",
    "evaluation_rows": "evaluations",
}
__getattr__, __dir__ = lazy_exports(__name__, EXPORTS)
