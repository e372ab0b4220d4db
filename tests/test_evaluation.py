"""Evaluation of a run's checkpoints on its own validation set and on any other (`extra_evaluation`)."""

from pathlib import Path

import pandas as pd

from isocompute.data.problems import load_problem_table
from isocompute.sampling.evaluation import evaluate_checkpoints
from isocompute.sampling.generation import make_sampler
from isocompute.study.grid import GridPoint
from isocompute.study.specs import SamplingSpec

GENERATION = {"backend": "transformers", "batch_size": 256, "tensor_parallel_size": 1, "vllm_engine_kwargs": {}}
SAMPLING = SamplingSpec(temperature=1.0, top_p=1.0, max_new_tokens=4)


def test_a_run_is_evaluated_on_several_sets_including_an_out_of_domain_table(
    tiny_model: str, pool: pd.DataFrame, tmp_path: Path
) -> None:
    # The tiny model as a run's one checkpoint; an out-of-domain table read from parquet with datasets,
    # whose answers are the model's most frequent completions, so that some are correct.
    manifest = [{"path": Path(tiny_model).name, "step": 3, "compute_rollouts": 96, "compute_tokens": 300.0}]
    run_dir = str(Path(tiny_model).parent)
    own, other = pool.iloc[:30], pool.iloc[30:50]
    drafts = make_sampler(GENERATION, tiny_model, SAMPLING, 7).sample(pool["prompt"].iloc[50:70].tolist(), 16)
    modes = [pd.Series([c.text.strip() for c in g if c.text.strip()] or ["0"]).mode()[0] for g in drafts]
    ood = pool.iloc[50:70].assign(id=[f"ood-{i}" for i in range(20)], answer=modes)
    ood.to_parquet(tmp_path / "ood.parquet", index=False)
    table = load_problem_table(str(tmp_path / "ood.parquet")).problems
    assert table["id"].tolist() == ood["id"].tolist()
    point = GridPoint("mix", 4, 2, 0)

    def evaluate(problems: pd.DataFrame, train: pd.DataFrame | None):
        sampler = lambda path: make_sampler(GENERATION, path, SAMPLING, 0)  # noqa: E731
        return evaluate_checkpoints(sampler, manifest, run_dir, point, problems, train, k=4, train_k=2, checker="exact")

    evals, counts, rates = evaluate(own, pool.iloc[100:110])
    assert len(rates) == 10 and counts["id"].tolist() == own["id"].tolist()
    for problems in (other, table):
        evals_on, counts_on, rates_on = evaluate(problems, None)
        assert rates_on.empty and counts_on["id"].tolist() == problems["id"].tolist()
        assert (counts_on["n_correct"].between(0, 4)).all() and evals_on["compute_rollouts"].tolist() == [96]
        assert evals_on["run"].tolist() == ["bp4_n2_seed0"] and evals_on["problem_set"].tolist() == ["mix"]
    # The out-of-domain answers are the model's own completions: some are found again, by the same checker.
    assert evaluate(table, None)[1]["n_correct"].sum() > 0
