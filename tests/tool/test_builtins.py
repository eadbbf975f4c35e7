"""The built-in tools that need no sandbox: ``think``, ``submit`` and ``finish``."""

from __future__ import annotations

import subprocess
import sys

import pytest

import loopwright as lw
from loopwright.tool.builtin import finish, submit, submit_tool, think


def call(name: str, **args: object) -> lw.AssistantMessage:
    return lw.AssistantMessage(tool_calls=[lw.ToolCall(function=name, arguments=args)])


async def test_think_records_nothing_and_returns_nothing() -> None:
    assert think.name == "think"
    assert think.parallel and not think.terminal
    assert think.info.parameters["required"] == ["thought"]
    assert "changes nothing" in think.info.description
    [result] = await lw.execute_tools(call("think", thought="First add, then divide."), [think])
    assert result.content == ""
    assert result.error is None


@pytest.mark.parametrize("answer", ["42", "", "0", "false", "[]", "multi\nline"])
async def test_submit_returns_the_answer_unchanged(answer: str) -> None:
    [result] = await lw.execute_tools(call("submit", answer=answer), [submit])
    assert result.content == answer
    assert result.error is None


def test_submit_and_finish_are_terminal() -> None:
    assert (submit.name, submit.terminal, submit.parallel) == ("submit", True, False)
    assert (finish.name, finish.terminal) == ("finish", True)
    assert submit.info.parameters == {
        "type": "object",
        "properties": {"answer": {"type": "string", "description": "The final answer."}},
        "required": ["answer"],
        "additionalProperties": False,
    }
    assert finish.info.parameters == submit.info.parameters
    assert finish.info.description == submit.info.description
    assert submit("x") == "x"


async def test_submit_tool_makes_variants() -> None:
    done = submit_tool("done", description="Report.", answer_description="The report.")
    assert (done.name, done.terminal, done.info.description) == ("done", True, "Report.")
    assert done.info.parameters["properties"]["answer"]["description"] == "The report."
    [result] = await lw.execute_tools(call("done", answer=7), [done])
    assert result.content == "7"  # a number is accepted as text
    [result] = await lw.execute_tools(call("done"), [done])
    assert result.error is not None and result.error.type == "validation"


def test_builtins_build_their_schemas_lazily() -> None:
    # import speed: defining the built-ins must not run pydantic's schema machinery
    code = (
        "import loopwright as lw\n"
        "assert lw.submit._spec is None and lw.think._spec is None\n"
        "assert lw.think.info.name == 'think' and lw.think._spec is not None\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
