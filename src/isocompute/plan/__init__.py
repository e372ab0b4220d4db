"""What a study costs and where it stands: the GPU-hours Snakemake would request, what the runs need from a
step model, and every run's state read from its files while the study runs (`isocompute plan`, `isocompute
status`).

Public names load from their modules on first use (`isocompute.exports`).
"""

from isocompute.exports import lazy_exports

EXPORTS = {
    "BudgetError": "budget",
    "OPTIMIZER_BYTES_PER_PARAM": "budget",
    "RunNeed": "budget",
    "StepModel": "budget",
    "WEIGHT_BYTES_PER_PARAM": "budget",
    "checkpoint_disk": "budget",
    "fit_step_model": "budget",
    "format_needs": "budget",
    "pilot_steps": "budget",
    "read_retries": "budget",
    "read_step_model": "budget",
    "run_needs": "budget",
    "JobRequest": "requests",
    "PlanError": "requests",
    "adaptive_plan": "requests",
    "format_table": "requests",
    "loaded_config": "requests",
    "loaded_workflow": "requests",
    "plan": "requests",
    "plan_report": "requests",
    "summarize": "requests",
    "format_status": "status",
}
__getattr__, __dir__ = lazy_exports(__name__, EXPORTS)
