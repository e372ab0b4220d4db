"""The figure registry (`isocompute.figures.registry`): each figure's one definition, read by the rules, the
report's caption and the results index."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest
from conftest import REPO
from test_workflow import DATA, MICRO, scratch_workflow, snakemake

from isocompute.figures import registry
from isocompute.figures.registry import FIGURES, INPUTS
from isocompute.pipeline import artifacts
from isocompute.study import recipe_ablations
from isocompute.study.specs import FigureStyle
from isocompute.study.studies import NAME_FORMS

# The file each input name stands for (a figure's rule input carrying that name reads only these).
INPUT_FILES = {
    "fits": "fits.json",
    "base": "base_model.parquet",
    "evals": "evals.parquet",
    "logs": "train_log.parquet",
    "pass_rates": "train_pass_rates.parquet",
    "train_fits": "train_fits.json",
    "table": "training.parquet",
    "nstar": "nstar_by_metric.parquet",
    "probe": "probe.json",
    "pairs": "pairs.parquet",
}
KINDS = {
    registry.SET, registry.STUDY, registry.ABLATION, registry.DATA, registry.DIAGNOSTICS, registry.PROBE,
    *NAME_FORMS, *recipe_ablations.KINDS,
}


def drawn_by(module_name: str) -> set[str]:
    """The figures a drawing module knows: the keys of its `drawers` (nothing is read to list them)."""
    module = importlib.import_module(module_name)
    style = FigureStyle(palette="viridis", dpi=50, width=4.0, height=3.0, context="paper")
    arguments = {
        "isocompute.figures.scaling": ({}, "", "avg@4", 4, style, []),
        "isocompute.figures.recipe_ablation": ({}, [], "", "avg@4", style, []),
        "isocompute.figures.data_ablation": ({}, [], [], "avg@4", 4, style, []),
        "isocompute.figures.mechanism": ({}, "", style, []),
    }[module_name]
    return set(module.drawers(*arguments))


@pytest.mark.parametrize("figure", FIGURES.values(), ids=list(FIGURES))
def test_every_figure_has_a_kind_a_caption_known_inputs_and_a_drawer_that_knows_it(figure: registry.Figure) -> None:
    assert figure.kind in KINDS
    assert figure.summary and figure.caption and figure.caption.strip() == figure.caption
    assert figure.inputs and len(set(figure.inputs)) == len(figure.inputs) and set(figure.inputs) <= set(INPUTS)
    draw = figure.drawing()
    assert callable(draw) and draw.__name__ == "render"
    assert figure.name in drawn_by(draw.__module__)


def test_every_drawer_is_registered() -> None:
    for module in {figure.draw.rpartition(".")[0] for figure in FIGURES.values()}:
        assert drawn_by(module) == {name for name, f in FIGURES.items() if f.draw.startswith(module + ".")}


def test_the_report_captions_are_written_from_the_registry() -> None:
    captions = registry.report_captions()
    for name, text in captions.items():
        assert (REPO / "workflow/report" / name).read_text() == text, "run: python -m isocompute.figures.registry"
    for figure in FIGURES.values():
        if figure.caption_file == "figure.rst":
            assert f'figure == "{figure.name}" %}}{figure.caption}\n' in captions["figure.rst"]
        else:  # a rule of its own, a caption file of its own: named by that rule and by nothing else
            assert captions[figure.caption_file].endswith(f"#}}\n{figure.caption}\n")
            rules = "".join(path.read_text() for path in (REPO / "rules").glob("*.smk"))
            assert rules.count(f'caption="../workflow/report/{figure.caption_file}"') == 1


def test_the_results_index_lists_every_registered_figure(tmp_path: Path) -> None:
    for figure in FIGURES.values():
        assert (figure.results_glob, figure.summary) in artifacts.CATALOGUE
    examples = {
        "fig05_frontier": "figures/easy/bp4/fig05_frontier.png",
        "fig07_nstar_by_metric": "figures/easy/fig07_nstar_by_metric.pdf",
        "fig03_training_health": "figures/easy/regularization/fig03_training_health.png",
        "fig20_extremely_hard": "figures/data/fig20_extremely_hard_xhard.png",
        "diagnostics": "figures/easy/bp4/diagnostics.pdf",
        "interference": "figures/interference/easy+hard.png",
    }
    for name, path in examples.items():
        assert artifacts.describe_artifact(path) == FIGURES[name].summary
    on_other_set = "figures/easy/bp4/on_ood/fig05_frontier.png"
    assert artifacts.describe_artifact(on_other_set) == FIGURES["fig05_frontier"].summary + ", on another validation set"
    examples["fig05_frontier on another set"] = on_other_set
    results = tmp_path / "results"
    for path in examples.values():
        (results / path).parent.mkdir(parents=True, exist_ok=True)
        (results / path).write_text("")
    assert artifacts.write_index(results, results / "README.md") == []
    index = (results / "README.md").read_text()
    for figure in FIGURES.values():
        assert f"- `{figure.results_glob}`: {figure.summary}" in index


# The figures drawn by a rule of their own (no figure wildcard), by that rule.
OWN_RULES = {f.rule: name for name, f in FIGURES.items() if f.kind in (registry.DIAGNOSTICS, registry.PROBE)}
JOB = re.compile(r"^rule (\w+):\n    input: ([^\n]*)\n(?:    [^\n]*\n)*?    wildcards: ([^\n]*)\n", re.MULTILINE)


def figure_jobs(stdout: str) -> dict[str, list[tuple[str, list[str]]]]:
    """Each figure drawn in a dry run: the rule of each of its jobs and that job's input files."""
    jobs: dict[str, list[tuple[str, list[str]]]] = {}
    for rule, inputs, wildcards in JOB.findall(stdout):
        values = dict(pair.split("=", 1) for pair in wildcards.split(", "))
        name = values.get("figure") or values.get("data_figure") or OWN_RULES.get(rule)
        if name in FIGURES:
            jobs.setdefault(name, []).append((rule, inputs.split(", ")))
    return jobs


def test_every_figures_inputs_resolve_to_the_files_its_registry_entry_names(tmp_path: Path) -> None:
    """The default config (the paper's figures per study and set), the CPU recipe ablations and the micro data
    ablations between them draw every registered figure; each job reads what its entry lists, nothing else."""
    jobs: dict[str, list[tuple[str, list[str]]]] = {}
    for i, (configfiles, targets) in enumerate(
        [
            (("config/config.yaml",), ("all", "probe_interference_all")),
            (("config/presets/ablations_cpu.yaml",), ()),
            ((MICRO, DATA), ()),
        ]
    ):
        (tmp_path / str(i)).mkdir()
        workdir = scratch_workflow(tmp_path / str(i))
        result = snakemake(workdir, "-n", *targets, configfiles=configfiles)
        assert result.returncode == 0, result.stderr[-3000:]
        for name, found in figure_jobs(result.stdout).items():
            jobs.setdefault(name, []).extend(found)
    assert set(jobs) == set(FIGURES)
    for name, found in jobs.items():
        figure = FIGURES[name]
        for rule, inputs in found:
            if rule == "plot_study_figure_on":  # drawn on another set: its fits and base model there
                assert figure.on_other_sets, name
                continue
            assert rule == figure.rule
            assert {kind for kind in figure.inputs if any(p.endswith("/" + INPUT_FILES[kind]) for p in inputs)} == set(
                figure.inputs
            ), (name, inputs)
            wanted = tuple(INPUT_FILES[kind] for kind in figure.inputs)
            assert all(p.endswith(wanted) for p in inputs), (name, inputs)
