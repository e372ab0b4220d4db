"""IsoCompute: how to split an RL sampling budget between n, B_problem and M."""

__version__ = "0.1.0"
