"""A text protocol's format error is shown as what it is, not as a fake tool call.

The reply keeps its text with no tool calls (``AssistantMessage.format_error`` says what
was wrong) and the loop sends the error back as a user message; the run store, ``runs
show``, the live display and the replay provider all see that.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import loopwright as lw

from ...cli._cli import cli, script

GOOD = {"react": "Final Answer: 42", "json": '{"action": {"name": "finish", "arguments": "42"}}'}


@lw.tool
def multiply(a: int, b: int) -> int:
    """Multiply two numbers.

    Args:
        a: The first factor.
        b: The second factor.
    """
    return a * b


def shape(messages: list[lw.ChatMessage]) -> list[tuple[str, str, list[str], str | None]]:
    return [
        (
            m.role,
            m.content,
            [c.function for c in getattr(m, "tool_calls", [])],
            getattr(m, "format_error", None),
        )
        for m in messages
    ]


@pytest.mark.parametrize("protocol", ["react", "json"])
async def test_state_messages_hold_the_reply_and_the_error_and_replay_reproduces_them(
    tmp_path: Path, protocol: str
) -> None:
    db = tmp_path / "runs.db"
    agent = lw.react(tools=[multiply])
    model = lw.get_model("mock", outputs=["No idea.", GOOD[protocol]], tool_protocol=protocol)
    state = await lw.run(agent, "6*7?", model=model, db=db)
    assert state.completed == "submit" and state.text == "42"
    bad, feedback = state.messages[1], state.messages[2]
    assert isinstance(bad, lw.AssistantMessage) and lw.is_format_error(bad)
    assert bad.content == "No idea." and bad.tool_calls == []
    assert isinstance(feedback, lw.UserMessage) and feedback.content == bad.format_error
    assert "format_error" not in {
        c.function for m in state.messages for c in getattr(m, "tool_calls", [])
    }

    # the run store holds the same; the replay provider reproduces the run from it
    with lw.load_run(None, db) as log:
        assert shape(log.messages()) == shape(state.messages)
        run_id = log.info.id
    replay = lw.get_model("replay", run=run_id, db=db)
    again = await lw.run(agent, "6*7?", model=replay, db=db)
    assert again.completed == "submit"
    assert shape(again.messages) == shape(state.messages)


def test_runs_show_and_the_live_display_show_no_fake_call(tmp_path: Path) -> None:
    outputs = script(tmp_path / "s.json", ["I have no idea.", "Final Answer: 42"])
    args = ("-m", "mock", "-M", outputs, "--protocol", "react", "-t", "think")
    run = cli("run", "6*7?", *args, cwd=tmp_path)
    assert run.code == 0 and run.out.strip() == "42"
    assert "format_error" not in run.err
    assert "format error" in run.err and "no Action and no Final Answer" in run.err
    listed = cli("runs", "list", "--json", cwd=tmp_path).json()
    show = cli("runs", "show", listed[0]["id"], cwd=tmp_path)
    assert show.code == 0
    assert "format_error" not in show.out
    assert "I have no idea." in show.out
    assert "Your reply has no Action and no Final Answer." in show.out


async def test_the_iterative_agent_sends_the_error_back_too() -> None:
    seen: list[list[lw.ChatMessage]] = []
    replies = iter(["No idea.", "Final Answer: 42"])

    def respond(messages: list[lw.ChatMessage], tools: object, config: object) -> str:
        seen.append(list(messages))
        return next(replies)

    model = lw.get_model("mock", outputs=respond, tool_protocol="react")
    agent = lw.iterative(tools=[multiply], max_steps=2, time_limit=60, progress_every=None)
    state = await lw.run(agent, "6*7?", model=model)
    bad = next(m for m in state.messages if isinstance(m, lw.AssistantMessage))
    assert bad.tool_calls == [] and bad.format_error is not None
    after = state.messages[state.messages.index(bad) + 1]
    assert isinstance(after, lw.UserMessage) and after.content == bad.format_error
    # the model read it as the protocol's error observation
    assert any("Observation: Error: Your reply has no Action" in m.content for m in seen[1])
