"""A run whose ``bash`` calls an approval policy defers, for the tests of deferred
approval across processes.

``python _deferred_agent.py start DB EFFECTS [COMMAND or @FILE]``: runs the agent until the
policy defers its call, prints the state as JSON and exits.
``python _deferred_agent.py continue DB EFFECTS RUN_ID [POLICY]``: continues the run
(``lw.resume``) with the ``defer`` policy (or ``reject-bash``: one that rejects bash).

The tool's side effect is a line appended to EFFECTS: the tests count them. The model
is a scripted responder: it calls ``bash`` with COMMAND, then answers with the tool's
result (or error) once it has one.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import loopwright as lw

EFFECTS = Path(sys.argv[3])


@lw.tool
def bash(cmd: str) -> str:
    """Run a command (here: record that it ran).

    Args:
        cmd: The command.
    """
    with EFFECTS.open("a") as f:
        f.write(cmd + "\n")
    return f"ran {cmd}"


def responder(command: str) -> Any:
    def answer(messages: list[lw.ChatMessage], tools: Any, config: Any) -> lw.ModelOutput:
        last = messages[-1]
        if isinstance(last, lw.ToolMessage):
            return lw.ModelOutput.from_text(f"result: {last.text}")
        return lw.ModelOutput.for_tool_call("bash", {"cmd": command}, tool_call_id="call-1")

    return answer


def policy(name: str) -> Any:
    if name == "reject-bash":
        return lw.approval_policy([("bash", "reject"), ("*", "approve")], name="strict")
    return lw.defer_approval("bash")


def main() -> None:
    mode, db = sys.argv[1], sys.argv[2]
    if mode == "start":
        command = sys.argv[4] if len(sys.argv) > 4 else "touch done"
        if command.startswith("@"):  # (a command too long for an argument)
            command = Path(command[1:]).read_bytes().decode("utf-8")
        model = lw.get_model("mock", outputs=responder(command))
        agent = lw.react(tools=[bash], submit=False, max_steps=5)
        state = lw.run_sync(agent, "do it", model=model, db=db, approval=policy("defer"))
    else:
        run_id = sys.argv[4]
        name = sys.argv[5] if len(sys.argv) > 5 else "defer"
        model = lw.get_model("mock", outputs=responder("unused"))
        agent = lw.react(tools=[bash], submit=False, max_steps=5, model=model)
        state = asyncio.run(lw.resume(run_id, agent=agent, db=db, approval=policy(name)))
    print(
        json.dumps(
            {
                "run_id": state.run_id,
                "completed": state.completed,
                "text": state.text,
                "pending": [p.call.id for p in state.pending],
            }
        )
    )


if __name__ == "__main__":
    main()
