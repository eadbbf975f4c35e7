"""react(output=...): typed results through native tool calls and the text protocols."""

from __future__ import annotations

import dataclasses
import json
import socket
from typing import Any

import pytest
from pydantic import BaseModel, Field
from typing_extensions import TypedDict

import loopwright as lw

call = lw.ModelOutput.for_tool_call


class City(BaseModel):
    name: str
    population: int = Field(ge=0)


@dataclasses.dataclass
class Point:
    x: float
    y: float


class Pair(TypedDict):
    left: str
    right: int


def mock(*outputs: Any, protocol: str | None = None) -> lw.Model:
    return lw.get_model("mock", outputs=list(outputs), tool_protocol=protocol)


async def test_native_submit_arguments_become_the_typed_result() -> None:
    model = mock(call("submit", {"answer": {"name": "Oslo", "population": 709000}}))
    state = await lw.run(lw.react(output=City), "Which city?", model=model, db=False)
    assert state.completed == "submit"
    assert state.result == City(name="Oslo", population=709000)
    assert json.loads(state.text) == {"name": "Oslo", "population": 709000}


@pytest.mark.parametrize(
    ("type_", "answer", "expected"),
    [
        (Point, {"x": 1, "y": 2.5}, Point(1.0, 2.5)),
        (Pair, {"left": "a", "right": 2}, {"left": "a", "right": 2}),
        (int, 42, 42),
        (list[str], ["a", "b"], ["a", "b"]),
    ],
)
async def test_dataclass_typeddict_and_plain_types(type_: Any, answer: Any, expected: Any) -> None:
    model = mock(call("submit", {"answer": answer}))
    state = await lw.run(lw.react(output=type_), "go", model=model, db=False)
    assert state.result == expected and type(state.result) is type(expected)


async def test_a_failed_validation_goes_back_to_the_model_and_it_corrects() -> None:
    model = mock(
        call("submit", {"answer": {"name": "Oslo", "population": -5}}),
        call("submit", {"answer": {"name": "Oslo", "population": 5}}),
    )
    state = await lw.run(lw.react(output=City), "go", model=model, db=False)
    assert state.result == City(name="Oslo", population=5)
    errors = [m for m in state.messages if isinstance(m, lw.ToolMessage) and m.error]
    assert len(errors) == 1
    assert "population" in errors[0].text and "greater than or equal to 0" in errors[0].text


async def test_too_many_invalid_answers_stop_the_run_with_a_clear_reason() -> None:
    bad = call("submit", {"answer": {"name": "Oslo"}})
    model = mock(bad, bad, bad)
    agent = lw.react(output=City, max_output_retries=1)
    state = await lw.run(agent, "go", model=model, db=False)
    assert state.completed == "stopped" and state.result is None
    assert state.error is not None
    assert "did not validate as City 2 times" in state.error
    assert "answer.population: missing required argument" in state.error
    assert model.api.remaining == 1  # type: ignore[attr-defined]


async def test_react_protocol_final_answer_is_parsed_and_validated() -> None:
    model = mock(
        'Thought: I know it.\nFinal Answer: {"name": "Oslo", "population": "lots"}',
        'Thought: fix it.\nFinal Answer: {"name": "Oslo", "population": 3}',
        protocol="react",
    )
    state = await lw.run(lw.react(output=City), "go", model=model, db=False)
    assert state.result == City(name="Oslo", population=3)
    [error] = [m for m in state.messages if isinstance(m, lw.ToolMessage) and m.error]
    assert "population" in error.text  # the validation error went back to the model


async def test_json_protocol_finish_arguments_are_typed_and_constrained() -> None:
    seen: list[lw.GenerateConfig] = []

    def respond(messages: Any, tools: Any, config: lw.GenerateConfig) -> str:
        seen.append(config)
        answer = {"name": "Oslo", "population": 9}
        action = {"name": "submit", "arguments": {"answer": answer}}
        return json.dumps({"thought": "t", "action": action})

    model = lw.get_model("mock", outputs=respond, tool_protocol="json")
    state = await lw.run(lw.react(output=City), "go", model=model, db=False)
    assert state.result == City(name="Oslo", population=9)
    schema = json.dumps(seen[0].response_schema)
    assert '"population"' in schema  # the response format (the grammar) holds the type


def test_a_type_without_a_schema_is_refused_when_the_agent_is_made() -> None:
    with pytest.raises(lw.ConfigurationError, match="output=socket cannot be a typed result"):
        lw.react(output=socket.socket)
    with pytest.raises(lw.ConfigurationError, match="cannot be a typed result"):
        lw.react(output=lambda: 1)
    with pytest.raises(lw.ConfigurationError, match="submit=True"):
        lw.react(output=City, submit=False)
    with pytest.raises(lw.ConfigurationError, match="max_output_retries"):
        lw.react(output=City, max_output_retries=-1)


async def test_typed_results_stream_too() -> None:
    model = mock(call("submit", {"answer": {"name": "Oslo", "population": 1}}))
    events = [e async for e in lw.run_stream(lw.react(output=City), "go", model=model, db=False)]
    final = events[-1]
    assert isinstance(final, lw.RunFinished)
    assert final.state.result == City(name="Oslo", population=1)


async def test_the_eval_runners_result_match_compares_typed_results() -> None:
    def respond(messages: Any, tools: Any, config: Any) -> lw.ModelOutput:
        question = messages[-1].text
        population = 709000 if question == "Oslo" else 285000
        return call("submit", {"answer": {"name": question, "population": population}})

    task = lw.Task(
        dataset=[
            lw.Sample(input="Oslo", target='{"name": "Oslo"}', id="oslo"),  # the name only
            lw.Sample(input="Bergen", target='{"name": "Bergen", "population": 1}', id="bergen"),
        ],
        agent=lw.react(output=City),
        scorer=lw.result_match(),
    )
    model = lw.get_model("mock", outputs=respond)
    [result] = await lw.eval_async(task, model=model, db=False)
    scores = {s.id: s.scores["result_match"].value for s in result.samples}
    assert scores == {"oslo": 1.0, "bergen": 0.0}
