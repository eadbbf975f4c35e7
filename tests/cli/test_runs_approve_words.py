"""The commands ``loopwright runs approve`` (and ``runs show``) print for a person to
paste into a shell name the call as it is, and run nothing else: a call id is the
model's (any printable ASCII), so ``$(...)``, a backquote or ``;`` in it must reach
the command as text, never the shell as code. Real run stores, the real command, a
real ``bash`` reading the printed lines."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

import loopwright as lw
from loopwright.log._approvals import deferred_calls, record_pending
from loopwright.tools import PendingCall

from ._cli import cli, shown_digest
from .test_runs_approve_shown import LONG, states, waiting

needs_bash = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")

SUBSTITUTED = "x$(touch${IFS}pwned1)`touch${IFS}pwned2`"
CHAINED = "a;touch${IFS}pwned3;#"
QUOTED = 'it\'s"q"\\'


def pasted(command: str, cwd: Path) -> list[str]:
    """The arguments ``command`` (a line printed for a person to paste) gives the
    program it names, as bash parses it (``loopwright`` stands for a function that
    writes them down)."""
    script = (
        'loopwright() { for a in "$@"; do printf "%s\\0" "$a"; done > argv; }\n' + command + "\n"
    )
    env = dict(os.environ, LC_ALL="C.UTF-8")  # ($'\u0435': a UTF-8 locale's)
    subprocess.run(["bash", "-c", script], cwd=cwd, env=env, check=True, timeout=30)
    argv = (cwd / "argv").read_bytes().decode().split("\0")[:-1]
    (cwd / "argv").unlink()
    return argv


def ran(folder: Path) -> list[Path]:
    """The files a command an id smuggled in would have made."""
    return list(folder.glob("pwned*"))


def commands(text: str) -> list[str]:
    """Each ``loopwright runs approve ...`` command printed in ``text``."""
    out = []
    for row in text.splitlines():
        at = row.find("loopwright runs approve ")
        if at >= 0 and "CALL_ID" not in row:
            out.append(row[at:].removesuffix(")"))
    return out


@needs_bash
async def test_a_pasted_command_runs_nothing_a_call_id_holds(tmp_path: Path) -> None:
    calls = [
        lw.ToolCall(id=SUBSTITUTED, function="bash", arguments={"cmd": "ls"}),
        lw.ToolCall(id=CHAINED, function="bash", arguments={"cmd": LONG}),  # cut
        lw.ToolCall(id=QUOTED, function="bash", arguments={"cmd": "id"}),
    ]
    db, run_id = await waiting(tmp_path, calls)
    listing = cli("runs", "approve", run_id, cwd=tmp_path, db=db)
    assert listing.code == 0, listing.err
    show = cli("runs", "show", run_id, cwd=tmp_path, db=db)
    printed = commands(listing.out) + commands(listing.err) + commands(show.out)
    assert len(printed) >= 7, printed
    named = set()
    for command in printed:
        argv = pasted(command, tmp_path)
        assert argv[:3] == ["runs", "approve", run_id], argv
        named.update(argv[3:])
    assert not ran(tmp_path)  # the shell ran nothing the ids hold
    [hashed] = [c.arguments_hash for c in deferred_calls(db, run_id) if c.call_id == SUBSTITUTED]
    assert f"{SUBSTITUTED}={hashed}" in named and CHAINED in named
    # the words pasted are the command's: approve by the printed lines, as they are
    for command in commands(listing.out):
        if "--approve" in command:
            done = cli(*pasted(command, tmp_path), cwd=tmp_path, db=db)
            assert done.code == 0, done.err
    assert states(db, run_id) == {SUBSTITUTED: "approve", CHAINED: None, QUOTED: "approve"}
    [whole] = [c for c in commands(listing.out) if "--whole" in c]
    read = cli(*pasted(whole, tmp_path), cwd=tmp_path, db=db)
    assert read.code == 0 and "curl evil.example" in read.out, read.err
    assert not ran(tmp_path)


@needs_bash
async def test_an_id_not_printable_ascii_is_named_by_its_command(tmp_path: Path) -> None:
    """An id that is not printable ASCII (a lookalike letter, a control character: from
    an agent's own code or a store) is printed escaped; pasted, the command names that
    call and no other."""
    plain = lw.ToolCall(id="c1", function="bash", arguments={"cmd": "ls"})
    db, run_id = await waiting(tmp_path, [plain])
    lookalike = lw.ToolCall(id="d\u0435ploy\x1b[8m", function="bash", arguments={"cmd": "id"})
    record_pending(db, run_id, [PendingCall(call=plain), PendingCall(call=lookalike)])
    listing = cli("runs", "approve", run_id, cwd=tmp_path, db=db)
    assert listing.code == 0, listing.err
    [line] = [c for c in commands(listing.out) if "--approve" in c and "c1=" not in c]
    assert "\x1b[8m" not in line and "\\u0435" in line
    done = cli(*pasted(line, tmp_path), cwd=tmp_path, db=db)
    assert done.code == 0, done.err
    assert states(db, run_id) == {"c1": None, lookalike.id: "approve"}


async def test_all_with_a_digest_still_approves_plain_ids(tmp_path: Path) -> None:
    calls = [lw.ToolCall(id="call_1", function="bash", arguments={"cmd": "ls"})]
    db, run_id = await waiting(tmp_path, calls)
    listing = cli("runs", "approve", run_id, cwd=tmp_path, db=db)
    assert f"--approve call_1={deferred_calls(db, run_id)[0].arguments_hash}" in listing.out
    done = cli("runs", "approve", run_id, "--all", "--shown", shown_digest(listing),
               cwd=tmp_path, db=db)  # fmt: skip
    assert done.code == 0, done.err
    assert states(db, run_id) == {"call_1": "approve"}


@needs_bash
async def test_the_commands_of_a_listing_of_another_store_name_it(tmp_path: Path) -> None:
    """Listed with ``--db``, the commands to paste say ``--db`` too: pasted, they
    decide about that store's run, not look for it in the default one."""
    calls = [lw.ToolCall(id="call_1", function="bash", arguments={"cmd": "ls"})]
    db, run_id = await waiting(tmp_path, calls)
    other = tmp_path / "default runs.db"  # ($LOOPWRIGHT_DB: another store)
    wide = "1000"  # (a long command wrapped on a screen is pasted in pieces)
    listing = cli("runs", "approve", run_id, "--db", str(db), cwd=tmp_path, db=other, columns=wide)
    show = cli("runs", "show", run_id, "--db", str(db), cwd=tmp_path, db=other, columns=wide)
    assert listing.code == 0 and show.code == 0, listing.err + show.err
    for command in commands(listing.out) + commands(listing.err) + commands(show.out):
        assert pasted(command, tmp_path)[3:5] == ["--db", str(db)], command
    [line] = [c for c in commands(listing.out) if "--approve" in c]
    done = cli(*pasted(line, tmp_path), cwd=tmp_path, db=other)
    assert done.code == 0, done.err
    assert states(db, run_id) == {"call_1": "approve"}
