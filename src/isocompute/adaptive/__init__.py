"""The adaptive sweep: its rungs and the decision after each rung of which arms extend.

Its public names are re-exported here (`isocompute.adaptive.NAME`), each loaded from its module on first
use; a name that is also a module's name (`frontier.frontier`) is reached through its module.
"""

from isocompute.exports import lazy_exports

# Each public name and the module that defines it, loaded on first use: importing one module of
# the subpackage never imports the others (torch, TRL or Snakemake among them).
EXPORTS = {
    "REWARD_MAX": "decisions",
    "adaptive_summary": "decisions",
    "ceiling_bound": "decisions",
    "decide": "decisions",
    "replay": "decisions",
    "round_state": "decisions",
    "workflow_round": "decisions",
    "AdaptiveError": "rungs",
    "AdaptiveSettings": "rungs",
    "CAP_SLACK": "rungs",
    "reached_rungs": "rungs",
    "rung_caps": "rungs",
    "rung_step": "rungs",
    "trained_rungs": "rungs",
}
__getattr__, __dir__ = lazy_exports(__name__, EXPORTS)
