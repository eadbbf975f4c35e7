"""The openai provider against OpenAI-compatible servers that differ from OpenAI: one that
rejects ``content: null`` (as llama-cpp-python's does) and ones that call the request
invalid with an odd status. A real HTTP server on 127.0.0.1 plays each."""

from __future__ import annotations

from typing import Any

import pytest

import loopwright as lw

from .wire_server import Reply, Request, WireServer, openai_error, openai_reply

pytest.importorskip("openai", reason="the openai SDK is not installed (loopwright[openai])")

FAST = lw.GenerateConfig(retry_wait=0.01, max_retry_wait=0.05)
MULTIPLY = lw.ToolInfo(
    name="multiply",
    description="Multiply two integers.",
    parameters={
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
    },
)


def history(n: int = 1) -> list[lw.ChatMessage]:
    """A conversation with ``n`` tool-call-only assistant turns."""
    out: list[lw.ChatMessage] = [lw.UserMessage(content="What is 2 times 3?")]
    for i in range(n):
        call = lw.ToolCall(id=f"call_{i}", function="multiply", arguments={"a": 2, "b": 3})
        out += [
            lw.AssistantMessage(tool_calls=[call]),
            lw.ToolMessage(content="6", tool_call_id=f"call_{i}", function="multiply"),
        ]
    return out


def model(wire: WireServer, **kwargs: Any) -> lw.Model:
    config = FAST.merge(kwargs.pop("config", None))
    return lw.get_model(
        "openai/smollm2", base_url=wire.url + "/v1", api_key="sk-test", config=config, **kwargs
    )


def like_llama_cpp_python(request: Request) -> Reply:
    """What ``python -m llama_cpp.server`` answers: its chat template adds the content to
    a string, so null is an internal server error."""
    for m in request.body["messages"]:
        if m["role"] == "assistant" and m.get("content") is None:
            return Reply(
                openai_error(
                    'can only concatenate str (not "NoneType") to str', kind="internal_server_error"
                ),
                500,
            )
    return Reply(openai_reply("The answer is 6."))


def assistant_contents(request: Request) -> list[Any]:
    return [m.get("content") for m in request.body["messages"] if m["role"] == "assistant"]


async def test_a_server_that_rejects_null_content_gets_empty_strings_at_once(
    wire: WireServer,
) -> None:
    wire.respond = like_llama_cpp_python
    m = model(wire, config=lw.GenerateConfig(max_retries=0))  # no retry is needed
    out = await m.generate(history(), tools=[MULTIPLY])
    assert out.text == "The answer is 6."
    first, second = wire.requests
    assert assistant_contents(first) == [None]  # what OpenAI documents, tried first
    assert assistant_contents(second) == [""]
    # the model remembers: later calls send "" from the start
    out = await m.generate(history(2), tools=[MULTIPLY])
    assert out.text == "The answer is 6."
    assert len(wire.requests) == 3
    assert assistant_contents(wire.requests[2]) == ["", ""]


async def test_a_server_that_takes_null_keeps_getting_null(wire: WireServer) -> None:
    wire.push(openai_reply("6"), openai_reply("6"))
    m = model(wire)
    await m.generate(history(), tools=[MULTIPLY])
    await m.generate(history(), tools=[MULTIPLY])
    assert [assistant_contents(r) for r in wire.requests] == [[None], [None]]


async def test_null_content_chosen_explicitly_is_not_changed(wire: WireServer) -> None:
    wire.respond = like_llama_cpp_python
    m = model(wire, null_content=True, config=lw.GenerateConfig(max_retries=0))
    with pytest.raises(lw.ModelAPIError) as info:
        await m.generate(history(), tools=[MULTIPLY])
    assert info.value.status_code == 500
    assert len(wire.requests) == 1


async def test_an_error_unrelated_to_null_content_is_sent_once_more_then_reported(
    wire: WireServer,
) -> None:
    # without a null in the request there is nothing to fall back from
    wire.push(Reply(openai_error("bad"), 400), Reply(openai_error("bad"), 400))
    with pytest.raises(lw.ModelAPIError):
        await model(wire).generate([lw.UserMessage(content="hi")])
    assert len(wire.requests) == 1
    # with one, the request is sent once more with "", and the second answer is the error
    wire.push(Reply(openai_error("still bad"), 400), Reply(openai_error("still bad"), 400))
    with pytest.raises(lw.ModelAPIError, match="still bad"):
        await model(wire).generate(history(), tools=[MULTIPLY])
    assert len(wire.requests) == 3


async def test_no_fallback_for_a_context_length_error_and_none_after_two_that_failed(
    wire: WireServer,
) -> None:
    too_long = openai_error("This model's maximum context length is 10 tokens", kind="x")
    wire.push(Reply(too_long, 400))
    m = model(wire)
    out = await m.generate(history(), tools=[MULTIPLY])
    assert out.stop_reason == "model_length" and len(wire.requests) == 1
    # a server failing for another reason: "" is tried twice, then no more
    for _ in range(3):
        wire.push(
            Reply(openai_error("no", kind="x"), 400), Reply(openai_error("no", kind="x"), 400)
        )
        with pytest.raises(lw.ModelAPIError):
            await m.generate(history(), tools=[MULTIPLY])
    assert len(wire.requests) == 1 + 2 + 2 + 1
    assert [assistant_contents(r) for r in wire.requests[-3:]] == [[None], [""], [None]]


INVALID = {
    "400": Reply(openai_error("Invalid value for 'messages'"), 400),
    "404": Reply(openai_error("The model 'nope' does not exist", kind="not_found_error"), 404),
    "422 (FastAPI)": Reply(
        {"detail": [{"loc": ["body", "messages"], "msg": "field required", "type": "missing"}]},
        422,
    ),
    "500 validation error": Reply(
        openai_error(
            "1 validation error for ChatCompletionRequest\nmessages.1.content\n  Input should "
            "be a valid string",
            kind="internal_server_error",
        ),
        500,
    ),
    "500 invalid_request_error": Reply(openai_error("Unsupported parameter: 'seed'"), 500),
    "503 BadRequestError": Reply({"error": "BadRequestError: tools are not supported"}, 503),
}


@pytest.mark.parametrize("reply", INVALID.values(), ids=INVALID.keys())
async def test_a_request_the_server_calls_invalid_is_not_retried(
    wire: WireServer, reply: Reply
) -> None:
    wire.push(reply, openai_reply("never"))
    with pytest.raises(lw.ModelAPIError) as info:
        await model(wire).generate([lw.UserMessage(content="hi")])
    assert not info.value.retryable
    assert info.value.status_code == reply.status
    assert len(wire.requests) == 1


async def test_a_server_that_asks_for_a_retry_is_believed(wire: WireServer) -> None:
    invalid = openai_error("validation backend unavailable", kind="server_error")
    wire.push(Reply(invalid, 500, {"x-should-retry": "true"}), openai_reply("ok"))
    out = await model(wire).generate([lw.UserMessage(content="hi")])
    assert out.text == "ok"
    assert len(wire.requests) == 2


async def test_a_plain_server_error_is_still_retried(wire: WireServer) -> None:
    wire.push(Reply(openai_error("overloaded", kind="server_error"), 500), openai_reply("ok"))
    out = await model(wire).generate([lw.UserMessage(content="hi")])
    assert out.text == "ok"
    assert len(wire.requests) == 2
