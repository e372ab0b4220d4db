# The input functions and values of rules/targets.smk's rules (the Snakemake linter keeps functions out of
# files with rules).
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
            for problem_set in GRID_SETS
            # A set figure reading fits draws the set's fixed-B_problem studies: none, no figure.
            if "fits" not in FIGURE_REGISTRY[figure].inputs
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


def adaptive_paths():
    """Each adapted study's summary and its frontier with the stops marked."""
    return [
        results(f"sweep/{problem_set}/{study}/{name}")
        for problem_set, study in ADAPTIVE_STUDIES
        for name in ("summary.json", "frontier_stops.png")
    ]


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


def data_figure_paths(figure=None):
    return [
        results(f"figures/data/{instance}.{ext}")
        for instance in DATA_FIGURE_SETS
        if figure is None or instance.startswith(f"{figure}_")
        for ext in ("png", "pdf")
    ]


def extra_evaluation_paths():
    """Every run's evaluation on each extra set, and per study of its set the figures drawn there."""
    paths = []
    for name, others in EXTRA_EVALUATION.items():
        runs = [p for p in GRID if p.problem_set == name]
        for other in others:
            paths += run_files(runs, f"on_{other}/evals.parquet")
            paths += [
                results(f"figures/{name}/{s.name}/on_{other}/{figure}.{ext}")
                for s in STUDIES
                if s.problem_set == name and s.kind == "fixed_b_problem"
                for figure in FIGURES_ON_OTHER_SETS
                for ext in ("png", "pdf")
            ]
    return paths


def recommendation_paths():
    if not config["recommend"]["compute"]:
        return []
    with_fits = sorted(
        {s.problem_set for s in STUDIES if s.kind in ("joint", "fixed_b_problem")}
    )
    return [results(f"recommendations/{p}.md") for p in with_fits]


def get_study_outputs():
    """The study's answers: every figure, the recommendations and the table of all evaluations."""
    return [
        *adaptive_paths(),
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
