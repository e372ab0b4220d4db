"""The noise-scale estimator against known truth: Gaussian group gradients with a known mean and covariance,
and the simulated policy, whose group gradient's moments are exact (`simulated_group_moments`)."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from isocompute.cli import main
from isocompute.mechanism.noise_scale import (
    NoiseScale,
    NoiseScaleError,
    NoiseSettings,
    Prediction,
    agreement_table,
    gram_noise_scale,
    measure_checkpoint,
    measured_run,
    noise_scale,
    predict_n,
    simulated_gram,
    simulated_group_moments,
    simulated_logit_gradients,
    simulated_noise_scale,
)
from isocompute.mechanism.probe import Policy
from isocompute.mechanism.simulated_policy import (
    Channels,
    Update,
    base_logits,
    grpo_advantages,
    logit_gradient,
    softmax,
    unit_features,
)
from isocompute.pipeline.artifacts import describe_artifact
from isocompute.study.grid import GridPoint
from isocompute.study.specs import SamplingSpec

SAMPLING = SamplingSpec(temperature=1.0, top_p=1.0, max_new_tokens=4)
UPDATE = Update(lr=0.01, warmup_steps=0, kl_coef=0.05, entropy_coef=0.01, loss_type="grpo",
                max_completion_length=8, max_grad_norm=1.0, temperature=0.7)  # fmt: skip


def gaussian_groups(rng: np.random.Generator, count: int, mean: np.ndarray, root: np.ndarray) -> np.ndarray:
    return mean + rng.standard_normal((count, len(mean))) @ root.T


def test_gaussian_groups_unbiased_signal_and_interval_coverage() -> None:
    """|G|^2 - tr(Sigma)/N is unbiased where the plain |mean|^2 is not, and the 90 % interval covers
    B = n tr(Sigma) / |G|^2 in about 90 % of independent samples."""
    rng = np.random.default_rng(1)
    dim, groups, n = 12, 100, 4
    mean = rng.standard_normal(dim) * 0.6
    root = rng.standard_normal((dim, dim)) * 0.4
    trace, signal = float((root**2).sum()), float(mean @ mean)
    truth = n * trace / signal
    estimates, plain, covered, widths = [], [], [], []
    for seed in range(200):
        rows = gaussian_groups(np.random.default_rng(100 + seed), groups, mean, root)
        result = noise_scale(rows, n, replicas=300, seed=seed)
        estimates.append(result.signal)
        plain.append(float(rows.mean(0) @ rows.mean(0)))
        covered.append(result.low <= truth <= result.high)
        widths.append(result.width)
    error = np.std(estimates) / np.sqrt(len(estimates))
    assert abs(np.mean(estimates) - signal) < 3 * error
    assert np.mean(plain) - signal > 0.8 * trace / groups  # the bias the correction removes
    assert 0.82 <= np.mean(covered) <= 0.97
    assert 1.0 < np.median(widths) < 10.0  # a finite interval at this signal (about 11 groups per unit)


def test_preconditioner_scales_each_entry() -> None:
    """Adam's view is the estimate on rows times P: a P that silences the noisy entries lowers B."""
    rng = np.random.default_rng(2)
    mean = np.array([1.0, 1.0, 0.0, 0.0])
    root = np.diag([0.1, 0.1, 5.0, 5.0])
    rows = gaussian_groups(rng, 400, mean, root)
    raw = noise_scale(rows, 2)
    adam = noise_scale(rows, 2, preconditioner=np.array([1.0, 1.0, 0.01, 0.01]))
    assert adam.noise_scale < raw.noise_scale / 100
    # scaled tr(Sigma) = 2 * 0.1^2 + 2 * (5 * 0.01)^2 = 0.025, |G|^2 = 2
    assert adam.noise_scale == pytest.approx(2 * 0.025 / 2, rel=0.2)
    with pytest.raises(NoiseScaleError, match="preconditioner: shape"):
        noise_scale(rows, 2, preconditioner=np.ones(3))
    with pytest.raises(NoiseScaleError, match="at least 3 groups"):
        noise_scale(rows[:2], 2)


def test_no_signal_is_an_infinite_noise_scale() -> None:
    rows = np.random.default_rng(3).standard_normal((50, 6))  # G = 0
    result = noise_scale(rows, 8)
    assert result.high == float("inf")
    assert result.width == float("inf")
    silent = noise_scale(np.zeros((20, 6)), 8)  # every group's rewards equal: zero gradients
    assert silent.noise_scale == silent.low == float("inf")


def test_predictor_picks_the_smallest_noise_scale_and_its_overlapping_rivals() -> None:
    """Group sizes whose true B(n) differ by 4x are told apart; two at the same B(n) are both leaders."""
    rng = np.random.default_rng(4)
    mean = np.full(8, 0.5)
    scales = []
    # B(n) = n tr(Sigma) / |G|^2 = n * 8 noise^2 / 2: 32, 4, 4 and 16.
    for n, noise in ((2, 2.0), (4, 0.5), (8, np.sqrt(1 / 8)), (16, 0.5)):
        rows = gaussian_groups(rng, 2000, mean, np.eye(8) * noise)
        scales.append(noise_scale(rows, n, seed=n))
    prediction = predict_n(scales)
    assert prediction is not None
    assert prediction.n in (4, 8)
    assert prediction.leaders == (4, 8)
    assert predict_n([NoiseScale(2, 10, 1.0, -1.0, float("inf"), float("inf"), float("inf"), 0.9)]) is None


@pytest.mark.parametrize("n", [2, 5])
def test_simulated_group_moments_match_the_simulators_own_gradient(n: int) -> None:
    """The exact mean and covariance against 200,000 groups through `simulated_policy.logit_gradient`
    (with KL against a different reference, entropy, and a temperature: every term of the loss)."""
    rng = np.random.default_rng(5)
    logits = np.array([0.3, -0.2, 0.8, 0.0])
    ref = base_logits(np.array([0.4]), np.array([1]), 4, UPDATE.temperature)[0]
    correct = 1
    mean, cov = simulated_group_moments(logits, ref, correct, n, UPDATE)
    draws = 200_000
    pi = softmax(logits / UPDATE.temperature)
    samples = rng.choice(4, size=(draws, n), p=pi)
    rewards = (samples == correct).astype(float)
    grads = logit_gradient(np.broadcast_to(logits, (draws, 4)), np.broadcast_to(ref, (draws, 4)), samples,
                           grpo_advantages(rewards), UPDATE, n)  # fmt: skip
    sd = np.sqrt(np.diag(cov) / draws)
    np.testing.assert_array_less(np.abs(grads.mean(0) - mean), 5 * sd + 1e-12)
    np.testing.assert_allclose(np.cov(grads.T), cov, rtol=0.05, atol=0.02 * np.abs(cov).max())


def parameter_gradients(
    grad_z: np.ndarray, chosen: np.ndarray, problems: int, features: np.ndarray, channels: Channels
) -> np.ndarray:
    """The groups' gradients in (theta, W, b), formed as `SimulatedPolicies.advance` forms its batch's."""
    theta = np.zeros((len(chosen), problems, grad_z.shape[1]))
    theta[np.arange(len(chosen)), chosen] = channels.private * grad_z
    shared = channels.features * np.einsum("gk,gd->gkd", grad_z, features[chosen])
    return np.concatenate([theta.reshape(len(chosen), -1), shared.reshape(len(chosen), -1),
                           channels.bias * grad_z], axis=1)  # fmt: skip


def test_estimator_on_simulated_groups_covers_the_exact_noise_scale() -> None:
    """Sampled groups of a simulated policy with shared channels, from uniformly drawn problems (a problem
    may come twice): `simulated_gram` is the parameter gradients' Gram matrix, and the 90 % interval covers
    the exact B(n) in at least 80 % of 40 independent samples of 300 groups, at two n whose exact B(n)
    differ (the plain percentile interval covered 65 % and 77 %)."""
    rng = np.random.default_rng(6)
    problems, answers, dim = 30, 4, 6
    correct = rng.integers(0, answers, problems)
    ref = base_logits(rng.uniform(0.1, 0.6, problems), correct, answers, UPDATE.temperature)
    logits = ref + rng.normal(0, 0.3, ref.shape)
    features = unit_features(problems, dim, 0.5, rng)
    channels = Channels(private=1.0, features=0.5, overlap=0.5, bias=0.5)
    exact = {}
    for n in (2, 16):
        moments = [simulated_group_moments(logits[i], ref[i], correct[i], n, UPDATE) for i in range(problems)]
        means = np.array([m for m, _ in moments])
        traces = np.array([np.trace(c) for _, c in moments])
        exact[n] = simulated_noise_scale(means, traces, features, channels, n)
        covered = []
        for seed in range(40):
            draw = np.random.default_rng(1000 + seed)
            chosen = draw.integers(0, problems, 300)
            grad_z = simulated_logit_gradients(logits, ref, correct, chosen, n, UPDATE, draw)
            gram = simulated_gram(grad_z, chosen, features, channels)
            if seed == 0:
                rows = parameter_gradients(grad_z, chosen, problems, features, channels)
                np.testing.assert_allclose(gram, rows @ rows.T, atol=1e-12)
                dense = noise_scale(rows, n, replicas=300, seed=seed)
                fast = gram_noise_scale(gram, n, 300, seed=seed)
                assert (dense.noise_scale, dense.low, dense.high) == pytest.approx(
                    (fast.noise_scale, fast.low, fast.high)
                )
            result = gram_noise_scale(gram, n, replicas=300, seed=seed)
            covered.append(result.low <= exact[n] <= result.high)
        assert np.mean(covered) >= 0.8, (n, exact[n], np.mean(covered))
    assert np.isfinite(exact[2]) and np.isfinite(exact[16]) and exact[2] != pytest.approx(exact[16], rel=0.1)


def test_a_checkpoint_is_measured_raw_and_under_adam_on_the_same_groups(
    tiny_model: str, reachable: pd.DataFrame
) -> None:
    """A uniform preconditioner scales signal and noise alike, so Adam's B(n) equals the raw one only if
    both views use the same groups; a non-uniform one changes it."""
    policy = Policy(tiny_model, SAMPLING, "exact")
    settings = NoiseSettings(n_values=(2, 4), groups=10, replicas=50)
    uniform = measure_checkpoint(policy, reachable, settings, np.full(policy.size, 3.0))
    assert uniform["kind"] == "prediction" and set(uniform["noise_scale"]) == {"raw", "adam"}
    for raw, adam in zip(uniform["noise_scale"]["raw"], uniform["noise_scale"]["adam"]):
        assert raw["n"] == adam["n"] and raw["groups"] == 10
        assert adam["trace"] == pytest.approx(9 * raw["trace"], rel=1e-9)
        if np.isfinite(raw["noise_scale"]):
            assert adam["noise_scale"] == pytest.approx(raw["noise_scale"], rel=1e-9)
    assert all(0.0 <= share <= 1.0 for share in uniform["silent_share"].values())
    assert any(s["trace"] > 0 for s in uniform["noise_scale"]["raw"]), "no group varied: the test has no signal"
    skewed = np.linspace(0.1, 10.0, policy.size)
    other = measure_checkpoint(policy, reachable, settings, skewed)
    assert other["noise_scale"]["raw"] == uniform["noise_scale"]["raw"]  # the same seed draws the same groups
    assert [s["trace"] for s in other["noise_scale"]["adam"]] != [s["trace"] for s in uniform["noise_scale"]["adam"]]
    with pytest.raises(NoiseScaleError, match="at least 2"):
        measure_checkpoint(policy, reachable, NoiseSettings(n_values=(1, 4)))
    with pytest.raises(NoiseScaleError, match="measure fewer groups"):
        measure_checkpoint(policy, reachable, NoiseSettings(n_values=(2,), max_gradient_bytes=1024))


def test_noise_command_writes_the_measurement_and_refuses_bad_group_sizes(
    tiny_model: str, reachable: pd.DataFrame, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    table = tmp_path / "problems.parquet"
    reachable.to_parquet(table)
    out = tmp_path / "noise.json"
    common = [tiny_model, "--problems", str(table), "--max-new-tokens", "4", "--replicas", "20"]
    assert main(["noise", *common, "--n", "2,4", "--groups", "6", "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["checkpoint"] == tiny_model and result["groups"] == 6
    assert list(result["noise_scale"]) == ["raw"]  # a saved model without optimizer.pt has no Adam view
    assert [s["n"] for s in result["noise_scale"]["raw"]] == [2, 4]
    assert "not a fit" in capsys.readouterr().out
    assert main(["noise", *common, "--n", "two", "--out", str(out)]) == 2
    assert "--n 'two'" in capsys.readouterr().err
    assert main(["noise", tiny_model, "--problems", str(tmp_path / "missing.parquet"), "--out", str(out)]) == 2


def test_agreement_matches_each_frontier_point_to_the_nearest_checkpoint_and_scores_constants() -> None:
    """Factor 2 or the prediction among the frontier's leaders counts; the frontier's n* among the
    prediction's leaders does not (a prediction that cannot tell any n apart would agree everywhere)."""
    predictions = {
        0.0: Prediction(2, (2,)),  # the base model: never matched to a trained compute
        1_000.0: Prediction(2, (2, 8, 32)),
        10_000.0: Prediction(32, (32,)),
        100_000.0: None,  # no signal at any n
    }
    points = [
        {"compute": 1_200.0, "n": 8, "leaders": {"n": [8]}},  # 2 is not within 2x of 8: its leaders do not help
        {"compute": 900.0, "n": 4, "leaders": {"n": [2, 4]}},  # 2 among the frontier's leaders
        {"compute": 12_000.0, "n": 16, "leaders": {"n": [16]}},  # 32 within a factor 2 of 16
        {"compute": 80_000.0, "n": 16, "leaders": {"n": [8, 16]}},  # nothing predicted
    ]
    table, shares = agreement_table(predictions, points, [2, 8, 32])
    assert table["checkpoint_compute"].tolist() == [1_000.0, 1_000.0, 10_000.0, 100_000.0]
    assert table["agrees"].tolist() == [False, True, True, False]
    assert table["narrowed"].tolist() == [False, False, True, False]
    # n = 8 agrees at 8, 4 (factor 2), 16 (factor 2) and the tie {8, 16}: all four points.
    assert shares == {"predictor": 0.5, "narrowed": 0.25, "constant n=2": 0.25, "constant n=8": 1.0,
                      "constant n=32": 0.5}  # fmt: skip
    with pytest.raises(NoiseScaleError, match="agreement"):
        agreement_table({0.0: None}, points, [2])


def test_the_measured_run_is_the_middle_n_first_seed_or_the_one_named() -> None:
    points = [GridPoint("easy", 16, n, seed) for n in (2, 4, 8, 16) for seed in (1, 0)]
    assert (measured_run(points, None).n, measured_run(points, None).seed) == (4, 0)
    assert measured_run(points, 16).run == GridPoint("easy", 16, 16, 0).run
    with pytest.raises(NoiseScaleError, match=r"run_n = 32: the study's runs have n in \[2, 4, 8, 16\]"):
        measured_run(points, 32)


@pytest.mark.slow
def test_the_rule_measures_one_run_of_each_study_beside_its_frontier(finished_micro_study: Path, tmp_path: Path) -> None:
    """`snakemake measure_noise_scale_all` on a finished study: B(n) at every checkpoint of the named run,
    Adam's view where the checkpoint holds its optimizer, and each view's agreement with the frontier,
    with nothing else rerun."""
    from conftest import copy_of_study
    from test_workflow import MICRO, snakemake

    workdir = copy_of_study(finished_micro_study, tmp_path / "workdir")
    (workdir / "noise.yaml").write_text("noise_scale: {run_n: null, n: [2, 4], groups: 6, replicas: 20}\n")
    result = snakemake(workdir, "measure_noise_scale_all", configfiles=(MICRO, "noise.yaml"))
    assert result.returncode == 0, result.stderr[-3000:]
    assert "rule train_grpo" not in result.stderr and "rule fit_study" not in result.stderr
    (folder,) = (workdir / "results/noise_scale/easy").iterdir()
    agreement = json.loads((folder / "agreement.json").read_text())
    scales = pd.read_parquet(folder / "noise_scale.parquet")
    manifest = json.loads((workdir / "results/train/easy" / agreement["run"] / "checkpoints.json").read_text())
    assert agreement["kind"] == "prediction" and agreement["n"] == [2, 4]
    assert sorted(scales["compute"].unique()) == [0.0] + sorted(float(c["compute_rollouts"]) for c in manifest)
    assert set(scales.loc[scales["compute"] == 0, "view"]) == {"raw"}  # the base model has no optimizer
    assert "raw" in agreement["views"] and all(0 <= s <= 1 for s in agreement["views"]["raw"]["shares"].values())
    results = workdir / "results"
    assert all(describe_artifact(str(path.relative_to(results))) for path in folder.iterdir())
