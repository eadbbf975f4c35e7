"""Hostile model output: parsing is linear, output and tool calls are bounded.

Every reply is generated here, up to a few MB. Each must parse in well under a second
(the bound asserted is a generous 5 s: the old parser took 25 s to 192 s on some of
them, on the event loop) and give a sensible result: a call, or a format error for the
model, never an exception.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

import loopwright as lw
from loopwright.model.protocols import JsonProtocol, ReActProtocol

from ..providers.wire_server import WireServer, openai_reply
from .helpers import PROTOCOLS, TOOLS, error_of, only_call, parse

BOUND = 5.0  # seconds; parsing these takes well under one
MB = 1_000_000


@contextmanager
def quick(what: str) -> Iterator[None]:
    start = time.perf_counter()
    yield
    took = time.perf_counter() - start
    assert took < BOUND, f"{what} took {took:.1f}s"


def deep(n: int) -> str:
    return '{"a": ' * n + "1" + "}" * n


def react_error(text: str, **kwargs: Any) -> str:
    with quick(f"parsing {len(text):,} characters"):
        out = parse(ReActProtocol(), text, **kwargs)
    assert lw.is_format_error(out), out.tool_calls
    return error_of(out)


def json_error(text: str, **kwargs: Any) -> str:
    with quick(f"parsing {len(text):,} characters"):
        out = parse(JsonProtocol(), text, **kwargs)
    assert lw.is_format_error(out), out.tool_calls
    return error_of(out)


# --- react -------------------------------------------------------------------------------


def test_react_action_with_spaces_and_an_open_paren_is_linear() -> None:
    # the old inline-input pattern took ~25 s on 50 kB of this
    text = "Action: multiply" + " " * 25_000 + "(" + "a" * 25_000
    assert "not a tool name" in react_error(text)
    text = "Action: multiply" + " " * MB + "(" + "a" * MB  # 2 MB
    assert "not a tool name" in react_error(text)


@pytest.mark.parametrize(
    "text",
    [
        "Thought" + " " * MB + "x",  # blanks between a label and its colon
        " " * MB + "Observation",
        "**" + " " * MB + "Thought",
        "Action" + " " * MB + "Input",
        ("\n" + " " * 1000) * 1000 + "\nhello",
        "Thought: " * 300_000,
    ],
    ids=["label-blanks", "blanks-observation", "emphasis-blanks", "action-input", "lines", "many"],
)
def test_react_blank_runs_around_markers_are_linear(text: str) -> None:
    assert "no Action" in react_error(text)


def test_react_action_input_of_open_braces_is_a_format_error() -> None:
    error = react_error("Action: multiply\nAction Input: " + "{" * 200_000)
    assert "levels deep" in error


def test_react_deeply_nested_action_input_is_a_format_error() -> None:
    # was RecursionError, which ended the run
    error = react_error("Action: multiply\nAction Input: " + deep(100_000))
    assert "more than 100 levels deep" in error
    error = react_error("Action: multiply\nAction Input: " + "[" * 100_000 + "]" * 100_000)
    assert "levels deep" in error
    # nested deeper than the bound but shallow enough for the json module
    assert "levels deep" in react_error("Action: multiply\nAction Input: " + deep(500))


def test_react_huge_near_json_input_is_not_handed_to_the_repairer() -> None:
    text = 'Action: multiply\nAction Input: {"a": "' + "x" * (3 * MB)
    assert "too long to be repaired" in react_error(text)


@pytest.mark.parametrize(
    "body",
    [
        "{" + "'" * MB,  # a million empty strings
        '{"a": "' + '\\"' * MB + '"',  # escaped quotes
        "{" + "[1]" * (MB // 3),
        "{" + ("[" * 20 + "1" + "]" * 20) * (MB // 41),  # nesting that goes up and down
        "{" + "'a' " * (MB // 4),
    ],
    ids=["quotes", "escapes", "flat-brackets", "oscillating", "strings"],
)
def test_react_pathological_inputs_parse_in_time(body: str) -> None:
    text = "Action: web_search\nAction Input: " + body
    with quick(f"parsing {len(text):,} characters"):
        out = parse(ReActProtocol(), text)
    assert only_call(out).function == "web_search"  # one string parameter: taken as text


def test_react_a_valid_input_of_megabytes_still_works() -> None:
    text = 'Action: web_search\nAction Input: {"query": "' + "x" * (2 * MB) + '"}'
    with quick("parsing"):
        call = only_call(parse(ReActProtocol(), text))
    assert call.parse_error is None and len(call.arguments["query"]) == 2 * MB


# --- json --------------------------------------------------------------------------------


def test_json_two_hundred_thousand_open_braces() -> None:
    # 36 s before
    assert "levels deep" in json_error("{" * 200_000)


def test_json_deeply_nested_arguments_are_a_format_error() -> None:
    # was RecursionError, which ended the run
    action = '{"thought": "", "action": {"name": "multiply", "arguments": %s}}'
    assert "levels deep" in json_error(action % deep(100_000))
    assert "levels deep" in json_error(action % deep(500))


@pytest.mark.parametrize(
    "text",
    [
        '{"thought": "' + "x" * (3 * MB),  # unterminated: once handed whole to the repairer
        ("```json\n{" + "x" * 1000 + "\n") * 1000,
        "a{" * MB,
        '{"a": 1,} ' * (MB // 10),
        ('{"thought": "' + "x" * 30_000 + '",} ') * 30,  # near-JSON, 30 kB each
        "{" + '"' * MB + "}",
    ],
    ids=["unterminated", "fences", "braces-in-prose", "many-objects", "many-repairs", "quotes"],
)
def test_json_pathological_replies_parse_in_time(text: str) -> None:
    json_error(text)


def test_json_a_valid_action_of_megabytes_still_works() -> None:
    text = '{"thought": "t", "action": {"name": "web_search", "arguments": {"query": "%s"}}}'
    with quick("parsing"):
        call = only_call(parse(JsonProtocol(), text % ("x" * (2 * MB))))
    assert call.parse_error is None and len(call.arguments["query"]) == 2 * MB


def test_json_near_json_is_still_repaired() -> None:
    out = parse(JsonProtocol(), "{'action': {'name': 'multiply', 'arguments': {'a': 2, 'b': 3,}}}")
    assert only_call(out).arguments == {"a": 2, "b": 3}


# --- through Model.generate: the output's size and its tool calls are bounded ---------------


class Scripted(lw.ModelAPI):
    """Answers with what ``reply`` builds (no copying: some outputs are huge)."""

    provider = "hostile-test"
    supports_tools = True

    def __init__(self, reply: Callable[[], lw.ModelOutput]) -> None:
        self.reply = reply

    async def generate(self, messages: Any, tools: Any, config: Any) -> lw.ModelOutput:
        return self.reply()


@pytest.mark.parametrize("protocol", ["native", *PROTOCOLS])
async def test_output_beyond_max_output_chars_is_cut_with_a_marker(protocol: str) -> None:
    action = {
        "native": "",
        "react": "Action: web_search\nAction Input: ",
        "json": '{"action": {"name": "web_search", "arguments": ',
    }[protocol]
    text = action + '{"query": "' + "x" * (3 * MB) + '"}' + ("}}" if protocol == "json" else "")
    model = lw.Model(Scripted(lambda: lw.ModelOutput.from_text(text)), tool_protocol=protocol)
    with quick("generating"):
        out = await model.generate([lw.UserMessage(content="go")], TOOLS)
    assert out.stop_reason == "max_tokens"
    if protocol == "native":
        assert len(out.text) < MB + 200
        assert out.text.endswith(
            "more than the limit of 1,000,000 (GenerateConfig.max_output_chars)]"
        )
    else:  # a cut action is not run with cut arguments: the model is told
        assert lw.is_format_error(out)
        assert "cut off" in error_of(out)
        assert len(out.text) < MB + 200

    small = lw.GenerateConfig(max_output_chars=1000)
    out = await model.generate([lw.UserMessage(content="go")], TOOLS, small)
    assert "more than the limit of 1,000" in out.text


def test_the_bounds_must_be_positive() -> None:
    with pytest.raises(ValueError, match="max_output_chars"):
        lw.GenerateConfig(max_output_chars=0)
    with pytest.raises(ValueError, match="max_tool_calls"):
        lw.GenerateConfig(max_tool_calls=-1)


def many_calls(n: int) -> lw.ModelOutput:
    calls = [lw.ToolCall(function="count", arguments={"i": i}) for i in range(n)]
    return lw.ModelOutput(
        message=lw.AssistantMessage(content="", tool_calls=calls), stop_reason="tool_calls"
    )


async def test_tool_calls_beyond_the_cap_are_dropped_and_the_model_is_told() -> None:
    ran: list[int] = []

    @lw.tool
    def count(i: int) -> str:
        """Count.

        Args:
            i: A number.
        """
        ran.append(i)
        return "ok"

    outputs = [many_calls(2000), lw.ModelOutput.for_tool_call("submit", {"answer": "done"})]
    model = lw.get_model("mock", outputs=outputs)
    state = await lw.run(lw.react(tools=[count]), "go", model=model)
    assert state.completed == "submit"
    assert ran == list(range(64))
    reply = next(m for m in state.messages if isinstance(m, lw.AssistantMessage))
    assert len(reply.tool_calls) == 64
    assert "1,936 more tool calls in this reply were dropped, not run" in reply.content

    ran.clear()
    outputs = [many_calls(10), lw.ModelOutput.for_tool_call("submit", {"answer": "done"})]
    agent = lw.react(tools=[count], config=lw.GenerateConfig(max_tool_calls=3))
    await lw.run(agent, "go", model=lw.get_model("mock", outputs=outputs))
    assert ran == [0, 1, 2]


async def test_native_arguments_nested_too_deeply_are_not_run() -> None:
    value: Any = 1
    for _ in range(150):
        value = {"a": value}
    call = lw.ToolCall(function="web_search", arguments={"query": value})
    reply = lw.ModelOutput(message=lw.AssistantMessage(tool_calls=[call]))
    model = lw.Model(Scripted(lambda: reply))
    out = await model.generate([lw.UserMessage(content="go")], TOOLS)
    assert lw.is_format_error(out)
    assert "more than 100 levels deep" in (only_call(out).parse_error or "")
    # what is stored can be read back
    lw.AssistantMessage.model_validate_json(out.message.model_dump_json())


async def test_native_through_a_real_openai_server_2000_calls_and_megabytes_of_text() -> None:
    pytest.importorskip("openai")
    calls = [(f"call_{i}", "web_search", f'{{"query": "q{i}"}}') for i in range(2000)]
    with WireServer() as wire:
        wire.push(openai_reply("x" * (3 * MB), tool_calls=calls, finish_reason="tool_calls"))
        model = lw.get_model("openai/test", base_url=wire.url + "/v1", api_key="sk-test")
        with quick("generating"):
            out = await model.generate([lw.UserMessage(content="go")], TOOLS)
    assert [c.id for c in out.tool_calls] == [f"call_{i}" for i in range(64)]
    assert len(out.text) < MB + 400
    assert "(GenerateConfig.max_output_chars)]" in out.text
    assert out.text.endswith("at most 64 calls are run per reply (GenerateConfig.max_tool_calls)]")


@pytest.mark.parametrize("protocol", list(PROTOCOLS))
async def test_a_run_under_a_time_limit_is_not_stalled_by_hostile_replies(protocol: str) -> None:
    # 26 s under time_limit(2) before: parsing blocked the event loop
    hostile = {
        "react": "Action: multiply" + " " * 25_000 + "(" + "a" * 25_000,
        "json": "{" * 200_000,
    }[protocol]
    model = lw.get_model("mock", outputs=[hostile], repeat=True, tool_protocol=protocol)
    with quick("the run"):
        state = await lw.run(
            lw.react(tools=[]), "go", model=model, limits=[lw.time_limit(2)], db=False
        )
    assert state.completed in ("format_errors", "limit")


def test_the_nesting_bound_is_exact() -> None:
    from loopwright._nesting import MAX_NESTING, nesting_exceeds

    value: Any = 1
    for _ in range(MAX_NESTING):
        value = [value]
    assert not nesting_exceeds(value)
    assert nesting_exceeds([value])
    assert not nesting_exceeds("x" * 10) and not nesting_exceeds({})
