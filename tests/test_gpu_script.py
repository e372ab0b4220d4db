"""tests/gpu/check.sh, the prepared script of the checks that need CUDA (no GPU here: see
docs/guide/running-at-scale.md): it passes shellcheck, says plainly that it checked nothing without a GPU, and
its GRPO and sampler checks run on the CPU when allowed to, so the script itself is known to work up to
the device."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from conftest import REPO

SCRIPT = REPO / "tests/gpu/check.sh"


def test_the_script_is_clean_shell() -> None:
    assert subprocess.run(["bash", "-n", str(SCRIPT)]).returncode == 0
    shellcheck = shutil.which("shellcheck")
    if shellcheck is None:
        pytest.skip("shellcheck is not installed (pip install -e '.[test]' brings it)")
    result = subprocess.run([shellcheck, str(SCRIPT)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message where there is no GPU")
def test_without_a_gpu_it_says_it_checked_nothing(tmp_path: Path) -> None:
    workdir = tmp_path / "not_yet"  # the script makes the WORKDIR it is given (its first GPU run failed on this)
    result = subprocess.run(["bash", str(SCRIPT), str(workdir)], capture_output=True, text=True, timeout=300)
    assert result.returncode == 77
    assert workdir.is_dir()
    assert "SKIP all: no CUDA device visible" in result.stdout and "nothing checked" in result.stdout


@pytest.mark.skipif(torch.cuda.is_available(), reason="the CPU stand-in of the GPU checks")
def test_the_grpo_and_sampler_checks_run_on_the_cpu(tmp_path: Path) -> None:
    out = {}
    for check in ("grpo", "sampler"):
        result = subprocess.run(
            [sys.executable, str(REPO / "tests/gpu/check_cuda.py"), check, str(tmp_path), "--allow-cpu"],
            capture_output=True,
            text=True,
            timeout=900,
        )
        assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
        out[check] = result.stdout
    assert (
        "PASS grpo: 12 steps of B = 128 in fp32 on the CPU" in out["grpo"]
        and "table identical" in out["grpo"]
    )
    assert "PASS sampler: 200 prompts x 4 samples on cpu" in out["sampler"]
    for check in ("vllm", "vllm_zero3"):
        skipped = subprocess.run(
            [sys.executable, str(REPO / "tests/gpu/check_cuda.py"), check, str(tmp_path)],
            capture_output=True,
            text=True,
        )
        assert skipped.returncode == 77 and f"SKIP {check}: no CUDA device" in skipped.stdout
