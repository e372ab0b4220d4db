"""Answer checking on real math strings with math-verify, and the exact checker of the synthetic task."""

import multiprocessing
import threading

import pytest

from isocompute.sampling.answers import answer_parses, final_answer, is_correct, last_boxed, reward_function


@pytest.mark.parametrize(
    ("completion", "gold"),
    [
        ("So the probability is $\\boxed{\\frac{1}{2}}$.", "0.5"),
        ("The answer is \\boxed{0.5}", "\\frac{1}{2}"),
        ("\\boxed{\\dfrac{3}{4}}", "3/4"),
        ("Therefore the side is \\boxed{10\\text{ cm}}.", "10"),
        ("\\boxed{90^\\circ}", "90"),
        ("We get $\\boxed{\\frac{\\sqrt{2}}{2}}$", "\\frac{1}{\\sqrt{2}}"),
        ("\\boxed{x^2 + 2x + 1}", "(x+1)^2"),
        ("\\boxed{[1, 3)}", "[1,3)"),
        ("\\boxed{2} ... wait, that is wrong. Final: \\boxed{3}", "3"),
        ("<think>maybe \\boxed{7}</think> The answer is \\boxed{8}.", "8"),
    ],
)
def test_equivalent_answers_are_correct(completion: str, gold: str) -> None:
    assert is_correct(completion, gold, "math_verify")


@pytest.mark.parametrize(
    ("completion", "gold"),
    [
        ("\\boxed{3} ... no, final: \\boxed{2}", "3"),  # only the last boxed answer counts
        ("<think>\\boxed{8}</think> so \\boxed{7}", "8"),  # what is said inside the thinking does not
        ("The answer is 5.", "5"),  # no boxed answer: the prompt asks for one
        ("I could not solve it.", "5"),
        ("\\boxed{\\frac{1}{3}}", "0.5"),
        ("\\boxed{}", "0"),
        ("", "1"),
    ],
)
def test_wrong_or_missing_answers_are_not(completion: str, gold: str) -> None:
    assert not is_correct(completion, gold, "math_verify")


def test_unparsable_gold_never_matches() -> None:
    assert not is_correct("\\boxed{1}", "?", "math_verify")
    assert answer_parses("\\frac{1}{2}", "math_verify") and answer_parses("\\text{none}", "math_verify")
    assert not answer_parses("?", "math_verify") and not answer_parses("\\frac{", "math_verify")
    assert answer_parses("12", "exact") and not answer_parses("  ", "exact")


def test_last_boxed_balances_nested_braces() -> None:
    assert last_boxed("a \\boxed{\\frac{1}{2}} b \\boxed{\\sqrt{\\frac{a}{b}}}") == "\\sqrt{\\frac{a}{b}}"
    assert last_boxed("\\boxed{unclosed") is None and last_boxed("none") is None
    assert final_answer("<think>\\boxed{1}</think>") is None


def test_checking_works_off_the_main_thread() -> None:
    """math-verify's signal timeouts fail in threads; the checker then checks without one."""
    results: list[bool] = []
    worker = threading.Thread(
        target=lambda: results.append(is_correct("\\boxed{\\frac{2}{4}}", "0.5", "math_verify"))
    )
    worker.start()
    worker.join()
    assert results == [True]


def test_checking_works_in_worker_processes() -> None:
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        verdicts = pool.starmap(
            is_correct, [("\\boxed{1/2}", "0.5", "math_verify"), ("\\boxed{3}", "2", "math_verify")]
        )
    assert verdicts == [True, False]


def test_reward_scores_text_and_conversational_completions() -> None:
    reward = reward_function("math_verify")
    completions = [
        "\\boxed{4}",
        [{"role": "assistant", "content": "so \\boxed{4}"}],
        [{"role": "assistant", "content": "5"}],
    ]
    assert reward(completions, answer=["4", "4", "5"], prompts=["p"] * 3) == [1.0, 1.0, 0.0]


def test_exact_checker_and_unknown_checker() -> None:
    assert is_correct(" 46\n", "46") and not is_correct("460", "46") and not is_correct("", "46")
    with pytest.raises(ValueError, match="problems.checker"):
        reward_function("regex")
