"""The fits: per-curve sigmoids, the frontier, the law of n*(C) from the whole estimator, the bootstrap, the held-out check, the fits JSON and the recommendation."""
