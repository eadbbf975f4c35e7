"""``ModelOutput`` and ``Usage`` are slotted dataclasses: the pydantic models that hold
them keep the given objects, validate data from outside into them, and write the same
JSON as when they were pydantic models (the strings below are what that code wrote)."""

from __future__ import annotations

import copy
import dataclasses
import json
import pickle
from pathlib import Path

import pytest
from pydantic import ValidationError

import loopwright as lw
from loopwright.cli._options import mock_script
from loopwright.log._outcome import json_text
from loopwright.model._output import output_from_data, usage_from_json

HI = [lw.UserMessage(content="hi")]
MESSAGE = (
    '{"id":"m1","content":"h\\u00e9llo \\u2028 <b>","role":"assistant","tool_calls":[{"id":"c1",'
    '"function":"add","arguments":{"a":1,"b":[2,null]},"parse_error":null}],"reasoning":"r",'
    '"model":"m","format_error":null}'
)
OUTPUT = (
    f'{{"message":{MESSAGE},"stop_reason":"tool_calls","usage":{{"input_tokens":7,'
    '"output_tokens":3,"total_tokens":10,"reasoning_tokens":null,"cache_read_tokens":2,'
    '"cache_write_tokens":null},"model":"m","time":0.25,"error":"partial"}'
)


def _output() -> lw.ModelOutput:
    call = lw.ToolCall(id="c1", function="add", arguments={"a": 1, "b": [2, None]})
    message = lw.AssistantMessage(
        id="m1", content="héllo \u2028 <b>", tool_calls=[call], reasoning="r", model="m"
    )
    usage = lw.Usage(input_tokens=7, output_tokens=3, total_tokens=10, cache_read_tokens=2)
    return lw.ModelOutput(
        message=message,
        stop_reason="tool_calls",
        usage=usage,
        model="m",
        time=0.25,
        error="partial",
    )


def test_they_are_slotted_keyword_only_records_with_the_same_defaults() -> None:
    out, usage = lw.ModelOutput(), lw.Usage()
    assert not hasattr(out, "__dict__") and not hasattr(usage, "__dict__")
    assert (out.stop_reason, out.usage, out.model, out.time, out.error) == (
        "stop",
        None,
        "",
        None,
        None,
    )
    assert out.message.content == "" and out.message.tool_calls == [] and out.text == ""
    assert lw.ModelOutput().message.id != out.message.id  # a message of its own each
    assert (usage.input_tokens, usage.total_tokens, usage.reasoning_tokens) == (0, 0, None)
    with pytest.raises(TypeError):
        lw.Usage(1, 2, 3)  # type: ignore[call-arg]
    with pytest.raises(AttributeError):
        out.elapsed = 1.0  # type: ignore[attr-defined]


def test_pydantic_models_keep_the_given_objects() -> None:
    out = _output()
    state = lw.AgentState(output=out)
    assert state.output is out and state.output.usage is out.usage
    other = lw.ModelOutput.from_text("x")
    state.output = other
    assert state.output is other
    assert lw.AgentState.model_validate({"output": out}).output is out


def test_the_json_written_is_what_the_pydantic_models_wrote() -> None:
    out = _output()
    state = lw.AgentState(messages=[out.message], output=out, completed="answer", run_id="r1")
    assert json_text(out) == OUTPUT  # a run store's row, an eval's sample output
    # (pydantic's JSON writes the non-ASCII characters as they are)
    raw = {"\\u00e9": "\u00e9", "\\u2028": "\u2028"}
    message, output = MESSAGE, OUTPUT
    for escaped, char in raw.items():
        message, output = message.replace(escaped, char), output.replace(escaped, char)
    assert state.model_dump_json() == (
        f'{{"messages":[{message}],"output":{output},"completed":"answer","limit":null,'
        '"error":null,"run_id":"r1","pending":[],"cost":null,"unpriced_calls":0}'
    )
    assert json.dumps(state.model_dump(mode="json")["output"]) == json.dumps(json.loads(OUTPUT))
    assert state.model_dump()["output"]["usage"] == dataclasses.asdict(out.usage)  # type: ignore[arg-type]


def test_data_from_outside_is_validated_into_the_records() -> None:
    back = output_from_data(json.loads(OUTPUT))
    assert back == _output() and type(back.usage) is lw.Usage
    assert type(back.message) is lw.AssistantMessage
    state = lw.AgentState.model_validate_json(f'{{"output":{OUTPUT}}}')
    assert state.output == _output()
    out = _output()
    assert output_from_data(out) is out
    assert usage_from_json('{"input_tokens":1,"total_tokens":1}') == lw.Usage(
        input_tokens=1, total_tokens=1
    )


@pytest.mark.parametrize(
    "data",
    [
        {"stop_reason": "finished"},
        {"usage": {"input_tokens": "many"}},
        {"usage": [1, 2]},
        {"message": "hi"},
        {"message": {"role": "user", "content": "x"}},
        {"time": "soon"},
        "text",
        None,
    ],
)
def test_hostile_outputs_are_rejected(data: object) -> None:
    with pytest.raises(ValidationError):
        output_from_data(data)


def test_hostile_usage_json_is_rejected() -> None:
    for text in ('{"input_tokens": "x"}', "[1]", "{", '{"total_tokens": 1.5}'):
        with pytest.raises(ValidationError):
            usage_from_json(text)


def test_a_mock_script_s_output_objects_are_validated() -> None:
    [out] = mock_script([{"message": {"content": "hi"}, "usage": {"total_tokens": 3}}])
    assert isinstance(out, lw.ModelOutput) and out.text == "hi"
    assert out.usage == lw.Usage(total_tokens=3)
    with pytest.raises(lw.ConfigurationError, match="not a model output"):
        mock_script([{"stop_reason": "finished"}])


def test_usage_adds_up_and_refuses_what_is_not_a_usage() -> None:
    a = lw.Usage(input_tokens=1, total_tokens=1, cache_write_tokens=2)
    total = sum([a, a, lw.Usage()], lw.Usage())
    assert total == lw.Usage(input_tokens=2, total_tokens=2, cache_write_tokens=4)
    assert sum([a]) is a
    with pytest.raises(TypeError):
        a + 1  # type: ignore[operator]


def test_copies_share_nothing_mutable_and_round_trip(tmp_path: Path) -> None:
    out = _output()
    changed = dataclasses.replace(out, stop_reason="stop")
    assert changed.message is out.message and out.stop_reason == "tool_calls"
    for twin in (copy.deepcopy(out), pickle.loads(pickle.dumps(out))):
        assert twin == out and twin.usage is not out.usage
        assert twin.message.tool_calls[0].arguments is not out.message.tool_calls[0].arguments


async def test_the_mock_and_the_replay_model_give_fresh_copies() -> None:
    out = _output()
    model = lw.get_model("mock", outputs=[out, out])
    first, second = await model.generate(HI), await model.generate(HI)
    for got in (first, second):
        assert got is not out and got.usage == out.usage and got.usage is not out.usage
        assert got.message.tool_calls[0].arguments == out.message.tool_calls[0].arguments
        assert got.message.tool_calls[0].arguments is not out.message.tool_calls[0].arguments
    assert out.time == 0.25 and first.time != 0.25  # the call's time is the copy's own
    from loopwright.model.providers.replay import ReplayModelAPI

    replay = lw.Model(ReplayModelAPI("r", [out]))
    again = await replay.generate(HI)
    assert again.usage == out.usage and again.usage is not out.usage
    assert again.message.id != out.message.id and again.text == out.text
    assert out.time == 0.25 and out.message.id == "m1"
