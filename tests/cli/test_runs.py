"""``loopwright runs list | show | export`` and ``loopwright models``."""

from __future__ import annotations

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
    default = cli("runs", "export", ok, cwd=tmp_path)
    assert default.out.strip() == f"{ok}.json" and (tmp_path / f"{ok}.json").exists()
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
    j = cli("models", "--json", cwd=tmp_path).json()
    providers = [p["provider"] for p in j]
    # (the built-in ones: this process may have registered more, the command's has not)
    from loopwright.model._registry import _BUILTIN

    assert providers[0] == "local" and set(providers) >= set(_BUILTIN)
    assert all(p["configure"] for p in j)
