# The input functions and values of rules/diagnostics.smk's rules (the Snakemake linter keeps functions out of
# files with rules).
def probe_interference_paths():
    """The probe of every set of the grid together (`results/interference/easy+hard/`), with its figure."""
    probe = "+".join(GRID_SETS)
    return [
        results(f"interference/{probe}/probe.json"),
        *(results(f"figures/interference/{probe}.{ext}") for ext in ("png", "pdf")),
    ]
