"""Sampling completions and scoring them: the vLLM and transformers samplers, prompts, answer checking,
avg@k/best@k/worst@k and a run's evaluation.

Public names load from their modules on first use (`isocompute.exports`).
"""

from isocompute.exports import lazy_exports

EXPORTS = {
    "answer_parses": "answers",
    "final_answer": "answers",
    "is_correct": "answers",
    "last_boxed": "answers",
    "reward_function": "answers",
    "evaluate_checkpoints": "evaluation",
    "new_checkpoints": "evaluation",
    "summary_row": "evaluation",
    "CPU_VLLM_ENVIRONMENT": "generation",
    "Sampler": "generation",
    "TransformersSampler": "generation",
    "VLLMSampler": "generation",
    "count_correct": "generation",
    "generate_token_ids": "generation",
    "load_for_sampling": "generation",
    "make_sampler": "generation",
    "score_problems": "generation",
    "stop_token_ids": "generation",
    "metric_names": "metrics",
    "per_problem": "metrics",
    "summarize_counts": "metrics",
    "ContextTooShort": "prompts",
    "check_context": "prompts",
    "prompt_token_ids": "prompts",
    "trl_prompt": "prompts",
}
__getattr__, __dir__ = lazy_exports(__name__, EXPORTS)
