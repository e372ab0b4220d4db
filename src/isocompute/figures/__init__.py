"""The figures, each reproducing one of the paper's, drawn from the tables and fits JSON the other stages write."""
