"""A secret learnt never reaches the run store, an export, ``eval --json`` or a
sandbox's record in an encoded form either: base64 (standard or URL-safe, at any offset
inside a longer blob, in an HTTP Basic header), hex of any case, percent-encoded,
``\\u``-escaped. Each file is scanned as raw bytes (the store and its -wal) by
:func:`leaks`, which decodes what it finds on its own (not with loopwright's forms)."""

from __future__ import annotations

import base64
import json
import re
import subprocess
import sys
import warnings
from pathlib import Path
from urllib.parse import unquote_to_bytes

import pytest

import loopwright as lw
from loopwright.model import _redact
from tests.cli._cli import cli
from tests.model.providers.wire_server import Reply, WireServer, openai_error, openai_reply

# (">>>" and "???" make "+" and "/" in base64: the URL-safe form differs)
KEY = "sk-enc-7Hq2Lm9Xw4Tz8Rv1>>>???Nb6Yc3Kd5-Pf0Gj"
PASSWORD = "hunter3-Pa55word-c0ffee-e5c4"
ENV = "ENCODED_SERVICE_API_KEY"

PRINTER = r"""
import base64, json, os, sys
from urllib.parse import quote
k = os.environ["ENCODED_SERVICE_API_KEY"]
raw = k.encode()
b64 = lambda b: base64.b64encode(b).decode()
for prefix in (b"", b"x", b"xy", b"xyz", b"\x00\xff"):
    print("blob", b64(prefix + raw + b"tail bytes"))
    print("url", base64.urlsafe_b64encode(prefix + raw).decode().rstrip("="))
print("Authorization: Basic " + b64(b"deploy-bot:" + raw))
print("echoed", b64(b"u:" + raw))
print("hex", raw.hex(), raw.hex().upper())
print("mixed", "".join(c.upper() if i % 3 else c for i, c in enumerate(raw.hex())))
print("pct", "".join("%%%02X" % b for b in raw), "".join("%%%02x" % b for b in raw))
print("url", quote(k, safe=""), "https://h/?key=" + quote(k, safe=""))
print("json", json.dumps({"k": "".join("\\u%04x" % ord(c) for c in k)}))
print("uesc", "".join("\\u%04X" % ord(c) for c in k))
sys.stdout.flush()
"""


def leaks(data: bytes, secret: str, window: int = 12) -> list[str]:
    """The encodings in which ``data`` holds ``secret`` (or any ``window`` bytes of it
    in a row): found by decoding every base64 / hex run at each offset, percent and
    ``\\u`` escapes."""
    raw = secret.encode()
    parts = [raw[i : i + window] for i in range(0, max(1, len(raw) - window + 1))]
    found = []

    def holds(decoded: bytes) -> bool:
        return any(p in decoded for p in parts)

    if holds(data):
        found.append("plain")
    for run in re.findall(rb"[A-Za-z0-9+/_\-]{12,}", data):
        std = run.replace(b"-", b"+").replace(b"_", b"/")
        for k in range(4):
            chunk = std[k:][: (len(std) - k) // 4 * 4]
            if holds(base64.b64decode(chunk)):
                found.append(f"base64 {run[:20]!r}")
    for run in re.findall(rb"[0-9A-Fa-f]{16,}", data):
        for k in range(2):
            chunk = run[k:][: (len(run) - k) // 2 * 2]
            if holds(bytes.fromhex(chunk.decode())):
                found.append("hex")
    if holds(unquote_to_bytes(data)):
        found.append("percent")
    unescaped = re.sub(rb"\\+u([0-9a-fA-F]{4})", lambda m: chr(int(m[1], 16)).encode(), data)
    if holds(unescaped):
        found.append("\\u")
    return found


def file_bytes(db: Path) -> bytes:
    """The store and anything SQLite keeps beside it (-wal, -shm)."""
    files = list(db.parent.glob(db.name + "*"))
    assert files
    return b"".join(p.read_bytes() for p in files)


@pytest.fixture
def key_in_env(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv(ENV, KEY)
    monkeypatch.setattr(_redact, "_env_done", False)  # (learnt again: as a new process)
    return KEY


def test_the_oracle_sees_every_form_the_printer_prints() -> None:
    """:func:`leaks` is not blind: each line of the printer holds the key for it."""
    out = subprocess.run(
        [sys.executable, "-c", PRINTER],
        env={ENV: KEY},
        capture_output=True,
        check=True,
    ).stdout
    lines = out.splitlines()
    assert len(lines) == 18
    for line in lines:
        assert leaks(line, KEY), line


@lw.tool
def print_key_encoded() -> str:
    """Print the key, encoded every way."""
    done = subprocess.run([sys.executable, "-c", PRINTER], capture_output=True, text=True)
    return done.stdout + done.stderr


async def test_a_tool_printing_the_key_encoded_leaves_no_form_of_it_in_the_store(
    tmp_path: Path, key_in_env: str
) -> None:
    """A real subprocess prints the environment's key in base64 (every offset, in a
    Basic header), hex, percent and ``\\u`` escapes; the server echoes the base URL's
    password in base64 in its error: neither is in the store's bytes, in any form."""
    db = tmp_path / "runs.db"
    echoed = base64.b64encode(f"me:{PASSWORD}".encode()).decode()
    with WireServer() as wire:
        wire.push(
            openai_reply(None, tool_calls=[("call_1", "print_key_encoded", "{}")]),
            Reply(openai_error(f"credentials {echoed} refused"), 401),
        )
        host = wire.url.removeprefix("http://")
        model = lw.get_model(
            "openai/test-model",
            base_url=f"http://me:{PASSWORD}@{host}/v1",
            api_key="sk-unrelated-key-0000",
            config=lw.GenerateConfig(max_retries=0, timeout=10),
        )
        with pytest.raises(lw.ModelAPIError):
            await lw.run(lw.react(tools=[print_key_encoded], model=model), "key?", db=db)
        assert len(wire.requests) == 2
    data = file_bytes(db)
    assert b"Authorization: Basic" in data and b"credentials" in data  # recorded
    assert data.count(b"[redacted]") >= 18
    assert leaks(data, key_in_env) == []
    assert leaks(data, PASSWORD) == []

    out = tmp_path / "run.json"  # the transcript `runs export` writes
    assert cli("runs", "export", "-o", str(out), cwd=tmp_path, db=db).code == 0
    exported = out.read_bytes()
    assert b"print_key_encoded" in exported and leaks(exported, key_in_env) == []


def test_an_export_of_an_older_store_redacts_the_secrets_learnt_again(
    tmp_path: Path, key_in_env: str
) -> None:
    """A row written before (here by hand: a store made by an older version) that holds
    the key encoded is exported without it: the export redacts as the writer does."""
    import sqlite3

    db = tmp_path / "runs.db"
    lw.run_sync(lw.react(model=lw.get_model("mock", outputs=["fine"]), submit=False), "hi", db=db)
    blob = base64.b64encode(b"xy" + KEY.encode()).decode()
    with sqlite3.connect(db) as conn:
        conn.execute(
            "UPDATE messages SET data = json_set(data, '$.content', ?) WHERE role = 'user'",
            (f"here: {blob} and {KEY.encode().hex()}",),
        )
    assert leaks(file_bytes(db), KEY)  # (the store does hold it)
    r = cli("runs", "export", cwd=tmp_path, db=db)
    assert r.code == 0 and "here: " in r.out
    assert leaks(r.out.encode(), KEY) == []


TASKS = """
import base64, os
import loopwright as lw

def fail(messages, tools, config):
    key = os.environ["ENCODED_SERVICE_API_KEY"].encode()
    raise RuntimeError("bad header " + base64.b64encode(b"svc:" + key).decode() + " " + key.hex())

@lw.task
def leaky() -> lw.Task:
    return lw.Task([{"input": "x", "target": "y"}], agent=lw.react(submit=False),
                   scorer=lw.match(), model=lw.get_model("mock", outputs=fail))
"""


def test_eval_json_and_its_errors_hold_no_form_of_the_key(tmp_path: Path, key_in_env: str) -> None:
    tasks = tmp_path / "tasks.py"
    tasks.write_text(TASKS)
    r = cli("eval", f"{tasks}@leaky", "--json", cwd=tmp_path)
    assert r.out, r.err
    [task] = r.json()["tasks"]
    assert task["status"] == "error" and "bad header" in task["error"]
    assert leaks(r.out.encode(), KEY) == [] and leaks(r.err.encode(), KEY) == []
    assert leaks(file_bytes(tmp_path / "runs.db"), KEY) == []


async def test_a_sandbox_record_cut_in_the_middle_of_a_secret_keeps_no_half(
    key_in_env: str,
) -> None:
    """A sandbox operation's text is cut to its ends; a secret across a cut is redacted
    whole (before the cut), not cut in two with a half kept."""
    from loopwright.sandboxes import use_sandbox
    from loopwright.transcripts import SandboxEvent, Transcript, transcript_context

    _redact.learn_env_secrets()
    text = "x" * 990 + KEY + "y" * 3000 + KEY + "z" * 990
    t = Transcript()
    with transcript_context(t), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        async with use_sandbox("local") as sb:
            await sb.write_file("f.txt", text)
            await sb.exec(["cat", "f.txt"])
    events = [e for e in t.events if isinstance(e, SandboxEvent)]
    assert len(events) == 2
    for event in events:
        shown = (event.input or "") + (event.output or "")
        assert "characters ..." in shown
        assert leaks(shown.encode(), KEY, window=6) == []


def test_forms_overlapping_and_across_offsets_are_redacted_whole() -> None:
    """Two secrets that overlap go whole (neither leaves a piece of the other); a hex
    form in mixed case; base64 of the secret at each offset, in one blob."""
    a, b = "overlap-AAAA-1111-zzzz", "zzzz-BBBB-2222-tail"
    _redact.learn_secrets([a, b])
    assert _redact.redact_known("<overlap-AAAA-1111-zzzz-BBBB-2222-tail>") == "<[redacted]>"
    mixed = "".join(c.upper() if i % 2 else c for i, c in enumerate(a.encode().hex()))
    assert _redact.redact_known(f"[{mixed}]") == "[[redacted]]"
    for prefix in range(6):
        blob = base64.b64encode(bytes(range(prefix)) + b.encode() + b"!").decode()
        out = _redact.redact_known(json.dumps({"blob": blob}))
        assert "[redacted]" in out and leaks(out.encode(), b, window=6) == [], prefix
        json.loads(out)  # still JSON


def test_a_batch_of_rows_is_gated_at_once_and_each_row_redacted_alone() -> None:
    """The writer's batch path: a row holding a form is redacted, the others come back
    as they were; a batch holding none is not copied at all (``None``)."""
    secret = "batch-secret-Ω-0f9e8d7c6b5a"  # (not ASCII: its UTF-8 bytes are encoded)
    _redact.learn_secrets([secret])
    raw = secret.encode()
    pair = "".join(f"\\u{ord(c):04x}" for c in secret)
    rows = [
        json.dumps({"a": "nothing here \ud800 (a lone surrogate)"}),
        json.dumps({"b": base64.urlsafe_b64encode(b"zz" + raw).decode()}),
        json.dumps({"c": raw.hex().upper() + " and " + pair}),
        json.dumps({"d": secret}),
    ]
    out = _redact.redact_known_rows(rows)
    assert out is not None and out[0] == rows[0]
    for row in out[1:]:
        assert "[redacted]" in row and leaks(row.encode(), secret, window=8) == [], row
        json.loads(row)
    assert _redact.redact_known_rows([rows[0], '{"e": 1}']) is None
