# Stage 7: per-curve sigmoid fits, the compute-optimal frontier and the optimum's sigmoid, per study,
# for avg@k, best@k and worst@k, with bootstrap intervals over validation problems.


include: "inputs/fit.smk"


localrules:
    fit_study,
    fit_study_on,
    recommend_allocation,


rule fit_study:
    input:
        unpack(get_study_fit_inputs),
    output:
        fits=results("fits/{problem_set}/{study}/fits.json"),
    log:
        logs("fit_study/{problem_set}/{study}.log"),
    benchmark:
        benchmarks("fit_study/{problem_set}/{study}.tsv")
    conda:
        "../envs/isocompute.yaml"
    params:
        study=study_of,
        method=study_fit.METHOD,
        fits=config["fits"],
        k=config["evaluation"]["k"],
        learning_rate=study_lr,
        seed=config["seed"],
    script:
        "../workflow/scripts/fit_study.py"


rule fit_study_on:
    input:
        unpack(get_study_fit_on_inputs),
    output:
        fits=results("fits/{problem_set}/{study}/on_{eval_set}/fits.json"),
    log:
        logs("fit_study_on/{problem_set}/{study}/{eval_set}.log"),
    benchmark:
        benchmarks("fit_study_on/{problem_set}/{study}/{eval_set}.tsv")
    conda:
        "../envs/isocompute.yaml"
    params:
        study=study_of,
        method=study_fit.METHOD,
        fits=config["fits"],
        k=config["evaluation"]["k"],
        learning_rate=study_lr,
        seed=config["seed"],
    script:
        "../workflow/scripts/fit_study.py"


rule recommend_allocation:
    input:
        fits=get_recommendation_fits,
    output:
        advice=results("recommendations/{problem_set}.md"),
        table=results("recommendations/{problem_set}.json"),
    log:
        logs("recommend_allocation/{problem_set}.log"),
    conda:
        "../envs/isocompute.yaml"
    params:
        compute=config["recommend"]["compute"],
        metric=config["fits"]["metric"],
    script:
        "../workflow/scripts/recommend_allocation.py"
