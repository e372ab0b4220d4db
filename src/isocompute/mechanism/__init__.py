"""Why n* moves: the interference probe, the training diagnostics, the simulated policy and its study, and GRPO's gradient noise scale."""
