"""The openai provider converts each message to the wire format once: later requests of
a growing conversation reuse it, and a changed message is converted again."""

from __future__ import annotations

import pytest

import loopwright as lw
from loopwright.model.providers._openai_convert import messages_to_openai

from .test_openai import ADD, HI, model
from .wire_server import Reply, WireServer, openai_error, openai_reply

pytest.importorskip("openai", reason="the openai SDK is not installed (loopwright[openai])")


def _turn(i: int) -> list[lw.ChatMessage]:
    call = lw.ToolCall(function="add", arguments={"a": i, "b": 1})
    return [
        lw.AssistantMessage(content="", tool_calls=[call]),
        lw.ToolMessage(content=str(i + 1), tool_call_id=call.id, function="add"),
    ]


async def test_a_growing_conversation_is_sent_whole_every_time(wire: WireServer) -> None:
    m = model(wire)
    messages = list(HI)
    for i in range(3):
        messages += _turn(i)
        wire.push(openai_reply("ok"))
        await m.generate(messages, tools=[ADD])
    for k, body in enumerate(wire.bodies):
        sent = messages[: len(HI) + 2 * (k + 1)]
        assert body["messages"] == messages_to_openai(sent)


async def test_a_message_replaced_by_a_copy_with_the_same_id_is_sent_as_it_is_now(
    wire: WireServer,
) -> None:
    m = model(wire)
    messages = [*HI, *_turn(0)]
    wire.push(openai_reply("ok"))
    await m.generate(messages, tools=[ADD])
    edited = messages[-1].model_copy(update={"content": "[redacted]", "id": messages[-1].id})
    assert edited.id == messages[-1].id  # (named: a changed copy gets a new id otherwise)
    messages[-1] = edited
    wire.push(openai_reply("ok"))
    await m.generate(messages, tools=[ADD])
    assert wire.bodies[0]["messages"][-1]["content"] == "1"
    assert wire.bodies[1]["messages"][-1]["content"] == "[redacted]"


async def test_the_empty_content_fallback_is_not_served_from_the_cache(wire: WireServer) -> None:
    m = model(wire)
    messages = [*HI, *_turn(0)]
    wire.push(openai_reply("ok"))
    await m.generate(messages, tools=[ADD])
    assert wire.bodies[0]["messages"][2]["content"] is None
    messages += _turn(1)
    wire.push(Reply(openai_error("content must be a string"), 400))
    wire.push(openai_reply("ok"))
    await m.generate(messages, tools=[ADD])
    rejected, resent = wire.bodies[1]["messages"], wire.bodies[2]["messages"]
    assert [w["content"] for w in rejected if w["role"] == "assistant"] == [None, None]
    assert [w["content"] for w in resent if w["role"] == "assistant"] == ["", ""]
    messages += _turn(2)  # "" from now on, the messages sent with null before too
    wire.push(openai_reply("ok"))
    await m.generate(messages, tools=[ADD])
    later = wire.bodies[3]["messages"]
    assert [w["content"] for w in later if w["role"] == "assistant"] == ["", "", ""]


async def test_a_pruned_conversation_is_sent_as_it_is_now(wire: WireServer) -> None:
    m = model(wire)
    messages = list(HI)
    for i in range(3):
        messages += _turn(i)
    wire.push(openai_reply("ok"))
    await m.generate(messages, tools=[ADD])
    pruned = [messages[0], messages[1], *messages[-2:]]  # the first message is kept
    wire.push(openai_reply("ok"))
    await m.generate(pruned, tools=[ADD])
    assert wire.bodies[1]["messages"] == messages_to_openai(pruned)
    assert len(wire.bodies[1]["messages"]) == 4
