import pytest
from pydantic import TypeAdapter, ValidationError

import loopwright as lw
from loopwright.model._output import output_from_data

ADAPTER = TypeAdapter(list[lw.ChatMessage])


def test_messages_round_trip_through_the_discriminated_union() -> None:
    call = lw.ToolCall(function="add", arguments={"a": 1, "b": 2})
    messages: list[lw.ChatMessage] = [
        lw.SystemMessage(content="be brief"),
        lw.UserMessage(content="1+2?"),
        lw.AssistantMessage(content="", tool_calls=[call], reasoning="add them"),
        lw.ToolMessage(tool_call_id=call.id, function="add", content="3"),
        lw.ToolMessage(
            tool_call_id="x",
            function="nope",
            content="no such tool",
            error=lw.ToolCallError(type="unknown_tool", message="no such tool"),
        ),
    ]
    back = ADAPTER.validate_json(ADAPTER.dump_json(messages))
    assert back == messages
    assert [type(m) for m in back] == [type(m) for m in messages]
    assert back[2].tool_calls[0].arguments == {"a": 1, "b": 2}  # type: ignore[union-attr]


def test_unknown_role_is_rejected() -> None:
    with pytest.raises(ValidationError):
        ADAPTER.validate_python([{"role": "robot", "content": "hi"}])


def test_every_message_gets_its_own_stable_id() -> None:
    a, b = lw.UserMessage(content="x"), lw.UserMessage(content="x")
    assert a.id and b.id and a.id != b.id
    assert ADAPTER.validate_python([a.model_dump()])[0].id == a.id


def test_model_output_from_text() -> None:
    out = lw.ModelOutput.from_text("hello", model="m")
    assert out.text == "hello"
    assert out.stop_reason == "stop"
    assert out.tool_calls == []
    assert out.message.model == "m"


def test_model_output_for_tool_call() -> None:
    out = lw.ModelOutput.for_tool_call("search", {"q": "cats"}, tool_call_id="c1")
    assert out.stop_reason == "tool_calls"
    assert out.tool_calls == [lw.ToolCall(id="c1", function="search", arguments={"q": "cats"})]
    assert out.text == ""


def test_invalid_stop_reason_is_rejected() -> None:
    # (the constructor is typed code's, checked by mypy; data from outside is validated)
    with pytest.raises(ValidationError):
        output_from_data({"stop_reason": "finished"})
    with pytest.raises(ValidationError):
        lw.AgentState.model_validate({"output": {"stop_reason": "finished"}})


def test_usage_adds_and_sums() -> None:
    a = lw.Usage(input_tokens=1, output_tokens=2, total_tokens=3)
    b = lw.Usage(input_tokens=10, output_tokens=20, total_tokens=30, reasoning_tokens=5)
    total = a + b
    assert (total.input_tokens, total.output_tokens, total.total_tokens) == (11, 22, 33)
    assert total.reasoning_tokens == 5
    assert total.cache_read_tokens is None
    assert sum([a, b, a]) == lw.Usage(
        input_tokens=12, output_tokens=24, total_tokens=36, reasoning_tokens=5
    )


def test_generate_config_merge_precedence() -> None:
    default = lw.GenerateConfig(temperature=0.5, max_tokens=100, seed=1)
    model = lw.GenerateConfig(temperature=0.7)
    call = lw.GenerateConfig(max_tokens=10, temperature=None)
    merged = default.merge(model).merge(call)
    assert merged.temperature == 0.7  # model over default; explicit None does not unset
    assert merged.max_tokens == 10  # call over the rest
    assert merged.seed == 1
    assert default.temperature == 0.5  # merge does not mutate
    assert default.merge(None) is default


def test_generate_config_rejects_unknown_and_invalid_fields() -> None:
    with pytest.raises(ValidationError):
        lw.GenerateConfig(temprature=0.1)  # type: ignore[call-arg]
    with pytest.raises(ValidationError):
        lw.GenerateConfig(max_tokens=0)
    cfg = lw.GenerateConfig(tool_choice=lw.ToolFunction(name="add"))
    assert isinstance(cfg.tool_choice, lw.ToolFunction)


def test_messages_are_frozen_values_and_a_changed_copy_is_a_new_message() -> None:
    """What is kept by a message's id (the run store's rows, the protocols' checkpoints,
    the openai wire cache) cannot go stale: a message cannot change in place, and a
    changed copy gets a new id unless the change names one."""
    m = lw.ToolMessage(content="sk-SECRET", tool_call_id="c1", function="f")
    with pytest.raises(ValidationError, match="frozen"):
        m.content = "[REDACTED]"
    redacted = m.model_copy(update={"content": "[REDACTED]"})
    assert redacted.content == "[REDACTED]" and m.content == "sk-SECRET"
    assert redacted.id != m.id and redacted.tool_call_id == "c1"
    assert m.model_copy().id == m.id  # an unchanged copy is the same message
    kept = m.model_copy(update={"content": "x", "id": m.id})
    assert kept.id == m.id
