"""``loopwright runs replay RUN --agent file.py:agent``: a replay and a fork from the shell."""

from __future__ import annotations

from pathlib import Path

import loopwright as lw
from tests.cli._cli import cli

AGENT = '''
import loopwright as lw

@lw.tool
def add(a: int, b: int) -> int:
    """Add two numbers.

    Args:
        a: First.
        b: Second.
    """
    return a + b

agent = lw.react(name="adder", prompt=PROMPT, tools=[add])
'''


def agent_file(where: Path, prompt: str) -> str:
    path = where / "agent.py"
    path.write_text(AGENT.replace("PROMPT", repr(prompt)), encoding="utf-8")
    return f"{path}:agent"


async def test_replay_and_fork_from_the_command_line(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    hostile = "You add.\x1b[31m\x07"
    spec = agent_file(tmp_path, hostile)
    from loopwright._imports import import_file

    agent = import_file(Path(spec.rpartition(":")[0]), "test_replay_agent_").agent
    outputs = [lw.ModelOutput.for_tool_call("add", {"a": 1, "b": 2}), "three"]
    model = lw.get_model(
        "mock", outputs=[*outputs, lw.ModelOutput.for_tool_call("submit", {"answer": "3"})]
    )
    state = await lw.run(agent, "1+2?", model=model, db=db)
    assert state.run_id is not None
    same = cli("runs", "replay", state.run_id, "--agent", spec, "--json", cwd=tmp_path, db=db)
    assert same.code == 0, same.err
    report = same.json()
    assert report["divergence"] is None and report["replayed_steps"] == 3
    assert report["replay_of"] == state.run_id and report["run_id"] != state.run_id

    other = agent_file(tmp_path, "You add, carefully.")
    differ = cli(
        "runs", "replay", state.run_id, "--agent", other, "--exit-code", cwd=tmp_path, db=db
    )
    assert differ.code == 4, differ.err
    assert "differs at step 1: the messages differ" in differ.out
    assert "You add." in differ.out and "\x1b" not in differ.out and "\x07" not in differ.out

    fork = cli(
        "runs", "replay", state.run_id, "--agent", other, "--until", "1",
        "-m", "mock", "-M", 'outputs=[{"tool": "submit", "arguments": {"answer": "4"}}]',
        "--json", cwd=tmp_path, db=db,
    )  # fmt: skip
    assert fork.code == 0, fork.err
    report = fork.json()
    assert (report["replayed_steps"], report["live_calls"], report["until"]) == (1, 1, 1)
    show = cli("runs", "show", report["run_id"], cwd=tmp_path, db=db)
    assert show.code == 0, show.err
    assert f"replay of {state.run_id}, forked after step 1" in show.out
    with lw.load_run(report["run_id"], db=db) as log:
        assert log.info.metadata["replay_of"] == state.run_id
        # step 1 (the add call and its result) from the store, then the live submit
        assert [m.content for m in log.messages() if m.role == "tool"] == ["3", "4"]
