"""A task whose samples end three ways: ``s0`` answers, a hook stops ``s1``
(``lw.StopRun``) before its first step, and ``s2``'s ``bash`` call is deferred by the
task's approval policy (``-T approve=true``: a policy that approves it instead).

Loaded by file (``_status_task.py@statuses``) in this process, by the ``loopwright``
command and by Ray workers. What the model, the hook and the tool do is appended to the
file ``$STATUS_CALLS`` (when set): the tests count what ran again.
"""

from __future__ import annotations

import os
from typing import Any

import loopwright as lw


def note(line: str) -> None:
    path = os.environ.get("STATUS_CALLS")
    if path:
        with open(path, "a") as f:
            f.write(line + "\n")


def question(messages: Any) -> str:
    return str(next(m.content for m in messages if m.role == "user"))


class StopOnOnes(lw.Hooks):
    """Stops the sample asking 1+1, before its first step."""

    async def on_step_start(self, state: lw.AgentState) -> None:
        if question(state.messages) == "1+1":
            note("hook 1+1")
            raise lw.StopRun("budget spent on 1+1")


@lw.tool
def bash(cmd: str) -> str:
    """Run a command.

    Args:
        cmd: The command.
    """
    note(f"bash {cmd}")
    return "4"


def answer(messages: Any, tools: Any, config: Any) -> lw.ModelOutput:
    q = question(messages)
    note(f"model {q}")
    if q == "2+2" and not any(m.role == "tool" for m in messages):
        return lw.ModelOutput.for_tool_call("bash", {"cmd": "echo 4"}, tool_call_id="call-2")
    a, b = (int(x) for x in q.split("+"))
    return lw.ModelOutput.from_text(f"The answer is {a + b}.")


@lw.task
def statuses(stop: bool = True, approve: bool = False) -> lw.Task:
    data = [{"id": f"s{i}", "input": f"{i}+{i}", "target": str(2 * i)} for i in range(3)]
    approving = lw.approval_policy([("bash", "approve")])
    policy: Any = approving if approve else lw.defer_approval("bash")
    hooks = [StopOnOnes()] if stop else []
    return lw.Task(
        data,
        agent=lw.react(tools=[bash], submit=False, hooks=hooks),
        scorer=lw.match("numeric"),
        model=lw.get_model("mock", outputs=answer),
        approval=policy,
    )
