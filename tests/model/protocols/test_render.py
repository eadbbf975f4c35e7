"""Rendering requests: prompts from templates, history, settings, caching, stable prefixes."""

from __future__ import annotations

import datetime
import json
from typing import Any

import pytest

import loopwright as lw
from loopwright.model.protocols import ActionExample, JsonProtocol, ReActProtocol, ToolProtocol

from .helpers import CLOCK, MULTIPLY, NO_SUBMIT, PROTOCOLS, SEARCH, SUBMIT, TOOLS

CFG = lw.GenerateConfig()
TRICKY = "Use {x}, {{ y }}, {% if z %}, {# w #} and }} literally."


def fixed_day() -> datetime.date:
    return datetime.date(2031, 5, 17)


@pytest.mark.parametrize("name", ["react", "json"])
def test_the_prompt_holds_the_tools_the_date_and_the_agent_prompt(name: str) -> None:
    proto = PROTOCOLS[name](today=fixed_day)
    messages = [lw.SystemMessage(content="You are careful."), lw.UserMessage(content="2*3?")]
    request = proto.render(messages, TOOLS, CFG)
    system = request.messages[0]
    assert isinstance(system, lw.SystemMessage)
    assert system.content.startswith("You are careful.")
    assert "2031-05-17" in system.content
    for tool in (MULTIPLY, SEARCH, CLOCK):
        assert f"{tool.name}: {tool.description}" in system.content
    assert '"a": <integer: The first factor.>' in system.content
    assert request.tools == []  # nothing native
    assert request.messages[1] is messages[1]  # user turns pass through untouched


@pytest.mark.parametrize("name", ["react", "json"])
def test_literal_braces_in_prompts_questions_and_descriptions_do_not_break(name: str) -> None:
    tool = MULTIPLY.model_copy(update={"description": TRICKY})
    messages = [lw.SystemMessage(content=TRICKY), lw.UserMessage(content=TRICKY)]
    request = PROTOCOLS[name]().render(messages, [tool], CFG)
    system = request.messages[0].content
    assert system.startswith(TRICKY)
    assert f"multiply: {TRICKY}" in system
    assert request.messages[1].content == TRICKY


def test_a_system_prompt_is_added_when_the_conversation_has_none() -> None:
    messages = [lw.UserMessage(content="hi")]
    request = ReActProtocol().render(messages, TOOLS, CFG)
    assert [m.role for m in request.messages] == ["system", "user"]
    assert request.messages[0].content.startswith("Today is")


def test_react_asks_to_stop_at_observation_and_drops_native_tool_settings() -> None:
    cfg = lw.GenerateConfig(
        stop_seqs=["END", "Observation:"], tool_choice="auto", parallel_tool_calls=True
    )
    out = ReActProtocol().render([lw.UserMessage(content="x")], TOOLS, cfg).config
    assert out.stop_seqs == ["END", "Observation:"]
    assert out.tool_choice is None and out.parallel_tool_calls is None
    assert ReActProtocol().render([lw.UserMessage(content="x")], TOOLS, CFG).config.stop_seqs == [
        "Observation:"
    ]


def test_json_sets_a_response_schema_naming_only_real_actions() -> None:
    cfg = JsonProtocol().render([lw.UserMessage(content="x")], TOOLS, CFG).config
    schema = cfg.response_schema
    assert schema is not None
    assert schema["required"] == ["thought", "action"]
    choices = schema["properties"]["action"]["anyOf"]
    names = [c["properties"]["name"]["const"] for c in choices]
    assert names == ["multiply", "web_search", "clock", "finish"]
    assert choices[0]["properties"]["arguments"] == MULTIPLY.parameters
    assert choices[-1]["properties"]["arguments"] == SUBMIT.parameters
    assert JsonProtocol(constrain=False).render([], TOOLS, CFG).config.response_schema is None


def test_json_schema_definitions_are_moved_to_the_root() -> None:
    tree = lw.ToolInfo(
        name="plant",
        parameters={
            "type": "object",
            "properties": {"root": {"$ref": "#/$defs/Node"}},
            "required": ["root"],
            "$defs": {
                "Node": {
                    "type": "object",
                    "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/Node"}}},
                }
            },
        },
    )
    schema = JsonProtocol().render([], [tree], CFG).config.response_schema
    assert schema is not None
    args = schema["properties"]["action"]["anyOf"][0]["properties"]["arguments"]
    assert args["properties"]["root"] == {"$ref": "#/$defs/plant__Node"}
    assert "$defs" not in args
    node = schema["$defs"]["plant__Node"]
    assert node["properties"]["kids"]["items"] == {"$ref": "#/$defs/plant__Node"}


def test_a_forced_tool_is_the_only_action() -> None:
    cfg = lw.GenerateConfig(tool_choice=lw.ToolFunction(name="clock"))
    request = JsonProtocol().render([lw.UserMessage(content="x")], TOOLS, cfg)
    schema = request.config.response_schema
    assert schema is not None
    assert schema["properties"]["action"]["properties"]["name"] == {"const": "clock"}
    assert "must be clock" in request.messages[0].content
    react = ReActProtocol().render([lw.UserMessage(content="x")], TOOLS, cfg)
    assert "must be clock" in react.messages[0].content


def test_tool_choice_none_and_no_tools_mean_a_plain_chat() -> None:
    messages = [lw.SystemMessage(content="s"), lw.UserMessage(content="u")]
    for proto in (ReActProtocol(), JsonProtocol()):
        for tools, cfg in (([], CFG), (TOOLS, lw.GenerateConfig(tool_choice="none"))):
            request = proto.render(messages, tools, cfg)
            assert list(request.messages) == messages
            assert all(a is b for a, b in zip(request.messages, messages, strict=True))
            assert request.config.response_schema is None
            assert not request.config.stop_seqs


def test_react_lists_submit_only_when_a_final_answer_cannot_stand_in_for_it() -> None:
    system = ReActProtocol().render([], TOOLS, CFG).messages[0].content
    assert "submit:" not in system and "[multiply, web_search, clock]" in system
    rich = SUBMIT.model_copy(
        update={
            "parameters": {
                "type": "object",
                "properties": {"answer": {"type": "string"}, "files": {"type": "array"}},
                "required": ["answer", "files"],
            }
        }
    )
    system = ReActProtocol().render([], [MULTIPLY, rich], CFG).messages[0].content
    assert "submit: Submit the final answer." in system


def history() -> list[lw.ChatMessage]:
    call = lw.ToolCall(function="multiply", arguments={"a": 2, "b": 3})
    bad = lw.ToolCall(function="web_search", arguments={})
    return [
        lw.SystemMessage(content="sys"),
        lw.UserMessage(content="task"),
        lw.AssistantMessage(content="", reasoning="product", tool_calls=[call]),
        lw.ToolMessage(tool_call_id=call.id, function="multiply", content="6"),
        lw.AssistantMessage(content="Searching.", tool_calls=[bad]),
        lw.ToolMessage(
            tool_call_id=bad.id,
            function="web_search",
            content="Missing argument query.",
            error=lw.ToolCallError(type="validation", message="Missing argument query."),
        ),
        lw.AssistantMessage(content="6", reasoning="done"),
    ]


def test_react_renders_history_as_its_own_text() -> None:
    rendered = ReActProtocol().render(history(), TOOLS, CFG).messages
    assert [m.role for m in rendered] == [
        "system",
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
        "assistant",
    ]
    assert rendered[2].content == (
        'Thought: product\nAction: multiply\nAction Input: {"a": 2, "b": 3}'
    )
    assert rendered[3].content == "Observation: 6"
    assert rendered[4].content == "Thought: Searching.\nAction: web_search\nAction Input: {}"
    assert rendered[5].content == "Observation: Error: Missing argument query."
    assert rendered[6].content == "Thought: done\nFinal Answer: 6"
    assert all(not getattr(m, "tool_calls", None) for m in rendered)


def test_json_renders_history_as_its_own_text() -> None:
    rendered = JsonProtocol().render(history(), TOOLS, CFG).messages
    assert json.loads(rendered[2].content) == {
        "thought": "product",
        "action": {"name": "multiply", "arguments": {"a": 2, "b": 3}},
    }
    assert json.loads(rendered[3].content) == {"observation": "6"}
    assert json.loads(rendered[5].content) == {"error": "Missing argument query."}
    assert json.loads(rendered[6].content) == {
        "thought": "done",
        "action": {"name": "finish", "arguments": {"answer": "6"}},
    }


def test_a_submit_call_renders_as_a_final_answer() -> None:
    call = lw.ToolCall(function="submit", arguments={"answer": "0"})
    message = lw.AssistantMessage(reasoning="sure", tool_calls=[call])
    rendered = ReActProtocol().render([message], TOOLS, CFG).messages[-1]
    assert rendered.content == "Thought: sure\nFinal Answer: 0"


def test_consecutive_user_turns_are_merged_once_and_kept() -> None:
    calls = [lw.ToolCall(function="clock"), lw.ToolCall(function="clock")]
    messages: list[lw.ChatMessage] = [
        lw.UserMessage(content="task"),
        lw.AssistantMessage(tool_calls=calls),
        lw.ToolMessage(tool_call_id=calls[0].id, function="clock", content="noon"),
        lw.ToolMessage(tool_call_id=calls[1].id, function="clock", content="one"),
        lw.UserMessage(content="go on"),
    ]
    proto = ReActProtocol()
    first = proto.render(messages, TOOLS, CFG).messages
    assert [m.role for m in first] == ["system", "user", "assistant", "user"]
    assert first[-1].content == "Observation: noon\n\nObservation: one\n\ngo on"
    assert proto.render(messages, TOOLS, CFG).messages[-1] is first[-1]
    unmerged = ReActProtocol(merge_user_turns=False).render(messages, TOOLS, CFG).messages
    assert [m.role for m in unmerged][-3:] == ["user", "user", "user"]


class Counting(ReActProtocol):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.counts = {"assistant": 0, "observation": 0, "prompt": 0}

    def render_assistant(self, message: lw.AssistantMessage, toolset: Any) -> str:
        self.counts["assistant"] += 1
        return super().render_assistant(message, toolset)

    def render_observation(self, message: lw.ToolMessage) -> str:
        self.counts["observation"] += 1
        return super().render_observation(message)

    def render_prompt(self, system: str, toolset: Any, today: str) -> str:
        self.counts["prompt"] += 1
        return super().render_prompt(system, toolset, today)


def test_each_message_is_rendered_once_and_the_prefix_is_identical_step_after_step() -> None:
    proto = Counting()
    messages: list[lw.ChatMessage] = [lw.SystemMessage(content="s"), lw.UserMessage(content="t")]
    previous: list[lw.ChatMessage] = []
    steps = 60
    for step in range(steps):
        request = proto.render(messages, TOOLS, CFG)
        rendered = list(request.messages)
        assert rendered[: len(previous)] == previous
        assert all(a is b for a, b in zip(previous, rendered, strict=False))
        previous = rendered
        call = lw.ToolCall(function="clock")
        messages.append(lw.AssistantMessage(reasoning=f"step {step}", tool_calls=[call]))
        messages.append(lw.ToolMessage(tool_call_id=call.id, function="clock", content="noon"))
    # every message rendered once, however long the history grew
    assert proto.counts == {"assistant": steps - 1, "observation": steps - 1, "prompt": 1}


def test_a_replaced_message_with_the_same_id_is_rendered_again() -> None:
    proto = Counting()
    call = lw.ToolCall(function="clock")
    result = lw.ToolMessage(tool_call_id=call.id, function="clock", content="a long output")
    messages: list[lw.ChatMessage] = [lw.AssistantMessage(tool_calls=[call]), result]
    proto.render(messages, TOOLS, CFG)
    messages[1] = result.model_copy(update={"content": "[truncated]"})
    request = proto.render(messages, TOOLS, CFG)
    assert request.messages[-1].content == "Observation: [truncated]"
    assert proto.counts["observation"] == 2


def test_a_new_day_renders_a_new_prompt() -> None:
    days = iter([datetime.date(2030, 1, 1), datetime.date(2030, 1, 1), datetime.date(2030, 1, 2)])
    proto = Counting(today=lambda: next(days))
    messages = [lw.UserMessage(content="x")]
    a = proto.render(messages, TOOLS, CFG).messages[0]
    b = proto.render(messages, TOOLS, CFG).messages[0]
    c = proto.render(messages, TOOLS, CFG).messages[0]
    assert a is b and c is not a and "2030-01-02" in c.content
    assert proto.counts["prompt"] == 2


def test_equal_tool_lists_share_one_prompt() -> None:
    proto = Counting(today=fixed_day)
    messages = [lw.UserMessage(content="x")]
    proto.render(messages, TOOLS, CFG)
    proto.render(messages, [t.model_copy() for t in TOOLS], CFG)
    assert proto.counts["prompt"] == 1
    proto.render(messages, NO_SUBMIT, CFG)
    assert proto.counts["prompt"] == 2


def test_a_custom_template_gets_the_variables() -> None:
    template = (
        "{{ system }}|{{ today }}|{{ tool_names }}|{{ answer }}|"
        "{% for t in tools %}{{ t.name }}={{ t.arguments }};{% endfor %}"
    )
    proto = ReActProtocol(template=template, today=fixed_day)
    system = proto.render([lw.SystemMessage(content="S")], [CLOCK, SUBMIT], CFG).messages[0]
    assert system.content == "S|2031-05-17|clock|submit|clock={};\n"


def test_a_template_naming_an_unknown_variable_fails_loudly() -> None:
    import jinja2

    proto = JsonProtocol(template="{{ nope }}")
    with pytest.raises(jinja2.UndefinedError):
        proto.render([], TOOLS, CFG)


def test_bad_protocol_settings_fail_when_the_protocol_is_made() -> None:
    with pytest.raises(lw.ConfigurationError, match="the template does not parse"):
        ReActProtocol(template="{% if %}")
    with pytest.raises(lw.ConfigurationError, match="max_thought must be >= 1"):
        JsonProtocol(max_thought=-5)
    with pytest.raises(lw.ConfigurationError, match="cache_size must be >= 1"):
        ReActProtocol(cache_size=0)


@pytest.mark.parametrize("name", ["react", "json"])
def test_examples_are_rendered_in_the_protocols_format(name: str) -> None:
    def multiply(a: int, b: int) -> int:
        return a * b

    examples = [
        ActionExample.of(MULTIPLY, {"a": 2, "b": 3}, thought="First {x}."),
        ActionExample.of(multiply, {"a": 4, "b": 5}),
        ActionExample.of("finish", {"answer": "6"}, thought="Done."),
    ]
    system = PROTOCOLS[name](examples=examples).render([], TOOLS, CFG).messages[0].content
    if name == "react":
        assert 'Thought: First {x}.\nAction: multiply\nAction Input: {"a": 2, "b": 3}' in system
        assert "Thought: Done.\nFinal Answer: 6" in system
    else:
        assert (
            json.dumps(
                {
                    "thought": "First {x}.",
                    "action": {"name": "multiply", "arguments": {"a": 2, "b": 3}},
                }
            )
            in system
        )
        assert '"action": {"name": "finish", "arguments": {"answer": "6"}}' in system
    assert '"a": 4' in system


def test_an_example_with_an_argument_the_tool_lacks_is_rejected() -> None:
    with pytest.raises(lw.ConfigurationError, match="no parameter"):
        ActionExample.of(MULTIPLY, {"c": 1})
    with pytest.raises(lw.ConfigurationError):
        ActionExample.of(42)


def test_the_protocol_interface_is_abstract() -> None:
    with pytest.raises(TypeError):
        ToolProtocol()  # type: ignore[abstract]


def test_json_can_bound_the_thought_for_small_models() -> None:
    schema = JsonProtocol(max_thought=200).render([], TOOLS, CFG).config.response_schema
    assert schema is not None
    assert schema["properties"]["thought"] == {"type": "string", "maxLength": 200}
    unbounded = JsonProtocol().render([], TOOLS, CFG).config.response_schema
    assert unbounded is not None and unbounded["properties"]["thought"] == {"type": "string"}


def test_the_json_schema_puts_the_thought_before_the_action() -> None:
    schema = JsonProtocol().render([], TOOLS, CFG).config.response_schema
    assert schema is not None
    assert list(schema["properties"]) == ["thought", "action"]
    first = schema["properties"]["action"]["anyOf"][0]
    assert list(first["properties"]) == ["name", "arguments"]
