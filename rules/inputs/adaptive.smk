# The input functions and values of rules/adaptive.smk's rules (the Snakemake linter keeps functions out of
# files with rules).
import dataclasses
import json
from pathlib import Path


def rung_steps_of(point):
    """The step an adaptive run reaches at each rung, on the full run's checkpoint grid."""
    training = config["training"]
    return rungs.arm_rung_steps(
        point.batch,
        training["compute_min"],
        training["compute_max"],
        training["checkpoint_points"],
        ADAPTIVE.rung_factor,
    )


def adaptive_study_of(point):
    """The adapted fixed-B_problem study an adaptive run is an arm of."""
    return ADAPTIVE_STUDIES[
        (point.problem_set, studies.study_name("fixed_b_problem", point.b_problem))
    ]


def adaptive_round(problem_set, study, round):
    """A round's record; reading it waits for that round's decision (a checkpoint)."""
    done = checkpoints.decide_adaptive_round.get(
        problem_set=problem_set, study=study, round=round
    )
    return json.loads(Path(done.output.round).read_text())


def rung_files(point, reached, name, stage="evaluation"):
    """One file of each rung at which an adaptive run trained something new, up to rung `reached`."""
    return [
        results(f"{stage}/{point.problem_set}/{point.run}/rung{rung}/{name}")
        for rung in rungs.trained_rungs(rung_steps_of(point), reached)
    ]


def get_adaptive_round_inputs(wildcards):
    """Round r reads every arm's evaluations up to the rung it reached (the previous round says which arms
    trained rung r) and the base model's."""
    study = ADAPTIVE_STUDIES[(wildcards.problem_set, wildcards.study)]
    index = int(wildcards.round)
    previous = (
        adaptive_round(wildcards.problem_set, wildcards.study, index - 1)
        if index
        else None
    )
    runs = study.runs(GRID)
    reached = rungs.reached_rungs(sorted({p.n for p in runs}), previous, index)
    return {
        "evals": [
            f for p in runs for f in rung_files(p, reached[p.n], "evals.parquet")
        ],
        "val_counts": [
            f for p in runs for f in rung_files(p, reached[p.n], "val_counts.parquet")
        ],
        "base": results(f"evaluation/{wildcards.problem_set}/base_model.parquet"),
        "base_counts": results(
            f"evaluation/{wildcards.problem_set}/base_counts.parquet"
        ),
        "previous": (
            [
                results(
                    f"sweep/{wildcards.problem_set}/{wildcards.study}/round{index - 1}.json"
                )
            ]
            if index
            else []
        ),
    }


def adaptive_prior_of(wildcards):
    """The prior of the round's problem set (`sweep.prior`), None where that set has none."""
    return ADAPTIVE_PRIOR.get(wildcards.problem_set)


def adaptive_round_arms(wildcards):
    """Each arm's step at every rung, for the round's decision."""
    study = ADAPTIVE_STUDIES[(wildcards.problem_set, wildcards.study)]
    return {p.n: rung_steps_of(p) for p in study.runs(GRID)}


def get_rung_training_inputs(wildcards):
    """A rung trains after the round that kept its arm running, from the arm's previous rung."""
    point = point_of(wildcards)
    rung = int(wildcards.rung)
    earlier = rungs.trained_rungs(rung_steps_of(point), rung)[:-1]
    study = adaptive_study_of(point)
    return {
        "train": results(f"problem_sets/{point.problem_set}/train.parquet"),
        "model": get_base_model_input(),
        "decision": (
            [results(f"sweep/{point.problem_set}/{study.name}/round{rung - 1}.json")]
            if rung
            else []
        ),
        "previous": [
            results(f"train/{point.problem_set}/{point.run}/rung{r}/checkpoints.json")
            for r in earlier[-1:]
        ],
    }


def rung_until_step(wildcards):
    return rung_steps_of(point_of(wildcards))[int(wildcards.rung)]


def rung_after_step(wildcards):
    """The step of the arm's previous trained rung: its checkpoints are evaluated already."""
    point = point_of(wildcards)
    steps = rung_steps_of(point)
    earlier = rungs.trained_rungs(steps, int(wildcards.rung))[:-1]
    return steps[earlier[-1]] if earlier else 0


def finished_rungs(wildcards):
    """The rungs an adaptive run trained, once the last round has decided."""
    point = point_of(wildcards)
    study = adaptive_study_of(point)
    last = adaptive_round(point.problem_set, study.name, len(ADAPTIVE_CAPS) - 2)
    reached = rungs.reached_rungs([point.n], last, len(ADAPTIVE_CAPS) - 1)[point.n]
    return rungs.trained_rungs(rung_steps_of(point), reached)


def get_finished_run_inputs(wildcards):
    point = point_of(wildcards)
    trained = finished_rungs(wildcards)
    where = f"{point.problem_set}/{point.run}"
    return {
        "log_table": results(f"train/{where}/rung{trained[-1]}/train_log.parquet"),
        "checkpoints": results(f"train/{where}/rung{trained[-1]}/checkpoints.json"),
        **{
            name: [
                results(f"evaluation/{where}/rung{r}/{name}.parquet") for r in trained
            ]
            for name in ("evals", "val_counts", "train_pass_rates")
        },
    }


def get_adaptive_summary_inputs(wildcards):
    return {
        "rounds": [
            results(f"sweep/{wildcards.problem_set}/{wildcards.study}/round{r}.json")
            for r in range(len(ADAPTIVE_CAPS) - 1)
        ],
        "fits": results(f"fits/{wildcards.problem_set}/{wildcards.study}/fits.json"),
    }


def adaptive_summary_arms(wildcards):
    """Per arm (n): its runs (seeds), batch and step at every rung, for what the sweep spent."""
    runs = ADAPTIVE_STUDIES[(wildcards.problem_set, wildcards.study)].runs(GRID)
    return {
        n: {
            "runs": len(arm),
            "batch": arm[0].batch,
            "rung_steps": rung_steps_of(arm[0]),
        }
        for n, arm in (
            (n, [p for p in runs if p.n == n]) for n in sorted({p.n for p in runs})
        )
    }
