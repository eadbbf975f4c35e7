"""The built-in tools that need no sandbox: ``think()`` and ``submit()``."""

from __future__ import annotations

import asyncio
import subprocess
import sys

import pytest

import loopwright as lw
from loopwright.tools.builtin import submit, think


def call(name: str, **args: object) -> lw.AssistantMessage:
    return lw.AssistantMessage(tool_calls=[lw.ToolCall(function=name, arguments=args)])


async def test_think_records_nothing_and_returns_nothing() -> None:
    t = think()
    assert t.name == "think"
    assert t.parallel and not t.terminal
    assert t.info.parameters["required"] == ["thought"]
    assert "changes nothing" in t.info.description
    [result] = await lw.execute_tools(call("think", thought="First add, then divide."), [t])
    assert result.content == ""
    assert result.error is None


@pytest.mark.parametrize("answer", ["42", "", "0", "false", "[]", "multi\nline"])
async def test_submit_returns_the_answer_unchanged(answer: str) -> None:
    [result] = await lw.execute_tools(call("submit", answer=answer), [submit()])
    assert result.content == answer
    assert result.error is None


def test_submit_and_finish_are_terminal() -> None:
    s, finish = submit(), submit("finish")
    assert (s.name, s.terminal, s.parallel) == ("submit", True, False)
    assert (finish.name, finish.terminal) == ("finish", True)
    assert s.info.parameters == {
        "type": "object",
        "properties": {"answer": {"type": "string", "description": "The final answer."}},
        "required": ["answer"],
        "additionalProperties": False,
    }
    assert finish.info.parameters == s.info.parameters
    assert finish.info.description == s.info.description
    assert s("x") == "x"


async def test_submit_makes_variants() -> None:
    done = submit("done", description="Report.", answer_description="The report.")
    assert (done.name, done.terminal, done.info.description) == ("done", True, "Report.")
    assert done.info.parameters["properties"]["answer"]["description"] == "The report."
    [result] = await lw.execute_tools(call("done", answer=7), [done])
    assert result.content == "7"  # a number is accepted as text
    [result] = await lw.execute_tools(call("done"), [done])
    assert result.error is not None and result.error.type == "validation"
    mind = think("reflect", description="Reflect.")
    assert (mind.name, mind.info.description, mind.parallel) == ("reflect", "Reflect.", True)


def test_builtins_are_factories_like_the_sandbox_tools() -> None:
    # one convention: every built-in tool is made by calling it, and each call makes a new tool
    for factory in (lw.think, lw.submit, lw.bash, lw.python, lw.text_editor, lw.files):
        assert not isinstance(factory, lw.Tool), factory
        made = factory()
        assert isinstance(made, lw.Tool) and made is not factory()
    hint = r"'think' is not a Tool but makes one: call it \(think\(\)\)"
    with pytest.raises(lw.ConfigurationError, match=hint):
        lw.react(tools=[lw.think])
    with pytest.raises(lw.ConfigurationError, match=hint):
        asyncio.run(lw.execute_tools(call("think", thought="x"), [lw.think]))  # type: ignore[list-item]


def test_builtins_build_their_schemas_lazily() -> None:
    # import speed: defining the built-ins must not run pydantic's schema machinery
    code = (
        "import loopwright as lw\n"
        "s, t = lw.submit(), lw.think()\n"
        "assert s._spec is None and t._spec is None\n"
        "assert t.info.name == 'think' and t._spec is not None\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
