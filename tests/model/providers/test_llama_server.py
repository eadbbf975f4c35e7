"""The openai provider against a real OpenAI-compatible server: llama-cpp-python's own
(``python -m llama_cpp.server``) running the embedded SmolLM2 model on 127.0.0.1."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator

import pytest

import loopwright as lw

pytest.importorskip("openai", reason="the openai SDK is not installed (loopwright[openai])")
pytest.importorskip(
    "llama_cpp",
    reason="llama-cpp-python is not installed: bash scripts/install-local-model.sh",
    exc_type=ImportError,
)
pytest.importorskip(
    "llama_cpp.server.app",
    reason="llama-cpp-python's server extra is missing: pip install 'loopwright[local-server]'",
    exc_type=ImportError,
)

pytestmark = [pytest.mark.local_model, pytest.mark.slow]

MULTIPLY = lw.ToolInfo(
    name="multiply",
    description="Multiply two integers.",
    parameters={
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
    },
)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Start ``python -m llama_cpp.server`` with the embedded model; yield its base URL."""
    from loopwright.model.providers._llama_engine import default_model_path

    try:
        model = default_model_path()
    except lw.MissingDependencyError as ex:
        pytest.skip(str(ex))
    port = _free_port()
    log = tmp_path_factory.mktemp("llama-server") / "server.log"
    threads = str(max(1, min(os.cpu_count() or 1, 4)))
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "llama_cpp.server",
                "--model",
                model,
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--n_ctx",
                "2048",
                "--n_threads",
                threads,
                "--n_threads_batch",
                threads,
                "--verbose",
                "False",
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 90
        while True:
            if proc.poll() is not None:
                pytest.fail(f"llama_cpp.server exited ({proc.returncode}): {log.read_text()}")
            try:
                with urllib.request.urlopen(url + "/models", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"llama_cpp.server did not start in 90 s: {log.read_text()}")
            time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def server_model(url: str, **config: object) -> lw.Model:
    return lw.get_model(
        "llamacpp-server/smollm2",
        base_url=url,
        config=lw.GenerateConfig(temperature=0, seed=1, max_retries=0, timeout=120).merge(
            lw.GenerateConfig.model_validate(config)
        ),
    )


async def test_plain_chat(llama_server: str) -> None:
    model = server_model(llama_server, max_tokens=30)
    out = await model.generate(
        [
            lw.SystemMessage(content="You are a helpful assistant."),
            lw.UserMessage(content="Say hello in one short sentence."),
        ]
    )
    assert out.text.strip()
    assert out.stop_reason in ("stop", "max_tokens")
    assert out.usage is not None and out.usage.input_tokens > 0 and out.usage.output_tokens > 0


async def test_max_tokens_is_reported(llama_server: str) -> None:
    model = server_model(llama_server, max_tokens=3)
    out = await model.generate([lw.UserMessage(content="Write a long story about a dragon.")])
    assert out.stop_reason == "max_tokens"
    assert out.usage is not None and out.usage.output_tokens <= 3


async def test_tool_round_trip_with_a_named_tool_choice(llama_server: str) -> None:
    model = server_model(llama_server, max_tokens=60)
    history: list[lw.ChatMessage] = [
        lw.SystemMessage(content="You are a calculator. Use the multiply tool."),
        lw.UserMessage(content="What is 12 times 7?"),
    ]
    out = await model.generate(
        history,
        tools=[MULTIPLY],
        config=lw.GenerateConfig(tool_choice=lw.ToolFunction(name="multiply")),
    )
    # the server constrains the reply with a grammar built from the tool's schema
    [call] = out.tool_calls
    assert call.function == "multiply"
    assert call.parse_error is None
    assert set(call.arguments) == {"a", "b"}
    assert all(isinstance(v, int) for v in call.arguments.values())
    assert out.stop_reason == "tool_calls"

    # send the result back: the assistant turn has tool calls and no text, which this
    # server only accepts with content "" (null gets HTTP 500)
    result = call.arguments["a"] * call.arguments["b"]
    history += [
        out.message,
        lw.ToolMessage(content=str(result), tool_call_id=call.id, function="multiply"),
    ]
    answer = await model.generate(history, tools=[MULTIPLY])
    assert answer.text.strip()
    assert answer.stop_reason in ("stop", "max_tokens")
    assert not answer.tool_calls


async def test_the_plain_openai_provider_does_tool_round_trips_with_this_server(
    llama_server: str,
) -> None:
    """This server answers ``content: null`` with HTTP 500; the ``openai`` provider sends
    ``""`` at once when it does, with no retry, and from then on."""
    call = lw.ToolCall(id="call_1", function="multiply", arguments={"a": 2, "b": 3})
    history: list[lw.ChatMessage] = [
        lw.UserMessage(content="What is 2 times 3?"),
        lw.AssistantMessage(tool_calls=[call]),
        lw.ToolMessage(content="6", tool_call_id="call_1", function="multiply"),
    ]
    config = lw.GenerateConfig(max_retries=0, max_tokens=5, timeout=120)
    # what the server does with null
    strict_null = lw.get_model("openai/smollm2", base_url=llama_server, null_content=True)
    with pytest.raises(lw.ModelAPIError) as info:
        await strict_null.generate(history, tools=[MULTIPLY], config=config)
    assert info.value.status_code == 500
    # the plain provider: no retries allowed, and it works, twice
    model = lw.get_model("openai/smollm2", base_url=llama_server, config=config)
    calls: list[lw.ModelCall] = []

    class Record:
        def before_generate(self, call: lw.ModelCall) -> None:
            pass

        def after_generate(self, call: lw.ModelCall) -> None:
            calls.append(call)

    with lw.model_hook(Record()):
        for _ in range(2):
            out = await model.generate(history, tools=[MULTIPLY])
            assert out.usage is not None and out.usage.output_tokens > 0
    assert [c.retries for c in calls] == [0, 0]


async def test_response_schema_constrains_the_reply(llama_server: str) -> None:
    schema = {
        "type": "object",
        "properties": {"city": {"type": "string", "maxLength": 20}},
        "required": ["city"],
    }
    model = server_model(llama_server, max_tokens=40)
    out = await model.generate(
        [lw.UserMessage(content="Name the capital of France as JSON.")],
        config=lw.GenerateConfig(response_schema=schema),
    )
    data = json.loads(out.text)
    assert isinstance(data, dict) and isinstance(data.get("city"), str)


async def test_context_length_error_is_model_length(llama_server: str) -> None:
    model = server_model(llama_server, max_tokens=5)
    out = await model.generate([lw.UserMessage(content="word " * 3000)])
    assert out.stop_reason == "model_length"
    assert out.error is not None
