"""An MCP server's tools whose input schemas hold patterns that backtrack without end
in Python's ``re`` (``mcp_servers/pattern_server.py``, a real process). The model's
call with an argument like ``"aaaa...!"`` used to stop the event loop for minutes (no
limit could fire); now the run ends, the call refused as an error for the model."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

pytest.importorskip("mcp")

import loopwright as lw
from loopwright.mcp import MCPServer, mcp_server

from ._pattern_spy import Spy

SERVER = Path(__file__).parent / "mcp_servers" / "pattern_server.py"
HOSTILE = "a" * 40 + "!"
pytestmark = pytest.mark.timeout(120)


def patterns_server() -> MCPServer:
    return mcp_server([sys.executable, str(SERVER)], name="patterns", prefix="p_")


async def run_calls(*calls: tuple[str, dict[str, object]]) -> lw.AgentState:
    """A run whose scripted model makes ``calls``, one a step, then answers; under a
    generous time limit of its own (a stopped event loop would not let it fire)."""
    outputs: list[lw.ModelOutput | str] = [lw.ModelOutput.for_tool_call(n, a) for n, a in calls]
    model = lw.get_model("mock", outputs=[*outputs, "done."])
    agent = lw.with_mcp(lw.react(submit=False), patterns_server())
    return await lw.run(agent, "go", model=model, limits=[lw.time_limit(100)], db=False)


def results(state: lw.AgentState) -> list[lw.ToolMessage]:
    return [m for m in state.messages if isinstance(m, lw.ToolMessage)]


async def test_a_catastrophic_pattern_refuses_the_call_and_the_run_ends() -> None:
    state = await run_calls(
        ("p_nested", {"word": HOSTILE}),
        ("p_either", {"word": HOSTILE}),
        ("p_keyed", {HOSTILE: 1}),
        ("p_either", {"word": "aaaa"}),
    )
    assert state.completed == "answer" and state.limit is None
    nested, either, keyed, fine = results(state)
    # regex answers (a+)+ at once: an ordinary refusal
    assert nested.error is not None and nested.error.type == "validation"
    assert "must match the pattern '^(a+)+$'" in nested.content
    # (a|a)+ backtracks in regex too: the time runs out, the call is refused
    for refused in (either, keyed):
        assert refused.error is not None and refused.error.type == "validation"
        assert "could not check the argument" in refused.content
        assert "against its pattern '^(a|a)+$'" in refused.content
        assert "matching took over 0.5 seconds" in refused.content
    # the tool still works for arguments that can be checked
    assert fine.error is None and fine.content == 'either called with {"word": "aaaa"}'


async def test_a_pattern_that_is_no_regular_expression_refuses_the_call() -> None:
    """Draft 4's meta-schema does not check ``patternProperties`` keys, so the tool is
    listed; ``re.search("(", ...)`` raised ``re.error`` and ended the run."""
    state = await run_calls(("p_broken", {"x": 1}), ("p_broken", {}))
    assert state.completed == "answer" and state.limit is None
    refused, empty = results(state)
    assert refused.error is not None and refused.error.type == "validation"
    assert "could not check the argument 'x' against its pattern '('" in refused.content
    assert "not a valid regular expression" in refused.content
    assert empty.error is None and empty.content == "broken called with {}"


async def test_structured_content_against_a_catastrophic_output_pattern(tmp_path: Path) -> None:
    """The SDK checks a result's structured content against the tool's output schema
    with jsonschema, in this process: the server's pattern and the server's string
    held the event loop; now the answer is refused, an error for the model."""
    raw = Path(__file__).parent / "mcp_servers" / "raw_server.py"
    output = {"type": "object", "properties": {"w": {"type": "string", "pattern": "^(a|a)+$"}}}
    spec = {
        "tools": [
            {"name": n, "inputSchema": {"type": "object"}, "outputSchema": output}
            for n in ("hostile", "fine")
        ],
        "answers": {
            n: {"result": {"content": [], "structuredContent": {"w": w}}}
            for n, w in (("hostile", HOSTILE), ("fine", "aaaa"))
        },
    }
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    server = mcp_server([sys.executable, str(raw), str(tmp_path / "spec.json")], name="raw")
    model = lw.get_model(
        "mock",
        outputs=[
            lw.ModelOutput.for_tool_call("hostile", {}),
            lw.ModelOutput.for_tool_call("fine", {}),
            "done.",
        ],
    )
    agent = lw.with_mcp(lw.react(submit=False), server)
    state = await lw.run(agent, "go", model=model, limits=[lw.time_limit(100)], db=False)
    assert state.completed == "answer" and state.limit is None
    hostile, fine = results(state)
    assert hostile.error is not None and hostile.error.type == "tool_error"
    assert "could not be checked against its output schema's pattern" in hostile.content
    assert "matching took over 0.5 seconds" in hostile.content
    assert fine.error is None


async def test_the_structured_content_of_one_replys_calls_shares_one_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Twelve calls in one reply, each answered with structured content that
    backtracks against the output schema's pattern: the checks of the answers share
    the reply's 2 s with its arguments' (``_patterns.reply_patterns``), so at most
    four are refused for their own 0.5 s, the others because the reply's are spent
    (each took 0.5 s, six in all, before); the long matches ran in worker threads,
    not on the event loop (``mcp/_session.py``)."""
    spy = Spy(monkeypatch)
    raw = Path(__file__).parent / "mcp_servers" / "raw_server.py"
    output = {"type": "object", "properties": {"w": {"type": "string", "pattern": "^(a|a)+$"}}}
    spec = {
        "tools": [{"name": "hostile", "inputSchema": {"type": "object"}, "outputSchema": output}],
        "answers": {"hostile": {"result": {"content": [], "structuredContent": {"w": HOSTILE}}}},
    }
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    server = mcp_server([sys.executable, str(raw), str(tmp_path / "spec.json")], name="raw")
    calls = [lw.ToolCall(id=f"c{i}", function="hostile", arguments={}) for i in range(12)]
    many = lw.ModelOutput(message=lw.AssistantMessage(tool_calls=calls), stop_reason="tool_calls")
    model = lw.get_model("mock", outputs=[many, "done."])
    agent = lw.with_mcp(lw.react(submit=False), server)
    state = await lw.run(agent, "go", model=model, limits=[lw.time_limit(100)], db=False)
    assert state.completed == "answer" and state.limit is None
    answers = results(state)
    assert len(answers) == 12
    for answer in answers:
        assert answer.error is not None and answer.error.type == "tool_error"
        assert "could not be checked against its output schema's pattern" in answer.content
    own = [a for a in answers if "matching took over 0.5 seconds" in a.content]
    spent = [a for a in answers if "this reply's calls took over 2 seconds" in a.content]
    assert 1 <= len(own) <= 4 and len(own) + len(spent) == 12
    assert spy.long_off_loop >= 1 and spy.long_on_loop == 0
