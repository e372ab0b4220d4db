"""Why n* moves: the interference probe, the training diagnostics, the simulated policy and its study, and
GRPO's gradient noise scale.

Its public names are re-exported here (`isocompute.mechanism.NAME`), each loaded from its module on first
use; a name that is also a module's name (`frontier.frontier`) is reached through its module.
"""

from isocompute.exports import lazy_exports

# Each public name and the module that defines it, loaded on first use: importing one module of
# the subpackage never imports the others (torch, TRL or Snakemake among them).
EXPORTS = {
    "BASE_RUN": "diagnostics",
    "base_rows": "diagnostics",
    "base_zero_std": "diagnostics",
    "checkpoint_diagnostics": "diagnostics",
    "nstar_by_metric": "diagnostics",
    "unbiased_all_fail": "diagnostics",
    "NoiseScale": "noise_scale",
    "NoiseScaleError": "noise_scale",
    "NoiseSettings": "noise_scale",
    "Prediction": "noise_scale",
    "agreement_table": "noise_scale",
    "agrees": "noise_scale",
    "checkpoint_group_gradients": "noise_scale",
    "gram_noise_scale": "noise_scale",
    "measure_checkpoint": "noise_scale",
    "measure_run": "noise_scale",
    "measured_run": "noise_scale",
    "predict_n": "noise_scale",
    "simulated_gram": "noise_scale",
    "simulated_group_moments": "noise_scale",
    "simulated_logit_gradients": "noise_scale",
    "simulated_noise_scale": "noise_scale",
    "Group": "probe",
    "Policy": "probe",
    "ProbeError": "probe",
    "ProbeSettings": "probe",
    "checkpoint_second_moment": "probe",
    "cosine_matrix": "probe",
    "grpo_advantages": "probe",
    "minibatch_second_moment": "probe",
    "preconditioner": "probe",
    "read_problems": "probe",
    "write_probe": "probe",
    "Channels": "simulated_policy",
    "STD_EPSILON": "simulated_policy",
    "SimulatedPolicies": "simulated_policy",
    "SimulationError": "simulated_policy",
    "Update": "simulated_policy",
    "base_logits": "simulated_policy",
    "log_softmax": "simulated_policy",
    "logit_gradient": "simulated_policy",
    "softmax": "simulated_policy",
    "unit_features": "simulated_policy",
    "CHANNEL_KEYS": "simulated_study",
    "check_preset": "simulated_study",
    "exact_metrics": "simulated_study",
    "load_preset": "simulated_study",
    "make_problems": "simulated_study",
    "run_preset": "simulated_study",
    "simulate": "simulated_study",
    "update": "simulated_study",
}
__getattr__, __dir__ = lazy_exports(__name__, EXPORTS)
