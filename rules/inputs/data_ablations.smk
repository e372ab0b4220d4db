# The input functions and values of rules/data_ablations.smk's rules (the Snakemake linter keeps functions out of
# files with rules).
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


def fits_on(study, eval_set):
    """A study's fits on its own validation set (eval_set None) or on another."""
    if eval_set is None:
        return study_fits(study)
    return results(f"fits/{study.problem_set}/{study.name}/on_{eval_set}/fits.json")


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
