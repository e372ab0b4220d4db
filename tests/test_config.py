"""Bad config stops before any job runs, with a message that names the key."""

import copy
import subprocess
from pathlib import Path

import pytest
import yaml

from isocompute.config import ConfigError, check_config

from conftest import REPO

DEFAULT = yaml.safe_load((REPO / "config" / "config.yaml").read_text())


def with_change(path: str, value: object) -> dict:
    config = copy.deepcopy(DEFAULT)
    *parents, last = path.split(".")
    node = config
    for key in parents:
        node = node[int(key)] if isinstance(node, list) else node[key]
    node[last] = value
    return config


def test_default_config_is_valid() -> None:
    points = check_config(DEFAULT)
    assert {p.n for p in points} == {2, 4, 8, 16, 32}


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        ("grid.0.n", [2, 10000], r"grid\[0\]: b_problem=16 \* n=10000 = 160000 exceeds problem_sets\.easy\.max_batch"),
        ("grid.0.problem_sets", ["medium"], r"grid\[0\]\.problem_sets names 'medium'"),
        ("problems.synthetic_addition.size", 900, r"problems\.synthetic_addition\.size=900 is smaller than"),
        ("problem_sets.easy.recipe", "missing", r"problem_sets\.easy\.recipe='missing' is not a key of recipes"),
        ("problem_sets.hard.avg_range", [0.5, 0.1], r"problem_sets\.hard\.avg_range: lower bound"),
        ("fits.metric", "avg@8", r"fits\.metric='avg@8' needs evaluation\.k=8"),
        ("training.compute_min", 10**9, r"training\.compute_min exceeds training\.compute_max"),
        ("evaluation.train_sample_size", 10**6, r"evaluation\.train_sample_size=1000000 exceeds"),
    ],
)
def test_semantic_errors_name_the_key(path: str, value: object, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        check_config(with_change(path, value))


def dry_run(tmp_path: Path, extra: str) -> subprocess.CompletedProcess[str]:
    bad = tmp_path / "bad.yaml"
    bad.write_text(extra)
    return subprocess.run(
        ["snakemake", "-n", "--cores", "1", "--configfile", str(bad)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize(
    ("extra", "named"),
    [
        ("training:\n  learning_rate: 0.1\n", "learning_rate"),
        ("difficulty:\n  samples: sixteen\n", "sixteen"),
        ("grid:\n  - {problem_sets: [hard], b_problem: [1024], n: [32], seeds: [0]}\n", "problem_sets.hard.max_batch"),
    ],
)
def test_snakemake_refuses_bad_config_before_any_job(tmp_path: Path, extra: str, named: str) -> None:
    result = dry_run(tmp_path, extra)
    assert result.returncode != 0
    output = result.stdout + result.stderr
    assert named in output
    assert "Job stats" not in output
