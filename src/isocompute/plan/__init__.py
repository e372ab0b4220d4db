"""What a study will cost before it runs: the GPU-hours Snakemake would request, and what the runs need from a step model."""
