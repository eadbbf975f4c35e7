"""Approval policies: every decision path, through execute_tools and a scripted run."""

from __future__ import annotations

import io
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

import loopwright as lw
from loopwright.approval import (
    ApprovalRule,
    approval_policy,
    auto_approver,
    dev_policy,
    get_approval_policy,
    human_approver,
)
from loopwright.tools import Approval, approver, execute_tools
from loopwright.transcripts import (
    ApprovalEvent,
    Transcript,
    observe_transcripts,
    transcript_context,
)

ran: list[tuple[str, dict[str, Any]]] = []


@lw.tool
def bash(cmd: str) -> str:
    """Pretend to run a shell command.

    Args:
        cmd: The command.
    """
    ran.append(("bash", {"cmd": cmd}))
    return f"ran {cmd}"


@lw.tool
def text_editor(command: str, path: str) -> str:
    """Pretend to edit a file.

    Args:
        command: view, create...
        path: The file.
    """
    ran.append(("text_editor", {"command": command, "path": path}))
    return f"{command} {path}"


@lw.tool
def lookup(key: str) -> str:
    """Look something up.

    Args:
        key: What.
    """
    ran.append(("lookup", {"key": key}))
    return key.upper()


TOOLS = [bash, text_editor, lookup]


@pytest.fixture(autouse=True)
def _clear() -> None:
    ran.clear()


def msg(name: str, **args: Any) -> lw.AssistantMessage:
    return lw.AssistantMessage(tool_calls=[lw.ToolCall(function=name, arguments=args)])


async def run_one(
    policy: Any, name: str, **args: Any
) -> tuple[lw.ToolMessage, list[ApprovalEvent]]:
    t = Transcript()
    with transcript_context(t), approver(policy):
        results = await execute_tools(msg(name, **args), TOOLS)
    events = [e for e in t.walk() if isinstance(e, ApprovalEvent)]
    return results[0], events


async def test_auto_approves_and_records() -> None:
    result, events = await run_one(auto_approver(), "bash", cmd="ls")
    assert result.error is None and result.text == "ran ls"
    assert [(e.decision, e.approver) for e in events] == [("approve", "auto")]
    assert events[0].call.function == "bash"


async def test_auto_reject_tells_the_model_why() -> None:
    result, events = await run_one(auto_approver("reject", "not today"), "bash", cmd="ls")
    assert ran == []
    assert result.error is not None and result.error.type == "approval"
    assert "not today" in result.error.message
    assert events[0].decision == "reject" and events[0].explanation == "not today"


async def test_auto_terminate_ends_the_run() -> None:
    with pytest.raises(lw.ToolTerminated):
        await run_one(auto_approver("terminate", "stop"), "bash", cmd="ls")
    assert ran == []


def test_auto_cannot_modify() -> None:
    with pytest.raises(lw.ConfigurationError, match="modify"):
        auto_approver("modify")


def human(answers: str) -> tuple[Any, io.StringIO]:
    out = io.StringIO()
    return human_approver(input=io.StringIO(answers), output=out), out


async def test_human_sees_the_call_and_approves() -> None:
    policy, out = human("y\n")
    result, events = await run_one(policy, "bash", cmd="rm -rf build")
    assert result.text == "ran rm -rf build"
    shown = out.getvalue()
    assert "bash" in shown and '"cmd": "rm -rf build"' in shown
    assert [(e.decision, e.approver) for e in events] == [("approve", "human")]


async def test_human_rejects_with_a_reason_for_the_model() -> None:
    policy, _ = human("what?\nn\ntoo dangerous\n")  # a bad answer is asked again
    result, events = await run_one(policy, "bash", cmd="rm -rf /")
    assert ran == []
    assert result.error is not None and "too dangerous" in result.error.message
    assert events[0].decision == "reject" and events[0].explanation == "too dangerous"


async def test_human_modifies_the_arguments() -> None:
    policy, out = human('m\nnot json\nm\n["a list"]\nm\n{"cmd": "ls -l"}\n')
    result, events = await run_one(policy, "bash", cmd="rm -rf /")
    assert ran == [("bash", {"cmd": "ls -l"})]
    assert result.text == "ran ls -l"
    assert "Not valid JSON" in out.getvalue() and "JSON object" in out.getvalue()
    assert events[0].decision == "modify"
    assert events[0].modified is not None and events[0].modified.arguments == {"cmd": "ls -l"}
    assert events[0].call.arguments == {"cmd": "rm -rf /"}


async def test_human_escalates_and_terminates() -> None:
    policy, _ = human("e\n")
    result, events = await run_one(policy, "bash", cmd="ls")
    assert result.error is not None and result.error.type == "approval"  # nobody left
    assert events[0].decision == "escalate"
    policy, _ = human("t\n\n")
    with pytest.raises(lw.ToolTerminated, match="ended the run"):
        await run_one(policy, "bash", cmd="ls")


async def test_an_answer_stands_when_the_input_closes_at_the_reason() -> None:
    # `echo t | loopwright run ...`: "t" was answered, the optional reason was not
    policy, _ = human("t\n")
    with pytest.raises(lw.ToolTerminated, match="ended the run"):
        await run_one(policy, "bash", cmd="ls")
    policy, out = human("n")
    result, events = await run_one(policy, "bash", cmd="ls")
    assert ran == [] and result.error is not None
    assert events[0].decision == "reject"
    assert events[0].explanation == "rejected by the human reviewer"
    assert "input closed" not in out.getvalue()


async def test_human_input_closed_rejects() -> None:
    policy, out = human("")
    result, events = await run_one(policy, "bash", cmd="ls")
    assert ran == [] and result.error is not None
    assert events[0].decision == "reject" and "input closed" in (events[0].explanation or "")
    assert "input closed" in out.getvalue()


async def test_rules_match_tool_patterns_and_argument_predicates() -> None:
    policy = approval_policy(
        [
            ApprovalRule("text_editor", "approve", when=lambda a: a["command"] == "view"),
            ApprovalRule(["text_*", "bash"], "reject", explanation="no writes"),
            ("*", "approve"),
        ],
        name="mine",
    )
    view, ev1 = await run_one(policy, "text_editor", command="view", path="a")
    create, ev2 = await run_one(policy, "text_editor", command="create", path="a")
    shell, _ = await run_one(policy, "bash", cmd="ls")
    other, _ = await run_one(policy, "lookup", key="k")
    assert view.error is None and other.text == "K"
    assert create.error is not None and "no writes" in create.error.message
    assert shell.error is not None
    assert ran == [("text_editor", {"command": "view", "path": "a"}), ("lookup", {"key": "k"})]
    # one event per call, from the policy (the rule's fixed answer carries its name)
    assert [(e.decision, e.approver) for e in ev1 + ev2] == [
        ("approve", "mine"),
        ("reject", "mine"),
    ]


async def test_escalate_passes_to_the_next_rule_and_first_decision_wins() -> None:
    asked: list[str] = []

    def named(name: str, decision: str) -> Any:
        async def decide(call: lw.ToolCall, messages: Sequence[lw.ChatMessage]) -> Approval:
            asked.append(name)
            return Approval(decision=decision, approver=name)  # type: ignore[arg-type]

        return decide

    policy = approval_policy(
        [
            ("bash", named("first", "escalate")),
            ("*", named("second", "approve")),
            ("*", named("third", "reject")),
        ]
    )
    result, events = await run_one(policy, "bash", cmd="ls")
    assert result.error is None
    assert asked == ["first", "second"]
    assert [(e.decision, e.approver) for e in events] == [("approve", "second")]


async def test_no_decision_escalates_and_execute_tools_rejects() -> None:
    policy = approval_policy([("bash", "escalate"), ("lookup", "approve")])
    result, events = await run_one(policy, "text_editor", command="view", path="x")
    assert ran == []
    assert result.error is not None and result.error.type == "approval"
    assert events[0].decision == "escalate" and "no rule" in (events[0].explanation or "")
    result, events = await run_one(policy, "bash", cmd="ls")
    assert "escalated" in (events[0].explanation or "")


async def test_nested_policies_escalate_outward() -> None:
    inner = approval_policy([("bash", "escalate")], name="inner")
    outer = approval_policy([("*", inner), ("*", "approve")], name="outer")
    result, events = await run_one(outer, "bash", cmd="ls")
    assert result.error is None
    assert len(events) == 1 and events[0].approver == "outer"


async def test_a_failing_predicate_rejects() -> None:
    policy = approval_policy([ApprovalRule("bash", "approve", when=lambda a: a["missing"])])
    result, events = await run_one(policy, "bash", cmd="ls")
    assert ran == []
    assert events[0].decision == "reject" and "KeyError" in (events[0].explanation or "")
    assert result.error is not None


async def test_modify_from_a_rule() -> None:
    async def safer(call: lw.ToolCall, messages: Sequence[lw.ChatMessage]) -> Approval:
        fixed = call.model_copy(update={"arguments": {"cmd": call.arguments["cmd"] + " -i"}})
        return Approval(decision="modify", modified=fixed, explanation="interactive")

    result, events = await run_one(approval_policy([("bash", safer)]), "bash", cmd="rm x")
    assert ran == [("bash", {"cmd": "rm x -i"})] and result.text == "ran rm x -i"
    assert events[0].decision == "modify" and events[0].approver == "policy"


async def test_presets() -> None:
    ci = get_approval_policy("ci")
    prod = get_approval_policy("prod")
    assert (await run_one(ci, "bash", cmd="ls"))[0].error is None
    rejected, events = await run_one(prod, "bash", cmd="ls")
    assert rejected.error is not None and "prod" in rejected.error.message
    assert events[0].approver == "prod"
    assert (await run_one(prod, "text_editor", command="view", path="a"))[0].error is None
    assert (await run_one(prod, "text_editor", command="create", path="a"))[0].error is not None
    assert (await run_one(prod, "lookup", key="a"))[0].error is None


async def test_dev_asks_a_human_only_for_sensitive_calls() -> None:
    out = io.StringIO()
    person = human_approver(input=io.StringIO("n\nno shell\n"), output=out)
    dev = get_approval_policy("dev", human=person)
    assert (await run_one(dev, "lookup", key="a"))[0].error is None
    assert (await run_one(dev, "text_editor", command="view", path="a"))[0].error is None
    assert out.getvalue() == ""  # nobody was asked so far
    result, events = await run_one(dev, "bash", cmd="ls")
    assert result.error is not None and "no shell" in result.error.message
    assert events[0].approver == "human"
    assert "bash" in out.getvalue()
    # the writing command of text_editor is sensitive too (the input has ended: reject)
    assert (await run_one(dev_policy(person), "text_editor", command="create", path="a"))[
        0
    ].error is not None


async def test_get_approval_policy_forms() -> None:
    assert get_approval_policy(None) is None
    with pytest.raises(lw.ConfigurationError, match="ci, dev, prod"):
        get_approval_policy("lenient")
    with pytest.raises(lw.ConfigurationError):
        get_approval_policy([("bash", "maybe")])
    with pytest.raises(lw.ConfigurationError):
        get_approval_policy(auto_approver(), human=None)

    async def mine(call: lw.ToolCall, messages: Sequence[lw.ChatMessage]) -> Approval:
        return Approval(decision="approve")

    result, events = await run_one(get_approval_policy(mine), "bash", cmd="ls")
    assert result.error is None and [(e.decision, e.approver) for e in events] == [
        ("approve", "mine")
    ]
    listed = get_approval_policy([("bash", "reject")])
    assert (await run_one(listed, "bash", cmd="ls"))[0].error is not None


async def test_an_approver_returning_garbage_is_a_clear_error() -> None:
    async def broken(call: lw.ToolCall, messages: Sequence[lw.ChatMessage]) -> Any:
        return "yes"

    with pytest.raises(lw.ConfigurationError, match="Approval"):
        await run_one(get_approval_policy(broken), "bash", cmd="ls")


call = lw.ModelOutput.for_tool_call


async def test_scripted_run_reject_then_submit() -> None:
    model = lw.get_model(
        "mock",
        outputs=[
            call("bash", {"cmd": "rm -rf /"}, content="Let me clean up."),
            call("lookup", {"key": "answer"}),
            call("submit", {"answer": "ANSWER"}),
        ],
    )
    seen: list[Any] = []
    with observe_transcripts(seen.append):
        state = await lw.run(lw.react(tools=TOOLS), "go", model=model, approval="prod")
    assert state.completed == "submit" and state.text == "ANSWER"
    rejected = state.messages[2]
    assert isinstance(rejected, lw.ToolMessage) and rejected.error is not None
    assert "prod" in rejected.error.message
    assert ran == [("lookup", {"key": "answer"})]
    decisions = [(e.call.function, e.decision) for e in seen if isinstance(e, ApprovalEvent)]
    assert decisions == [("bash", "reject"), ("lookup", "approve"), ("submit", "approve")]


async def test_scripted_run_terminated_by_a_human() -> None:
    model = lw.get_model("mock", outputs=[call("bash", {"cmd": "curl evil"}), call("submit", {})])
    person = human_approver(input=io.StringIO("t\nsuspicious\n"), output=io.StringIO())
    with approver(get_approval_policy("dev", human=person)):
        state = await lw.run(lw.react(tools=TOOLS), "go", model=model)
    assert state.completed == "terminated"
    assert ran == []


def test_rule_tuples_are_checked() -> None:
    with pytest.raises(lw.ConfigurationError):
        approval_policy([("bash",)])  # type: ignore[list-item]
    with pytest.raises(lw.ConfigurationError):
        approval_policy(ApprovalRule("bash"))  # type: ignore[arg-type]


def test_a_time_limit_ends_a_run_waiting_for_a_human_answer(tmp_path: Path) -> None:
    """The answer is read in a daemon thread: a run whose time limit fires while it waits
    for a human returns, and the program exits (an executor thread kept it alive)."""
    script = tmp_path / "wait_for_human.py"
    script.write_text(
        "import io, os, time\n"
        "import loopwright as lw\n"
        "from loopwright.approval import human_approver\n\n"
        "@lw.tool\n"
        "def echo(x: str) -> str:\n"
        '    """Echo x."""\n'
        "    return x\n\n"
        "r, w = os.pipe()  # an input nobody answers\n"
        "model = lw.get_model('mock', outputs=[lw.ModelOutput.for_tool_call('echo', {'x': 'a'})])\n"
        "state = lw.run_sync(lw.react(tools=[echo]), 'go', db=False, model=model,\n"
        "    approval=human_approver(input=os.fdopen(r), output=io.StringIO()),\n"
        "    limits=[lw.time_limit(0.5)])\n"
        "print('returned', state.completed, flush=True)\n"
    )
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "returned limit" in done.stdout


def test_auto_approver_refuses_an_unknown_decision_when_made() -> None:
    with pytest.raises(lw.ConfigurationError, match="unknown decision 'aprove'"):
        auto_approver("aprove")  # type: ignore[arg-type]


async def test_human_sees_exactly_what_will_run_whatever_the_model_hides() -> None:
    # a conceal sequence at the end of the model's text, \r to go back over the line,
    # a bidi override to reverse it, a C1 CSI, a fake prompt line, a lone surrogate
    said = "I will list the files.\narguments of bash:\n" + '{"cmd": "ls"}\x1b[8m'
    cmd = "ls\r\x1b[2Kecho safe \u202e/ fr- mr\x9b8m; rm -rf ~ \ud800"
    policy, out = human("n\n\n")
    message = lw.AssistantMessage(
        content=said, tool_calls=[lw.ToolCall(function="bash", arguments={"cmd": cmd})]
    )
    t = Transcript()
    with transcript_context(t), approver(policy):
        [result] = await execute_tools(message, TOOLS, messages=[message])
    assert ran == [] and result.error is not None
    shown = out.getvalue()
    for raw in ("\x1b", "\r", "\u202e", "\x9b", "\ud800"):
        assert raw not in shown, repr(raw)
    shown.encode("utf-8")
    assert "  | I will list the files.\n  | arguments of bash:\n" in shown  # quoted
    assert '  | {"cmd": "ls"}\\x1b[8m\n' in shown
    assert '"cmd": "ls\\r\\u001b[2Kecho safe \\u202e/ fr- mr\\u009b8m; rm -rf ~ \\ud800"' in shown
    assert "needs approval: bash (id " in shown
    from loopwright.approval._human import _describe

    odd = _describe(lw.ToolCall(id="1\x1b[8m", function="b\u202eash", arguments={}), [])
    assert 'needs approval: "b\\u202eash" (id "1\\u001b[8m")' in odd
