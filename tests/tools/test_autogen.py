"""``@lw.tool(autogenerate=...)``: a model writes a tool's spec from its source, cached
in the run store by the function's version, checked against the signature."""

from __future__ import annotations

import importlib.util
import json
import sqlite3
import textwrap
from pathlib import Path
from typing import Any

import pytest

import loopwright as lw
from loopwright.agents import _specs as _versions

SPEC = {
    "description": "Join a name and a greeting.",
    "parameters": {
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "Who."},
            "greeting": {"type": "string", "description": "How."},
        },
        "required": ["name"],
    },
}


def greet(name, greeting="hello"):  # type: ignore[no-untyped-def]
    return f"{greeting}, {name}"


class SpecWriter:
    """A scripted spec-writing model: answers each call with the next reply, and keeps
    the prompts it was sent."""

    def __init__(self, *replies: Any) -> None:
        self.replies = list(replies)
        self.prompts: list[str] = []
        self.model = lw.get_model("mock", outputs=self.reply)

    def reply(self, messages: list[lw.ChatMessage], tools: Any, config: Any) -> str:
        self.prompts.append(messages[-1].text)
        assert config.response_schema is not None  # the spec's shape is asked for
        reply = self.replies.pop(0)
        return reply if isinstance(reply, str) else json.dumps(reply)


@pytest.fixture(autouse=True)
def _forget_written() -> Any:
    """Each test starts without this process's memory of written specs."""
    _versions._written.clear()
    yield
    _versions._written.clear()


def agent_with(tool: lw.Tool[..., Any]) -> lw.ReactAgent:
    return lw.react(name="greeter", tools=[tool], submit=False)


def agent_script() -> lw.Model:
    return lw.get_model(
        "mock", outputs=[lw.ModelOutput.for_tool_call("greet", {"name": "Ada"}), "done"]
    )


async def test_written_once_cached_in_the_run_store_and_recorded(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    writer = SpecWriter(SPEC)
    tool = lw.tool(greet, autogenerate=writer.model)
    with pytest.raises(lw.ToolDefinitionError, match="not written yet"):
        _ = tool.info
    state = await lw.run(agent_with(tool), "greet Ada", model=agent_script(), db=db)
    assert [m.text for m in state.messages if m.role == "tool"] == ["hello, Ada"]
    assert len(writer.prompts) == 1 and "def greet(name" in writer.prompts[0]
    assert tool.info.description == SPEC["description"]
    with lw.load_run(state.run_id, db=db) as log:
        recorded = log.info.metadata["tool_specs"]["greet"]
        # the spec-writing call is not a step of the run: the run has two model calls
        assert len(log.model_outputs()) == 2
    assert recorded["parameters"] == SPEC["parameters"]

    # a new tool of the same function, in a "new process" (nothing in memory): the
    # store's cache answers and the model is not called again
    _versions._written.clear()
    again = lw.tool(greet, autogenerate=SpecWriter().model)  # it would fail if called
    state = await lw.run(agent_with(again), "greet Ada", model=agent_script(), db=db)
    assert again.info.parameters == SPEC["parameters"]
    with lw.load_run(state.run_id, db=db) as log:
        assert log.info.metadata["tool_specs"]["greet"] == recorded


def load_module(path: Path, source: str) -> Any:
    path.write_text(textwrap.dedent(source))
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


async def test_a_changed_function_or_prompt_is_written_again(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    before = load_module(tmp_path / "v1.py", "def greet(name):\n    return 'hi ' + name\n")
    after = load_module(tmp_path / "v2.py", "def greet(name):\n    return 'yo ' + name\n")
    one = {**SPEC, "parameters": {**SPEC["parameters"], "required": ["name"]}}
    one["parameters"]["properties"] = {"name": {"type": "string"}}
    writer = SpecWriter(one, {**one, "description": "Greet, again."}, one)
    first = await lw.write_tool_spec(lw.tool(before.greet, autogenerate=writer.model), db=db)
    # unchanged: from the cache
    await lw.write_tool_spec(lw.tool(before.greet, autogenerate=writer.model), db=db)
    assert len(writer.prompts) == 1
    # the function changed: written again
    second = await lw.write_tool_spec(lw.tool(after.greet, autogenerate=writer.model), db=db)
    assert len(writer.prompts) == 2 and "'yo '" in writer.prompts[1]
    assert (first.description, second.description) == (SPEC["description"], "Greet, again.")
    # the user's own prompt: written again, with that prompt
    mine = lw.tool(
        before.greet, autogenerate=writer.model, spec_prompt="Spec for {name}:\n{source}"
    )
    await lw.write_tool_spec(mine, db=db)
    assert writer.prompts[2].startswith("Spec for greet:\ndef greet(name)")


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        (
            {**SPEC, "parameters": {**SPEC["parameters"], "properties": {"who": {}}}},
            r"its parameters are \['who'\], the function's are \['greeting', 'name'\]",
        ),
        (
            {**SPEC, "parameters": {**SPEC["parameters"], "required": ["name", "greeting"]}},
            r"requires \['name', 'greeting'\], the function requires \['name'\]",
        ),
        ({**SPEC, "description": ""}, "has no description"),
        ({"description": "x", "parameters": {"type": "array"}}, '"type": "object"'),
        (
            {**SPEC, "parameters": {**SPEC["parameters"], "required": "name"}},
            "not a valid JSON schema",
        ),
        ("I cannot help with that.", "is not JSON"),
        ("[1, 2]", "is not a JSON object"),
        ("{" * 100_000, "is not JSON"),
    ],
)
async def test_a_spec_that_does_not_match_is_refused(
    tmp_path: Path, reply: Any, message: str
) -> None:
    db = tmp_path / "runs.db"
    writer = SpecWriter(reply)
    tool = lw.tool(greet, autogenerate=writer.model)
    with pytest.raises(lw.ToolDefinitionError, match=message):
        await lw.run(agent_with(tool), "greet", model=agent_script(), db=db)
    # nothing is kept: the next run asks again
    writer.replies.append(SPEC)
    await lw.run(agent_with(tool), "greet", model=agent_script(), db=db)
    assert len(writer.prompts) == 2


def test_options_are_checked_when_the_tool_is_made() -> None:
    with pytest.raises(lw.ToolDefinitionError, match="spec_prompt goes with autogenerate"):
        lw.tool(greet, spec_prompt="{source}")
    with pytest.raises(lw.ToolDefinitionError, match=r"with \{source\}"):
        lw.tool(greet, autogenerate=True, spec_prompt="no source here")
    with pytest.raises(lw.ToolDefinitionError, match="autogenerate must be"):
        lw.tool(greet, autogenerate=3)  # type: ignore[call-overload]


async def test_the_runs_model_writes_it_when_autogenerate_is_true(tmp_path: Path) -> None:
    replies = [json.dumps(SPEC), lw.ModelOutput.for_tool_call("greet", {"name": "Bo"}), "done"]
    tool = lw.tool(greet, autogenerate=True)
    state = await lw.run(
        agent_with(tool), "go", model=lw.get_model("mock", outputs=replies), db=False
    )
    assert [m.text for m in state.messages if m.role == "tool"] == ["hello, Bo"]


async def test_tool_with_keeps_a_written_spec_as_its_own(tmp_path: Path) -> None:
    tool = lw.tool(greet, autogenerate=SpecWriter(SPEC).model)
    with pytest.raises(lw.ToolDefinitionError, match="not written yet"):
        lw.tool_with(tool, name="hello")
    await lw.write_tool_spec(tool, db=False)
    renamed = lw.tool_with(tool, name="hello", description="Say hello.")
    state = await lw.run(
        lw.react(tools=[renamed], submit=False),
        "go",
        model=lw.get_model(
            "mock", outputs=[lw.ModelOutput.for_tool_call("hello", {"name": "Cy"}), "done"]
        ),
        db=tmp_path / "runs.db",
    )
    assert renamed.info.description == "Say hello."
    assert [m.text for m in state.messages if m.role == "tool"] == ["hello, Cy"]
    with lw.load_run(state.run_id, db=tmp_path / "runs.db") as log:
        assert "tool_specs" not in log.info.metadata


def db_files(folder: Path) -> list[Path]:
    return list(folder.glob("*.db"))


async def test_an_agent_used_as_a_tool_keeps_specs_in_the_outer_runs_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # a default run store would appear here
    db = tmp_path / "outer" / "runs.db"
    inner = agent_with(lw.tool(greet, autogenerate=SpecWriter(SPEC).model))
    outer = lw.react(name="outer", tools=[lw.as_tool(inner)], submit=False)
    script = [
        lw.ModelOutput.for_tool_call("greeter", {"input": "greet Di"}),
        lw.ModelOutput.for_tool_call("greet", {"name": "Di"}),
        "greeted",
        "done",
    ]
    await lw.run(outer, "go", model=lw.get_model("mock", outputs=script), db=db)
    assert db_files(tmp_path) == []
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT name FROM tool_specs").fetchall() == [("greet",)]
