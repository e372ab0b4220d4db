"""The problems and the base model a study starts from: the built-in tasks, the problem table, difficulty scoring and the Easy/Hard problem sets, the tokenizer and the tiny base model."""
