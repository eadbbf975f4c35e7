"""Scorers (match, includes, pattern, model_graded, custom) and metrics."""

from __future__ import annotations

import math

import pytest

import loopwright as lw
from loopwright.evals import normalize_text


def state(text: str) -> lw.AgentState:
    return lw.AgentState(output=lw.ModelOutput.from_text(text))


async def value(scorer: lw.Scorer, answer: str, target: str | list[str]) -> float:
    score = await scorer(state(answer), lw.Sample(input="q", target=target))
    return score.value


async def test_match_exact() -> None:
    m = lw.match("exact", location="exact")
    assert await value(m, "  Paris ", "Paris") == 1.0
    assert await value(m, "paris", "Paris") == 0.0
    assert await value(m, "Paris", ["London", "Paris"]) == 1.0


async def test_match_normalized_at_the_end_by_default() -> None:
    m = lw.match()
    assert await value(m, "The answer is: PARIS!", "paris") == 1.0
    assert await value(m, "Paris is not it, London is", "paris") == 0.0
    assert await value(lw.match(location="begin"), "Paris, of course", "paris") == 1.0
    assert await value(lw.match(location="any"), "I think Paris, yes", "paris") == 1.0
    assert normalize_text("  Hello,   WORLD!! ") == "hello world"


async def test_match_without_target_is_wrong() -> None:
    assert await value(lw.match(), "anything", "") == 0.0


async def test_match_numeric_with_tolerances() -> None:
    m = lw.match("numeric")
    assert await value(m, "The result is 149,265.", "149265") == 1.0
    assert await value(m, "It is 18527.424242424244", "18527.424242") == 1.0
    assert await value(m, "It is 18527.42", "18527.424242") == 0.0  # abs tol 1e-6
    assert await value(lw.match("numeric", rel_tolerance=1e-4), "18527.42", "18527.424242") == 1.0
    assert await value(lw.match("numeric", tolerance=0.5), "about 99.6", "100") == 1.0
    assert await value(m, "first 3 then 4", "3") == 0.0  # the last number counts
    assert await value(lw.match("numeric", location="begin"), "3 then 4", "3") == 1.0
    assert await value(lw.match("numeric", location="any"), "3 then 4", "4") == 1.0
    assert await value(lw.match("numeric", location="exact"), "42", "42") == 1.0
    assert await value(lw.match("numeric", location="exact"), "it is 42", "42") == 0.0
    assert await value(m, "minus -7.5", "-7.5") == 1.0
    assert await value(m, "1.5e3 units", "1500") == 1.0
    score = await m(state("no digits here"), lw.Sample(input="q", target="1"))
    assert score.value == 0.0 and score.explanation == "no number in the answer"


async def test_match_numeric_needs_a_numeric_target() -> None:
    with pytest.raises(lw.ConfigurationError, match="not a number"):
        await value(lw.match("numeric"), "3", "three")


def test_match_rejects_bad_options() -> None:
    with pytest.raises(lw.ConfigurationError, match="method"):
        lw.match("fuzzy")  # type: ignore[arg-type]
    with pytest.raises(lw.ConfigurationError, match="location"):
        lw.match(location="middle")  # type: ignore[arg-type]
    with pytest.raises(lw.ConfigurationError, match="tolerance"):
        lw.match("numeric", tolerance=-1)


async def test_includes() -> None:
    assert await value(lw.includes(), "It was PARIS in the spring", "paris") == 1.0
    assert await value(lw.includes(ignore_case=False), "PARIS", "paris") == 0.0
    assert await value(lw.includes(), "London", ["Paris", "Rome"]) == 0.0


async def test_pattern() -> None:
    p = lw.pattern(r"ANSWER:\s*(\w+)")
    assert await value(p, "thinking... answer: B", "b") == 1.0
    assert await value(p, "ANSWER: A ... no wait, ANSWER: C", "C") == 1.0  # last match
    assert await value(p, "ANSWER: A", "C") == 0.0
    assert await value(p, "no answer given", "C") == 0.0
    assert await value(lw.pattern(r"\d+ apples"), "I have 3 apples", "") == 1.0
    with pytest.raises(lw.ConfigurationError, match="invalid regular expression"):
        lw.pattern("(unclosed")


async def test_custom_scorers() -> None:
    @lw.scorer(metrics=[lw.mean()])
    def length(st: lw.AgentState, sample: lw.Sample) -> int:
        return len(st.text)

    assert length.name == "length" and [m.name for m in length.metrics] == ["mean"]
    score = await length(state("abcd"), lw.Sample(input="q"))
    assert score.value == 4.0 and score.answer == "abcd"

    async def bad(st: lw.AgentState, sample: lw.Sample) -> str:
        return "yes"

    with pytest.raises(lw.ConfigurationError, match="returned a str"):
        await lw.Scorer(bad)(state("x"), lw.Sample(input="q"))  # type: ignore[arg-type]


def grader(replies: list[str]) -> tuple[lw.Model, list[str]]:
    prompts: list[str] = []

    def respond(messages: list[lw.ChatMessage], tools: object, config: object) -> str:
        prompts.append(messages[-1].content)
        return replies[len(prompts) - 1]

    return lw.get_model("mock", outputs=respond), prompts


async def test_model_graded_default_template() -> None:
    model, prompts = grader(["The answer matches.\nGRADE: C", "Wrong city. GRADE: I"])
    scorer = lw.model_graded(model=model)
    sample = lw.Sample(input="Capital of France?", target="Paris")
    good = await scorer(state("It is Paris."), sample)
    assert good.value == 1.0 and good.metadata["grade"] == "C"
    assert "GRADE: C" in (good.explanation or "")
    assert "Capital of France?" in prompts[0] and "It is Paris." in prompts[0]
    assert "Paris" in prompts[0].split("The criterion:")[1]
    assert "GRADE: P" not in prompts[0]  # no partial credit offered
    bad = await scorer(state("Lyon"), sample)
    assert bad.value == 0.0


async def test_model_graded_partial_credit_and_custom_template() -> None:
    model, prompts = grader(["GRADE: P", "GRADE: P", "I cannot decide."])
    template = (
        "Q={{ question }} A={{ answer }} T={{ criterion }} level={{ metadata.level }} {{ x }}"
    )
    partial = lw.model_graded(
        template, model=model, partial_credit=True, variables={"x": "!"}, fenced=False
    )
    sample = lw.Sample(input="q1", target=["t1", "t2"], metadata={"level": "hard"})
    assert (await partial(state("a1"), sample)).value == 0.5
    assert prompts[0] == "Q=q1 A=a1 T=t1\nt2 level=hard !"
    strict = lw.model_graded(template, model=model, variables={"x": "?"})
    assert (await strict(state("a1"), sample)).value == 0.0  # P without partial credit
    missing = await strict(state("a1"), sample)
    assert missing.value == 0.0 and "no grade" in (missing.explanation or "")


def test_model_graded_template_errors() -> None:
    with pytest.raises(lw.ConfigurationError, match="does not parse"):
        lw.model_graded("{% if %}")
    with pytest.raises(lw.ConfigurationError, match="group"):
        lw.model_graded(grade_pattern="GRADE")


async def test_model_graded_undefined_variable() -> None:
    model, _ = grader(["GRADE: C"])
    scorer = lw.model_graded("{{ nope }}", model=model)
    with pytest.raises(lw.ConfigurationError, match="nope"):
        await scorer(state("a"), lw.Sample(input="q"))


def test_metrics_on_known_values() -> None:
    values = [1.0, 0.0, 1.0, 1.0]
    assert lw.accuracy()(values) == 0.75
    assert lw.mean()([2.0, 4.0, 9.0]) == 5.0
    # sample std of [1,0,1,1] = 0.5; / sqrt(4) = 0.25
    assert lw.stderr()(values) == pytest.approx(0.25)
    assert lw.stderr()([1.0]) == 0.0
    assert math.isnan(lw.accuracy()([]))
    with pytest.raises(lw.ConfigurationError, match="between 0 and 1"):
        lw.accuracy()([0.5, 3.0])
    median = lw.Metric("median", lambda v: sorted(v)[len(v) // 2])
    assert median([3.0, 1.0, 2.0]) == 2.0


def test_scorer_names_must_be_unique() -> None:
    with pytest.raises(lw.ConfigurationError, match="unique"):
        lw.Task([{"input": "a"}], scorer=[lw.match(), lw.match()])
    task = lw.Task([{"input": "a"}], scorer=[lw.match(), lw.match("numeric", name="num")])
    assert [s.name for s in task.scorer] == ["match", "num"]


async def test_a_grader_named_by_string_is_made_once_and_shared_by_the_samples(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from loopwright.model import _registry

    made: list[lw.ModelAPI] = []

    def factory(name: str, **kw: object) -> lw.ModelAPI:
        api = lw.get_model("mock", outputs=["GRADE: C"], repeat=True).api
        made.append(api)
        return api

    monkeypatch.setattr(_registry, "_providers", _registry._providers.copy())  # (this test's)
    lw.register_provider("grader-once", factory)
    scorer = lw.model_graded(model="grader-once/x")
    for i in range(3):
        score = await scorer(state(f"a{i}"), lw.Sample(input="q", target="t"))
        assert score.value == 1.0
    assert len(made) == 1  # one client and one connection limit for all the grading


def test_metrics_given_to_a_task_do_not_change_the_scorer_of_another() -> None:
    shared = lw.match()
    before = list(shared.metrics)
    a = lw.Task([lw.Sample(input="q", target="t")], scorer=shared)
    b = lw.Task([lw.Sample(input="q", target="t")], scorer=shared, metrics=[lw.mean()])
    assert [m.name for m in b.scorer[0].metrics] == ["mean"]
    assert a.scorer[0].metrics == before and shared.metrics == before
