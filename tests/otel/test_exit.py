"""A command traced to a collector that is down ends promptly: the spans it could not
send are given ``$LOOPWRIGHT_OTEL_EXIT_TIMEOUT`` seconds, then lost, with one warning.

Real subprocesses of the command line against a port nothing listens on (connections
refused: the SDK retries, backing off 1, 2, 4... s), a server that accepts and never
answers (the SDK waits for the exporter's timeout), and a real OTLP/HTTP receiver that
answers slowly. The exporter's timeout is set to 60 s, so that the SDK alone would hold
the command 25 s or more: the bound asserted (20 s, for a loaded machine) separates that
from a prompt end, not one fast run from a slower one.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("opentelemetry.exporter.otlp.proto.http")

import loopwright as lw

from ..cli._cli import Result, cli, script
from ._receiver import BlackHole, Receiver, dead_url

PROMPT = 20.0  # seconds: a command that ends promptly, on a loaded machine
SDK_TIMEOUT = "60"  # the exporter's own timeout: unbounded by loopwright, a 25 s+ wait


@pytest.fixture
def black_hole() -> Iterator[BlackHole]:
    server = BlackHole()
    try:
        yield server
    finally:
        server.close()


def with_secrets(url: str) -> str:
    """``url`` with a password and a token in it, which no message may show."""
    return url.replace("http://", "http://user:s3cret-pass@") + "?token=t0ken-value"


def timed(*args: str, cwd: Path, db: Path | None = None) -> tuple[Result, float]:
    start = time.monotonic()
    try:
        r = cli(*args, cwd=cwd, db=db, timeout=PROMPT * 3)
    except subprocess.TimeoutExpired:
        pytest.fail(f"the command still ran after {PROMPT * 3:g} s")
    return r, time.monotonic() - start


@pytest.mark.parametrize("down", ["refused", "never answers"])
def test_a_run_traced_to_a_collector_that_is_down_ends_promptly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, black_hole: BlackHole, down: str
) -> None:
    url = dead_url() if down == "refused" else black_hole.url
    monkeypatch.setenv("LOOPWRIGHT_OTEL", "1")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", with_secrets(url))
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", SDK_TIMEOUT)
    monkeypatch.setenv("LOOPWRIGHT_OTEL_EXIT_TIMEOUT", "1")
    outputs = script(tmp_path / "s.json", ["The answer is 4."])
    r, seconds = timed("run", "2+2?", "--model", "mock", "-M", outputs, cwd=tmp_path)
    assert seconds < PROMPT, f"the command held {seconds:.1f} s at exit"
    assert r.code == 0, r.err  # the run's work is done: tracing lost is a warning
    assert r.out == "The answer is 4.\n"
    warnings = [line for line in r.err.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1, r.err  # once, not a line per retry
    assert "spans not sent" in warnings[0]
    assert "http://127.0.0.1:" in warnings[0]
    assert "LOOPWRIGHT_OTEL_EXIT_TIMEOUT" in warnings[0]
    for secret in ("s3cret", "t0ken"):
        assert secret not in r.err
    assert "Traceback" not in r.err
    [run] = lw.list_runs(tmp_path / "runs.db")
    assert run.status == "success"  # the run itself recorded, whatever the collector


def test_a_slow_collector_still_gets_the_spans(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    receiver = Receiver(delay=1.0)
    try:
        monkeypatch.setenv("LOOPWRIGHT_OTEL", "1")
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", receiver.url)
        monkeypatch.setenv("LOOPWRIGHT_OTEL_EXIT_TIMEOUT", "15")
        outputs = script(
            tmp_path / "s.json", [{"tool": "think", "arguments": {"thought": "x"}}, "4"]
        )
        r, _ = timed(
            "run", "2+2?", "--model", "mock", "-M", outputs, "--tool", "think", cwd=tmp_path
        )
        assert r.code == 0, r.err
        assert "warning" not in r.err
        [run] = [s for s in receiver.spans if s.name.startswith("invoke_agent")]
        [stored] = lw.list_runs(tmp_path / "runs.db")
        assert run.attributes["loopwright.run.id"] == stored.id
        assert receiver.named("execute_tool think")
    finally:
        receiver.close()


def test_a_bad_exit_timeout_is_a_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LOOPWRIGHT_OTEL", "1")
    monkeypatch.setenv("LOOPWRIGHT_OTEL_EXIT_TIMEOUT", "soon")
    r = cli("runs", "list", cwd=tmp_path)
    assert r.code == 2
    assert "LOOPWRIGHT_OTEL_EXIT_TIMEOUT" in r.err


@pytest.mark.parametrize("down", ["refused", "never answers"])
def test_exporting_to_a_collector_that_is_down_fails_promptly_and_clearly(
    tmp_path: Path, black_hole: BlackHole, down: str
) -> None:
    db = tmp_path / "runs.db"
    lw.run_sync(lw.react(), "go", model=lw.get_model("mock"), db=db)
    url = with_secrets(dead_url() if down == "refused" else black_hole.url)
    args = ("runs", "export", "--format", "otlp", "--endpoint", url, "--timeout", "1")
    r, seconds = timed(*args, cwd=tmp_path, db=db)
    assert seconds < PROMPT
    assert r.code == 1
    [line] = r.err.splitlines()  # one line: no log line per retry
    assert line.startswith("error: ")
    assert "http://127.0.0.1:" in line
    assert "did not take the spans" in line
    assert "within 1 s" in line
    for secret in ("s3cret", "t0ken"):
        assert secret not in r.err
