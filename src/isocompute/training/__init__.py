"""GRPO training of one grid point with TRL: the trainer and its recipe, launching it on the job's devices,
checkpoints, progress, the run lock, the time limit, tracking, selective GRPO and length-grouped micro-
batches.

Its public names are re-exported here (`isocompute.training.NAME`), each loaded from its module on first
use; a name that is also a module's name (`frontier.frontier`) is reached through its module.
"""

from isocompute.exports import lazy_exports

# Each public name and the module that defines it, loaded on first use: importing one module of
# the subpackage never imports the others (torch, TRL or Snakemake among them).
EXPORTS = {
    "checkpoint_problem": "checkpoints",
    "checkpoints_of": "checkpoints",
    "is_weights_only": "checkpoints",
    "keep_newest_whole": "checkpoints",
    "last_good_checkpoint": "checkpoints",
    "step_of": "checkpoints",
    "thin_finished_run": "checkpoints",
    "weights_problem": "checkpoints",
    "TrainingJob": "launch",
    "WorldSizeChanged": "launch",
    "accelerate_command": "launch",
    "check_world_size": "launch",
    "free_port": "launch",
    "job_from_dict": "launch",
    "job_to_dict": "launch",
    "needs_launcher": "launch",
    "run_job": "launch",
    "server_command": "launch",
    "split_devices": "launch",
    "length_grouped": "length_grouping",
    "tokens": "length_grouping",
    "Attempt": "progress",
    "PROGRESS_FILE": "progress",
    "append_event": "progress",
    "attempts": "progress",
    "read_event_file": "progress",
    "read_events": "progress",
    "start_attempt": "progress",
    "TrainerAlive": "runlock",
    "TrainerLock": "runlock",
    "describe_holder": "runlock",
    "holder": "runlock",
    "trainer_alive": "runlock",
    "LossSelection": "selective_grpo",
    "SelectiveGRPOTrainer": "selective_grpo",
    "StopBeforeTimeLimit": "timelimit",
    "TimeLimitReached": "timelimit",
    "any_rank": "timelimit",
    "parse_time_left": "timelimit",
    "slurm_deadline": "timelimit",
    "TENSORBOARD_DIR": "tracking",
    "TrackedRunConfig": "tracking",
    "tracked_run_id": "tracking",
    "tracked_run_name": "tracking",
    "tracking_environment": "tracking",
    "DEEPSPEED_RECORD": "trainer",
    "RUN_SETTINGS": "trainer",
    "RecordWorldSize": "trainer",
    "RunSpec": "trainer",
    "SINGLE_PROCESS": "trainer",
    "SaveAtComputePoints": "trainer",
    "build_trainer": "trainer",
    "grpo_args": "trainer",
    "loss_selection": "trainer",
    "resume_point": "trainer",
    "run_training": "trainer",
    "train_run": "trainer",
    "write_outputs": "trainer",
}
__getattr__, __dir__ = lazy_exports(__name__, EXPORTS)
