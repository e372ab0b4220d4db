"""`isocompute plan`: the GPU-hours a configuration asks the cluster for, before anything is submitted.

A preset's cost is a product of its grid (how many runs), the per-rule `resources:` of config.yaml (GPUs
and wall time per job) and the workflow's wiring (difficulty shards, evaluations per run). Rather than
re-derive any of these, the plan asks Snakemake itself: it dry-runs the workflow through Snakemake's Python
API, reads every job of the resulting DAG with the resources Snakemake evaluated for it, and sums
`gpu * runtime / 60` per rule. What the plan reports is therefore exactly what `snakemake --profile slurm`
would request, including the effect of every overlaid --configfile.

Jobs of `localrules` (and input-only rules such as `all`) run on the submitting host, not under sbatch, so
they are listed but counted at 0 GPU-hours whatever their resources say. A cluster job that asks for GPUs
must belong to a rule of `isocompute.study.cluster_rules.CLUSTER_RULES`, the rules `isocompute status` counts:
the plan refuses any other, so what is planned is what status will count.

An adaptive sweep (`sweep.mode: adaptive`) decides its DAG round by round, so a dry run cannot see past its
first decision. Its plan is two cases: the worst, every arm to C_max (the same config dry-run as the full
grid), and the expected, the adaptive runs' training scaled by the share of the full grid's rollouts that a
replay of the policy (`isocompute replay`, or a finished adaptive sweep's summary.json: the same schema)
spent, or the prior's plan; without either, the shares the rule spent on the realistic replay tables
(`MEASURED_SHARES`), stated as such. A full grid's plan gives the same estimate beside its own total, for
the runs an adaptive sweep would adapt (`adaptable_runs`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
from snakemake.api import SnakemakeApi
from snakemake.exceptions import RuleException
from snakemake.settings.enums import Quietness
from snakemake.settings.types import ConfigSettings, DAGSettings, OutputSettings, ResourceSettings
from snakemake_interface_common.exceptions import ApiError, WorkflowError

from isocompute.adaptive.prior import Prior, planned_reach
from isocompute.adaptive.rungs import arm_rung_steps
from isocompute.errors import IsoComputeError
from isocompute.pipeline.config import ConfigError
from isocompute.plan.budget import StepModel, format_needs, run_needs
from isocompute.study.cluster_rules import CLUSTER_RULES

COLUMNS = ["rule", "jobs", "local", "gpus_per_job", "runtime_min", "gpu_hours"]

# What loading a Snakefile with a config can raise for a reason the user can fix: our own config checks
# (rules/common.smk), Snakemake's workflow and rule errors, a config file that cannot be read.
USER_ERRORS = (ConfigError, WorkflowError, RuleException, ApiError, OSError)


class PlanError(IsoComputeError, ValueError):
    """The workflow could not be dry-run for these inputs; the message is Snakemake's or the config's."""


@dataclass(frozen=True)
class JobRequest:
    """What one job of the DAG asks the cluster for: the rule, where it runs, GPUs and minutes."""

    rule: str
    local: bool
    gpus: float
    runtime_min: float
    run: str | None = None  # the job's {run} wildcard, where it has one
    problem_set: str | None = None  # its {problem_set} wildcard, where it has one

    @property
    def gpu_hours(self) -> float:
        """0 for a job on the submit host: it holds no cluster allocation whatever its resources say."""
        return 0.0 if self.local else self.gpus * self.runtime_min / 60


def plan(
    configfiles: Sequence[str | Path] = (),
    snakefile: str | Path | None = None,
    directory: str | Path = ".",
    pending_only: bool = False,
) -> pd.DataFrame:
    """Dry-run the workflow and return one row per rule (in the DAG's order) with its jobs and GPU-hours."""
    return summarize(dry_run_jobs(configfiles, snakefile, directory, pending_only))


def dry_run_jobs(
    configfiles: Sequence[str | Path] = (),
    snakefile: str | Path | None = None,
    directory: str | Path = ".",
    pending_only: bool = False,
    overrides: Mapping[str, Any] | None = None,
) -> list[JobRequest]:
    """Every job a dry run of the workflow schedules, in topological order, with its evaluated resources.

    By default the whole DAG is planned (`forceall`), so the answer is what a first submission costs and does
    not depend on which results already sit in `directory`; `pending_only` plans what `snakemake -n` would
    run now instead. Config files and the Snakefile are resolved against the caller's directory, as
    `snakemake --directory` does, before Snakemake changes into `directory`; `overrides` are merged over
    them last, as `snakemake --config` does.
    """
    with loaded_workflow(configfiles, snakefile, directory, overrides) as workflow_api:
        return _dry_run(workflow_api, pending_only)


def _dry_run(workflow_api: Any, pending_only: bool) -> list[JobRequest]:
    """The jobs of a loaded workflow's dry run (see `dry_run_jobs`)."""
    dag_api = workflow_api.dag(DAGSettings(forceall=not pending_only))
    dag_api.execute_workflow(executor="dryrun")
    workflow = _workflow_of(workflow_api)
    return [_job_request(job, workflow) for job in _toposorted_jobs(workflow.dag)]


def plan_report(
    configfiles: Sequence[str | Path] = (),
    snakefile: str | Path | None = None,
    directory: str | Path = ".",
    replay: str | Path | None = None,
    step_model: StepModel | None = None,
    retries: int = 0,
) -> str:
    """The whole plan as text: the table of the dry run, or an adaptive sweep's worst and expected cases
    (its dry run stops at the first decision); with a `step_model`, then what the training runs need
    (`isocompute.plan.budget`: GPU-hours from step times, attempts of `retries` + 1, checkpoint disk). A full
    grid's plan ends with the adaptive rule's expected cost on the same grid (`format_rule_estimate`); its
    config is loaded once."""
    with loaded_workflow(configfiles, snakefile, directory) as workflow_api:
        config = dict(workflow_api._workflow.config)  # parsed with the Snakefile, as in `loaded_config`
        if not _adaptive_runs(workflow_api):
            _refuse_replay_of_full_grid(replay)
            jobs = _dry_run(workflow_api, pending_only=False)
            adaptable = adaptable_runs(workflow_api._workflow.globals)
            table = summarize(jobs)
            text = _with_needs(format_table(table), table, config, step_model, retries)
            needs = run_needs(config, step_model, retries) if step_model else None
            return f"{text}\n\n{format_rule_estimate(jobs, adaptable, needs)}"
    adaptive = adaptive_plan(configfiles, snakefile, directory, replay)
    assert adaptive is not None  # the same config was just found adaptive
    return _with_needs(format_adaptive_plan(adaptive), adaptive.worst, config, step_model, retries, adaptive.run_shares)


def _with_needs(
    text: str,
    table: pd.DataFrame,
    config: dict[str, Any],
    step_model: StepModel | None,
    retries: int,
    run_shares: Mapping[tuple[str, str], float] | None = None,
) -> str:
    """The plan's text, followed by the training runs' needs under `step_model` where one is given. An
    adaptive sweep's are its worst case's (every arm to C_max); with a prior's plan (`run_shares`: the share
    of its steps each adaptive run is expected to train), its expected case by the same step model."""
    if step_model is None:
        return text
    requested = float(table.loc[table["rule"] == TRAINING_RULE, "gpu_hours"].sum())
    needs = run_needs(config, step_model, retries)
    heading = f"what the training runs need (retries: {retries})"
    text = f"{text}\n\n{heading}\n{format_needs(needs, step_model, requested)}"
    if run_shares:
        worst = sum(need.gpu_hours for need in needs)
        expected = sum(need.gpu_hours * run_shares.get((need.problem_set, need.run), 1.0) for need in needs)
        text += (f"\nwith the prior's plan: {expected:,.0f} GPU-hours of training by the step model, against "
                 f"{worst:,.0f} for the full grid (the worst case: a prior contradicted at the last round resumes "
                 f"every arm it stopped)")  # fmt: skip
    return text


def _refuse_replay_of_full_grid(replay: str | Path | None) -> None:
    """A replay's share scales an adaptive sweep's training of its arms: a full grid has nothing to scale."""
    if replay is not None:
        raise PlanError(f"--replay {replay}: the config runs the full grid (sweep.mode is not adaptive)")


def _adaptive_runs(workflow_api: Any) -> set[str]:
    """The runs an adaptive sweep trains rung by rung: the workflow's own `ADAPTIVE_RUNS` (rules/common.smk;
    none in a Snakefile without it)."""
    # Reading `_workflow` parses the Snakefile, as in `loaded_config`.
    return set(workflow_api._workflow.globals.get("ADAPTIVE_RUNS", ()))


@contextmanager
def loaded_workflow(
    configfiles: Sequence[str | Path] = (),
    snakefile: str | Path | None = None,
    directory: str | Path = ".",
    overrides: Mapping[str, Any] | None = None,
) -> Iterator[Any]:
    """Snakemake's `WorkflowApi` for the workflow with these config files, as `snakemake` would load it.

    Errors the user can fix (a bad config, a missing file, Snakemake's own) become `PlanError`.
    """
    missing = [str(path) for path in configfiles if not Path(path).is_file()]
    if missing:
        raise PlanError(f"config file(s) not found: {', '.join(missing)}")
    try:
        # Quiet, and no log file: the plan is the only output, and a plan leaves no trace in .snakemake/log.
        output = OutputSettings(quiet={Quietness.ALL}, enable_file_logging=False)
        with SnakemakeApi(output) as api:
            yield api.workflow(
                resource_settings=ResourceSettings(),
                config_settings=ConfigSettings(
                    config=dict(overrides or {}), configfiles=[Path(path) for path in configfiles]
                ),
                snakefile=Path(snakefile) if snakefile is not None else None,
                workdir=Path(directory),
            )
    except USER_ERRORS as error:
        raise PlanError(_message(error)) from error


def loaded_config(
    configfiles: Sequence[str | Path] = (),
    snakefile: str | Path | None = None,
    directory: str | Path = ".",
) -> dict[str, Any]:
    """The config a run of the workflow sees: the Snakefile's own with the config files overlaid, after the
    workflow's own checks (`rules/common.smk`) passed."""
    with loaded_workflow(configfiles, snakefile, directory) as workflow_api:
        # Reading `_workflow` parses the Snakefile (Snakemake 9.27 has no public accessor for its config).
        return dict(workflow_api._workflow.config)


# A run's one training job in the full grid's dry run: its GPU-hours scale with the rollouts it trains on.
TRAINING_RULE = "train_grpo"
# The full grid of an adaptive sweep's config: every arm to C_max, each in one training job.
FULL_GRID = {"sweep": {"mode": "full"}}
# The adaptive rule's share of the full grid's training rollouts without a prior, as measured on the realistic
# replay tables (`python tests/prior_truth.py 0 1 2 --plain`: realistic_slow, realistic_late and
# close_shared_saturating, n 8-1024 on the paper preset's shared grid, seeds 0-2; the rule of 2026-12-07, with
# `guard_behind`): the mean and the
# range over those nine draws (docs/log/adaptive-prior.md). A stand-in where no replay of the study's own kind
# of table is given, and said so wherever it is used.
MEASURED_SHARES = (0.49, 0.38, 0.60)
MEASURED_SOURCE = (
    "the rule's share on the realistic replay tables without a prior (mean {mean:.0%}, {low:.0%} to {high:.0%} over "
    "9 draws; docs/log/adaptive-prior.md), not a replay of this study"
)


@dataclass(frozen=True)
class AdaptivePlan:
    """An adaptive sweep's two cases: the worst (the full grid's jobs) and the expected GPU-hours."""

    worst: pd.DataFrame
    adaptive_training_gpu_hours: float  # the worst case's training of the adaptive runs
    share: float  # of the full grid's rollouts, from `source`
    source: str
    # With a prior's plan: per (problem set, run), the share of its steps the run is expected to train.
    run_shares: dict[tuple[str, str], float] | None = None
    # Where the share is the realistic tables' (`MEASURED_SHARES`): its lowest and highest.
    share_range: tuple[float, float] | None = None

    @property
    def expected_gpu_hours(self) -> float:
        """The worst case less the adaptive runs' training the adaptive sweep is expected not to do.
        Evaluation stays at the worst case's: an arm stopped early still evaluates its log-spaced checkpoints
        up to its stop, a larger share of them than of its rollouts."""
        return self.expected_at(self.share)

    def expected_at(self, share: float) -> float:
        """The expected GPU-hours where the adaptive runs' training is cut to `share`."""
        return float(self.worst["gpu_hours"].sum()) - (1 - share) * self.adaptive_training_gpu_hours


def adaptive_plan(
    configfiles: Sequence[str | Path] = (),
    snakefile: str | Path | None = None,
    directory: str | Path = ".",
    replay: str | Path | None = None,
) -> AdaptivePlan | None:
    """The adaptive sweep's cases (None where the config runs the full grid). The adaptive runs are the
    workflow's own (`ADAPTIVE_RUNS` of rules/common.smk); the share is `rollouts_spent / rollouts_full_grid`
    of `replay`, a replay's output or a finished adaptive sweep's summary.json."""
    with loaded_workflow(configfiles, snakefile, directory) as workflow_api:
        adaptive = _adaptive_runs(workflow_api)
        planned = prior_share(workflow_api._workflow.globals) if adaptive and replay is None else None
    if not adaptive:
        _refuse_replay_of_full_grid(replay)
        return None
    worst = dry_run_jobs(configfiles, snakefile, directory, overrides=FULL_GRID)
    training = sum(job.gpu_hours for job in worst if job.rule == TRAINING_RULE and job.run in adaptive)
    if replay is not None:
        return AdaptivePlan(summarize(worst), training, replay_share(replay), str(replay))
    if planned is not None:
        return AdaptivePlan(summarize(worst), training, *planned)
    mean, low, high = MEASURED_SHARES
    return AdaptivePlan(summarize(worst), training, mean, MEASURED_SOURCE.format(mean=mean, low=low, high=high),
                        share_range=(low, high))  # fmt: skip


def adaptable_runs(workflow: Mapping[str, Any]) -> set[tuple[str, str]]:
    """The (problem set, run) an adaptive sweep of a full grid's config would train rung by rung: the runs of
    its fixed-B_problem studies with three arms or more (`pipeline.config.adaptive_settings` refuses fewer),
    from the workflow's own globals (rules/common.smk). The sweep also needs the fixed-B and joint studies that
    share those runs left out: the estimate is of that sweep."""
    adaptable = set()
    for study in workflow.get("STUDIES", ()):
        runs = study.runs(workflow["GRID"]) if study.kind == "fixed_b_problem" else []
        if len({p.n for p in runs}) >= 3:
            adaptable |= {(p.problem_set, p.run) for p in runs}
    return adaptable


def format_rule_estimate(jobs: Sequence[JobRequest], adaptable: set[tuple[str, str]], needs: Sequence[Any] | None) -> str:
    """A full grid's plan beside the adaptive rule's expected cost on the same grid: the `adaptable` runs'
    training cut to the share of the full grid's rollouts the rule spent on the realistic replay tables
    (`MEASURED_SHARES`: the mean and the range), evaluation and everything else as requested; with the step
    model's `needs`, the same by the step model."""
    if not adaptable:
        return "the adaptive rule: no fixed-B_problem study with three arms or more to adapt"
    mean, low, high = MEASURED_SHARES
    total = sum(job.gpu_hours for job in jobs)
    training = sum(job.gpu_hours for job in jobs if job.rule == TRAINING_RULE and (job.problem_set, job.run) in adaptable)

    def cut(whole: float, part: float, share: float) -> float:
        return whole - (1 - share) * part

    head = (
        f"the adaptive rule (sweep.mode: adaptive, no prior) on the {len(adaptable)} runs of the fixed-B_problem "
        f"studies with three arms or more ({training:,.0f} of the {total:,.0f} GPU-hours requested are their training; "
        f"fixed-B and joint studies sharing them left out): expected {cut(total, training, mean):,.0f} GPU-hours "
        f"({cut(total, training, low):,.0f} to {cut(total, training, high):,.0f}) against the full grid's {total:,.0f}"
    )
    source = (
        f"  from {MEASURED_SOURCE.format(mean=mean, low=low, high=high)}: `isocompute replay` on a table like "
        f"this study's, then `--replay`, gives your own"
    )
    lines = [head, source]
    if needs:
        whole = sum(need.gpu_hours for need in needs)
        part = sum(need.gpu_hours for need in needs if (need.problem_set, need.run) in adaptable)
        lines.append(f"  by the step model: training {cut(whole, part, mean):,.0f} GPU-hours ({cut(whole, part, low):,.0f} "
                     f"to {cut(whole, part, high):,.0f}) against the full grid's training {whole:,.0f}")  # fmt: skip
    return "\n".join(lines)


def prior_share(workflow: Mapping[str, Any]) -> tuple[float, str, dict[tuple[str, str], float]] | None:
    """The share of the full grid's rollouts an adaptive sweep with a prior is expected to spend if the new
    model's law is the prior's (`adaptive.prior.planned_reach` on every adapted study's arms, each run to the
    step its arm reaches), where it came from, and each run's share of its steps; None without `sweep.prior`. From the workflow's own
    globals (rules/common.smk), so the plan sees the arms and rungs the rounds will."""
    if not workflow.get("ADAPTIVE_PRIOR"):
        return None
    config, caps = workflow["config"], list(workflow["ADAPTIVE_CAPS"])
    training, factor = config["training"], workflow["ADAPTIVE"].rung_factor
    spent = full = 0.0
    sources = set()
    run_shares = {}
    for (problem_set, _), study in workflow["ADAPTIVE_STUDIES"].items():
        runs = study.runs(workflow["GRID"])
        prior_params = workflow["ADAPTIVE_PRIOR"].get(problem_set)
        reach = {}
        if prior_params is not None:
            prior = Prior.from_params(prior_params)
            sources.add(f"{problem_set}: {prior.source}")
            reach = planned_reach(prior, sorted({p.n for p in runs}), caps)
        for point in runs:
            steps = arm_rung_steps(point.batch, training["compute_min"], training["compute_max"], training["checkpoint_points"], factor)
            reached = steps[caps.index(reach.get(point.n, caps[-1]))]
            run_shares[(point.problem_set, point.run)] = reached / steps[-1]
            spent += reached * point.batch
            full += steps[-1] * point.batch
    source = (f"the prior's plan ({', '.join(sorted(sources))}; each arm run to where the prior's rules stop it if the "
              f"new model's law is the prior's, a set without a prior to C_max)")  # fmt: skip
    return spent / full, source, run_shares


def replay_share(path: str | Path) -> float:
    """The share of the full grid's rollouts a replay (or an adaptive sweep's summary.json) spent, checked."""
    try:
        record = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as error:
        raise PlanError(f"--replay {path}: cannot read it as JSON ({error})") from None
    missing = [key for key in ("rollouts_spent", "rollouts_full_grid") if key not in record]
    if missing:
        raise PlanError(
            f"--replay {path}: missing {missing} (the output of `isocompute replay` or an "
            f"adaptive sweep's summary.json)"
        )
    spent, full = float(record["rollouts_spent"]), float(record["rollouts_full_grid"])
    if not (0 < full and 0 <= spent <= full):
        raise PlanError(
            f"--replay {path}: rollouts_spent={spent:g} must lie in [0, rollouts_full_grid={full:g}]"
        )
    return spent / full


def format_adaptive_plan(adaptive: AdaptivePlan) -> str:
    """The worst case's table, then the expected case with where its share came from."""
    lines = [
        "adaptive sweep, worst case: every arm to C_max (the full grid's jobs)",
        format_table(adaptive.worst),
    ]
    spread = (
        "" if adaptive.share_range is None else
        f" ({adaptive.expected_at(adaptive.share_range[0]):,.1f} to {adaptive.expected_at(adaptive.share_range[1]):,.1f})"
    )  # fmt: skip
    lines.append(
        f"expected case: {adaptive.expected_gpu_hours:,.1f} GPU-hours{spread}: the adaptive runs' training "
        f"({adaptive.adaptive_training_gpu_hours:,.1f} GPU-hours) x {adaptive.share:.0%}, the share of the full "
        f"grid's rollouts spent in {adaptive.source}; evaluation and the rest as in the worst case"
    )
    return "\n".join(lines)


def summarize(jobs: Iterable[JobRequest]) -> pd.DataFrame:
    """One row per rule: jobs, whether it runs locally, the most GPUs and minutes one job asks, GPU-hours.

    GPU-hours are summed over the rule's jobs rather than taken as jobs x maximum, so a rule whose jobs ask
    different resources (a resources callable of the wildcards) is still counted exactly.
    """
    rows: dict[str, dict[str, Any]] = {}
    for job in jobs:
        row = rows.setdefault(
            job.rule,
            {
                "rule": job.rule,
                "jobs": 0,
                "local": job.local,
                "gpus_per_job": 0.0,
                "runtime_min": 0.0,
                "gpu_hours": 0.0,
            },
        )
        row["jobs"] += 1
        row["gpus_per_job"] = max(row["gpus_per_job"], 0.0 if job.local else job.gpus)
        row["runtime_min"] = max(row["runtime_min"], job.runtime_min)
        row["gpu_hours"] += job.gpu_hours
    table = pd.DataFrame(list(rows.values()), columns=COLUMNS)
    return table.astype(
        {"jobs": int, "local": bool, "gpus_per_job": float, "runtime_min": float, "gpu_hours": float}
    )


def format_table(table: pd.DataFrame) -> str:
    """The plan as a plain-text table with a total line, for a terminal or a submission note."""
    header = ["rule", "jobs", "where", "gpus/job", "runtime/job (min)", "GPU-hours"]
    lines = [
        [
            str(r.rule),
            str(r.jobs),
            "local" if r.local else "cluster",
            _count(r.gpus_per_job),
            _count(r.runtime_min),
            f"{r.gpu_hours:,.1f}",
        ]
        for r in table.itertuples()
    ]
    total = ["total", str(int(table["jobs"].sum())), "", "", "", f"{table['gpu_hours'].sum():,.1f}"]
    widths = [max(len(line[i]) for line in [header, *lines, total]) for i in range(len(header))]

    def render(cells: list[str]) -> str:
        # The rule and where columns read left to right; the numbers line up on the right.
        return "  ".join(
            cell.ljust(width) if i in (0, 2) else cell.rjust(width)
            for i, (cell, width) in enumerate(zip(cells, widths))
        ).rstrip()

    divider = "  ".join("-" * width for width in widths)
    return "\n".join([render(header), divider, *map(render, lines), divider, render(total)])


def _workflow_of(workflow_api: Any) -> Any:
    """The `Workflow` behind a `WorkflowApi`, which holds the DAG after `execute_workflow`.

    Snakemake 9.27's `DAGApi.execute_workflow` returns nothing, and the DAG it built is reachable only as
    `WorkflowApi._workflow.dag`; this is the one place the plan reaches past the public API, so a Snakemake
    upgrade that moves it fails here with a clear message (and in tests/test_plan.py).
    """
    workflow = getattr(workflow_api, "_workflow", None)
    if workflow is None or getattr(workflow, "dag", None) is None:
        raise PlanError("this Snakemake version does not expose the dry-run DAG (WorkflowApi._workflow.dag)")
    return workflow


def _toposorted_jobs(dag: Any) -> list[Any]:
    """The jobs a dry run scheduled (finished in the dry run or not), upstream first, then by name.

    The dry run marks each job finished as it "runs" it, so finished jobs are kept; the order is the one of
    Snakemake's own job-stats table, which a user compares the plan with.
    """
    jobs = set(dag.needrun_jobs(exclude_finished=False))
    return [job for level in dag.toposorted(jobs) for job in sorted(level, key=str)]


def _job_request(job: Any, workflow: Any) -> JobRequest:
    """A job's rule, placement and the GPUs and runtime Snakemake evaluated for it; a cluster job holding
    GPUs for a rule that `isocompute status` would not count is refused."""
    rule = job.rule.name
    resources = job.resources
    request = JobRequest(
        rule=rule,
        local=_runs_on_submit_host(job.rule, workflow),
        gpus=_number(resources.get("gpu", 0), rule, "gpu"),
        runtime_min=_number(resources.get("runtime", 0), rule, "runtime"),
        run=job.wildcards_dict.get("run"),
        problem_set=job.wildcards_dict.get("problem_set"),
    )
    if request.gpus and not request.local and rule not in CLUSTER_RULES:
        raise PlanError(
            f"rule {rule} asks for {request.gpus:g} GPU(s) but is not in isocompute.study.cluster_rules.CLUSTER_RULES, "
            f"so `isocompute status` would not count its GPU-hours: add it there"
        )
    return request


def _runs_on_submit_host(rule: Any, workflow: Any) -> bool:
    """Whether a cluster executor would run the rule's jobs locally.

    The dry run uses a local executor, for which Snakemake calls every job local (`job.is_local`), so this
    applies the rule `Workflow.is_local` uses for a cluster executor: an ungrouped rule that is a localrule,
    has no run/shell/script (`all`), or is a template-engine rule.
    """
    localrules = getattr(workflow, "_localrules", set())
    return rule.group is None and (
        rule.name in localrules or bool(rule.norun) or bool(rule.is_template_engine)
    )


def _number(value: Any, rule: str, resource: str) -> float:
    """A resource as a number; one Snakemake could not evaluate in a dry run (<TBD>) cannot be planned."""
    if value is None:
        return 0.0
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise PlanError(f"rule {rule}: resource {resource}={value!r} is not a number in a dry run") from None
    if math.isnan(number) or number < 0:
        raise PlanError(f"rule {rule}: resource {resource}={value!r} is not a count")
    return number


def _count(value: float) -> str:
    """A count of GPUs or minutes without a needless `.0`; `-` for none."""
    if value == 0:
        return "-"
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.2f}"


def _message(error: BaseException) -> str:
    """The error's own message, prefixed with its type where that says which check failed."""
    text = str(error).strip() or type(error).__name__
    if isinstance(error, ConfigError):
        return text
    return f"{type(error).__name__}: {text}"
