"""Property tests: rendered actions parse back to themselves; no text makes a parser raise."""

from __future__ import annotations

import re
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import loopwright as lw
from loopwright.model.protocols import JsonProtocol, ReActProtocol

from .helpers import MULTIPLY, SEARCH, SUBMIT

ANYTHING = lw.ToolInfo(name="anything", description="Takes any object.")
TOOLS = [MULTIPLY, SEARCH, ANYTHING, SUBMIT]
CFG = lw.GenerateConfig()
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

_LABEL = re.compile(r"^\W*(thought|action|final[\s_]*answer|observation)\W*:", re.I | re.M)

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**53), max_value=2**53)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=30)
)
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)


@st.composite
def calls(draw: st.DrawFn) -> lw.ToolCall:
    tool = draw(st.sampled_from([MULTIPLY, SEARCH, ANYTHING]))
    args: dict[str, Any]
    if tool is MULTIPLY:
        args = {"a": draw(st.integers()), "b": draw(st.integers())}
    elif tool is SEARCH:
        args = {"query": draw(st.text(max_size=60))}
    else:
        args = draw(st.dictionaries(st.text(max_size=10), json_values, max_size=5))
    return lw.ToolCall(function=tool.name, arguments=args)


def react_safe(text: str) -> bool:
    """Text that the react format can carry verbatim (no labels, no observation)."""
    return (
        text == text.strip()
        and not _LABEL.search(text)
        and "Observation:" not in text
        and not text.startswith("<think>")
    )


react_thoughts = st.text(min_size=1, max_size=80).filter(lambda t: bool(t) and react_safe(t))


def roundtrip(proto: ReActProtocol | JsonProtocol, message: lw.AssistantMessage) -> lw.ModelOutput:
    """Render ``message`` as history, then parse its rendering as a fresh reply."""
    fresh = type(proto)()
    rendered = fresh.render([message], TOOLS, CFG).messages[-1].content
    request = proto.render([lw.UserMessage(content="q")], TOOLS, CFG)
    return proto.parse(lw.ModelOutput.from_text(rendered), request)


@SETTINGS
@given(call=calls(), thought=react_thoughts)
def test_react_actions_round_trip(call: lw.ToolCall, thought: str) -> None:
    from json import dumps

    if "Observation:" in dumps(call.arguments, ensure_ascii=False):
        return  # the stop sequence would have ended the reply there
    out = roundtrip(ReActProtocol(), lw.AssistantMessage(reasoning=thought, tool_calls=[call]))
    assert len(out.tool_calls) == 1
    parsed = out.tool_calls[0]
    assert (parsed.function, parsed.arguments, parsed.parse_error) == (
        call.function,
        call.arguments,
        None,
    )
    assert out.message.reasoning == thought


@SETTINGS
@given(answer=st.text(max_size=80).filter(react_safe), thought=react_thoughts)
def test_react_final_answers_round_trip(answer: str, thought: str) -> None:
    call = lw.ToolCall(function="submit", arguments={"answer": answer})
    out = roundtrip(ReActProtocol(), lw.AssistantMessage(reasoning=thought, tool_calls=[call]))
    assert [(c.function, c.arguments) for c in out.tool_calls] == [("submit", {"answer": answer})]


@SETTINGS
@given(call=calls(), thought=st.text(max_size=80))
def test_json_actions_round_trip(call: lw.ToolCall, thought: str) -> None:
    out = roundtrip(JsonProtocol(), lw.AssistantMessage(reasoning=thought, tool_calls=[call]))
    assert len(out.tool_calls) == 1
    parsed = out.tool_calls[0]
    assert (parsed.function, parsed.arguments, parsed.parse_error) == (
        call.function,
        call.arguments,
        None,
    )
    assert out.message.reasoning == (thought.strip() or None)


@SETTINGS
@given(answer=st.text(max_size=80), thought=st.text(max_size=40))
def test_json_final_answers_round_trip(answer: str, thought: str) -> None:
    call = lw.ToolCall(function="submit", arguments={"answer": answer})
    out = roundtrip(JsonProtocol(), lw.AssistantMessage(reasoning=thought, tool_calls=[call]))
    assert [(c.function, c.arguments) for c in out.tool_calls] == [("submit", {"answer": answer})]


@settings(max_examples=300, deadline=None)
@given(
    text=st.text(
        alphabet=st.sampled_from(list("{}[]\"':,\n `ActionInput FinalAnswerThought Observation0")),
        max_size=120,
    )
    | st.text(max_size=120),
    stop=st.sampled_from(["stop", "max_tokens"]),
)
def test_no_reply_makes_a_parser_raise(text: str, stop: lw.StopReason) -> None:
    for proto in (ReActProtocol(), JsonProtocol()):
        request = proto.render([lw.UserMessage(content="q")], TOOLS, CFG)
        out = proto.parse(lw.ModelOutput.from_text(text, stop_reason=stop), request)
        # with submit offered, every reply is a call (an action, an answer) or a format error
        assert out.tool_calls or out.message.format_error
