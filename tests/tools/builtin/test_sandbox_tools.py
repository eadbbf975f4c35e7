"""bash, python, text_editor and files in a real bwrap sandbox, through execute_tools
and a scripted agent."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

import loopwright as lw
from loopwright.sandboxes import SandboxEnvironment, SandboxError, SandboxLimits, use_sandbox
from loopwright.tools import Tool, execute_tools
from loopwright.tools.builtin import bash, files, python, text_editor
from tests.sandboxes.conftest import BWRAP_PROBLEM, exists

pytestmark = pytest.mark.skipif(
    BWRAP_PROBLEM is not None, reason=f"bubblewrap cannot run here: {BWRAP_PROBLEM}"
)


@pytest.fixture
async def sb() -> AsyncIterator[SandboxEnvironment]:
    async with use_sandbox("bwrap", limits=SandboxLimits(max_output_bytes=50_000)) as env:
        yield env


async def call(tools: list[Tool[..., Any]], name: str, **args: Any) -> lw.ToolMessage:
    message = lw.AssistantMessage(tool_calls=[lw.ToolCall(function=name, arguments=args)])
    (result,) = await execute_tools(message, tools, max_output=0)
    return result


def ok(result: lw.ToolMessage) -> str:
    assert result.error is None, result.error
    return result.text


def failed(result: lw.ToolMessage, kind: str = "tool_error") -> str:
    assert result.error is not None, f"expected an error, got {result.text!r}"
    assert result.error.type == kind, result.error
    return result.error.message


# Each test installs the sandbox itself: the fixture's context does not reach the test.
async def test_bash_runs_commands_and_reports_failures(sb: SandboxEnvironment) -> None:
    async with use_sandbox(sb):
        tools = [bash(timeout=2)]
        assert ok(await call(tools, "bash", cmd="echo hi; echo err >&2")) == "hi\nerr\n"
        assert ok(await call(tools, "bash", cmd="echo kept > f.txt")) == ""
        assert ok(await call(tools, "bash", cmd="cat f.txt")) == "kept\n"
        message = failed(await call(tools, "bash", cmd="echo partial; ls /nonexistent; exit 3"))
        assert "exit code 3" in message
        assert "partial" in message and "No such file or directory" in message
        slow = failed(await call(tools, "bash", cmd="echo started; sleep 30"))
        assert "timed out after 2 seconds" in slow and "started" in slow
        flood = failed(await call(tools, "bash", cmd="yes; echo never"))
        assert "printed too much" in flood and "[output truncated" in flood
        assert flood.count("y\n") > 1000  # the part that was kept


async def test_python_runs_code_and_shows_tracebacks(sb: SandboxEnvironment) -> None:
    async with use_sandbox(sb):
        tools = [python(timeout=5)]
        assert ok(await call(tools, "python", code="print(6 * 7)")) == "42\n"
        big = "x = 0\n" + "x += 1\n" * 20_000 + "print(x)"
        assert ok(await call(tools, "python", code=big)) == "20000\n"
        message = failed(await call(tools, "python", code="print('before')\n1 / 0"))
        assert "before" in message and "ZeroDivisionError" in message
        assert "exit code 1" in message
        escape = failed(await call(tools, "python", code="open('/root/x', 'w')"))
        assert "Error" in escape


async def test_text_editor_edits_with_undo(sb: SandboxEnvironment) -> None:
    async with use_sandbox(sb):
        tools = [text_editor()]
        te = "text_editor"
        text = "def f():\n    return 1\n\nprint(f())\n"
        assert "Created" in ok(await call(tools, te, command="create", path="m.py", file_text=text))
        view = ok(await call(tools, te, command="view", path="m.py"))
        assert "     1\tdef f():" in view and "     4\tprint(f())" in view
        part = ok(await call(tools, te, command="view", path="m.py", view_range=[2, -1]))
        assert "     2\t    return 1" in part and "def f" not in part
        failed(await call(tools, te, command="view", path="m.py", view_range=[9, 10]))
        edited = ok(
            await call(tools, te, command="str_replace", path="m.py", old_str="1", new_str="2")
        )
        assert "return 2" in edited
        assert await sb.read_file("m.py") == text.replace("return 1", "return 2")
        assert "not found" in failed(
            await call(tools, te, command="str_replace", path="m.py", old_str="nope")
        )
        twice = failed(await call(tools, te, command="str_replace", path="m.py", old_str="f()"))
        assert "2 times" in twice and "lines 1, 4" in twice
        ok(await call(tools, te, command="insert", path="m.py", insert_line=0, new_str="# top"))
        assert (await sb.read_file("m.py")).startswith("# top\ndef f():")
        failed(await call(tools, te, command="insert", path="m.py", insert_line=99, new_str="x"))
        ok(await call(tools, te, command="undo_edit", path="m.py"))  # the insert
        ok(await call(tools, te, command="undo_edit", path="m.py"))  # the replace
        assert await sb.read_file("m.py") == text
        ok(await call(tools, te, command="undo_edit", path="m.py"))  # the create
        assert "No such file" in failed(
            await call(tools, te, command="view", path="m.py"), "file_not_found"
        )
        failed(await call(tools, te, command="undo_edit", path="m.py"))
        listing = ok(await call(tools, te, command="view", path="."))
        assert "/workspace" in listing or "empty" in listing
        failed(await call(tools, te, command="create", path="x.py"))  # no file_text
        failed(await call(tools, te, command="create", path="/etc/x", file_text="x"), "permission")
        await sb.write_file("bin.dat", b"\xff\xfe\x00")
        assert "UTF-8" in failed(await call(tools, te, command="view", path="bin.dat"))


async def test_files_reads_writes_and_lists(sb: SandboxEnvironment) -> None:
    async with use_sandbox(sb):
        tools = [files()]
        assert "Wrote 5 bytes" in ok(
            await call(tools, "files", action="write", path="d/a.txt", content="hello")
        )
        assert ok(await call(tools, "files", action="read", path="d/a.txt")) == "hello"
        assert "a.txt" in ok(await call(tools, "files", action="list", path="d"))
        failed(await call(tools, "files", action="read", path="missing.txt"), "file_not_found")
        failed(await call(tools, "files", action="list", path="missing"), "file_not_found")
        assert "folder" in failed(await call(tools, "files", action="read", path="d"))
        failed(await call(tools, "files", action="write", path="x.txt"))  # no content
        failed(await call(tools, "files", action="delete", path="x.txt"), "validation")


async def test_tools_without_a_sandbox_raise() -> None:
    with pytest.raises(SandboxError, match="use_sandbox"):
        await call([bash()], "bash", cmd="true")


call_ = lw.ModelOutput.for_tool_call

PROGRAM = "import math\nwith open('result.txt', 'w') as f:\n    f.write(str(math.factorial(20)))\n"


async def test_scripted_agent_writes_runs_reads_and_submits() -> None:
    model = lw.get_model(
        "mock",
        outputs=[
            call_("text_editor", {"command": "create", "path": "fact.py", "file_text": PROGRAM}),
            call_("bash", {"cmd": "python3 fact.py && ls"}),
            call_("bash", {"cmd": "cat /root/.bashrc && echo LEAKED"}),
            call_("files", {"action": "read", "path": "result.txt"}),
            call_("python", {"code": "print(open('result.txt').read()[::-1])"}),
            call_("submit", {"answer": "2432902008176640000"}),
        ],
    )
    agent = lw.react(tools=[bash(), python(), text_editor(), files()])
    async with use_sandbox() as sb:
        state = await lw.run(agent, "Compute 20! with a program.", model=model)
        assert await sb.read_file("result.txt") == "2432902008176640000"
    assert state.completed == "submit" and state.text == "2432902008176640000"
    results = [m for m in state.messages if isinstance(m, lw.ToolMessage)]
    assert "result.txt" in results[1].text
    assert results[2].error is not None  # the escape attempt failed
    assert "No such file" in results[2].error.message and "LEAKED" not in results[2].text
    assert results[3].text == "2432902008176640000"
    assert results[4].text == "0000466718002092342\n"


async def test_scripted_agent_under_the_prod_policy() -> None:
    model = lw.get_model(
        "mock",
        outputs=[
            call_("bash", {"cmd": "echo pwned > x"}),
            call_("text_editor", {"command": "view", "path": "."}),
            call_("submit", {"answer": "done"}),
        ],
    )
    agent = lw.react(tools=[bash(), text_editor()])
    async with use_sandbox() as sb:
        # run() installs the policy (and the given sandbox) for the run
        state = await lw.run(agent, "go", model=model, approval="prod", sandbox=sb)
        with pytest.raises(FileNotFoundError):
            await sb.read_file("x")
    results = [m for m in state.messages if isinstance(m, lw.ToolMessage)]
    assert results[0].error is not None and results[0].error.type == "approval"
    assert results[1].error is None
    assert state.text == "done"


async def test_run_creates_and_cleans_up_its_own_sandbox() -> None:
    roots: list[str] = []

    @lw.tool
    def where() -> str:
        """Say where the sandbox lives on the host."""
        roots.append(lw.sandbox().root)  # type: ignore[attr-defined]
        return "noted"

    model = lw.get_model(
        "mock",
        outputs=[
            call_("bash", {"cmd": "pwd; id -u"}),
            call_("where"),
            call_("submit", {"answer": "x"}),
        ],
    )
    state = await lw.run(lw.react(tools=[bash(), where]), "go", model=model, sandbox="bwrap")
    results = [m for m in state.messages if isinstance(m, lw.ToolMessage)]
    assert results[0].text == "/workspace\n1000\n"
    assert len(roots) == 1 and not exists(roots[0])
    with pytest.raises(SandboxError):
        lw.sandbox()
