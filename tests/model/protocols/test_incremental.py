"""Text protocols render only what is new in a growing conversation, with the same result
as rendering the whole conversation afresh."""

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

import loopwright as lw
from loopwright.model.protocols import JsonProtocol, ReActProtocol, TextProtocol

TOOLS = [
    lw.ToolInfo(
        name="add",
        description="Add.",
        parameters={
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "required": ["a", "b"],
        },
    ),
    lw.ToolInfo(
        name="submit",
        description="Answer.",
        parameters={
            "type": "object",
            "properties": {"answer": {"type": "string"}},
            "required": ["answer"],
        },
    ),
]
CONFIG = lw.GenerateConfig()

# one step of a conversation: what gets appended
steps = st.sampled_from(["tool", "two_tools", "text", "nudge", "text_and_nudge"])


def grow(messages: list[lw.ChatMessage], step: str, i: int) -> None:
    if step in ("tool", "two_tools"):
        calls = [lw.ToolCall(function="add", arguments={"a": i, "b": 1})]
        if step == "two_tools":
            calls.append(lw.ToolCall(function="add", arguments={"a": 1, "b": i}))
        messages.append(lw.AssistantMessage(reasoning=f"step {i}", tool_calls=calls))
        for c in calls:
            messages.append(lw.ToolMessage(tool_call_id=c.id, function="add", content=str(i + 1)))
    elif step == "text":
        messages.append(lw.AssistantMessage(content=f"thinking {i}"))
    elif step == "nudge":
        messages.append(lw.UserMessage(content=f"continue {i}"))
    else:
        messages.append(lw.AssistantMessage(content=f"maybe {i}"))
        messages.append(lw.UserMessage(content=f"go on {i}"))


def shape(request_messages: list[lw.ChatMessage]) -> list[tuple[str, str]]:
    return [(m.role, m.content) for m in request_messages]


@settings(max_examples=60, deadline=None)
@given(st.lists(steps, min_size=1, max_size=12), st.booleans(), st.booleans())
def test_incremental_rendering_equals_a_fresh_full_rendering(
    plan: list[str], use_json: bool, with_system: bool
) -> None:
    make = JsonProtocol if use_json else ReActProtocol
    incremental = make()
    messages: list[lw.ChatMessage] = []
    if with_system:
        messages.append(lw.SystemMessage(content="Be brief."))
    messages.append(lw.UserMessage(content="What is 2 + 2?"))
    previous: list[lw.ChatMessage] | None = None
    for i, step in enumerate(plan):
        grow(messages, step, i)
        got = incremental.render(messages, TOOLS, CONFIG).messages
        fresh = make().render(messages, TOOLS, CONFIG).messages
        assert shape(got) == shape(fresh)
        if previous is not None:
            # the prefix is stable: earlier requests are a prefix of later ones, save the
            # last item (a run of user turns may have grown)
            assert got[: len(previous) - 1] == previous[:-1]
        previous = got


def test_a_pruned_conversation_is_rendered_afresh() -> None:
    protocol = ReActProtocol()
    messages: list[lw.ChatMessage] = [lw.UserMessage(content="task")]
    for i in range(6):
        grow(messages, "tool", i)
        protocol.render(messages, TOOLS, CONFIG)
    pruned = lw.prune(messages, keep_last=2)
    grow(pruned, "nudge", 99)
    got = protocol.render(pruned, TOOLS, CONFIG).messages
    assert shape(got) == shape(ReActProtocol().render(pruned, TOOLS, CONFIG).messages)


def counting(protocol: TextProtocol) -> list[int]:
    walked: list[int] = []
    original = protocol._history._render_range

    def spy(messages: Any, begin: int, end: int, toolset: Any) -> list[lw.ChatMessage]:
        walked.append(end - begin)
        return original(messages, begin, end, toolset)

    protocol._history._render_range = spy  # type: ignore[method-assign]
    return walked


def test_an_edited_middle_message_is_rendered_afresh() -> None:
    protocol = ReActProtocol()
    messages: list[lw.ChatMessage] = [
        lw.UserMessage(content="task"),
        lw.UserMessage(content="SECRET " * 3),
        lw.UserMessage(content="last"),
    ]
    protocol.render(messages, TOOLS, CONFIG)
    edited = [messages[0], messages[1].model_copy(update={"content": "[redacted]", "id": "x"})]
    edited.append(messages[2])
    got = protocol.render(edited, TOOLS, CONFIG).messages
    assert "SECRET" not in " ".join(m.content for m in got)
    assert "[redacted]" in got[-1].content


def test_a_replaced_last_message_resumes_from_the_checkpoint() -> None:
    # iterative() sends an ephemeral nudge last, then drops it: only new work is rendered
    protocol = ReActProtocol()
    walked = counting(protocol)
    messages: list[lw.ChatMessage] = [lw.UserMessage(content="task")]
    for i in range(30):
        grow(messages, "tool", i)
        nudge = lw.UserMessage(content=f"nudge {i}")
        got = protocol.render([*messages, nudge], TOOLS, CONFIG).messages
        assert shape(got) == shape(
            ReActProtocol().render([*messages, nudge], TOOLS, CONFIG).messages
        )
    assert max(walked[-10:]) <= 2


@settings(max_examples=30, deadline=None)
@given(st.lists(steps, min_size=2, max_size=10), st.booleans())
def test_a_request_handed_out_is_never_changed_by_later_ones(
    plan: list[str], ephemeral_nudge: bool
) -> None:
    # a checkpoint is extended in place: the lists it gave earlier requests must not move
    protocol = ReActProtocol()
    messages: list[lw.ChatMessage] = [lw.UserMessage(content="task")]
    handed: list[tuple[list[lw.ChatMessage], list[lw.ChatMessage]]] = []
    for i, step in enumerate(plan):
        grow(messages, step, i)
        sent = [*messages, lw.UserMessage(content=f"nudge {i}")] if ephemeral_nudge else messages
        got = protocol.render(sent, TOOLS, CONFIG).messages
        assert isinstance(got, list)
        handed.append((got, list(got)))
    for got, snapshot in handed:
        assert len(got) == len(snapshot)
        assert all(a is b for a, b in zip(got, snapshot, strict=True))


def test_conversations_sharing_a_first_message_keep_their_own_checkpoints() -> None:
    protocol = ReActProtocol()
    walked = counting(protocol)
    system = lw.SystemMessage(content="You are helpful.")
    a: list[lw.ChatMessage] = [system, lw.UserMessage(content="a")]
    b: list[lw.ChatMessage] = [system, lw.UserMessage(content="b")]
    for i in range(20):
        for conversation in (a, b):
            grow(conversation, "tool", i)
            protocol.render(conversation, TOOLS, CONFIG)
    assert max(walked[-10:]) <= 2


def test_a_provider_sets_text_protocol_defaults() -> None:
    from collections.abc import Sequence as Seq

    class Small(lw.ModelAPI):
        provider = "small-test"
        supports_tools = False
        protocol_options = {"json": {"max_thought": 42}}

        async def generate(
            self, messages: Seq[lw.ChatMessage], tools: Seq[lw.ToolInfo], config: lw.GenerateConfig
        ) -> lw.ModelOutput:
            return lw.ModelOutput.from_text("{}")

    lw.register_provider("small-test", lambda name, **kw: Small())
    model = lw.get_model("small-test")
    assert isinstance(model.tool_protocol, JsonProtocol)
    assert model.tool_protocol.max_thought == 42
    request = model.tool_protocol.render([lw.UserMessage(content="q")], TOOLS, CONFIG)
    schema = request.config.response_schema
    assert schema is not None
    assert '"maxLength": 42' in json.dumps(schema)
