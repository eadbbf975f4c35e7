"""``loopwright run`` through the real entry point, with the scripted model."""

from __future__ import annotations

import asyncio
import subprocess
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
    assert "[native|react|json]" in run.out and "[ci|dev|prod|defer|auto|human]" in run.out


def test_help_lists_the_commands_with_their_own_help_without_importing_them() -> None:
    """``loopwright --help`` shows each command's first help line from a table (so it
    need not import the commands, which load the library): the table is the truth."""
    import click

    from loopwright.cli._main import COMMANDS
    from loopwright.cli._main import cli as group

    ctx = click.Context(group)
    for name, (_, _, line) in COMMANDS.items():
        command = group.get_command(ctx, name)
        assert command is not None and command.get_short_help_str(limit=300) == line
    assert group.get_command(ctx, "nope") is None
    out = subprocess.run(
        [sys.executable, "-c", "import sys\nfrom loopwright.cli import main\nmain(['--help'])\n"
         "print(sorted(m for m in ('loopwright.model', 'loopwright.log', 'loopwright.agents',"
         " 'loopwright.evals', 'pydantic') if m in sys.modules))"],
        capture_output=True, text=True, check=True, timeout=60,
    )  # fmt: skip
    assert out.stdout.strip().splitlines()[-1] == "[]"


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
        "protocol", "steps", "usage", "cost", "unpriced_calls", "exit_code",
    }  # fmt: skip
    assert data["cost"] == 0.0 and data["unpriced_calls"] == 0  # the mock model is free
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
    assert "stopped: time limit reached: " in r.err and "(limit 0.5 s)" in r.err


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
        (["run", "x", "--max-steps", "-1"], "-1 is not in the range x>=0"),
        (["run", "x", "-m", "mock", "-G", "nope=1"], "unknown generation setting 'nope'"),
        (["run", "x", "-m", "mock", "-G", "temperature=hot"], "temperature: Input should be"),
        (["run", "x", "-m", "mock", "--max-tokens", "0"], "0 is not in the range x>=1"),
        (["run", "x", "-m", "openai/m", "-M", "temperature=0.2"], "give it with --temperature"),
        (["run", "x", "-m", "mock", "--tool", "tools.py:NUMBER"], "'int' object is not a tool"),
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
    (tmp_path / "tools.py").write_text("NUMBER = 3\n")
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


THINK = {"tool": "think", "arguments": {"thought": "x"}}


def test_a_run_has_a_default_step_bound_that_can_be_lifted(tmp_path: Path) -> None:
    forever = script(tmp_path / "forever.json", [THINK])
    r = cli(
        "run", "Go", "-m", "mock", "-M", forever, "-M", "repeat=true", "-t", "think", "-q",
        cwd=tmp_path,
    )  # fmt: skip
    assert r.code == 3, r.err
    assert "· 25 steps ·" in r.err and "--max-steps 0 lifts it" in r.err
    [run] = lw.list_runs(tmp_path / "runs.db")
    assert run.status == "limit" and run.limit is not None
    assert run.limit["type"] == "step" and run.limit["limit"] == 25
    thirty = script(tmp_path / "thirty.json", [THINK] * 30 + ["done"])
    lifted = cli(
        "run", "Go", "-m", "mock", "-M", thirty, "-t", "think", "--max-steps", "0", "--json",
        cwd=tmp_path,
    )  # fmt: skip
    assert lifted.code == 0, lifted.err
    assert lifted.json()["steps"] == 31 and lifted.json()["answer"] == "done"
    text = " ".join(cli("run", "--help", cwd=tmp_path).out.split())
    assert "[default: 25; x>=0]" in text and "0: no bound" in text


def test_every_failure_is_one_line_and_the_traceback_is_for_debug(tmp_path: Path) -> None:
    down = script(tmp_path / "down.json", [{"error": "the provider is down"}])
    r = cli("run", "Hi", "-m", "mock", "-M", down, cwd=tmp_path)
    assert r.code == 1
    assert r.err.count("the provider is down") == 1, r.err  # (was: three times)
    import sqlite3

    with sqlite3.connect(tmp_path / "app.db") as conn:
        conn.execute("CREATE TABLE users (name TEXT)")
    ok = script(tmp_path / "ok.json", ["fine"])
    app = cli("run", "Hi", "-m", "mock", "-M", ok, "--db", "app.db", cwd=tmp_path)
    assert app.code == 1 and app.out == ""
    [line] = app.err.splitlines()  # (was: a 20-line logged traceback, then the error twice)
    assert line.startswith("error: 'app.db' is a SQLite file but not a loopwright run store")
    assert "db=" not in line  # the command line has --db, not db=
    debug = cli("--debug", "run", "Hi", "-m", "mock", "-M", ok, "--db", "app.db", cwd=tmp_path)
    assert debug.code == 1 and "Traceback (most recent call last)" in debug.err
    assert debug.err.rstrip().endswith(line)


def test_ctrl_c_is_reported_as_interrupted(tmp_path: Path) -> None:
    import signal
    import subprocess
    import time

    from ._cli import env_for

    started = "    open('started', 'w').close()\n    time.sleep(seconds)"
    (tmp_path / "slow.py").write_text(SLOW_TOOL.replace("    time.sleep(seconds)", started))
    outputs = script(tmp_path / "s.json", [{"tool": "wait", "arguments": {"seconds": 30}}])
    proc = subprocess.Popen(
        [sys.executable, "-m", "loopwright.cli", "run", "Wait", "-m", "mock", "-M", outputs,
         "--tool", "slow.py:wait"],
        cwd=tmp_path, env=env_for(tmp_path / "runs.db"), text=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while not (tmp_path / "started").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    assert "interrupted" in err and "CancelledError" not in err and "error" not in err, err
    assert "✗ wait: cancelled" in err


def test_generation_settings_and_the_replay_model_reading_db(tmp_path: Path) -> None:
    outputs = script(tmp_path / "s.json", [THINK, "The answer is 4."])
    r = cli(
        "run", "2+2?", "-m", "mock", "-M", outputs, "-t", "think", "--temperature", "0.2",
        "--max-tokens", "7", "-G", "seed=3", "-G", 'stop_seqs=["END"]', "--db", "other.db",
        "--json",
        cwd=tmp_path,
    )  # fmt: skip
    assert r.code == 0, r.err
    run_id = r.json()["run_id"]
    with lw.load_run(run_id, db=tmp_path / "other.db") as log:
        configs = [e.config for e in log.events() if isinstance(e, lw.ModelEvent)]
    assert len(configs) == 2
    for config in configs:
        assert (config.temperature, config.max_tokens, config.seed) == (0.2, 7, 3)
        assert config.stop_seqs == ["END"]
    # the replay model reads the run from the command's --db (it needed -M db=)
    for model in (["-m", "replay", "-M", f"run={run_id}"], ["-m", f"replay/{run_id}"]):
        replay = cli(
            "run", "2+2?", *model, "-t", "think", "--db", "other.db", "--json", cwd=tmp_path
        )
        assert replay.code == 0, replay.err
        assert replay.json()["answer"] == "The answer is 4."


TOOLS_FILE = '''
import loopwright as lw

def add(a: int, b: int) -> int:
    """Add two numbers.

    Args:
        a: The first.
        b: The second.
    """
    return a + b

def made() -> list[lw.Tool]:
    @lw.tool
    def double(x: int) -> int:
        """Double x.

        Args:
            x: A number.
        """
        return 2 * x

    return [double]
'''


def test_a_plain_function_is_made_a_tool(tmp_path: Path) -> None:
    (tmp_path / "tools.py").write_text(TOOLS_FILE)
    outputs = script(
        tmp_path / "s.json",
        [
            {"tool": "add", "arguments": {"a": 2, "b": 3}},
            {"tool": "double", "arguments": {"x": 5}},
            "done",
        ],
    )
    r = cli(
        "run", "Go", "-m", "mock", "-M", outputs, "-t", "tools.py:add", "-t", "tools.py:made",
        "--json",
        cwd=tmp_path,
    )  # fmt: skip
    assert r.code == 0, r.err
    with lw.load_run(r.json()["run_id"], db=tmp_path / "runs.db") as log:
        results = [m.content for m in log.messages() if isinstance(m, lw.ToolMessage)]
    assert results == ["5", "10"]


HOSTILE = "4 \ud800\x1b[8m hidden\x1b]0;title\x07\r\u202eevil\x9b1m [bold red]x[/] :warning:"
SHOWN = r"4 \ud800\x1b[8m hidden\x1b]0;title\x07\r\u202eevil\x9b1m [bold red]x[/] :warning:"
RAW = ("\x1b", "\x07", "\r", "\u202e", "\x9b", "\ud800")


def test_a_hostile_answer_is_printed_escaped_and_does_not_fail(tmp_path: Path) -> None:
    outputs = script(tmp_path / "s.json", [{"tool": "think", "arguments": {}}, HOSTILE])
    r = cli("run", "Go", "-m", "mock", "-M", outputs, "-t", "think", cwd=tmp_path)
    assert r.code == 0, r.err
    assert r.out == SHOWN + "\n"
    assert SHOWN in r.err  # the live display
    for raw in RAW:
        assert raw not in r.out + r.err
    j = cli("run", "Go", "-m", "mock", "-M", outputs, "-t", "think", "--json", cwd=tmp_path)
    assert j.code == 0, j.err
    assert j.json()["answer"] == HOSTILE  # the JSON reads back exactly
    for raw in RAW:
        assert raw not in j.out


def test_the_approval_prompt_is_on_stderr_and_shows_what_will_run(tmp_path: Path) -> None:
    cmd = "echo safe\x1b[8m; rm -rf ~"
    outputs = script(
        tmp_path / "s.json",
        [{"tool": "bash", "arguments": {"cmd": cmd}, "content": "Listing.\x1b[8m"}, "ok"],
    )
    r = cli(
        "run", "Go", "-m", "mock", "-M", outputs, "--tool", "bash", "--sandbox", "local",
        "--approval", "human", "-q",
        cwd=tmp_path, input="n\nno\n",
    )  # fmt: skip
    assert r.code == 0, r.err
    assert r.out == "ok\n"  # the answer alone on stdout: the prompt is not in a pipe
    assert '"cmd": "echo safe\\u001b[8m; rm -rf ~"' in r.err and "\x1b" not in r.err
    assert "  | Listing.\\x1b[8m" in r.err


def test_the_unisolated_warning_is_one_line_without_a_source_path(tmp_path: Path) -> None:
    result = cli(
        "run", "hi", "-m", "mock", "--tool", "bash", "--sandbox", "local", "-q", cwd=tmp_path
    )
    assert result.code == 0, result.err
    lines = [line for line in result.err.splitlines() if "WITHOUT isolation" in line]
    assert len(lines) == 1 and lines[0].startswith("warning: local sandbox in "), result.err
    assert ".py:" not in result.err and "self._context" not in result.err, result.err


def test_debug_works_after_the_command_too(tmp_path: Path) -> None:
    # `loopwright run ... --debug` was "No such option '--debug'" (a usage error)
    r = cli("run", "Hi", "-m", "nosuch/x", "--debug", cwd=tmp_path)
    assert r.code == 2, r.err
    assert "Traceback (most recent call last)" in r.err
    assert r.err.rstrip().splitlines()[-1].startswith("error: unknown model provider 'nosuch'")
    text = cli("run", "-m", "mock", "-q", "--", "--debug", cwd=tmp_path)  # a task, not a flag
    assert text.code == 0 and "Traceback" not in text.err, text.err


def test_cost_limit_exits_3_and_the_cost_is_reported(tmp_path: Path) -> None:
    pytest.importorskip("openai")
    from ..model.providers.wire_server import Reply, WireServer, openai_reply

    usage = {"prompt_tokens": 1000, "completion_tokens": 500, "total_tokens": 1500}
    think = [("c1", "think", '{"thought": "x"}')]
    with WireServer() as wire:
        wire.respond = lambda _: Reply(openai_reply(None, tool_calls=think, usage=usage))
        r = cli(
            "run", "Go", "-m", "openai/gpt-4o-mini", "-M", f"base_url={wire.url}/v1",
            "-M", "api_key=sk-test", "-t", "think", "--cost-limit", "0.001", "--json",
            cwd=tmp_path,
        )  # fmt: skip
        calls = len(wire.requests)
    # $0.00045 a call (1,000 in at $0.15, 500 out at $0.60 per million): the third
    # crosses $0.001, the fourth is refused
    assert r.code == 3, r.err
    report = r.json()
    assert report["limit"]["type"] == "cost" and calls == 3
    assert report["cost"] == pytest.approx(0.00135) and report["unpriced_calls"] == 0
    [run] = lw.list_runs(tmp_path / "runs.db")
    assert run.cost == pytest.approx(0.00135)
