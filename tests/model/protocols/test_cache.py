"""The text protocols' bounded caches (``protocols/_cache.py``) and what they hold."""

from __future__ import annotations

import gc
import weakref

from loopwright.model import (
    AssistantMessage,
    ChatMessage,
    ModelOutput,
    SystemMessage,
    ToolInfo,
    ToolMessage,
    UserMessage,
)
from loopwright.model._model import DEFAULT_CONFIG
from loopwright.model.protocols import ReActProtocol
from loopwright.model.protocols._cache import LRU


def test_an_lru_evicts_by_count_and_by_weight_giving_read_entries_a_second_chance() -> None:
    by_count: LRU[str, int] = LRU(2)
    by_count.put("a", 1)
    by_count.put("b", 2)
    assert by_count.get("a") == 1  # read: survives the next eviction
    by_count.put("c", 3)
    assert (by_count.get("a"), by_count.get("b"), by_count.get("c")) == (1, None, 3)

    weighed: LRU[str, list[int]] = LRU(100, weigh=len, max_weight=5)
    weighed.put("x", [1, 2, 3])
    weighed.put("y", [1, 2])
    weighed.put("z", [1, 2])  # 7 > 5: the oldest goes
    assert weighed.get("x") is None and weighed.get("y") == [1, 2]
    weighed.put("huge", [0] * 10)  # heavier than the bound alone: kept, all else goes
    assert weighed.get("huge") is not None and weighed.get("z") is None


def test_finished_conversations_are_not_all_kept_alive_by_the_render_checkpoints() -> None:
    tool = ToolInfo(
        name="multiply",
        parameters={"type": "object", "properties": {"a": {"type": "integer"}}},
    )
    protocol = ReActProtocol(cache_size=100)
    reply = 'Thought: x\nAction: multiply\nAction Input: {"a": 1}'
    firsts: list[weakref.ref[ChatMessage]] = []
    for i in range(30):  # 30 conversations of 20 messages: 600 messages, 100 kept
        messages: list[ChatMessage] = [SystemMessage(content="s"), UserMessage(content=f"q{i}")]
        firsts.append(weakref.ref(messages[1]))
        for _ in range(9):
            request = protocol.render(messages, [tool], DEFAULT_CONFIG)
            out = protocol.parse(ModelOutput.from_text(reply), request)
            call = out.message.tool_calls[0]
            assert isinstance(out.message, AssistantMessage)
            messages += [
                out.message,
                ToolMessage(content="2", tool_call_id=call.id, function="multiply"),
            ]
        del messages, request, out, call
    gc.collect()
    alive = sum(r() is not None for r in firsts)
    assert alive <= 12  # (was 30: every checkpoint kept its whole conversation)
