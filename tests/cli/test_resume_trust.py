"""``loopwright runs resume`` makes an agent again only from options this user recorded
here (``cli/_trust.py``): a store copied from elsewhere or edited names code to import, a
model and its arguments; it is refused, saying what it names, unless ``--trust``."""

from __future__ import annotations

import json
import os
import sqlite3
import stat
from pathlib import Path

import pytest

import loopwright as lw
from loopwright.cli._trust import SIGNATURE, sign, signed_here

from ._cli import cli, script

TOOLS = """
import loopwright as lw

@lw.tool
def work() -> str:
    '''Do a piece of work.'''
    return "done"
"""

# a tool file that leaves a mark when it is imported (what a hostile store would name)
EVIL = """
import pathlib
pathlib.Path(__file__).with_name("imported.txt").write_text("imported")

def boom() -> str:
    '''Boom.'''
    return "boom"
"""


def _unfinished_run(tmp_path: Path, db: Path) -> lw.RunInfo:
    """A `loopwright run` that stopped unfinished: its scripted model ran out of replies."""
    (tmp_path / "tools.py").write_text(TOOLS)
    outputs = script(tmp_path / "script.json", [{"tool": "work", "arguments": {}}] * 2)
    r = cli("run", "Work.", "-m", "mock", "-M", outputs, "-t", "tools.py:work", "-q", cwd=tmp_path)
    assert r.code != 0, r.out
    [info] = lw.list_runs(db)
    assert info.status == "error", info
    return info


def _edit(db: Path, run_id: str, path: str, value: object) -> None:
    conn = sqlite3.connect(db)
    with conn:
        conn.execute(
            "UPDATE runs SET metadata = json_set(metadata, ?, json(?)) WHERE id = ?",
            (path, json.dumps(value), run_id),
        )
    conn.close()


def test_a_run_this_user_recorded_resumes_without_trust(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    info = _unfinished_run(tmp_path, db)
    assert isinstance(info.metadata["cli"][SIGNATURE], str)
    r = cli("runs", "resume", info.id, "-q", cwd=tmp_path, db=db)
    assert "--trust" not in r.err
    [row] = lw.list_runs(db)
    assert row.resumes == 1  # it was resumed (and ran out of replies again)


def test_edited_options_are_refused_saying_what_they_name_and_import_nothing(
    tmp_path: Path,
) -> None:
    db = tmp_path / "runs.db"
    info = _unfinished_run(tmp_path, db)
    (tmp_path / "evil.py").write_text(EVIL)
    _edit(db, info.id, "$.cli.tools", [f"{tmp_path / 'evil.py'}:boom"])
    _edit(db, info.id, "$.cli.system", "Obey.\x1b]0;owned\x07\x1b[2J")
    r = cli("runs", "resume", info.id, "-q", cwd=tmp_path, db=db)
    assert r.code == 2, r.err
    assert "were not recorded by this user here" in r.err and "--trust" in r.err
    assert "evil.py:boom" in r.err and "Obey." in r.err  # what it would make again
    assert "\x1b" not in r.err and "\x07" not in r.err  # shown, not obeyed
    assert not (tmp_path / "imported.txt").exists()
    [row] = lw.list_runs(db)
    assert row.resumes == 0 and row.status == "error"
    # trusted: made again from them (the file is imported)
    trusted = cli("runs", "resume", info.id, "-q", "--trust", cwd=tmp_path, db=db)
    assert "not recorded by this user" not in trusted.err
    assert (tmp_path / "imported.txt").read_text() == "imported"


def test_options_another_user_signed_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "runs.db"
    info = _unfinished_run(tmp_path, db)
    monkeypatch.setenv("LOOPWRIGHT_KEY_FILE", str(tmp_path / "other-user" / "recorded.key"))
    sign({"make": "a key"})  # (this "user" has a key of their own)
    r = cli("runs", "resume", info.id, "-q", cwd=tmp_path, db=db)
    assert r.code == 2 and "--trust" in r.err
    assert [row.resumes for row in lw.list_runs(db)] == [0]


def test_options_recorded_unsigned_are_refused(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    info = _unfinished_run(tmp_path, db)
    conn = sqlite3.connect(db)
    with conn:
        conn.execute("UPDATE runs SET metadata = json_remove(metadata, '$.cli.signature')")
    conn.close()
    r = cli("runs", "resume", info.id, "-q", cwd=tmp_path, db=db)
    assert r.code == 2 and "--trust" in r.err


def test_a_signature_covers_every_value_and_survives_the_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = tmp_path / "k" / "recorded.key"
    monkeypatch.setenv("LOOPWRIGHT_KEY_FILE", str(key))
    options = {"command": "run", "tools": ["/a/t.py:x"], "time_limit": 1.5, "n": None}
    signed = sign(options)
    assert stat.S_IMODE(os.stat(key).st_mode) == 0o600  # made, for this user alone
    assert signed_here(json.loads(json.dumps(signed)))  # (as read back from a row)
    for k, v in [("tools", ["/b/t.py:x"]), ("time_limit", 1.25), ("n", 0), ("extra", 1)]:
        assert not signed_here({**signed, k: v}), k
    assert not signed_here({**signed, SIGNATURE: "0" * 64})
    key.unlink()  # no key here: nothing is signed here
    assert not signed_here(signed)


def test_options_are_recorded_unsigned_when_no_key_can_be_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    monkeypatch.setenv("LOOPWRIGHT_KEY_FILE", str(blocked / "recorded.key"))  # (not a folder)
    options = {"command": "run"}
    assert sign(options) == options


TASK = """
import loopwright as lw

@lw.task
def quick() -> lw.Task:
    return lw.Task([{"id": "s0", "input": "a", "target": "a"}], agent=lw.react(submit=False),
                   scorer=lw.match(), model=lw.get_model("mock", outputs=["a"]))
"""


def test_an_eval_runs_name_picks_only_a_task_its_signed_options_name(tmp_path: Path) -> None:
    """The run's name is not signed: it may pick one of the recorded tasks, never a file."""
    db = tmp_path / "runs.db"
    (tmp_path / "tasks.py").write_text(TASK)
    (tmp_path / "evil.py").write_text(EVIL)
    r = cli("eval", "tasks.py@quick", "-q", cwd=tmp_path)
    assert r.code == 0, r.err
    [info] = lw.list_runs(db)
    conn = sqlite3.connect(db)
    with conn:
        conn.execute("UPDATE runs SET name = ?", (f"{tmp_path / 'evil.py'}@boom",))
    conn.close()
    r = cli("runs", "resume", info.id, "-q", cwd=tmp_path, db=db)
    assert r.code != 0 and "none of the tasks its command recorded" in r.err
    assert not (tmp_path / "imported.txt").exists()


def test_a_key_file_that_is_not_this_users_alone_signs_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from loopwright.cli._trust import key_problem, no_key_here

    key = tmp_path / "k" / "recorded.key"
    monkeypatch.setenv("LOOPWRIGHT_KEY_FILE", str(key))
    signed = sign({"command": "run"})
    assert signed_here(signed) and key_problem() is None
    key.chmod(0o644)  # readable by others: anyone could have forged with it
    assert not signed_here(signed) and "alone" in (no_key_here() or "")
    key.chmod(0o600)
    planted = tmp_path / "planted.key"
    planted.write_bytes(key.read_bytes())
    planted.chmod(0o600)
    key.unlink()
    key.symlink_to(planted)  # a link put at the key's path
    assert not signed_here(signed) and "plain file" in (no_key_here() or "")
    monkeypatch.setenv("LOOPWRIGHT_KEY_FILE", "relative.key")
    assert "absolute" in (key_problem() or "") and sign({"a": 1}) == {"a": 1}
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)  # others may put a key of theirs here (no sticky bit)
    monkeypatch.setenv("LOOPWRIGHT_KEY_FILE", str(shared / "recorded.key"))
    assert "written by others" in (key_problem() or "")
    assert sign({"a": 1}) == {"a": 1} and not signed_here(signed)  # (no key made there)
    assert not (shared / "recorded.key").exists()
    short = tmp_path / "short" / "recorded.key"
    short.parent.mkdir()
    short.write_text("abc")
    short.chmod(0o600)
    monkeypatch.setenv("LOOPWRIGHT_KEY_FILE", str(short))
    assert "too short" in (no_key_here() or "")


def test_options_that_change_on_the_way_through_the_store_still_resume(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Signed as the store keeps them: a limit that is not finite (stored null) and a
    learnt secret in the system prompt (stored redacted)."""
    db = tmp_path / "runs.db"
    (tmp_path / "tools.py").write_text(TOOLS)
    monkeypatch.setenv("MY_API_KEY", "supersecretvalue123abc")
    outputs = script(tmp_path / "script.json", [{"tool": "work", "arguments": {}}] * 2)
    r = cli(
        "run", "Work.", "-m", "mock", "-M", outputs, "-t", "tools.py:work", "-q",
        "--time-limit", "inf", "--system", "use supersecretvalue123abc",
        cwd=tmp_path,
    )  # fmt: skip
    assert r.code != 0
    [info] = lw.list_runs(db)
    assert "supersecretvalue123abc" not in json.dumps(info.metadata)
    r = cli("runs", "resume", info.id, "-q", cwd=tmp_path, db=db)
    assert "--trust" not in r.err, r.err
    assert [row.resumes for row in lw.list_runs(db)] == [1]


TWO_TASKS = """
import loopwright as lw

def _task() -> lw.Task:
    return lw.Task([{"id": "s0", "input": "a", "target": "a"}], agent=lw.react(submit=False),
                   scorer=lw.match())

@lw.task
def alpha(note: str = "") -> lw.Task:
    return _task()

@lw.task(name="beta-hard")
def beta(note: str = "") -> lw.Task:
    return _task()
"""


def test_each_run_of_an_eval_of_a_whole_file_resumes_with_its_models_secrets(
    tmp_path: Path,
) -> None:
    """The second task's run is written after the model's first call, and its options
    hold what that call teaches the store to redact (here the token the base URL gives
    as its user, in a task argument): they are signed as stored all the same, before
    the first run is written; and a task named with a dash resumes from the file's own
    names."""
    db = tmp_path / "runs.db"
    (tmp_path / "tasks.py").write_text(TWO_TASKS)
    r = cli(
        "eval", "tasks.py", "-q", "-m", "openai/gpt-4o-mini",
        "-M", "api_key=sk-test-0123456789abcdef",
        "-M", 'base_url="http://tok-alice-0123456789@127.0.0.1:9/v1"',
        "-G", "max_retries=0", "-T", "note=for tok-alice-0123456789",
        cwd=tmp_path,
    )  # fmt: skip
    runs = {info.name: info for info in lw.list_runs(db)}
    assert set(runs) == {"alpha", "beta-hard"}, r.err
    for info in runs.values():  # the same, redacted, in both
        assert info.metadata["cli"]["task_args"] == ["note=for [redacted]"]
    for name, info in runs.items():
        again = cli("runs", "resume", info.id, "-q", cwd=tmp_path, db=db)
        assert "--trust" not in again.err, (name, again.err)
        assert "none of the tasks" not in again.err and "no task file" not in again.err
    # each went on (an eval resumed runs its task again, as a run of its own)
    names = sorted(i.name or "" for i in lw.list_runs(db))
    assert names == ["alpha", "alpha", "beta-hard", "beta-hard"]


def test_signing_learns_no_more_than_the_model_would(tmp_path: Path) -> None:
    """Only the model's own credentials are learnt before signing: a provider argument
    whose value is a plain word (``max_tokens_param=max_tokens``) is not a secret, and
    the rows keep it."""
    db = tmp_path / "runs.db"
    cli(
        "run", "x", "-q", "-m", "openai/gpt-4o-mini",
        "-M", "api_key=sk-test-0123456789abcdef", "-M", "base_url=http://127.0.0.1:9/v1",
        "-M", "max_tokens_param=max_tokens", "-G", "max_tokens=100", "-G", "max_retries=0",
        cwd=tmp_path,
    )  # fmt: skip
    [info] = lw.list_runs(db)
    assert "[redacted]" not in json.dumps(info.metadata["cli"])
    with lw.load_run(info.id, db=db) as log:
        [event] = [e for e in log.events() if isinstance(e, lw.ModelEvent)]
    assert event.config.max_tokens == 100
    assert b"sk-test-0123456789abcdef" not in db.read_bytes()


def test_a_tool_under_the_home_of_the_base_urls_user_resumes(tmp_path: Path) -> None:
    """The base URL's user (beside a password) is a name, not a secret: the tool file's
    path, in a folder of that name, is recorded as it is, and the resume finds it."""
    db = tmp_path / "runs.db"
    home = tmp_path / "developer-bob"
    home.mkdir()
    (home / "tools.py").write_text(TOOLS)
    r = cli(
        "run", "Work.", "-q", "-m", "openai/gpt-4o-mini", "-t", f"{home}/tools.py:work",
        "-M", 'base_url="http://developer-bob:pw-0123456789@127.0.0.1:9/v1"',
        "-M", "api_key=sk-test-0123456789abcdef", "-G", "max_retries=0",
        cwd=tmp_path,
    )  # fmt: skip
    assert r.code != 0  # (nothing listens there)
    [info] = lw.list_runs(db)
    recorded = json.dumps(info.metadata["cli"])
    assert f"{home}/tools.py:work" in recorded, recorded
    assert "pw-0123456789" not in recorded and b"pw-0123456789" not in db.read_bytes()
    again = cli("runs", "resume", info.id, "-q", cwd=tmp_path, db=db)
    assert "--trust" not in again.err and "tools.py" not in again.err, again.err
    assert [row.resumes for row in lw.list_runs(db)] == [1]


def test_each_run_of_an_eval_of_several_files_resumes_from_its_own_file(tmp_path: Path) -> None:
    """An eval of two files: each run's task is looked up in the signed files, the one
    defining it; a name two files define is refused, naming the signed tasks."""
    db = tmp_path / "runs.db"
    one = TWO_TASKS.replace("def alpha", "def gamma").replace('name="beta-hard"', 'name="both"')
    (tmp_path / "a.py").write_text(TWO_TASKS)
    (tmp_path / "b.py").write_text(one)
    r = cli(
        "eval", "a.py", "b.py", "-q", "-m", "openai/gpt-4o-mini",
        "-M", "api_key=sk-test-0123456789abcdef", "-M", 'base_url="http://127.0.0.1:9/v1"',
        "-G", "max_retries=0",
        cwd=tmp_path,
    )  # fmt: skip
    runs = {info.name: info for info in lw.list_runs(db)}
    assert set(runs) == {"alpha", "beta-hard", "gamma", "both"}, r.err
    for name in ("alpha", "beta-hard", "gamma", "both"):
        again = cli("runs", "resume", runs[name].id, "-q", cwd=tmp_path, db=db)
        assert "--trust" not in again.err, (name, again.err)
        assert "none of the tasks" not in again.err, (name, again.err)
    names = sorted(i.name or "" for i in lw.list_runs(db))
    assert names == sorted(["alpha", "beta-hard", "gamma", "both"] * 2)
    # a run renamed (its name is not signed) to a task both files define: refused
    conn = sqlite3.connect(db)
    with conn:
        conn.execute("UPDATE runs SET name = 'twice' WHERE id = ?", (runs["gamma"].id,))
    conn.close()
    (tmp_path / "a.py").write_text(
        TWO_TASKS + "\n@lw.task\ndef twice() -> lw.Task:\n    return _task()\n"
    )
    (tmp_path / "b.py").write_text(
        one + "\n@lw.task\ndef twice() -> lw.Task:\n    return _task()\n"
    )
    again = cli("runs", "resume", runs["gamma"].id, "-q", cwd=tmp_path, db=db)
    assert "none of the tasks" in again.err, again.err


def test_a_resume_imports_each_task_file_once(tmp_path: Path) -> None:
    """Finding which of the signed files defines the run's task imports each of them;
    the one found is not imported a second time to run it (its top-level code, which may
    do anything, runs once, as in the eval)."""
    db = tmp_path / "runs.db"
    mark = 'import pathlib\nwith open(pathlib.Path(__file__).with_name("imports.txt"), "a") as f:\n'
    (tmp_path / "a.py").write_text(mark + '    f.write("a\\n")\n' + TWO_TASKS)
    gamma = TWO_TASKS.replace("def alpha", "def gamma").replace("beta-hard", "delta")
    (tmp_path / "b.py").write_text(mark + '    f.write("b\\n")\n' + gamma)
    r = cli(
        "eval", "a.py", "b.py", "-q", "-m", "openai/gpt-4o-mini",
        "-M", "api_key=sk-test-0123456789abcdef", "-M", 'base_url="http://127.0.0.1:9/v1"',
        "-G", "max_retries=0",
        cwd=tmp_path,
    )  # fmt: skip
    assert (tmp_path / "imports.txt").read_text().split() == ["a", "b"], r.err
    (tmp_path / "imports.txt").unlink()
    runs = {info.name: info for info in lw.list_runs(db)}
    again = cli("runs", "resume", runs["alpha"].id, "-q", cwd=tmp_path, db=db)
    assert "none of the tasks" not in again.err, again.err
    assert sorted((tmp_path / "imports.txt").read_text().split()) == ["a", "b"], again.err
    assert [i.name for i in lw.list_runs(db)].count("alpha") == 2  # (resumed in a new run)
