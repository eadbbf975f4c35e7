"""Agent and tool versions: what changes them, what does not, and how runs record them."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import loopwright as lw
from loopwright.agents import _version
from loopwright.agents._version import agent_version, run_versions, tool_version
from tests.cli._cli import cli

SRC = str(Path(lw.__file__).parent.parent)

AGENT_MODULE = '''
import loopwright as lw

SCALE = 2

def helper(x):
    return x * SCALE

@lw.tool
def scale(x: int) -> int:
    """Scale x."""
    return helper(x)

class Loud(lw.Hooks):
    async def on_run_start(self, state):
        return None

agent = lw.react(
    name="scaler",
    prompt="Scale numbers.",
    tools=[scale],
    model="mock",
    config=lw.GenerateConfig(temperature=0.2),
    hooks=[Loud()],
)
'''


def versions_in_process(tmp_path: Path, source: str) -> dict[str, str]:
    """``run_versions(agent)`` of a module with ``source``, in a fresh process."""
    folder = tmp_path / f"m{abs(hash(source))}"
    folder.mkdir(exist_ok=True)
    (folder / "agentmod.py").write_text(textwrap.dedent(source))
    code = (
        f"import sys, json; sys.path.insert(0, {str(folder)!r}); import agentmod; "
        "from loopwright.agents._version import run_versions; "
        "print(json.dumps(run_versions(agentmod.agent)))"
    )
    env = {**os.environ, "PYTHONPATH": SRC}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120,
        env=env,
    )  # fmt: skip
    import json

    result: dict[str, str] = json.loads(out.stdout)
    return result


def test_versions_are_stable_across_processes_and_follow_what_changes(tmp_path: Path) -> None:
    base = versions_in_process(tmp_path, AGENT_MODULE)
    assert set(base) == {"agent", "tool:scale", "tool:submit"}
    assert versions_in_process(tmp_path / "..", AGENT_MODULE) == base
    # whitespace and comments change nothing
    spaced = AGENT_MODULE.replace("return x * SCALE", "return  x * SCALE  # scaled")
    assert versions_in_process(tmp_path, spaced) == base

    def changed(old: str, new: str) -> dict[str, str]:
        assert old in AGENT_MODULE
        return versions_in_process(tmp_path, AGENT_MODULE.replace(old, new))

    prompt = changed('prompt="Scale numbers."', 'prompt="Scale numbers twice."')
    assert prompt["agent"] != base["agent"] and prompt["tool:scale"] == base["tool:scale"]
    for old, new in [
        ("return x * SCALE", "return x * SCALE + 1"),  # a helper the tool calls
        ("SCALE = 2", "SCALE = 3"),  # a value it uses
        ('"""Scale x."""', '"""Scale x by the scale."""'),  # its description
    ]:
        v = changed(old, new)
        assert v["tool:scale"] != base["tool:scale"], old
        assert v["agent"] != base["agent"], old  # the agent offers the tool
        assert v["tool:submit"] == base["tool:submit"]
    assert changed("temperature=0.2", "temperature=0.7")["agent"] != base["agent"]
    assert changed('model="mock"', 'model="mock/other"')["agent"] != base["agent"]
    assert changed("return None", "\n        return None")["agent"] == base["agent"]
    assert changed("on_run_start(self, state)", "on_run_end(self, state, limit=None)")[
        "agent"
    ] != base["agent"]  # fmt: skip
    # an unrelated edit elsewhere in the module changes nothing
    assert versions_in_process(tmp_path, AGENT_MODULE + "\nOTHER = 5\n") == base


def test_a_closed_over_value_changes_a_tools_version() -> None:
    def make(limit: int) -> lw.Tool[..., int]:
        @lw.tool
        def cap(x: int) -> int:
            """Cap x."""
            return min(x, limit)

        return cap

    assert tool_version(make(3)) == tool_version(make(3))
    assert tool_version(make(3)) != tool_version(make(4))


def test_a_function_agent_and_handoffs_have_versions() -> None:
    @lw.agent
    async def echo(state: lw.AgentState) -> lw.AgentState:
        return state

    @lw.agent
    async def echo2(state: lw.AgentState) -> lw.AgentState:
        state.messages = state.messages[:1]
        return state

    assert agent_version(echo) != agent_version(echo2)
    a = lw.react(tools=[lw.handoff(echo)])
    b = lw.react(tools=[lw.handoff(echo2)])
    assert agent_version(a) != agent_version(b)
    # a cycle of handoffs is counted once
    first = lw.react(name="first")
    second = lw.react(name="second", tools=[lw.handoff(first)])
    first.handoffs["loop"] = lw.handoff(second, name="loop")
    assert len(agent_version(second)) == 16


async def test_runs_record_versions_and_diff_shows_them(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"

    @lw.tool
    def noop() -> str:
        """Do nothing."""
        return "ok"

    def agent(prompt: str) -> lw.ReactAgent:
        return lw.react(name="writer", prompt=prompt, tools=[noop], submit=False)

    runs = []
    for prompt in ("Write.", "Write.", "Write well."):
        state = await lw.run(
            agent(prompt), "go", model=lw.get_model("mock", outputs=["done"]), db=db
        )
        runs.append(state.run_id)
    with lw.load_run(runs[0], db=db) as log:
        recorded = log.info.metadata
    assert recorded["agent"] == "writer"
    assert recorded["versions"] == run_versions(agent("Write."))
    assert lw.diff_runs(runs[0], runs[1], db=db).versions == {}
    d = lw.diff_runs(runs[0], runs[2], db=db)
    assert set(d.versions) == {"agent"}  # the tools are the same
    assert d.versions["agent"][0] == recorded["versions"]["agent"]
    # the user's own metadata is kept beside them
    state = await lw.run(agent("Write."), "go", model="mock", db=db, metadata={"team": "x"})
    with lw.load_run(state.run_id, db=db) as log:
        assert log.info.metadata["team"] == "x" and "versions" in log.info.metadata

    # runs list filters by agent and version (a prefix); runs show prints them
    version = recorded["versions"]["agent"]
    found = lw.list_runs(db, agent="writer", version=version[:6])
    assert {r.id for r in found} == {runs[0], runs[1], state.run_id}
    assert lw.list_runs(db, agent="other") == []
    listed = cli(
        "runs", "list", "--agent", "writer", "--version", version, "--json", cwd=tmp_path, db=db
    )
    assert listed.code == 0 and {r["id"] for r in listed.json()} == {
        runs[0],
        runs[1],
        state.run_id,
    }
    other = cli("runs", "list", "--version", d.versions["agent"][1], "--json", cwd=tmp_path, db=db)
    assert [r["id"] for r in other.json()] == [runs[2]]
    shown = cli("runs", "show", runs[0], cwd=tmp_path, db=db)
    assert f"agent {version}" in shown.out and "tool:noop" in shown.out


def test_an_eval_records_its_agents_versions_and_diff_of_samples_shows_them(
    tmp_path: Path,
) -> None:
    db = tmp_path / "runs.db"
    ids = []
    for prompt in ("Answer.", "Answer briefly."):
        task = lw.Task(
            [{"id": "s1", "input": "q", "target": "ok"}],
            agent=lw.react(prompt=prompt, submit=False),
        )
        [result] = lw.eval(task, model=lw.get_model("mock", outputs=["ok"]), db=db)
        assert result.run_id is not None
        ids.append(result.run_id)
    with lw.load_run(ids[0], db=db) as log:
        recorded = log.info.metadata["versions"]
    assert set(recorded) == {"agent"}
    d = lw.diff_runs(ids[0], ids[1], db=db, sample="s1")
    assert d.divergence is None  # same replies, same tools
    assert list(d.versions) == ["agent"] and d.versions["agent"][0] == recorded["agent"]


async def test_versions_from_the_store_are_shown_without_control_sequences(
    tmp_path: Path,
) -> None:
    db = tmp_path / "runs.db"
    hostile = {"agent": "\x1b[2J\x1b]0;owned\x07abc", "tool:x\x1b[31m": "1" * 5000}
    state = await lw.run(
        lw.react(submit=False), "go", model="mock", db=db, metadata={"versions": hostile}
    )
    shown = cli("runs", "show", state.run_id, cwd=tmp_path, db=db)
    assert shown.code == 0 and "versions" in shown.out
    assert "\x1b" not in shown.out and "\x07" not in shown.out
    assert "1" * 1000 not in shown.out  # bounded
    assert lw.list_runs(db, version="\x1b[2J") == [state_info(db, state.run_id)]


def state_info(db: Path, run_id: str | None) -> lw.RunInfo:
    [info] = [r for r in lw.list_runs(db) if r.id == run_id]
    return info


def test_run_versions_digests_each_tool_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The agent's version counts its tools' versions: computed once for both."""

    @lw.tool
    def first(x: int) -> int:
        """First."""
        return x

    @lw.tool
    def second(x: int) -> int:
        """Second."""
        return -x

    agent = lw.react(tools=[first])
    expected = {
        "agent": agent_version(agent),
        **{f"tool:{t.name}": tool_version(t) for t in [*agent.offered, second]},
    }
    calls: list[str] = []
    real = _version.tool_version

    def counting(tool: lw.Tool[..., object]) -> str:
        calls.append(tool.name)
        return real(tool)

    monkeypatch.setattr(_version, "tool_version", counting)
    assert run_versions(agent, [second]) == expected
    assert sorted(calls) == sorted(["first", "submit", "second"])
