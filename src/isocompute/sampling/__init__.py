"""Sampling completions and scoring them: the vLLM and transformers samplers, prompts, answer checking, avg@k/best@k/worst@k and a run's evaluation."""
