"""What react() and iterative() share (agent/_steps.py): setup checks, tools, endings."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import loopwright as lw
from loopwright.tools.builtin import submit

call = lw.ModelOutput.for_tool_call


@lw.tool
def shout(text: str) -> str:
    """Shout.

    Args:
        text: What to shout.
    """
    return text.upper() * 1000


@lw.tool
def secret() -> str:
    """Something only the first agent may use."""
    return "the secret"


def plain(x: int) -> int:
    return x


def _iterative(tools: list[Any] = [], **kw: Any) -> Any:  # noqa: B006 - read only
    return lw.iterative(max_steps=5, tools=[*tools, submit()], **kw)  # submit: as react has


MAKERS: list[Callable[..., Any]] = [lw.react, _iterative]


@pytest.mark.parametrize("make", MAKERS, ids=["react", "iterative"])
async def test_a_single_stop_keyword_is_one_keyword_not_its_letters(make: Any) -> None:
    model = lw.get_model("mock", outputs=["Let me think...", "It is FINISHED now."])
    agent = make(stop_keywords="finished", tools=[shout])
    state = await lw.run(agent, "go", model=model, db=False)
    assert state.completed == "stop_keyword" and state.text == "It is FINISHED now."
    with pytest.raises(lw.ConfigurationError, match="stop_keywords must be strings"):
        make(stop_keywords=[3])


@pytest.mark.parametrize("make", MAKERS, ids=["react", "iterative"])
async def test_what_is_not_a_tool_is_refused_with_how_to_make_one(make: Any) -> None:
    with pytest.raises(lw.ConfigurationError, match=r"'plain' is not a Tool; .*@lw.tool"):
        make(tools=[plain])
    with pytest.raises(lw.ConfigurationError, match="repeated: \\['shout'\\]"):
        make(tools=[shout, shout])
    agent = make(tools=[shout])
    with pytest.raises(lw.ConfigurationError, match="'plain' is not a Tool"):
        await lw.run(agent, "go", model=lw.get_model("mock"), tools=[plain], db=False)


@pytest.mark.parametrize("make", MAKERS, ids=["react", "iterative"])
async def test_max_tool_output_comes_from_the_agents_or_the_models_config(make: Any) -> None:
    def script() -> list[lw.ModelOutput | str]:
        return [call("shout", {"text": "hey"}), call("submit", {"answer": "x"})]

    for agent_cfg, model_cfg in ((lw.GenerateConfig(max_tool_output=300), None),
                                 (None, lw.GenerateConfig(max_tool_output=300))):  # fmt: skip
        model = lw.get_model("mock", outputs=script(), config=model_cfg)
        agent = make(tools=[shout], config=agent_cfg)
        state = await lw.run(agent, "go", model=model, db=False)
        result = next(m for m in state.messages if m.role == "tool")
        assert len(result.text.encode()) <= 300 and "truncated" in result.text


@pytest.mark.parametrize("make", MAKERS, ids=["react", "iterative"])
async def test_a_stop_keyword_beside_a_submit_call_lets_the_submit_answer(make: Any) -> None:
    model = lw.get_model(
        "mock", outputs=[call("submit", {"answer": "42"}, content="DONE, submitting.")]
    )
    agent = make(stop_keywords=["done"], tools=[])
    state = await lw.run(agent, "go", model=model, db=False)
    assert state.completed == "submit" and state.text == "42"


@pytest.mark.parametrize("make", MAKERS, ids=["react", "iterative"])
async def test_an_agent_continuing_anothers_state_does_not_get_its_tools(make: Any) -> None:
    first = lw.react(tools=[secret])
    state = await lw.run(
        first, "go", model=lw.get_model("mock", outputs=[call("submit", {"answer": "a"})])
    )
    offered: list[list[str]] = []

    def respond(messages: object, tools: list[lw.ToolInfo], config: object) -> lw.ModelOutput:
        offered.append([t.name for t in tools])
        return call("submit", {"answer": "b"})

    second = make(tools=[shout])
    await lw.run(second, state, model=lw.get_model("mock", outputs=respond), db=False)
    assert "secret" not in offered[0] and "shout" in offered[0]


async def test_iterative_gives_up_after_repeated_context_overflows() -> None:
    overflow = lw.ModelOutput.from_text("", stop_reason="model_length")
    model = lw.get_model("mock", outputs=[overflow], repeat=True)
    agent = lw.iterative(max_steps=50)
    state = await lw.run(agent, "go", model=model, db=False)
    assert state.completed == "model_length"
    assert len([m for m in state.messages if m.role == "assistant"]) == 0


async def test_iterative_as_a_handoff_target_uses_its_own_system_prompt() -> None:
    seen: list[str] = []

    def respond(messages: list[lw.ChatMessage], tools: object, config: object) -> lw.ModelOutput:
        seen.append(messages[0].text)
        return call("submit", {"answer": "ok"})

    worker = lw.iterative(prompt="I am the worker.", tools=[submit()], max_steps=3)
    state = lw.AgentState(
        messages=[lw.SystemMessage(content="I am the boss."), lw.UserMessage(content="go")]
    )
    await lw.run(worker, state, model=lw.get_model("mock", outputs=respond), db=False)
    assert seen == ["I am the worker."]


def test_an_iterative_nudge_with_an_unknown_field_is_refused() -> None:
    with pytest.raises(lw.ConfigurationError, match="nudge may use"):
        lw.iterative(nudge="Time left: {remainig}")
