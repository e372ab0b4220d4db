# Config validation, wildcard constraints and every input function of the workflow.
import dataclasses
import json
import re
from pathlib import Path

from isocompute.adaptive import rungs
from isocompute.fits import data_ablation as data_ablation_fits
from isocompute.study import config as study_config
from isocompute.study import inputs, recipe_ablations, studies, upgrades

study_config.validate_config(
    config, workflow.source_path("../workflow/schemas/config.schema.yaml")
)
GRID = study_config.check_config(config)
# Every problem set by name, resolved (a size sweep's sizes apart, a mixture's parts, default recipes).
PROBLEM_SETS = study_config.problem_sets(config)
# Validation sets beyond each set's own, and the out-of-domain problem tables among them.
EXTRA_EVALUATION = study_config.evaluation_sets(config)
OUT_OF_DOMAIN = study_config.out_of_domain_tables(config)
ROOTS = study_config.output_roots(config)


def results(path):
    """A path under the study's results root (`results_root`, default `results`)."""
    return f"{ROOTS['results']}/{path}"


def logs(path):
    return f"{ROOTS['logs']}/{path}"


def benchmarks(path):
    return f"{ROOTS['benchmarks']}/{path}"


# A problem table or base model that later jobs could not use stops the study here, before any job.
inputs.check_inputs(config)
STUDIES = study_config.studies_of(config, GRID)
ABLATIONS = {(a.problem_set, a.name): a for a in study_config.ablations_of(config)}
# The sets the scaling sweep (`grid:`) runs on: those of the per-set figures.
SWEPT_SETS = sorted(
    {p.problem_set for p in study_config.expand_blocks(config, config["grid"], "grid")}
)
# Every run by problem set and name: rules take one {run} wildcard and look its grid point up here.
RUNS = {(point.problem_set, point.run): point for point in GRID}
# The adaptive sweep (None: the full grid), its compute caps, and its studies with their runs (the arms
# by n): a swept run trains rung by rung (rules/sweep.smk), every other run in one job (rules/train.smk).
SWEEP = study_config.sweep_settings(config, STUDIES, GRID)
SWEEP_CAPS = (
    rungs.rung_caps(
        config["training"]["compute_min"],
        config["training"]["compute_max"],
        SWEEP.rung_factor,
    )
    if SWEEP
    else []
)
SWEPT_STUDIES = {
    (s.problem_set, s.name): s for s in STUDIES if SWEEP and s.kind == "fixed_b_problem"
}
SWEPT_RUNS = {p.run for s in SWEPT_STUDIES.values() for p in s.runs(GRID)}
FULL_RUNS = {p.run for p in GRID} - SWEPT_RUNS

FIGURES = {name: kind for name, (kind, _) in studies.FIGURES.items()}
DATA_FIGURES = data_ablation_fits.DATA_FIGURES
ABLATION_KINDS = recipe_ablations.KINDS


localrules:
    decide_sweep_round,
    finish_sweep_run,
    summarize_sweep,
    gather_difficulty,
    build_problem_sets,
    gather_evaluations,
    fit_study,
    plot_study_figure,
    plot_set_figure,
    plot_ablation_figure,
    fit_train_metrics,
    plot_data_figure,
    fit_study_on,
    plot_study_figure_on,
    recommend_allocation,
    write_results_index,


def one_of(names):
    """A wildcard constraint matching exactly these names (and nothing when there are none)."""
    return "|".join(sorted(re.escape(name) for name in set(names))) or "(?!)"


wildcard_constraints:
    problem_set=one_of(PROBLEM_SETS),
    k=r"\d+",
    run=one_of(point.run for point in GRID),
    shard=r"\d+",
    rung=r"\d+",
    round=r"\d+",
    study=r"bp\d+|batch\d+|joint",
    ablation=one_of(name for _, name in ABLATIONS),
    figure="|".join(FIGURES),
    data_figure=one_of(DATA_FIGURES),
    eval_set=one_of([*PROBLEM_SETS, *OUT_OF_DOMAIN]),


def point_of(wildcards):
    """The grid point a job's wildcards name."""
    return RUNS[(wildcards.problem_set, wildcards.run)]


def run_params(wildcards):
    """What the run computes with, as plain values: its own recipe and learning rate, no other run's."""
    return study_config.run_params(config, point_of(wildcards))


def settings_of(block):
    """A config block as a job's params, less its layout (`config.params_form`: the script reads that from
    the config) and the fields an upgrade added at their neutral value: neither reruns a finished job
    (`isocompute.study.upgrades`, docs/guide/upgrading.md)."""
    return upgrades.without_added(study_config.params_form(config[block], block), block)


def study_of(wildcards):
    return studies.parse_study(wildcards.problem_set, wildcards.study)


def get_problem_pool():
    return results("problems/pool.parquet")


def get_base_model_input():
    """A file dependency only when the pipeline builds the model itself."""
    return [] if config["base_model"]["pretrained"] else [results("base_model/model")]


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


def get_difficulty_shards():
    return expand(
        results("difficulty/shards/shard{shard}.parquet"),
        shard=range(config["difficulty"]["shards"]),
    )


def run_files(points, name, stage="evaluation"):
    """One file (`evals.parquet`, `val_counts.parquet`, ...; of `stage`) of each run."""
    return [results(f"{stage}/{p.problem_set}/{p.run}/{name}") for p in points]


def get_study_fit_inputs(wildcards):
    runs = study_of(wildcards).runs(GRID)
    return {
        "evals": run_files(runs, "evals.parquet"),
        "val_counts": run_files(runs, "val_counts.parquet"),
        "base": results(f"evaluation/{wildcards.problem_set}/base_model.parquet"),
        "base_counts": results(
            f"evaluation/{wildcards.problem_set}/base_counts.parquet"
        ),
    }


def study_fits(study):
    return results(f"fits/{study.problem_set}/{study.name}/fits.json")


def study_lr(wildcards):
    """The learning-rate settings of the study's runs, for the learning rate of a recommendation."""
    (lr,) = {study_config.run_lr(config, p) for p in study_of(wildcards).runs(GRID)}
    return {"lr_rule": lr.rule, "lr_base": lr.base, "lr_batch_ref": lr.batch_ref}


def get_study_figure_inputs(wildcards):
    """What each per-study figure reads: the study's fits, plus evaluations where it draws them."""
    study = study_of(wildcards)
    inputs = {"fits": [study_fits(study)]}
    if wildcards.figure in ("fig05_frontier", "fig10_joint_frontier"):
        inputs["base"] = [results(f"evaluation/{study.problem_set}/base_model.parquet")]
    if wildcards.figure == "fig12_train_pass_rates":
        runs = sorted(study.runs(GRID), key=lambda p: (p.seed, p.n))
        extremes = [runs[0], max(runs, key=lambda p: (p.n, -p.seed))]
        inputs["pass_rates"] = run_files(extremes, "train_pass_rates.parquet")
    return inputs


def get_set_figure_inputs(wildcards):
    """Per problem set: every fixed-B_problem study's fits (Fig. 7), every run (Fig. 9)."""
    if wildcards.figure == "fig07_nstar_by_metric":
        mine = [
            s
            for s in STUDIES
            if s.problem_set == wildcards.problem_set and s.kind == "fixed_b_problem"
        ]
        return {"fits": [study_fits(s) for s in mine]}
    runs = [p for p in GRID if p.problem_set == wildcards.problem_set and p.is_default]
    return {"evals": run_files(runs, "evals.parquet")}


def ablation_of(wildcards):
    return ABLATIONS[(wildcards.problem_set, wildcards.ablation)]


def get_ablation_figure_inputs(wildcards):
    """An ablation study's runs: training logs and evaluations, and the base model's evaluation."""
    runs = ablation_of(wildcards).runs
    return {
        "logs": run_files(runs, "train_log.parquet", stage="train"),
        "evals": run_files(runs, "evals.parquet"),
        "base": [results(f"evaluation/{wildcards.problem_set}/base_model.parquet")],
    }


def ablation_runs(wildcards):
    """Each run of an ablation study as plain values: what its figures label and compare."""
    return [
        study_config.run_description(config, p) for p in ablation_of(wildcards).runs
    ]


def data_study(problem_set):
    """The study the data ablations' figures draw on a set: the first fixed-B_problem study, where it has one."""
    wanted = config["studies"]["fixed_b_problem"][:1]
    return next(
        (
            s
            for s in STUDIES
            if s.problem_set == problem_set
            and s.kind == "fixed_b_problem"
            and [s.value] == wanted
        ),
        None,
    )


def data_figure_instances():
    """Each data-ablation figure's instances, each with the (set, evaluation set) pairs it draws in order;
    an evaluation set of None is the set's own validation set."""
    with_study = {name for name in PROBLEM_SETS if data_study(name)}
    sweeps = {}
    for name, settings in PROBLEM_SETS.items():
        if settings["sweep"] and name in with_study:
            sweeps.setdefault(settings["sweep"], []).append(name)
    instances = {
        f"fig14_train_vs_val_{sweep}": [
            (n, None)
            for n in sorted(names, key=lambda n: PROBLEM_SETS[n]["build"]["train_size"])
        ]
        for sweep, names in sweeps.items()
    }
    mixtures = sorted(n for n in with_study if PROBLEM_SETS[n]["mix_of"])
    if mixtures:
        components = {c for n in mixtures for c in PROBLEM_SETS[n]["mix_of"]}
        study = data_study(mixtures[0]).name
        instances[f"fig15_mixtures_{study}"] = [
            *((n, on) for n in mixtures for on in [None, *EXTRA_EVALUATION.get(n, [])]),
            *((n, None) for n in sorted(components & with_study)),
        ]
    for name in sorted(with_study):
        parts = PROBLEM_SETS[name]["build"]["parts"]
        if len(parts) == 1 and "pass_at" in parts[0]:
            instances[f"fig20_extremely_hard_{name}"] = [(name, None)]
    for ood in OUT_OF_DOMAIN:
        pairs = [
            pair
            for name in sorted(with_study)
            if ood in EXTRA_EVALUATION.get(name, [])
            for pair in ((name, None), (name, ood))
        ]
        if pairs:
            instances[f"fig21_out_of_domain_{ood}"] = pairs
    return instances


DATA_FIGURE_SETS = data_figure_instances()


def data_figure_sets(wildcards):
    return DATA_FIGURE_SETS[f"{wildcards.data_figure}_{wildcards.instance}"]


def data_figure_labels(wildcards):
    return [
        name if on is None else f"{name} on {on}"
        for name, on in data_figure_sets(wildcards)
    ]


def eval_table(eval_set):
    """The validation problems of an evaluation set: a problem set's, or an out-of-domain table."""
    if eval_set in OUT_OF_DOMAIN:
        return results(f"out_of_domain/{eval_set}.parquet")
    return results(f"problem_sets/{eval_set}/val.parquet")


def get_eval_table(wildcards):
    return eval_table(wildcards.eval_set)


def get_study_fit_on_inputs(wildcards):
    """A study's runs evaluated on another validation set, and the base model there."""
    runs = study_of(wildcards).runs(GRID)
    on = f"on_{wildcards.eval_set}"
    return {
        "evals": run_files(runs, f"{on}/evals.parquet"),
        "val_counts": run_files(runs, f"{on}/val_counts.parquet"),
        "base": results(f"evaluation/{wildcards.eval_set}/base_model.parquet"),
        "base_counts": results(f"evaluation/{wildcards.eval_set}/base_counts.parquet"),
    }


def fits_on(study, eval_set):
    """A study's fits on its own validation set (eval_set None) or on another."""
    if eval_set is None:
        return study_fits(study)
    return results(f"fits/{study.problem_set}/{study.name}/on_{eval_set}/fits.json")


def extra_evaluation_paths():
    """Every run's evaluation on each extra set, and per study of its set figures 5 and 6 there."""
    paths = []
    for name, others in EXTRA_EVALUATION.items():
        runs = [p for p in GRID if p.problem_set == name]
        for other in others:
            paths += run_files(runs, f"on_{other}/evals.parquet")
            paths += [
                results(f"figures/{name}/{s.name}/on_{other}/{figure}.{ext}")
                for s in STUDIES
                if s.problem_set == name and s.kind == "fixed_b_problem"
                for figure in ("fig05_frontier", "fig06_nstar")
                for ext in ("png", "pdf")
            ]
    return paths


def get_train_fit_inputs(wildcards):
    runs = study_of(wildcards).runs(GRID)
    return {
        "logs": run_files(runs, "train_log.parquet", stage="train"),
        "pass_rates": run_files(runs, "train_pass_rates.parquet"),
    }


def get_data_figure_inputs(wildcards):
    """The fits (and, for Fig. 14, the training metrics' fits) and base model of each set drawn."""
    pairs = data_figure_sets(wildcards)
    inputs = {
        "fits": [fits_on(data_study(s), on) for s, on in pairs],
        "base": [
            results(f"evaluation/{on or s}/base_model.parquet") for s, on in pairs
        ],
    }
    if wildcards.data_figure == "fig14_train_vs_val":
        inputs["train_fits"] = [
            results(f"fits/{s}/{data_study(s).name}/train_fits.json") for s, _ in pairs
        ]
    return inputs


def data_figure_paths(figure=None):
    return [
        results(f"figures/data/{instance}.{ext}")
        for instance in DATA_FIGURE_SETS
        if figure is None or instance.startswith(f"{figure}_")
        for ext in ("png", "pdf")
    ]


def get_recommendation_fits(wildcards):
    """The joint study where there is one, else the first fixed-B_problem study of the set."""
    mine = [s for s in STUDIES if s.problem_set == wildcards.problem_set]
    joint = [s for s in mine if s.kind == "joint"]
    return study_fits((joint or [s for s in mine if s.kind == "fixed_b_problem"])[0])


def figure_paths(figure):
    """Every instance of a figure (one per study of its kind, or per problem set), PNG and PDF."""
    kind = FIGURES[figure]
    if kind == "ablation" or kind in ABLATION_KINDS:
        folders = [
            f"{a.problem_set}/{a.name}"
            for a in ABLATIONS.values()
            if kind in ("ablation", a.kind)
        ]
    elif kind == "set":
        folders = [
            problem_set
            for problem_set in SWEPT_SETS
            if figure != "fig07_nstar_by_metric"
            or any(
                s.problem_set == problem_set and s.kind == "fixed_b_problem"
                for s in STUDIES
            )
        ]
    else:
        folders = [
            f"{s.problem_set}/{s.name}" for s in STUDIES if kind in ("study", s.kind)
        ]
    return [
        results(f"figures/{folder}/{figure}.{ext}")
        for folder in folders
        for ext in ("png", "pdf")
    ]


def recommendation_paths():
    if not config["recommend"]["compute"]:
        return []
    with_fits = sorted(
        {s.problem_set for s in STUDIES if s.kind in ("joint", "fixed_b_problem")}
    )
    return [results(f"recommendations/{p}.md") for p in with_fits]


def diagnostics_paths():
    """Every study's training diagnostics: its tables and figure (`rules/diagnostics.smk`)."""
    return [
        results(f"{stage}/{s.problem_set}/{s.name}/{name}")
        for s in STUDIES
        for stage, name in (
            ("diagnostics", "training.parquet"),
            ("diagnostics", "nstar_by_metric.parquet"),
            ("figures", "diagnostics.png"),
            ("figures", "diagnostics.pdf"),
        )
    ]


def interference_probe_paths():
    """The probe of every swept set together (`results/interference/easy+hard/`), with its figure."""
    probe = "+".join(SWEPT_SETS)
    return [
        results(f"interference/{probe}/probe.json"),
        *(results(f"figures/interference/{probe}.{ext}") for ext in ("png", "pdf")),
    ]


# One or more problem sets joined by "+".
PROBE = f"(?:{one_of(PROBLEM_SETS)})(?:\\+(?:{one_of(PROBLEM_SETS)}))*"


def rung_steps_of(point):
    """The step a swept run reaches at each rung, on the full run's checkpoint grid."""
    training = config["training"]
    return rungs.arm_rung_steps(
        point.batch,
        training["compute_min"],
        training["compute_max"],
        training["checkpoint_points"],
        SWEEP.rung_factor,
    )


def swept_study_of(point):
    """The adapted fixed-B_problem study a swept run is an arm of."""
    return SWEPT_STUDIES[(point.problem_set, f"bp{point.b_problem}")]


def sweep_round(problem_set, study, round):
    """A round's record; reading it waits for that round's decision (a checkpoint)."""
    done = checkpoints.decide_sweep_round.get(
        problem_set=problem_set, study=study, round=round
    )
    return json.loads(Path(done.output.round).read_text())


def rung_files(point, reached, name, stage="evaluation"):
    """One file of each rung at which a swept run trained something new, up to rung `reached`."""
    return [
        results(f"{stage}/{point.problem_set}/{point.run}/rung{rung}/{name}")
        for rung in rungs.trained_rungs(rung_steps_of(point), reached)
    ]


def get_sweep_round_inputs(wildcards):
    """Round r reads every arm's evaluations up to the rung it reached (the previous round says which arms
    trained rung r) and the base model's."""
    study = SWEPT_STUDIES[(wildcards.problem_set, wildcards.study)]
    index = int(wildcards.round)
    previous = (
        sweep_round(wildcards.problem_set, wildcards.study, index - 1)
        if index
        else None
    )
    runs = study.runs(GRID)
    reached = rungs.reached_rungs(sorted({p.n for p in runs}), previous, index)
    return {
        "evals": [
            f for p in runs for f in rung_files(p, reached[p.n], "evals.parquet")
        ],
        "val_counts": [
            f for p in runs for f in rung_files(p, reached[p.n], "val_counts.parquet")
        ],
        "base": results(f"evaluation/{wildcards.problem_set}/base_model.parquet"),
        "base_counts": results(
            f"evaluation/{wildcards.problem_set}/base_counts.parquet"
        ),
        "previous": (
            [
                results(
                    f"sweep/{wildcards.problem_set}/{wildcards.study}/round{index - 1}.json"
                )
            ]
            if index
            else []
        ),
    }


def sweep_round_arms(wildcards):
    """Each arm's step at every rung, for the round's decision."""
    study = SWEPT_STUDIES[(wildcards.problem_set, wildcards.study)]
    return {p.n: rung_steps_of(p) for p in study.runs(GRID)}


def get_rung_training_inputs(wildcards):
    """A rung trains after the round that kept its arm running, from the arm's previous rung."""
    point = point_of(wildcards)
    rung = int(wildcards.rung)
    earlier = rungs.trained_rungs(rung_steps_of(point), rung)[:-1]
    study = swept_study_of(point)
    return {
        "train": results(f"problem_sets/{point.problem_set}/train.parquet"),
        "model": get_base_model_input(),
        "decision": (
            [results(f"sweep/{point.problem_set}/{study.name}/round{rung - 1}.json")]
            if rung
            else []
        ),
        "previous": [
            results(f"train/{point.problem_set}/{point.run}/rung{r}/checkpoints.json")
            for r in earlier[-1:]
        ],
    }


def rung_until_step(wildcards):
    return rung_steps_of(point_of(wildcards))[int(wildcards.rung)]


def rung_after_step(wildcards):
    """The step of the arm's previous trained rung: its checkpoints are evaluated already."""
    point = point_of(wildcards)
    steps = rung_steps_of(point)
    earlier = rungs.trained_rungs(steps, int(wildcards.rung))[:-1]
    return steps[earlier[-1]] if earlier else 0


def finished_rungs(wildcards):
    """The rungs a swept run trained, once the last round has decided."""
    point = point_of(wildcards)
    study = swept_study_of(point)
    last = sweep_round(point.problem_set, study.name, len(SWEEP_CAPS) - 2)
    reached = rungs.reached_rungs([point.n], last, len(SWEEP_CAPS) - 1)[point.n]
    return rungs.trained_rungs(rung_steps_of(point), reached)


def get_finished_run_inputs(wildcards):
    point = point_of(wildcards)
    trained = finished_rungs(wildcards)
    where = f"{point.problem_set}/{point.run}"
    return {
        "log_table": results(f"train/{where}/rung{trained[-1]}/train_log.parquet"),
        "checkpoints": results(f"train/{where}/rung{trained[-1]}/checkpoints.json"),
        **{
            name: [
                results(f"evaluation/{where}/rung{r}/{name}.parquet") for r in trained
            ]
            for name in ("evals", "val_counts", "train_pass_rates")
        },
    }


def get_sweep_summary_inputs(wildcards):
    return {
        "rounds": [
            results(f"sweep/{wildcards.problem_set}/{wildcards.study}/round{r}.json")
            for r in range(len(SWEEP_CAPS) - 1)
        ],
        "fits": results(f"fits/{wildcards.problem_set}/{wildcards.study}/fits.json"),
    }


def sweep_summary_arms(wildcards):
    """Per arm (n): its runs (seeds), batch and step at every rung, for what the sweep spent."""
    runs = SWEPT_STUDIES[(wildcards.problem_set, wildcards.study)].runs(GRID)
    return {
        n: {
            "runs": len(arm),
            "batch": arm[0].batch,
            "rung_steps": rung_steps_of(arm[0]),
        }
        for n, arm in (
            (n, [p for p in runs if p.n == n]) for n in sorted({p.n for p in runs})
        )
    }


def sweep_paths():
    """Each adapted study's summary and its frontier with the stops marked."""
    return [
        results(f"sweep/{problem_set}/{study}/{name}")
        for problem_set, study in SWEPT_STUDIES
        for name in ("summary.json", "frontier_stops.png")
    ]


def get_study_outputs():
    """The study's answers: every figure, the recommendations and the table of all evaluations."""
    return [
        *sweep_paths(),
        *(path for figure in FIGURES for path in figure_paths(figure)),
        *diagnostics_paths(),
        *data_figure_paths(),
        *extra_evaluation_paths(),
        *recommendation_paths(),
        results("evaluation/evals.csv"),
    ]


def get_final_output():
    """Everything `snakemake` with no target builds: the study's answers and the results index."""
    return [*get_study_outputs(), results("README.md")]
