"""The adaptive sweep: its rungs, the decision after each rung of which arms extend, the forecast of an arm's
future it may use, and its peers in the replay.

Public names load from their modules on first use (`isocompute.exports`).
"""

from isocompute.exports import lazy_exports

EXPORTS = {
    "REWARD_MAX": "decisions",
    "adaptive_summary": "decisions",
    "ceiling_bound": "decisions",
    "decide": "decisions",
    "replay": "decisions",
    "round_state": "decisions",
    "workflow_round": "decisions",
    "Forecast": "extrapolation",
    "forecast": "extrapolation",
    "forecast_arms": "extrapolation",
    "PEERS": "peers",
    "POLICIES": "peers",
    "peer_replay": "peers",
    "replay_policy": "peers",
    "PAPER_LAWS": "prior",
    "Prior": "prior",
    "load_prior": "prior",
    "planned_reach": "prior",
    "AdaptiveError": "rungs",
    "AdaptiveSettings": "rungs",
    "CAP_SLACK": "rungs",
    "RULES": "rungs",
    "reached_rungs": "rungs",
    "rung_caps": "rungs",
    "rung_step": "rungs",
    "trained_rungs": "rungs",
}
__getattr__, __dir__ = lazy_exports(__name__, EXPORTS)
