"""Public lifecycle hooks (``lw.Hooks``): order, veto, edits, redaction, limit, error, stop."""

import dataclasses
import importlib.util
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

import loopwright as lw

call = lw.ModelOutput.for_tool_call

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "hooks.py"


@lw.tool
def echo(text: str) -> str:
    """Say ``text`` back.

    Args:
        text: What to say.
    """
    return text


class Recorder(lw.Hooks):
    """Writes down every hook call, tagged."""

    def __init__(self, tag: str = "") -> None:
        self.tag = tag
        self.calls: list[str] = []

    def _note(self, what: str) -> None:
        self.calls.append(f"{self.tag}{what}")

    async def on_run_start(self, state: lw.AgentState) -> None:
        self._note("run_start")

    async def on_run_end(self, state: lw.AgentState) -> None:
        self._note(f"run_end:{state.completed}")

    async def on_step_start(self, state: lw.AgentState) -> None:
        self._note("step_start")

    async def on_step_end(self, state: lw.AgentState) -> None:
        self._note("step_end")

    async def before_model(self, request: lw.ModelRequest) -> None:
        self._note("before_model")

    async def after_model(self, output: lw.ModelOutput) -> None:
        self._note("after_model")

    async def before_tool(self, call: lw.ToolCall) -> None:
        self._note(f"before_tool:{call.function}")

    async def after_tool(self, call: lw.ToolCall, result: lw.ToolMessage) -> None:
        self._note(f"after_tool:{call.function}")

    async def on_limit(self, info: lw.LimitInfo) -> None:
        self._note(f"limit:{info.type}")

    async def on_error(self, error: Exception) -> None:
        self._note(f"error:{type(error).__name__}")


def three_steps() -> lw.Model:
    return lw.get_model(
        "mock",
        outputs=[
            call("echo", {"text": "a"}),
            call("echo", {"text": "b"}),
            call("submit", {"answer": "done"}),
        ],
    )


STEP = ["step_start", "before_model", "after_model"]


async def test_the_hooks_of_a_three_step_run_are_called_in_order() -> None:
    run_hook, agent_hook = Recorder(), Recorder()
    agent = lw.react(tools=[echo], hooks=[agent_hook])
    state = await lw.run(agent, "go", model=three_steps(), db=False, hooks=[run_hook])
    assert state.completed == "submit"
    steps = [
        *STEP, "before_tool:echo", "after_tool:echo", "step_end",
        *STEP, "before_tool:echo", "after_tool:echo", "step_end",
        *STEP, "before_tool:submit", "after_tool:submit", "step_end",
    ]  # fmt: skip
    assert run_hook.calls == ["run_start", *steps, "run_end:submit"]
    assert agent_hook.calls == ["run_start", *steps, "run_end:submit"]


async def test_run_hooks_are_heard_before_the_agents_own() -> None:
    seen: list[str] = []
    outer, inner = Recorder("run:"), Recorder("agent:")
    outer.calls = inner.calls = seen  # one list: the order between them
    agent = lw.react(tools=[echo], hooks=[inner])
    await lw.run(agent, "go", model=three_steps(), db=False, hooks=[outer])
    assert seen[:4] == ["run:run_start", "agent:run_start", "run:step_start", "agent:step_start"]
    assert seen[-2:] == ["agent:run_end:submit", "run:run_end:submit"]


async def test_the_iterative_agent_calls_the_same_hooks() -> None:
    hook = Recorder()
    agent = lw.iterative(tools=[echo, lw.submit()], max_steps=5, progress_every=None)
    state = await lw.run(agent, "go", model=three_steps(), db=False, hooks=[hook])
    assert state.completed == "submit"
    assert hook.calls.count("step_start") == hook.calls.count("step_end") == 3
    assert hook.calls[:4] == ["run_start", *STEP]
    assert hook.calls[-1] == "run_end:submit"


class Deny(lw.Hooks):
    async def before_tool(self, call: lw.ToolCall) -> str | None:
        if call.function == "danger":
            return "danger is not allowed here; use echo."
        return None


async def test_a_before_tool_denial_reaches_the_model_and_the_tool_does_not_run() -> None:
    ran: list[str] = []

    @lw.tool
    def danger(text: str) -> str:
        """Do something dangerous.

        Args:
            text: What to do.
        """
        ran.append(text)
        return "done"

    model = lw.get_model(
        "mock", outputs=[call("danger", {"text": "rm -rf"}), call("submit", {"answer": "ok"})]
    )
    agent = lw.react(tools=[danger], hooks=[Deny()])
    state = await lw.run(agent, "go", model=model, db=False)
    assert ran == []
    result = state.messages[2]
    assert isinstance(result, lw.ToolMessage) and result.function == "danger"
    assert result.content == "danger is not allowed here; use echo."
    assert result.error is not None and result.error.type == "approval"
    assert state.completed == "submit"


async def test_before_model_can_edit_the_request_the_model_sees() -> None:
    note = "[Note: answer in French.]"

    class AddNote(lw.Hooks):
        async def before_model(self, request: lw.ModelRequest) -> lw.ModelRequest:
            note_message = lw.SystemMessage(content=note)
            return dataclasses.replace(request, messages=[*request.messages, note_message])

    seen: list[list[str]] = []

    def responder(messages: Sequence[lw.ChatMessage], tools: Any, config: Any) -> str:
        seen.append([m.text for m in messages])
        return "Bonjour."

    model = lw.get_model("mock", outputs=responder)
    state = await lw.run(lw.react(submit=False, hooks=[AddNote()]), "hi", model=model, db=False)
    assert seen == [["hi", note]]
    assert [m.text for m in state.messages] == ["hi", "Bonjour."]  # for this call only


SECRET = "sk-live-4f9a8b7c6d5e"


class Redact(lw.Hooks):
    async def after_tool(self, call: lw.ToolCall, result: lw.ToolMessage) -> lw.ToolMessage:
        return result.model_copy(update={"content": result.content.replace(SECRET, "[REDACTED]")})


async def test_after_tool_redaction_is_all_the_state_and_the_run_store_hold(
    tmp_path: Path,
) -> None:
    @lw.tool
    def read_env() -> str:
        """Read the environment."""
        return f"HOME=/home/me\nAPI_KEY={SECRET}"

    db = tmp_path / "runs.db"
    model = lw.get_model("mock", outputs=[call("read_env", {}), call("submit", {"answer": "ok"})])
    agent = lw.react(tools=[read_env])
    state = await lw.run(agent, "go", model=model, db=db, hooks=[Redact()])
    assert state.messages[2].text == "HOME=/home/me\nAPI_KEY=[REDACTED]"
    assert all(SECRET not in m.text for m in state.messages)
    with lw.load_run(state.run_id, db=db) as log:
        assert log.info.status == "success"
    conn = sqlite3.connect(db)
    try:
        dump = "\n".join(conn.iterdump())
    finally:
        conn.close()
    assert "[REDACTED]" in dump
    assert SECRET not in dump
    assert not files_holding(tmp_path, SECRET)  # nor the write-ahead log, if left


def files_holding(folder: Path, text: str) -> list[Path]:
    return [p for p in folder.iterdir() if text.encode() in p.read_bytes()]


async def test_on_limit_is_heard_once_with_the_step_limit() -> None:
    run_hook, agent_hook = Recorder(), Recorder()
    model = lw.get_model("mock", outputs=[call("echo", {"text": "x"})], repeat=True)
    agent = lw.react(tools=[echo], max_steps=2, hooks=[agent_hook])
    state = await lw.run(agent, "go", model=model, db=False, hooks=[run_hook])
    assert state.completed == "limit" and state.limit is not None
    for hook in (run_hook, agent_hook):
        assert hook.calls.count("limit:step") == 1
        assert [c for c in hook.calls if c.startswith("limit")] == ["limit:step"]
        assert hook.calls[-2:] == ["limit:step", "run_end:limit"]
        # the step limit counts model calls and is checked between steps: a third step,
        # whose call it would refuse, never starts (as the iterative agent always did)
        assert hook.calls.count("step_start") == hook.calls.count("step_end") == 2
        assert "after_model" not in hook.calls[-5:]


async def test_a_run_limit_is_heard_once_by_the_run_and_the_agent() -> None:
    run_hook, agent_hook = Recorder(), Recorder()
    model = lw.get_model("mock", outputs=[call("echo", {"text": "x"})], repeat=True)
    agent = lw.react(tools=[echo], max_steps=None, hooks=[agent_hook])
    state = await lw.run(
        agent, "go", model=model, db=False, hooks=[run_hook], limits=[lw.step_limit(3)]
    )
    assert state.completed == "limit"
    assert run_hook.calls.count("limit:step") == agent_hook.calls.count("limit:step") == 1


async def test_the_iterative_agents_own_step_bound_is_heard_once() -> None:
    hook = Recorder()
    model = lw.get_model("mock", outputs=[call("echo", {"text": "x"})], repeat=True)
    agent = lw.iterative(tools=[echo], max_steps=2, progress_every=None, hooks=[hook])
    state = await lw.run(agent, "go", model=model, db=False)
    assert state.completed == "limit"
    assert hook.calls[-2:] == ["limit:step", "run_end:limit"]
    assert hook.calls.count("limit:step") == 1
    assert hook.calls.count("step_start") == hook.calls.count("step_end") == 2


async def test_with_raise_on_limit_the_run_hooks_hear_the_limit_before_it_is_raised() -> None:
    hook = Recorder()
    model = lw.get_model("mock", outputs=[call("echo", {"text": "x"})], repeat=True)
    agent = lw.react(tools=[echo], max_steps=None)
    with pytest.raises(lw.LimitExceededError):
        await lw.run(
            agent, "go", model=model, db=False, hooks=[hook], limits=[lw.step_limit(2)],
            raise_on_limit=True,
        )  # fmt: skip
    assert hook.calls[-2:] == ["limit:step", "run_end:limit"]


class Boom(Exception):
    pass


async def test_on_error_is_heard_once_when_a_tool_error_ends_the_run(tmp_path: Path) -> None:
    @lw.tool
    def broken() -> str:
        """Fail."""
        raise Boom("the tool has a bug")

    run_hook, agent_hook = Recorder(), Recorder()
    model = lw.get_model("mock", outputs=[call("broken", {})])
    agent = lw.react(tools=[broken], hooks=[agent_hook])
    with pytest.raises(Boom):
        await lw.run(agent, "go", model=model, db=tmp_path / "r.db", hooks=[run_hook])
    for hook in (run_hook, agent_hook):
        assert [c for c in hook.calls if c.startswith("error")] == ["error:Boom"]
        assert not any(c.startswith("run_end") for c in hook.calls)
    with lw.load_run(db=tmp_path / "r.db") as log:
        assert log.info.status == "error"


class SpendCap(lw.Hooks):
    """Ends the run once the model calls used more than ``budget`` tokens."""

    def __init__(self, budget: int) -> None:
        self.budget, self.used = budget, 0

    async def after_model(self, output: lw.ModelOutput) -> None:
        if output.usage is not None:
            self.used += output.usage.total_tokens
        if self.used > self.budget:
            raise lw.StopRun(f"spent {self.used} tokens, over the budget of {self.budget}")


async def test_a_hook_that_caps_spend_stops_the_run_cleanly(tmp_path: Path) -> None:
    usage = lw.Usage(input_tokens=80, output_tokens=20, total_tokens=100)
    output = dataclasses.replace(call("echo", {"text": "x"}), usage=usage)
    model = lw.get_model("mock", outputs=[output], repeat=True)
    cap, hook = SpendCap(budget=250), Recorder()
    db = tmp_path / "r.db"
    state = await lw.run(
        lw.react(tools=[echo], hooks=[hook]), "go", model=model, db=db, hooks=[cap]
    )
    assert state.completed == "stopped"
    assert state.error == "spent 300 tokens, over the budget of 250"
    assert cap.used == 300
    assert hook.calls.count("after_model") == 2  # the run's cap stopped the third first
    assert hook.calls[-2:] == ["step_end", "run_end:stopped"]
    # the reply past the budget is not acted on (nor kept): the conversation ends with
    # the second call's result
    assert [m.role for m in state.messages] == ["user", *["assistant", "tool"] * 2]
    with lw.load_run(state.run_id, db=db) as log:
        assert log.info.status != "error"
        infos = [e.data for e in log.events() if isinstance(e, lw.InfoEvent)]
    assert infos[-1] == f"The run was stopped by a hook: {state.error}"


async def test_a_stop_run_from_an_agent_used_as_a_tool_ends_the_whole_run() -> None:
    class StopOnTool(lw.Hooks):
        async def before_tool(self, call: lw.ToolCall) -> None:
            if call.function == "echo":
                raise lw.StopRun("no echo")

    inner_model = lw.get_model("mock", outputs=[call("echo", {"text": "x"})])
    inner = lw.react(name="inner", tools=[echo], model=inner_model)
    outer_model = lw.get_model("mock", outputs=[call("inner", {"input": "go"})])
    outer = lw.react(tools=[lw.as_tool(inner)], model=outer_model)
    state = await lw.run(outer, "go", db=False, hooks=[StopOnTool()])
    assert state.completed == "stopped" and state.error == "no echo"


@pytest.mark.parametrize(
    "hooks",
    [Recorder(), [Recorder], [object()], "hooks", [lambda state: None], None],
)
def test_what_is_not_a_list_of_hooks_is_refused_where_it_is_given(hooks: Any) -> None:
    with pytest.raises(lw.ConfigurationError, match="hooks"):
        lw.react(hooks=hooks)
    with pytest.raises(lw.ConfigurationError, match="hooks"):
        lw.iterative(hooks=hooks)
    with pytest.raises(lw.ConfigurationError, match="hooks"):
        lw.run_sync(lw.react(), "go", model="mock", db=False, hooks=hooks)


async def test_a_hook_returning_the_wrong_kind_is_a_bug_that_names_it() -> None:
    class Bad(lw.Hooks):
        async def before_tool(self, call: lw.ToolCall) -> Any:
            return True

    model = lw.get_model("mock", outputs=[call("echo", {"text": "x"})])
    with pytest.raises(TypeError, match=r"Bad\.before_tool"):
        await lw.run(lw.react(tools=[echo], hooks=[Bad()]), "go", model=model, db=False)


async def test_the_hooks_example_caps_spend_and_redacts_secrets(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("example_hooks", EXAMPLE)
    assert spec is not None and spec.loader is not None
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    db = tmp_path / "runs.db"
    state = await example.main(max_usd=0.03, db=db)
    assert state.completed == "stopped"
    assert state.error == "spent $0.0360, over the cap of $0.0300"
    results = [m.content for m in state.messages if isinstance(m, lw.ToolMessage)]
    assert len(results) == 2
    assert all("OPENAI_API_KEY=[REDACTED]" in r and "sk-demo" not in r for r in results)
    assert not files_holding(tmp_path, "sk-demo-9f8e7d6c5b4a3f2e1d0c")
    redact = example.RedactSecrets(["hunter2-password"], patterns=[])
    assert redact.redact("pw=hunter2-password, AKIAABCDEFGHIJKLMNOP") == (
        "pw=[REDACTED], AKIAABCDEFGHIJKLMNOP"
    )
    assert example.RedactSecrets([], patterns=[]).redact("sk-abc") == "sk-abc"


class Sync(lw.Hooks):
    def before_tool(self, call: lw.ToolCall) -> None:  # type: ignore[override]
        return None


class Misspelt(lw.Hooks):
    async def on_tool_start(self, call: lw.ToolCall) -> None:
        pass


class Inherited(Misspelt):
    async def after_tool(self, call: lw.ToolCall, result: lw.ToolMessage) -> None:
        return None


@pytest.mark.parametrize(
    ("hook", "message"),
    [
        (Sync(), r"Sync\.before_tool must be a coroutine: async def before_tool"),
        (Misspelt(), r"Misspelt\.on_tool_start is not a hook method"),
        (Inherited(), r"Inherited\.on_tool_start is not a hook method"),
    ],
)
def test_a_hook_whose_methods_would_fail_mid_run_is_refused(hook: lw.Hooks, message: str) -> None:
    with pytest.raises(lw.ConfigurationError, match=message):
        lw.react(hooks=[hook])
    with pytest.raises(lw.ConfigurationError, match=message):
        lw.run_sync(lw.react(), "go", model="mock", db=False, hooks=[hook])


async def test_in_a_parallel_batch_each_call_is_gated_and_results_keep_their_order(
    tmp_path: Path,
) -> None:
    ran: list[str] = []

    @lw.tool(parallel=True)
    async def fetch(url: str) -> str:
        """Fetch a page.

        Args:
            url: The page.
        """
        ran.append(url)
        return f"page {url} token={SECRET}"

    class NoAdmin(lw.Hooks):
        async def before_tool(self, call: lw.ToolCall) -> str | None:
            return "not the admin page" if "admin" in call.arguments.get("url", "") else None

    calls = [
        lw.ToolCall(id=f"c{i}", function="fetch", arguments={"url": url})
        for i, url in enumerate(["a", "admin", "b"])
    ]
    reply = lw.ModelOutput(message=lw.AssistantMessage(tool_calls=calls), stop_reason="tool_calls")
    model = lw.get_model("mock", outputs=[reply, call("submit", {"answer": "ok"})])
    db = tmp_path / "runs.db"
    agent = lw.react(tools=[fetch], hooks=[Redact()])
    state = await lw.run(agent, "go", model=model, db=db, hooks=[NoAdmin()])
    assert sorted(ran) == ["a", "b"]
    results = [m for m in state.messages if isinstance(m, lw.ToolMessage)][:3]
    assert [r.tool_call_id for r in results] == ["c0", "c1", "c2"]
    assert [r.content for r in results] == [
        "page a token=[REDACTED]",
        "not the admin page",
        "page b token=[REDACTED]",
    ]
    assert not files_holding(tmp_path, SECRET)


async def test_the_iterative_agent_sends_the_edited_request() -> None:
    class Shout(lw.Hooks):
        async def before_model(self, request: lw.ModelRequest) -> lw.ModelRequest:
            shout = lw.UserMessage(content="LOUDER")
            return dataclasses.replace(request, messages=[*request.messages, shout])

    seen: list[list[str]] = []

    def responder(messages: Sequence[lw.ChatMessage], tools: Any, config: Any) -> Any:
        seen.append([m.text for m in messages])
        return call("submit", {"answer": "ok"})

    agent = lw.iterative(tools=[lw.submit()], nudge="next", hooks=[Shout()])
    model = lw.get_model("mock", outputs=responder)
    state = await lw.run(agent, "go", model=model, db=False)
    assert seen == [["go", "next", "LOUDER"]]
    assert state.completed == "submit" and "LOUDER" not in [m.text for m in state.messages]
