"""Bad input to the agents and to run() is refused where it is passed, naming what was
expected, never an AttributeError mid-run (issue 17); a plain function is a history
policy."""

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

import loopwright as lw

call = lw.ModelOutput.for_tool_call


@lw.tool
def note(text: str) -> str:
    """Write a note.

    Args:
        text: The note.
    """
    return f"noted {text}"


def plain(text: str) -> str:
    return text


def submitter(*before: lw.ModelOutput | str) -> lw.Model:
    return lw.get_model("mock", outputs=[*before, call("submit", {"answer": "done"})])


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({"history": 42}, "expected a history policy"),
        ({"history": "prune"}, "expected a history policy"),
        ({"history": lambda: []}, "expected a history policy"),  # takes no messages
        ({"history": lw.HistoryPolicy}, "expected a history policy"),  # the class
        ({"tools": note}, "tools must be a list of Tools"),
        ({"tools": "bash"}, "tools must be a list of Tools"),
        ({"tools": [plain]}, "'plain' is not a Tool"),
        ({"model": 42}, "model must be a model name"),
        ({"config": {"temperature": 0}}, "config must be a GenerateConfig"),
        ({"prompt": ["be brief"]}, "prompt must be a string"),
        ({"name": None}, "name must be a string"),
        ({"on_continue": 5}, "on_continue must be a string, a function or None"),
        ({"recovery": {"format_errors": 1}}, "recovery must be a lw.Recovery"),
    ],
)
def test_react_refuses_a_bad_setting_when_it_is_made(kwargs: dict[str, Any], expected: str) -> None:
    with pytest.raises(lw.ConfigurationError, match=expected):
        lw.react(**kwargs)


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({"format_errors": -1}, "format_errors must be a whole number"),
        ({"max_tokens": "3"}, "max_tokens must be a whole number"),
    ],
)
def test_recovery_refuses_a_bad_bound_when_it_is_made(
    kwargs: dict[str, Any], expected: str
) -> None:
    with pytest.raises(lw.ConfigurationError, match=expected):
        lw.Recovery(**kwargs)


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({"history": 42}, "expected a history policy"),
        ({"tools": note}, "tools must be a list of Tools"),
        ({"model": 3.5}, "model must be a model name"),
        ({"time_limit": "60"}, "time_limit must be a number of seconds"),
        ({"time_limit": 0}, "time_limit must be a number of seconds"),
        ({"nudge": None}, "nudge must be a string"),
        ({"progress_every": 0}, "progress_every must be a whole number >= 1"),
        ({"productive_time": "yes"}, "productive_time must be True or False"),
    ],
)
def test_iterative_refuses_a_bad_setting_when_it_is_made(
    kwargs: dict[str, Any], expected: str
) -> None:
    with pytest.raises(lw.ConfigurationError, match=expected):
        lw.iterative(**kwargs)


async def _approve_nothing() -> None:
    pass


@pytest.mark.parametrize(
    ("agent", "kwargs", "expected"),
    [
        (lw.react, {}, r"pass an agent, react\(\.\.\.\)"),
        (lw.iterative, {}, r"pass an agent, iterative\(\.\.\.\)"),
        ("react", {}, "agent must be an agent"),
        (lambda: None, {}, "must take the state"),
        (None, {"limits": lw.step_limit(3)}, r"limits must be a list: limits=\[step_limit\(3\)\]"),
        (None, {"limits": [5]}, "every limit must be a Limit"),
        (None, {"limits": "60s"}, "limits must be a list of limits"),
        (None, {"tools": [plain]}, "'plain' is not a Tool"),
        (None, {"tools": note}, "tools must be a list of Tools"),
        (None, {"approval": _approve_nothing}, r"must take \(call, messages\)"),
        (None, {"sandbox": 42}, "sandbox must be a backend name"),
        (None, {"db": True}, "db must be a file path"),
        (None, {"name": 7}, "name must be a string"),
        (None, {"metadata": ["x"]}, "metadata must be a dict"),
        (None, {"approval": 42}, "approval must be a preset name"),
        (None, {"transcript": "no"}, "transcript must be True or False"),
        (None, {"raise_on_limit": 1}, "raise_on_limit must be True or False"),
    ],
)
async def test_run_refuses_a_bad_argument_before_the_run_starts(
    tmp_path: Path, agent: Any, kwargs: dict[str, Any], expected: str
) -> None:
    db = tmp_path / "runs.db"
    given = {"db": db, **kwargs}
    with pytest.raises(lw.ConfigurationError, match=expected):
        await lw.run(agent if agent is not None else lw.react(), "go", model="mock", **given)
    assert not db.exists()  # refused before anything was recorded


async def test_a_plain_function_is_a_history_policy_sync_or_async() -> None:
    seen: list[int] = []

    def keep_recent(messages: list[lw.ChatMessage]) -> list[lw.ChatMessage]:
        seen.append(len(messages))
        return lw.prune(messages, keep_last=2)

    async def keep_recent_async(messages: list[lw.ChatMessage]) -> list[lw.ChatMessage]:
        return keep_recent(messages)

    for policy in (keep_recent, keep_recent_async):
        seen.clear()
        model = submitter(*[call("note", {"text": str(i)}) for i in range(4)])
        state = await lw.run(lw.react(tools=[note], history=policy), "go", model=model, db=False)
        assert state.completed == "submit"
        assert len(seen) == 5  # applied before every model call
        assert seen[-1] == 5  # it kept the history short (9 messages without it)


async def test_a_history_function_also_recovers_a_context_overflow() -> None:
    calls: list[int] = []

    def responder(
        messages: Sequence[lw.ChatMessage], tools: object, config: object
    ) -> lw.ModelOutput:
        calls.append(len(messages))
        if len(calls) <= 6:
            return call("note", {"text": "x"})
        if len(calls) == 7:
            return lw.ModelOutput.from_text("", stop_reason="model_length")
        return call("submit", {"answer": "ok"})

    def unchanged(messages: list[lw.ChatMessage]) -> list[lw.ChatMessage]:
        return messages  # never shrinks: the default recovery takes over on overflow

    model = lw.get_model("mock", outputs=responder)
    state = await lw.run(lw.react(tools=[note], history=unchanged), "go", model=model, db=False)
    assert state.completed == "submit"
    assert calls[-1] < calls[-2]


async def test_a_history_function_that_returns_no_list_is_a_bug_named_clearly() -> None:
    def broken(messages: list[lw.ChatMessage]) -> None:
        return None

    policy: Callable[..., Any] = broken
    with pytest.raises(TypeError, match=r"history policy .*broken returned NoneType"):
        await lw.run(lw.react(history=policy), "go", model=submitter(), db=False)


def test_compose_takes_functions_and_refuses_what_is_not_a_policy() -> None:
    def identity(messages: list[lw.ChatMessage]) -> list[lw.ChatMessage]:
        return messages

    assert isinstance(lw.compose(lw.truncate_when(1000), identity), lw.HistoryPolicy)
    with pytest.raises(lw.ConfigurationError, match="compose: expected a history policy"):
        lw.compose(lw.truncate_when(1000), 3)  # type: ignore[arg-type]


def test_tools_may_come_from_any_iterable_and_none_is_lost() -> None:
    agent = lw.react(tools=(t for t in [note]))  # a generator was read once, then empty
    assert [t.name for t in agent.offered] == ["note", "submit"]


def test_an_agent_class_is_read_once_and_each_agent_still_checked() -> None:
    from loopwright.agents._checks import check_agent

    class Good:
        async def __call__(self, state: lw.AgentState) -> lw.AgentState:
            return state

    class Bad:
        async def __call__(self) -> None:
            pass

    for _ in range(2):  # the second time from what the first read
        check_agent(Good())
        with pytest.raises(lw.ConfigurationError, match="must take the state"):
            check_agent(Bad())

    async def takes_nothing() -> None:
        pass

    wrapped = Good()
    wrapped.__wrapped__ = takes_nothing  # type: ignore[attr-defined]
    with pytest.raises(lw.ConfigurationError, match="must take the state"):
        check_agent(wrapped)  # (its own signature, not its class's)
