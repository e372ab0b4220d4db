"""Records the pilot fixture of tests/test_budget.py: three short runs of the tests' tiny model on the CPU
(one thread), B = 16, 64 and 256 rollouts per step, 24 steps each, trained by the pipeline's own job
(`launch.run_job`), whose progress.jsonl files are copied to tests/data/pilot/<run>.jsonl with the host
name replaced. Run from the repository root: `OMP_NUM_THREADS=1 python tests/data/record_pilot.py`."""

import json
import sys
import tempfile
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from conftest import TINY_MODEL

from isocompute.data.base_model import pretrain_base_model
from isocompute.data.tasks import make_addition_pool
from isocompute.files import write_table
from isocompute.study.grid import GridPoint
from isocompute.study.specs import Recipe, SamplingSpec, TrainingSpec
from isocompute.training.launch import TrainingJob, run_job
from isocompute.training.progress import PROGRESS_FILE
from isocompute.training.run_spec import RunSpec

STEPS = 24
OUT = Path(__file__).resolve().parent / "pilot"


def main() -> None:
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as scratch:
        scratch = Path(scratch)
        pretrain_base_model(TINY_MODEL, scratch / "model", seed=0)
        write_table(make_addition_pool(200, 1, 2, seed=0), scratch / "train.parquet")
        for n in (2, 8, 32):
            point = GridPoint("easy", 8, n, 0)
            spec = TrainingSpec(
                1e-4, 64, 2, point.batch, STEPS * point.batch, 2, "grpo", SamplingSpec(1.0, 1.0, 8)
            )
            run_dir = scratch / point.run
            run = RunSpec(str(scratch / "model"), point, spec, Recipe(0.0, 0.0), str(run_dir))
            run_job(
                TrainingJob(
                    run, str(scratch / "train.parquet"), str(run_dir / "log.parquet"), str(run_dir / "c.json")
                )
            )
            events = [json.loads(line) for line in (run_dir / PROGRESS_FILE).read_text().splitlines()]
            for event in events:
                if "host" in event:
                    event["host"] = "pilot-host"
            OUT.mkdir(exist_ok=True)
            (OUT / f"{point.run}.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))


if __name__ == "__main__":
    main()
