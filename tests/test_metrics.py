import numpy as np
import pytest

from isocompute.sampling.metrics import metric_names, summarize_counts


def test_metrics_on_hand_made_counts() -> None:
    # four problems, k = 4: all wrong, one right, three right, all right
    metrics = summarize_counts(np.array([0, 1, 3, 4]), k=4)
    assert metrics["avg@4"] == pytest.approx((0 + 0.25 + 0.75 + 1) / 4)
    assert metrics["best@4"] == pytest.approx(0.75)
    assert metrics["worst@4"] == pytest.approx(0.25)


def test_worst_never_exceeds_avg_never_exceeds_best() -> None:
    counts = np.random.default_rng(0).integers(0, 9, size=500)
    metrics = summarize_counts(counts, k=8)
    assert metrics["worst@8"] <= metrics["avg@8"] <= metrics["best@8"]


def test_metric_names_follow_the_paper() -> None:
    assert metric_names(16) == ("avg@16", "best@16", "worst@16")


@pytest.mark.parametrize("counts", [[], [5], [-1]])
def test_bad_counts_are_rejected(counts: list[int]) -> None:
    with pytest.raises(ValueError):
        summarize_counts(np.array(counts), k=4)
