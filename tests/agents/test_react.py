import asyncio
import time
from collections.abc import Sequence

import pytest

import loopwright as lw
from loopwright.agents._react import DEFAULT_CONTINUE
from loopwright.agents._steps import OVERFLOW_HINT


@lw.tool
def multiply(a: int, b: int) -> int:
    """Multiply two numbers.

    Args:
        a: The first factor.
        b: The second factor.
    """
    return a * b


call = lw.ModelOutput.for_tool_call


def roles(state: lw.AgentState) -> list[str]:
    return [m.role for m in state.messages]


async def test_tool_then_submit_ends_with_the_answer() -> None:
    model = lw.get_model(
        "mock",
        outputs=[call("multiply", {"a": 465, "b": 321}), call("submit", {"answer": "149265"})],
    )
    agent = lw.react(prompt="You are a calculator.", tools=[multiply])
    state = await lw.run(agent, "What is 465 * 321?", model=model)
    assert state.completed == "submit"
    assert state.text == "149265"
    assert roles(state) == ["system", "user", "assistant", "tool", "assistant", "tool"]
    assert state.messages[3].text == "149265"
    assert [t.name for t in state.tools] == ["multiply", "submit"]


async def test_a_failing_submit_does_not_end_the_run() -> None:
    model = lw.get_model(
        "mock", outputs=[call("submit", {"wrong": 1}), call("submit", {"answer": "ok"})]
    )
    state = await lw.run(lw.react(), "go", model=model)
    assert state.completed == "submit"
    assert state.text == "ok"
    first_result = state.messages[2]
    assert isinstance(first_result, lw.ToolMessage)
    assert first_result.error is not None


async def test_without_submit_a_plain_answer_ends_the_run() -> None:
    model = lw.get_model("mock", outputs=[call("multiply", {"a": 2, "b": 3}), "It is 6."])
    state = await lw.run(lw.react(tools=[multiply], submit=False), "2*3?", model=model)
    assert state.completed == "answer"
    assert state.text == "It is 6."
    assert [t.name for t in state.tools] == ["multiply"]


async def test_answer_without_tool_call_is_nudged_to_continue() -> None:
    model = lw.get_model("mock", outputs=["I think it's 6", call("submit", {"answer": "6"})])
    state = await lw.run(lw.react(tools=[multiply]), "2*3?", model=model)
    assert state.completed == "submit"
    nudge = state.messages[2]
    assert isinstance(nudge, lw.UserMessage)
    assert nudge.text == DEFAULT_CONTINUE.format(submit="submit")


async def test_on_continue_string_and_callable() -> None:
    model = lw.get_model("mock", outputs=["thinking", call("submit", {"answer": "x"})])
    state = await lw.run(lw.react(on_continue="Keep going!"), "task", model=model)
    assert state.messages[2].text == "Keep going!"

    seen: list[int] = []

    async def stop_after_two(state: lw.AgentState) -> bool | str:
        seen.append(len(state.messages))
        return "one more" if len(seen) < 2 else False

    model = lw.get_model("mock", outputs=["a", "b", "c"])
    state = await lw.run(lw.react(on_continue=stop_after_two), "task", model=model)
    assert state.completed == "continue_stopped"
    assert [m.text for m in state.messages if m.role == "user"] == ["task", "one more"]
    assert state.text == "b"


async def test_stop_keyword_ends_the_run() -> None:
    model = lw.get_model("mock", outputs=["working", "All done: TASK COMPLETE", "never"])
    agent = lw.react(stop_keywords=["task complete"])
    state = await lw.run(agent, "task", model=model)
    assert state.completed == "stop_keyword"
    assert state.text == "All done: TASK COMPLETE"


async def test_max_steps_returns_partial_state_with_the_limit() -> None:
    model = lw.get_model("mock", outputs=[call("multiply", {"a": 1, "b": 1})], repeat=True)
    state = await lw.run(lw.react(tools=[multiply], max_steps=3), "loop", model=model)
    assert state.completed == "limit"
    assert state.limit is not None
    assert state.limit.type == "step"
    assert sum(m.role == "assistant" for m in state.messages) == 3


async def test_run_limits_return_state_or_raise() -> None:
    model = lw.get_model("mock", outputs=[call("multiply", {"a": 1, "b": 1})], repeat=True)
    agent = lw.react(tools=[multiply])
    state = await lw.run(agent, "loop", model=model, limits=[lw.token_limit(200)])
    assert state.limit is not None
    assert state.limit.type == "token"
    assert len(state.messages) > 2
    with pytest.raises(lw.LimitExceededError):
        await lw.run(agent, "loop", model=model, limits=[lw.message_limit(5)], raise_on_limit=True)


async def test_time_limit_cancels_a_slow_tool() -> None:
    cancelled = asyncio.Event()

    @lw.tool
    async def slow() -> str:
        """Take forever."""
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "never"

    model = lw.get_model("mock", outputs=[call("slow")])
    start = time.monotonic()
    state = await lw.run(lw.react(tools=[slow]), "go", model=model, limits=[lw.time_limit(0.3)])
    assert time.monotonic() - start < 10
    assert state.limit is not None
    assert state.limit.type == "time"
    assert cancelled.is_set()


async def test_content_filter_twice_ends_with_a_clear_reason() -> None:
    filtered = lw.ModelOutput.from_text("", stop_reason="content_filter")
    model = lw.get_model("mock", outputs=[filtered, filtered])
    state = await lw.run(lw.react(), "task", model=model)
    assert state.completed == "content_filter"


async def test_max_tokens_is_continued() -> None:
    cut = lw.ModelOutput.from_text("The answer is 4", stop_reason="max_tokens")
    model = lw.get_model("mock", outputs=[cut, "2", call("submit", {"answer": "42"})])
    state = await lw.run(lw.react(), "task", model=model)
    assert state.completed == "submit"
    assert "cut off" in state.messages[2].text
    stopped = await lw.run(
        lw.react(submit=False, recovery=lw.Recovery(max_tokens=0)),
        "task",
        model=lw.get_model("mock", outputs=[cut]),
    )
    assert stopped.completed == "max_tokens"


async def test_context_overflow_is_recovered_by_pruning() -> None:
    seen: list[int] = []
    script = iter(
        [call("multiply", {"a": 1, "b": 2})] * 30
        + [
            lw.ModelOutput.from_text("", stop_reason="model_length"),
            call("submit", {"answer": "ok"}),
        ]
    )

    def responder(
        messages: Sequence[lw.ChatMessage], tools: object, config: object
    ) -> lw.ModelOutput:
        seen.append(len(messages))
        return next(script)

    model = lw.get_model("mock", outputs=responder)
    state = await lw.run(lw.react(tools=[multiply], max_steps=40), "task", model=model)
    assert state.completed == "submit"
    assert seen[-1] < seen[-2]  # the retry after the overflow sent a smaller history
    assert any(m.text == OVERFLOW_HINT for m in state.messages)
    # no orphaned tool results after pruning
    called = {
        c.id for m in state.messages if isinstance(m, lw.AssistantMessage) for c in m.tool_calls
    }
    assert all(m.tool_call_id in called for m in state.messages if isinstance(m, lw.ToolMessage))


async def test_repeated_overflow_gives_up() -> None:
    overflow = lw.ModelOutput.from_text("", stop_reason="model_length")
    model = lw.get_model("mock", outputs=[overflow], repeat=True)
    state = await lw.run(lw.react(recovery=lw.Recovery(overflows=2)), "task", model=model)
    assert state.completed == "model_length"


async def test_unparseable_tool_calls_are_capped() -> None:
    bad = lw.ModelOutput(
        message=lw.AssistantMessage(
            tool_calls=[lw.ToolCall(function="multiply", parse_error="not JSON: {a: 1")]
        ),
        stop_reason="tool_calls",
    )
    model = lw.get_model("mock", outputs=[bad], repeat=True)
    state = await lw.run(
        lw.react(tools=[multiply], recovery=lw.Recovery(format_errors=2)), "task", model=model
    )
    assert state.completed == "format_errors"
    errors = [m for m in state.messages if isinstance(m, lw.ToolMessage)]
    assert len(errors) == 3
    assert all(m.error is not None and m.error.type == "parsing" for m in errors)


async def test_unknown_tool_is_reported_and_the_run_goes_on() -> None:
    model = lw.get_model(
        "mock", outputs=[call("divide", {"a": 1}), call("submit", {"answer": "x"})]
    )
    state = await lw.run(lw.react(tools=[multiply]), "task", model=model)
    result = state.messages[2]
    assert isinstance(result, lw.ToolMessage)
    assert result.error is not None
    assert result.error.type == "unknown_tool"
    assert "multiply" in result.text
    assert state.completed == "submit"


async def test_agent_as_tool() -> None:
    inner_model = lw.get_model("mock", outputs=[call("submit", {"answer": "Paris"})])
    researcher = lw.react(name="researcher", description="Finds facts.", model=inner_model)
    outer_model = lw.get_model(
        "mock",
        outputs=[
            call("researcher", {"input": "capital of France?"}),
            call("submit", {"answer": "Paris"}),
        ],
    )
    tool = lw.as_tool(researcher)
    assert tool.info.description == "Finds facts."
    state = await lw.run(lw.react(tools=[tool]), "Where is the Louvre?", model=outer_model)
    assert state.messages[2].text == "Paris"
    assert state.text == "Paris"


async def test_handoff_passes_the_conversation() -> None:
    seen: list[list[str]] = []

    def specialist_model(
        msgs: Sequence[lw.ChatMessage], tools: object, config: object
    ) -> lw.ModelOutput:
        seen.append([m.role for m in msgs])
        return call("submit", {"answer": "handled"})

    specialist = lw.react(
        name="billing",
        prompt="You handle billing.",
        model=lw.get_model("mock", outputs=specialist_model),
    )
    front = lw.react(prompt="You triage.", tools=[lw.handoff(specialist)])
    state = await lw.run(
        front, "refund please", model=lw.get_model("mock", outputs=[call("transfer_to_billing")])
    )
    assert state.completed == "handoff"
    assert state.text == "handled"
    assert seen[0] == ["system", "user", "assistant", "tool"]
    assert state.messages[0].text == "You handle billing."


async def test_custom_loop_from_public_names() -> None:
    model = lw.get_model("mock", outputs=[call("multiply", {"a": 6, "b": 7}), "42"])
    tools = [multiply]
    messages: list[lw.ChatMessage] = [lw.UserMessage(content="6*7?")]
    with lw.step_limit(10):
        while True:
            lw.check_limits()
            messages = lw.prune(messages, keep_last=50)
            output = await model.generate(messages, tools)
            messages.append(output.message)
            if not output.tool_calls:
                break
            messages.extend(await lw.execute_tools(output.message, tools))
    assert messages[-1].text == "42"
    assert messages[2].text == "42"


def test_run_sync_and_input_forms() -> None:
    model = lw.get_model("mock", outputs=["a", "b", "c"])
    agent = lw.react(submit=False)
    assert lw.run_sync(agent, "x", model=model).text == "a"
    assert lw.run_sync(agent, [lw.UserMessage(content="x")], model=model).text == "b"
    state = lw.AgentState(messages=[lw.UserMessage(content="x")])
    assert lw.run_sync(agent, state, model=model) is state
    with pytest.raises(lw.ConfigurationError):
        lw.run_sync(agent, 42, model=model)  # type: ignore[arg-type]


async def test_run_sync_refuses_inside_a_loop() -> None:
    with pytest.raises(lw.ConfigurationError, match="await run"):
        lw.run_sync(lw.react(), "x", model="mock")


def test_duplicate_tool_names_are_rejected() -> None:
    with pytest.raises(lw.ConfigurationError, match="unique"):
        lw.react(tools=[multiply, multiply])


def test_agent_registry() -> None:
    @lw.agent(name="calc-test")
    def calc(prompt: str = "calc") -> lw.Agent:
        return lw.react(prompt=prompt)

    built = lw.get_agent("calc-test", prompt="p")
    assert isinstance(built, lw.ReactAgent)
    assert built.prompt == "p"
    with pytest.raises(lw.ConfigurationError, match="calc-test"):
        lw.get_agent("nope")


async def test_terminate_by_approval_ends_the_run_without_dangling_calls() -> None:
    async def terminate(call: lw.ToolCall, messages: object) -> lw.Approval:
        return lw.Approval(decision="terminate", explanation="too risky")

    model = lw.get_model("mock", outputs=[call("multiply", {"a": 1, "b": 2})])
    with lw.approver(terminate):
        state = await lw.run(lw.react(tools=[multiply]), "t", model=model, db=False)
    assert state.completed == "terminated"
    last = state.messages[-1]
    assert isinstance(last, lw.ToolMessage)
    assert last.error is not None
    assert "too risky" in last.text


def test_an_agent_is_its_options_and_replace_makes_another() -> None:
    import dataclasses

    helper = lw.react(name="helper", submit=False)
    agent = lw.react(tools=[multiply, lw.handoff(helper)], max_steps=5)
    other = dataclasses.replace(agent, name="other", prompt="Be brief.")
    assert isinstance(other, lw.ReactAgent) and other.name == "other"
    assert [t.name for t in other.offered] == ["multiply", "submit"]
    assert list(other.handoffs) == ["transfer_to_helper"] and other.max_steps == 5
    assert repr(other) == "react(name='other', tools=['multiply', 'submit'])"
    with pytest.raises(lw.ConfigurationError, match="max_steps must be"):
        dataclasses.replace(agent, max_steps=0)  # checked again: a new agent
    worker = dataclasses.replace(lw.iterative(), time_limit=60)
    assert isinstance(worker, lw.IterativeAgent) and worker.nudge == lw.iterative().nudge


@pytest.mark.parametrize(("productive", "kind"), [(False, "time"), (True, "working")])
async def test_an_agents_own_time_budget_is_a_limit_it_records_itself(
    productive: bool, kind: str
) -> None:
    @lw.tool
    async def slow() -> str:
        """Take forever."""
        await asyncio.sleep(60)
        return "never"

    hook_limits: list[str] = []

    class Heard(lw.Hooks):
        async def on_limit(self, info: lw.LimitInfo) -> None:
            hook_limits.append(info.type)

    model = lw.get_model("mock", outputs=[call("slow")])
    agent = lw.react(tools=[slow], time_limit=0.2, productive_time=productive, hooks=[Heard()])
    state = await lw.run(agent, "go", model=model, db=False, hooks=[Heard()])
    assert state.completed == "limit"
    assert state.limit is not None and state.limit.type == kind
    assert hook_limits == [kind, kind]  # the agent's hook, then the run's: once each
    result = state.messages[-1]
    assert isinstance(result, lw.ToolMessage) and result.error is not None
    assert result.content.startswith(f"Not run to the end: {state.limit.message}")


async def test_an_outer_limit_is_not_the_agents_to_record() -> None:
    model = lw.get_model("mock", outputs=[call("multiply", {"a": 1, "b": 2})], repeat=True)
    agent = lw.react(tools=[multiply], time_limit=3600)  # a budget: no default step bound
    with pytest.raises(lw.LimitExceededError) as raised:
        await lw.run(agent, "go", model=model, db=False, limits=[lw.step_limit(2)],
                     raise_on_limit=True)  # fmt: skip
    assert raised.value.type == "step"
