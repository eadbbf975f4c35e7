"""The examples in examples/ run, end to end, with scripted models."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import loopwright as lw

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.fixture(autouse=True)
def _examples_importable() -> Iterator[None]:
    sys.path.insert(0, str(EXAMPLES))
    try:
        yield
    finally:
        sys.path.remove(str(EXAMPLES))


def load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def last(messages: Sequence[lw.ChatMessage]) -> lw.ChatMessage:
    return messages[-1]


async def test_calculator_chains_its_tools(tmp_path: Path) -> None:
    calc = load("calculator")
    offered: list[list[str]] = []

    def respond(
        messages: Sequence[lw.ChatMessage], tools: Sequence[lw.ToolInfo], config: Any
    ) -> Any:
        offered.append([t.name for t in tools])
        results = [m.content for m in messages if m.role == "tool"]
        if not results:
            return lw.ModelOutput.for_tool_call("multiply", {"a": 465, "b": 321})
        if len(results) == 1:
            return lw.ModelOutput.for_tool_call("add", {"a": float(results[0]), "b": 95297})
        if len(results) == 2:
            return lw.ModelOutput.for_tool_call("divide", {"a": float(results[1]), "b": 13.2})
        if len(results) == 3:
            return lw.ModelOutput.for_tool_call("divide", {"a": 1, "b": 0})
        return f"The result is {results[2]}."

    state = await lw.run(
        calc.calculator(), calc.QUESTION, model=lw.get_model("mock", outputs=respond),
        db=tmp_path / "runs.db",
    )  # fmt: skip
    assert offered[0] == ["multiply", "add", "divide"]
    tool_messages = [m for m in state.messages if isinstance(m, lw.ToolMessage)]
    assert [m.content for m in tool_messages[:3]] == ["149265.0", "244562.0", str(244562 / 13.2)]
    assert tool_messages[3].error is not None and "divide by zero" in tool_messages[3].content
    assert state.text == f"The result is {244562 / 13.2}." and state.completed == "answer"


def test_arithmetic_dataset_is_consistent() -> None:
    rows = [json.loads(line) for line in (EXAMPLES / "data" / "arithmetic.jsonl").open()]
    assert len(rows) == 20 and len({r["id"] for r in rows}) == 20
    assert {r["level"] for r in rows} == {"easy", "hard"}
    assert all(float(r["target"]) for r in rows)


async def test_arithmetic_task_scores_right_and_wrong_answers(tmp_path: Path) -> None:
    [task] = lw.load_tasks(str(EXAMPLES / "arithmetic.py"), {"level": "easy"})
    assert task.name == "arithmetic" and len(task.dataset) == 10
    with pytest.raises(lw.TaskError, match=r"level='medium' is not a valid Literal\['all', 'easy'"):
        lw.load_tasks(str(EXAMPLES / "arithmetic.py"), {"level": "medium"})
    targets = {s.input: s.target for s in task.dataset}

    def oracle(messages: Sequence[lw.ChatMessage], tools: Any, config: Any) -> str:
        q = next(m.content for m in messages if m.role == "user")
        target = targets[q]
        assert isinstance(target, str)
        if q.startswith("What is 12 times"):
            return "It is 85."  # wrong
        if "13.2" in q:
            return "About 7,219.47."  # rounded: within the task's tolerance
        return f"The answer is {target}."

    [result] = await lw.eval_async(
        task, model=lw.get_model("mock", outputs=oracle), db=tmp_path / "runs.db"
    )
    assert result.completed == 10 and result.errors == 0
    assert result.metrics["match"]["accuracy"] == pytest.approx(0.9)


async def test_custom_loop_checks_its_answer() -> None:
    loop = load("custom_loop")

    def respond(messages: Sequence[lw.ChatMessage], tools: Any, config: Any) -> Any:
        if last(messages).role == "user" and len(messages) == 1:
            return lw.ModelOutput.for_tool_call("count_letters", {"text": "loopwright"})
        if last(messages).role == "tool":
            return (
                lw.ModelOutput.for_tool_call(
                    "count_letters", {"text": "loopwright", "letters": "aeiou"}
                )
                if last(messages).content == "10"
                else "10 letters, 3 vowels."
            )
        return "10 letters, 3 vowels."

    state = await lw.run(
        loop.checked_loop([loop.count_letters]), loop.QUESTION,
        model=lw.get_model("mock", outputs=respond), db=False,
    )  # fmt: skip
    assert [m.content for m in state.messages if m.role == "tool"] == ["10", "3"]
    assert [m.content for m in state.messages if m.role == "user"][1:] == [loop.CHECK]
    assert state.text == "10 letters, 3 vowels." and state.completed == "answer"


async def test_researcher_reads_documents_in_parallel_subtasks(tmp_path: Path) -> None:
    research = load("researcher")
    docs = sorted(p.name for p in (EXAMPLES / "docs").glob("*.txt"))
    assert len(docs) >= 4
    reading = 0
    all_reading = asyncio.Event()

    async def respond(messages: Sequence[lw.ChatMessage], tools: Any, config: Any) -> str:
        nonlocal reading
        prompt = last(messages).content
        if prompt.startswith("Here is a document"):
            reading += 1
            if reading == len(docs):
                all_reading.set()
            await asyncio.wait_for(all_reading.wait(), 10)  # only if reads overlap
            return "Workers live about six weeks." if "honeybees.txt" in prompt else "NONE"
        assert "[honeybees.txt] Workers live about six weeks." in prompt
        assert "tea.txt" not in prompt
        return "About six weeks (honeybees.txt)."

    db = tmp_path / "runs.db"
    state = await lw.run(
        research.researcher(), "How long do worker bees live?",
        model=lw.get_model("mock", outputs=respond), db=db,
    )  # fmt: skip
    assert state.text == "About six weeks (honeybees.txt)."
    [run] = lw.list_runs(db)
    with lw.load_run(run.id, db=db) as log:
        subtasks = [e for e in log.tree() if isinstance(e, lw.SubtaskEvent)]
        if not subtasks:  # the run may nest its events in a span
            subtasks = [e for e in log.events() if isinstance(e, lw.SubtaskEvent)]
        assert len(subtasks) == len(docs)
        assert {e.name for e in subtasks} == {"read_document"}
        assert log.store() == {"sources": ["honeybees.txt"]}


def _bwrap_works() -> bool:
    async def probe() -> None:
        async with lw.use_sandbox("bwrap"):
            pass

    try:
        asyncio.run(probe())
    except lw.SandboxError:
        return False
    return True


@pytest.mark.parametrize("backend", ["local", "bwrap"])
def test_file_probe_runs_commands_in_the_sandbox(backend: str, tmp_path: Path) -> None:
    if backend == "bwrap" and not _bwrap_works():
        pytest.skip("bubblewrap cannot run here")
    probe = load("file_probe")

    def respond(messages: Sequence[lw.ChatMessage], tools: Any, config: Any) -> Any:
        if last(messages).role == "tool":
            return f"Most lines: {last(messages).content.splitlines()[0]}"
        return lw.ModelOutput.for_tool_call(
            "bash", {"cmd": "wc -l data/numbers.csv notes/todo.txt | sort -rn | sed -n 2p"}
        )

    state = asyncio.run(
        probe.probe(model=lw.get_model("mock", outputs=respond), sandbox=backend, db=False)
    )
    assert state.text.split() == ["Most", "lines:", "13", "data/numbers.csv"]
