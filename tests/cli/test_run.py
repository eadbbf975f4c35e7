"""``loopwright run`` through the real entry point, with the scripted model."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

import loopwright as lw

from ._cli import cli, script

SLOW_TOOL = """
import time
import loopwright as lw

@lw.tool
def wait(seconds: float) -> str:
    '''Wait.

    Args:
        seconds: How long.
    '''
    time.sleep(seconds)
    return "waited"
"""


def test_help_texts(tmp_path: Path) -> None:
    top = cli("--help", cwd=tmp_path)
    assert top.code == 0
    for command in ("run", "eval", "runs", "models"):
        assert f"\n  {command} " in top.out
    run = cli("run", "--help", cwd=tmp_path)
    assert run.code == 0
    for option in (
        "--model", "-M, --model-arg", "--tool", "--sandbox", "--max-steps", "--time-limit",
        "--token-limit", "--protocol", "--approval", "--system", "--db", "--json",
    ):  # fmt: skip
        assert option in run.out, option
    text = " ".join(run.out.split())
    assert "Exit codes: 0 answered, 1 error" in text and "3 ended by a limit" in text
    assert "[native|react|json]" in run.out and "[ci|dev|prod|auto|human]" in run.out


def test_installed_console_script() -> None:
    script = Path(sys.executable).parent / "loopwright"
    if not script.exists():
        pytest.skip("the package's console script is not installed in this environment")
    import subprocess

    out = subprocess.run([str(script), "--version"], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == f"loopwright, version {lw.__version__}"


def test_python_dash_m_loopwright(tmp_path: Path) -> None:
    import subprocess

    from ._cli import env_for

    outputs = script(tmp_path / "s.json", ["Paris."])
    args = ["run", "Capital?", "-m", "mock", "-M", outputs, "-q"]
    out = subprocess.run(
        [sys.executable, "-m", "loopwright", *args],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env_for(tmp_path / "runs.db"),
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout == "Paris.\n"


def test_answer_recorded_in_the_run_store(tmp_path: Path) -> None:
    outputs = script(
        tmp_path / "s.json",
        [{"tool": "think", "arguments": {"thought": "2+2 is 4"}}, "The answer is 4."],
    )
    db = tmp_path / "store" / "runs.db"
    r = cli(
        "run", "What is 2+2?", "--model", "mock", "-M", outputs, "--tool", "think",
        "--db", str(db), "--system", "Be brief.",
        cwd=tmp_path,
    )  # fmt: skip
    assert r.code == 0, r.err
    assert r.out == "The answer is 4.\n"  # only the answer on stdout
    assert "think" in r.err and "step 2" in r.err  # the live steps, on stderr
    [run] = lw.list_runs(db)
    assert run.status == "success" and run.model == "mock" and run.input == "What is 2+2?"
    with lw.load_run(run.id, db=db) as log:
        roles = [m.role for m in log.messages()]
        assert roles == ["system", "user", "assistant", "tool", "assistant"]
        assert log.messages()[0].content == "Be brief."
    assert f"run {run.id}" in r.err


def test_json_output_shape(tmp_path: Path) -> None:
    outputs = script(tmp_path / "s.json", ["Paris."])
    r = cli("run", "Capital of France?", "-m", "mock", "-M", outputs, "--json", cwd=tmp_path)
    assert r.code == 0, r.err
    data = r.json()
    assert set(data) == {
        "status", "answer", "completed", "limit", "error", "run_id", "db", "model",
        "protocol", "steps", "usage", "exit_code",
    }  # fmt: skip
    assert data["status"] == "answered" and data["answer"] == "Paris."
    assert data["completed"] == "answer" and data["exit_code"] == 0 and data["steps"] == 1
    assert data["limit"] is None and data["error"] is None and data["model"] == "mock"
    assert data["protocol"] == "native"
    assert data["usage"]["total_tokens"] > 0
    assert data["db"] == str(tmp_path / "runs.db")  # $LOOPWRIGHT_DB
    assert lw.list_runs(data["db"])[0].id == data["run_id"]
    assert r.err == ""  # no live display with --json


def test_protocol_option(tmp_path: Path) -> None:
    outputs = script(tmp_path / "s.json", ["Final Answer: 4"])
    r = cli(
        "run", "2+2?", "-m", "mock", "-M", outputs, "--protocol", "react", "--json", cwd=tmp_path
    )
    assert r.code == 0 and r.json()["protocol"] == "react"


def bwrap_works() -> bool:
    async def probe() -> None:
        async with lw.use_sandbox("bwrap"):
            pass

    try:
        asyncio.run(probe())
    except lw.SandboxError:
        return False
    return True


@pytest.mark.parametrize("sandbox", ["local", None])
def test_sandbox_tools(tmp_path: Path, sandbox: str | None) -> None:
    if sandbox is None and not bwrap_works():
        pytest.skip("bubblewrap cannot run here (the default sandbox)")
    outputs = script(
        tmp_path / "s.json",
        [{"tool": "bash", "arguments": {"cmd": "echo hi > f.txt && cat f.txt && pwd"}}, "done"],
    )
    args = ["--sandbox", sandbox] if sandbox else []
    r = cli(
        "run", "Go", "-m", "mock", "-M", outputs, "--tool", "bash", *args, "--json", cwd=tmp_path
    )
    assert r.code == 0, r.err
    with lw.load_run(r.json()["run_id"], db=tmp_path / "runs.db") as log:
        [result] = [m for m in log.messages() if m.role == "tool"]
    assert result.content.startswith("hi\n")
    if sandbox is None:  # bwrap: a private /workspace, not a host folder
        assert result.content.split()[-1] == "/workspace"
    assert not (tmp_path / "f.txt").exists()  # not written in the current folder


def test_approval_policy_rejects(tmp_path: Path) -> None:
    outputs = script(
        tmp_path / "s.json",
        [{"tool": "bash", "arguments": {"cmd": "touch x"}}, "I was not allowed."],
    )
    r = cli(
        "run", "Go", "-m", "mock", "-M", outputs, "--tool", "bash", "--sandbox", "local",
        "--approval", "prod", "--json",
        cwd=tmp_path,
    )  # fmt: skip
    assert r.code == 0, r.err
    with lw.load_run(r.json()["run_id"], db=tmp_path / "runs.db") as log:
        [result] = [m for m in log.messages() if isinstance(m, lw.ToolMessage)]
        decisions = [e.decision for e in log.events() if isinstance(e, lw.ApprovalEvent)]
    assert result.error is not None and decisions == ["reject"]


def test_step_limit_exits_3(tmp_path: Path) -> None:
    outputs = script(tmp_path / "s.json", [{"tool": "think", "arguments": {"thought": "x"}}] * 5)
    r = cli(
        "run", "Think forever", "-m", "mock", "-M", outputs, "-t", "think",
        "--max-steps", "2", "--json",
        cwd=tmp_path,
    )  # fmt: skip
    assert r.code == 3, r.err
    data = r.json()
    assert data["status"] == "limit" and data["exit_code"] == 3
    assert data["limit"]["type"] == "step" and data["limit"]["limit"] == 2
    assert lw.list_runs(tmp_path / "runs.db")[0].status == "limit"


def test_time_limit_exits_3(tmp_path: Path) -> None:
    (tmp_path / "slow.py").write_text(SLOW_TOOL)
    outputs = script(tmp_path / "s.json", [{"tool": "wait", "arguments": {"seconds": 30}}])
    r = cli(
        "run", "Wait", "-m", "mock", "-M", outputs, "--tool", "slow.py:wait",
        "--time-limit", "0.5",
        cwd=tmp_path,
    )  # fmt: skip
    assert r.code == 3, r.err
    assert "stopped: time limit of 0.5 reached" in r.err


def test_token_limit_exits_3(tmp_path: Path) -> None:
    outputs = script(tmp_path / "s.json", [{"tool": "think", "arguments": {"thought": "x"}}] * 5)
    r = cli(
        "run", "Go", "-m", "mock", "-M", outputs, "-t", "think", "--token-limit", "1", "--json",
        cwd=tmp_path,
    )  # fmt: skip
    assert r.code == 3 and r.json()["limit"]["type"] == "token"


def test_model_error_exits_1_and_is_recorded(tmp_path: Path) -> None:
    outputs = script(tmp_path / "s.json", [{"error": "the provider is down"}])
    r = cli("run", "Hi", "-m", "mock", "-M", outputs, cwd=tmp_path)
    assert r.code == 1
    assert "error: ModelAPIError: the provider is down" in r.err
    [run] = lw.list_runs(tmp_path / "runs.db")
    assert run.status == "error" and "the provider is down" in (run.error or "")
    j = cli("run", "Hi", "-m", "mock", "-M", outputs, "--json", cwd=tmp_path)
    assert j.code == 1 and j.json()["status"] == "error"
    assert "provider is down" in j.json()["error"]


def test_task_from_stdin(tmp_path: Path) -> None:
    outputs = script(tmp_path / "s.json", ["ok"])
    r = cli("run", "-", "-m", "mock", "-M", outputs, "--json", cwd=tmp_path, input="from stdin")
    assert r.code == 0
    assert lw.list_runs(tmp_path / "runs.db")[0].input == "from stdin"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["run"], "Missing argument 'TASK'"),
        (["run", "  "], "the task is empty"),
        (["run", "x", "--max-steps", "0"], "0 is not in the range x>=1"),
        (["run", "x", "--protocol", "xml"], "'xml' is not one of"),
        (["run", "x", "-m", "nosuch/model"], "unknown model provider 'nosuch'"),
        (["run", "x", "-m", "mock", "-M", "novalue"], "expected key=value"),
        (["run", "x", "-m", "mock", "-M", "outputs=@missing.json"], "cannot read"),
        (["run", "x", "-m", "mock", "-M", "outputs=[1]"], "expected a string or an object"),
        (["run", "x", "-m", "mock", "--tool", "hammer"], "unknown tool 'hammer'"),
        (["run", "x", "-m", "mock", "--tool", "nomodule_xyz:t"], "no module 'nomodule_xyz'"),
        (["nocommand"], "No such command 'nocommand'"),
    ],
)
def test_usage_errors_exit_2(tmp_path: Path, args: list[str], message: str) -> None:
    r = cli(*args, cwd=tmp_path)
    assert r.code == 2, (r.out, r.err)
    assert message in r.err
    assert not (tmp_path / "runs.db").exists()  # nothing ran, nothing recorded


def test_a_tool_file_may_import_its_neighbours_like_a_task_file(tmp_path: Path) -> None:
    from loopwright.cli._tools import resolve_tools

    (tmp_path / "helper_for_tools.py").write_text("FACTOR = 3\n")
    (tmp_path / "tools.py").write_text(
        "import loopwright as lw\n"
        "from helper_for_tools import FACTOR\n\n"
        "@lw.tool\n"
        "def triple(x: int) -> int:\n"
        '    """Triple x."""\n'
        "    return x * FACTOR\n"
    )
    [t] = resolve_tools([f"{tmp_path / 'tools.py'}:triple"])
    assert t.name == "triple" and t(2) == 6
    (tmp_path / "broken.py").write_text("import no_such_module_anywhere\n")
    with pytest.raises(lw.ConfigurationError, match=r"--tool .*broken.py: No module named"):
        resolve_tools([f"{tmp_path / 'broken.py'}:x"])
