# Stage 7: per-n sigmoid fits, the compute-optimal frontier and the n*(C) sigmoid, per fixed B_problem.


rule fit_frontier:
    input:
        evals=get_fit_evals,
    output:
        fits="results/fits/{problem_set}/bp{b_problem}/fits.json",
    log:
        "logs/fit_frontier/{problem_set}/bp{b_problem}.log",
    conda:
        "../envs/isocompute.yaml"
    params:
        fits=config["fits"],
    script:
        "../workflow/scripts/fit_frontier.py"
