from collections.abc import Callable, Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import loopwright as lw
from loopwright.history import (
    compact,
    compact_when,
    compose,
    fix_tool_pairs,
    prune,
    prune_when,
    truncate_messages,
    truncate_when,
)


def assert_well_formed(messages: Sequence[lw.ChatMessage]) -> None:
    """Every tool result follows its call; every tool call has its result."""
    called: set[str] = set()
    results: set[str] = set()
    for m in messages:
        if isinstance(m, lw.AssistantMessage):
            called.update(c.id for c in m.tool_calls)
        if isinstance(m, lw.ToolMessage):
            assert m.tool_call_id in called, "orphaned tool result"
            results.add(m.tool_call_id)
    assert called == results, "tool call without result"


@st.composite
def histories(draw: st.DrawFn) -> list[lw.ChatMessage]:
    messages: list[lw.ChatMessage] = []
    if draw(st.booleans()):
        messages.append(lw.SystemMessage(content="system"))
    messages.append(lw.UserMessage(content="task"))
    for turn in range(draw(st.integers(0, 12))):
        n_calls = draw(st.integers(0, 3))
        calls = [lw.ToolCall(id=f"c{turn}-{i}", function="f") for i in range(n_calls)]
        messages.append(
            lw.AssistantMessage(content=draw(st.sampled_from(["", "thinking"])), tool_calls=calls)
        )
        for call in calls:
            messages.append(lw.ToolMessage(tool_call_id=call.id, function="f", content="r"))
        if draw(st.booleans()):
            messages.append(lw.UserMessage(content="continue"))
    return messages


@settings(max_examples=300, deadline=None)
@given(histories(), st.integers(0, 20))
def test_prune_never_orphans_pairs(messages: list[lw.ChatMessage], keep_last: int) -> None:
    before = list(messages)
    pruned = prune(messages, keep_last)
    assert_well_formed(pruned)
    assert messages == before  # input untouched
    # anchors survive
    first_user = next(m for m in messages if isinstance(m, lw.UserMessage))
    assert first_user.id in {m.id for m in pruned}
    system = [m for m in messages if isinstance(m, lw.SystemMessage)]
    if system:
        assert pruned[0].id == system[0].id
    # nothing new, order kept
    ids = [m.id for m in messages]
    positions = [ids.index(m.id) for m in pruned]
    assert positions == sorted(positions)
    assert len(pruned) <= keep_last + 2


@settings(max_examples=200, deadline=None)
@given(histories(), st.data())
def test_fix_tool_pairs_repairs_any_cut(
    messages: list[lw.ChatMessage], data: st.DataObject
) -> None:
    # cut an arbitrary slice out of the middle, then repair
    i = data.draw(st.integers(0, len(messages)))
    j = data.draw(st.integers(i, len(messages)))
    fixed = fix_tool_pairs(messages[:i] + messages[j:])
    assert_well_formed(fixed)


def test_prune_drops_the_call_when_its_result_is_gone() -> None:
    call = lw.ToolCall(id="c1", function="f")
    messages: list[lw.ChatMessage] = [
        lw.UserMessage(content="task"),
        lw.AssistantMessage(content="", tool_calls=[call]),
        lw.ToolMessage(tool_call_id="c1", function="f", content="r"),
        lw.AssistantMessage(content="done"),
    ]
    assert [m.role for m in prune(messages, 2)] == ["user", "assistant"]
    assert prune(messages, 2)[-1].text == "done"
    # keeping the result but not the call drops the result too
    assert [m.role for m in prune(messages, 1)] == ["user", "assistant"]


def test_partially_answered_calls_are_trimmed_not_dropped() -> None:
    a, b = lw.ToolCall(id="a", function="f"), lw.ToolCall(id="b", function="f")
    messages: list[lw.ChatMessage] = [
        lw.UserMessage(content="task"),
        lw.AssistantMessage(content="two calls", tool_calls=[a, b]),
        lw.ToolMessage(tool_call_id="a", function="f", content="ra"),
    ]
    fixed = fix_tool_pairs(messages)
    assert [c.id for c in fixed[1].tool_calls] == ["a"]  # type: ignore[union-attr]
    assert [c.id for c in messages[1].tool_calls] == ["a", "b"]  # type: ignore[union-attr]


def test_truncate_messages_keeps_head_and_tail() -> None:
    big = "HEAD" + "x" * 10_000 + "TAIL"
    messages: list[lw.ChatMessage] = [
        lw.UserMessage(content="task"),
        lw.ToolMessage(tool_call_id="c", function="f", content=big),
        lw.AssistantMessage(content=big),
    ]
    out = truncate_messages(messages, 1000)
    tool_text = out[1].text
    assert tool_text.startswith("HEAD")
    assert tool_text.endswith("TAIL")
    assert len(tool_text.encode()) < 1500
    assert out[2].text == big  # assistant messages untouched by default
    assert out[1].id != messages[1].id  # changed content, new id (stored once per id)
    assert messages[1].text == big


async def test_prune_when_thresholds() -> None:
    policy = prune_when(max_messages=6, keep_last=3)
    messages: list[lw.ChatMessage] = [lw.UserMessage(content=str(i)) for i in range(6)]
    assert await policy.apply(messages, None) is messages  # not over: untouched
    messages.append(lw.UserMessage(content="6"))
    pruned = await policy.apply(messages, None)
    assert [m.text for m in pruned] == ["0", "4", "5", "6"]
    by_tokens = prune_when(max_tokens=100, keep_last=2)
    usage = lw.Usage(input_tokens=150, output_tokens=10, total_tokens=160)
    assert len(await by_tokens.apply(messages, usage)) == 3
    assert await by_tokens.apply(messages, lw.Usage()) is messages


async def test_truncate_when_only_examines_new_messages() -> None:
    policy = truncate_when(500)
    messages: list[lw.ChatMessage] = [lw.UserMessage(content="task")]
    messages.append(lw.ToolMessage(tool_call_id="c", function="f", content="y" * 5000))
    out = await policy.apply(messages, None)
    assert len(out[1].text) < 1000
    assert messages[1].text == "y" * 5000  # the caller's list is not mutated
    again = await policy.apply(out, None)
    assert again is out


async def test_compact_summarises_older_turns() -> None:
    seen: list[int] = []

    def summariser(msgs: Sequence[lw.ChatMessage], tools: object, config: object) -> str:
        seen.append(len(msgs))
        return "SUMMARY: did steps 1-8"

    model = lw.get_model("mock", outputs=summariser)
    messages: list[lw.ChatMessage] = [
        lw.SystemMessage(content="sys"),
        lw.UserMessage(content="task"),
    ]
    for i in range(10):
        call = lw.ToolCall(id=f"c{i}", function="f")
        messages += [
            lw.AssistantMessage(content="", tool_calls=[call]),
            lw.ToolMessage(tool_call_id=call.id, function="f", content=f"r{i}"),
        ]
    out = await compact(messages, keep_last=4, model=model)
    assert_well_formed(out)
    assert out[0].text == "sys"
    assert out[1].text == "task"
    assert "SUMMARY" in out[2].text
    assert len(out) == 3 + 4
    assert seen  # the model was asked
    policy = compact_when(max_messages=30, keep_last=4, model=model)
    assert await policy.apply(messages, None) is messages


async def test_compose_reduce_uses_the_first_policy_that_shrinks() -> None:
    messages: list[lw.ChatMessage] = [lw.UserMessage(content=str(i)) for i in range(10)]
    policy = compose(truncate_when(10_000), prune_when(keep_last=4))
    reduced = await policy.reduce(messages)
    assert len(reduced) < len(messages)


def test_a_result_before_its_call_does_not_count() -> None:
    call = lw.ToolCall(id="x", function="f")
    messages: list[lw.ChatMessage] = [
        lw.UserMessage(content="task"),
        lw.ToolMessage(tool_call_id="x", function="f", content="early"),
        lw.AssistantMessage(content="", tool_calls=[call]),
    ]
    assert [m.role for m in fix_tool_pairs(messages)] == ["user"]


async def test_compact_keeps_recent_user_messages_in_place() -> None:
    def turn(i: int) -> list[lw.ChatMessage]:
        c = lw.ToolCall(function="noop")
        return [
            lw.AssistantMessage(content=f"step {i}", tool_calls=[c]),
            lw.ToolMessage(tool_call_id=c.id, function="noop", content=f"result {i}"),
        ]

    messages: list[lw.ChatMessage] = [lw.UserMessage(content="TASK")]
    for i in range(4):
        messages += turn(i)
    messages += [
        lw.AssistantMessage(content="I think I am done."),
        lw.UserMessage(content="NUDGE"),
        *turn(9),
    ]
    out = await compact(messages, keep_last=4, model=lw.get_model("mock", outputs=["SUMMARY"]))
    texts = [m.text for m in out]
    assert texts[0] == "TASK"
    assert texts[1].startswith("[Summary of")
    assert texts[2:] == ["I think I am done.", "NUDGE", "step 9", "result 9"]


async def test_truncate_when_cuts_the_same_long_message_in_every_run_that_sends_it() -> None:
    policy = truncate_when(1000)
    long = lw.UserMessage(content="x" * 5000)
    for _ in range(2):  # e.g. two samples (or epochs) of an eval sharing one agent
        out = await policy.apply([long], None)
        assert len(out[0].content.encode()) <= 1000


def test_history_policies_refuse_settings_that_would_act_every_step() -> None:
    with pytest.raises(lw.ConfigurationError, match="compact_when: max_messages"):
        compact_when(max_messages=5, keep_last=10)
    with pytest.raises(lw.ConfigurationError, match="keep_last must be >= 0"):
        prune_when(keep_last=-1)
    with pytest.raises(lw.ConfigurationError, match="max_bytes must be > 0"):
        truncate_when(-5)


@pytest.mark.parametrize(
    ("make", "kwargs", "expected"),
    [
        (prune_when, {"max_messages": "10"}, "prune_when: max_messages must be >= 1"),
        (prune_when, {"keep_last": 2.5}, "prune_when: keep_last must be >= 0"),
        (prune_when, {"max_tokens": "8k"}, "prune_when: max_tokens must be >= 1"),
        (compact_when, {"max_messages": True}, "compact_when: max_messages must be"),
        (compact_when, {"model": 42}, "compact_when: model must be a model name"),
        (truncate_when, {"max_bytes": "1k"}, "truncate_when: max_bytes must be > 0, got '1k'"),
        (truncate_when, {"max_bytes": True}, "truncate_when: max_bytes must be > 0"),
        (prune, {"messages": [], "keep_last": "3"}, "prune: keep_last must be >= 0"),
    ],
)
def test_a_setting_of_the_wrong_kind_is_refused_when_the_policy_is_made(
    make: Callable[..., object], kwargs: dict[str, object], expected: str
) -> None:
    with pytest.raises(lw.ConfigurationError, match=expected):
        make(**kwargs)


async def test_a_function_is_a_policy_and_its_overflow_recovery_shrinks() -> None:
    from loopwright.history import as_history_policy

    history: list[lw.ChatMessage] = [lw.UserMessage(content=f"m{i} " * 50) for i in range(30)]

    async def keep_ten(messages: list[lw.ChatMessage]) -> list[lw.ChatMessage]:
        return prune(messages, keep_last=10)

    policy = as_history_policy(keep_ten)
    assert len(await policy.apply(history, None)) == 11  # the first user message, kept
    assert len(await policy.reduce(history)) == 11

    same = as_history_policy(lambda messages: messages)
    assert await same.apply(history, None) is history
    smaller = await same.reduce(history)  # did not shrink: the default recovery did
    assert len(smaller) < len(history) or sum(len(m.content) for m in smaller) < sum(
        len(m.content) for m in history
    )
    policy_as_is = prune_when(max_messages=50)
    assert as_history_policy(policy_as_is) is policy_as_is
    with pytest.raises(lw.ConfigurationError, match="expected a history policy"):
        as_history_policy(object())
