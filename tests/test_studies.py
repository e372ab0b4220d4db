import re

import pytest

from isocompute.study.grid import GridPoint
from isocompute.study.studies import (
    NAME_PATTERN,
    Study,
    StudyError,
    configured_studies,
    parse_study,
    study_name,
)

POINTS = [GridPoint("easy", b, n, 0) for b, n in [(16, 2), (16, 4), (16, 8), (64, 2), (32, 4), (4, 32)]]


def test_studies_select_their_runs_and_share_them() -> None:
    studies = configured_studies({"fixed_b_problem": [16], "fixed_batch": [128], "joint": True}, POINTS)
    by_name = {s.name: s for s in studies}
    assert set(by_name) == {"bp16", "batch128", "joint"}
    assert {(p.b_problem, p.n) for p in by_name["bp16"].runs(POINTS)} == {(16, 2), (16, 4), (16, 8)}
    assert {(p.b_problem, p.n) for p in by_name["batch128"].runs(POINTS)} == {(64, 2), (32, 4), (16, 8), (4, 32)}
    assert len(by_name["joint"].runs(POINTS)) == len(POINTS)
    assert by_name["batch128"].compute_measures == ("step",)
    assert by_name["bp16"].by == ["n"] and by_name["joint"].by == ["b_problem", "n"]


def test_names_round_trip() -> None:
    for study in [Study("hard", "fixed_b_problem", 32), Study("hard", "fixed_batch", 8192), Study("hard", "joint")]:
        assert parse_study("hard", study.name) == study
    with pytest.raises(StudyError):
        parse_study("hard", "bp")


def test_the_wildcard_pattern_and_the_names_come_from_one_grammar() -> None:
    # The {study} wildcard constraint matches every name a study builds, and nothing parse_study refuses.
    for name in ("bp4", "batch16", "joint"):
        assert re.fullmatch(NAME_PATTERN, name) and parse_study("easy", name).name == name
    for name in ("bp", "joint2", "batchx", "n4"):
        assert not re.fullmatch(NAME_PATTERN, name)
    assert study_name("fixed_b_problem", 8) == "bp8" and study_name("joint") == "joint"


def test_a_study_with_one_curve_names_the_key() -> None:
    with pytest.raises(StudyError, match=r"studies\.fixed_batch: batch512 on easy has one curve"):
        configured_studies({"fixed_batch": [512]}, POINTS + [GridPoint("easy", 8, 64, 0)])


def test_a_study_without_runs_on_a_set_is_skipped() -> None:
    points = POINTS + [GridPoint("hard", 8, 4, 0), GridPoint("hard", 8, 8, 0)]
    names = [(s.problem_set, s.name) for s in configured_studies({"fixed_b_problem": [16, 8]}, points)]
    assert names == [("easy", "bp16"), ("hard", "bp8")]


def test_studies_fit_only_runs_on_the_default_recipe_and_learning_rate() -> None:
    ablations = [
        GridPoint("easy", 16, 2, 0, recipe="kl_entropy_zv_full"),
        GridPoint("easy", 16, 4, 0, lr_rule="linear", lr_base=1e-4, lr_batch_ref=128),
        GridPoint("easy", 16, 2, 0, n_baseline=8),
        GridPoint("easy", 16, 64, 0, recipe="unregularized"),  # a new n at bp16, from an ablation only
    ]
    wanted = {"fixed_b_problem": [16], "fixed_batch": [128], "joint": True}
    assert configured_studies(wanted, POINTS + ablations) == configured_studies(wanted, POINTS)
    for study in configured_studies(wanted, POINTS):
        assert study.runs(POINTS + ablations) == study.runs(POINTS)
