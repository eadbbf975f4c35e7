"""``examples/hooks.py``: a spend cap, secret redaction and a veto, with how the run store
records the runs they end or change."""

from __future__ import annotations

import importlib.util
import sqlite3
from pathlib import Path
from types import ModuleType

import loopwright as lw

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "hooks.py"


def load_example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("example_hooks_runtime", EXAMPLE)
    assert spec is not None and spec.loader is not None
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    return example


def stored_text(db: Path) -> str:
    conn = sqlite3.connect(db)
    try:
        rows = conn.execute("SELECT data FROM events UNION ALL SELECT data FROM messages")
        return "\n".join(row[0] for row in rows)
    finally:
        conn.close()


async def test_the_spend_cap_stops_the_run_and_the_run_store_says_stopped(tmp_path: Path) -> None:
    example = load_example()
    db = tmp_path / "runs.db"
    state = await example.main(max_usd=0.03, db=db)
    assert state.completed == "stopped"
    [run] = lw.list_runs(db)
    assert run.status == "stopped" and run.id == state.run_id
    with lw.load_run(run.id, db=db) as log:
        infos = [e.data for e in log.events() if isinstance(e, lw.InfoEvent)]
    assert any("over the cap" in str(info) for info in infos)
    assert "sk-demo-9f8e7d6c5b4a3f2e1d0c" not in stored_text(db)
    assert "[REDACTED]" in stored_text(db)


async def test_the_agents_veto_denies_a_file_with_a_message_and_the_run_goes_on(
    tmp_path: Path,
) -> None:
    example = load_example()
    db = tmp_path / "runs.db"
    state = await example.guarded(db=db)
    assert state.completed == "submit" and state.text == "eu-west-1"
    results = [m for m in state.messages if isinstance(m, lw.ToolMessage)]
    denied, allowed, submitted = results
    assert submitted.function == "submit"
    assert "'../../etc/shadow' is not allowed" in denied.content
    assert "REGION=eu-west-1" in allowed.content and "sk-demo" not in allowed.content
    [run] = lw.list_runs(db)
    assert run.status == "success"
    assert "sk-demo-9f8e7d6c5b4a3f2e1d0c" not in stored_text(db)


def test_the_veto_lets_other_tools_and_allowed_files_through() -> None:
    import asyncio

    example = load_example()
    only = example.OnlyFiles(["app.env"])

    def ask(function: str, **arguments: str) -> str | None:
        call = lw.ToolCall(id="c1", function=function, arguments=arguments)
        result: str | None = asyncio.run(only.before_tool(call))
        return result

    assert ask("read_config", name="app.env") is None
    assert ask("submit", answer="x") is None
    assert ask("read_config", name="db.env") is not None
    assert only.denied == ["db.env"]


class TooFew(lw.Hooks):
    async def after_tool(self, call: lw.ToolCall) -> None:  # type: ignore[override]
        return None


class Keywords(lw.Hooks):
    async def after_model(self, *, output: lw.ModelOutput) -> None:  # type: ignore[override]
        return None


class Flexible(lw.Hooks):
    async def after_tool(self, *args: object, **kwargs: object) -> None:
        return None


def test_a_hook_method_that_cannot_take_its_arguments_is_refused_where_it_is_given() -> None:
    import pytest

    for hook, method in [(TooFew(), "after_tool"), (Keywords(), "after_model")]:
        where = rf"{type(hook).__name__}\.{method} cannot take the arguments"
        with pytest.raises(lw.ConfigurationError, match=where):
            lw.react(hooks=[hook])
        with pytest.raises(lw.ConfigurationError, match=where):
            lw.run_sync(lw.react(), "go", model="mock", db=False, hooks=[hook])
    lw.react(hooks=[Flexible()])  # *args takes anything: accepted
