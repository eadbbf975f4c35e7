"""The eval runner: metrics, bounded concurrency, isolation, limits, resume, cancel."""

from __future__ import annotations

import asyncio
import math
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

import loopwright as lw
from loopwright.evals import default_max_samples


def question(messages: Sequence[lw.ChatMessage]) -> str:
    return next(m.content for m in messages if m.role == "user")


class Arithmetic:
    """A scripted model answering "a+b" questions; per-question behaviour is tunable."""

    def __init__(
        self,
        *,
        wrong: set[str] = frozenset(),  # type: ignore[assignment]
        fail: set[str] = frozenset(),  # type: ignore[assignment]
        hang: set[str] = frozenset(),  # type: ignore[assignment]
        gate: int = 0,
    ) -> None:
        self.wrong, self.fail, self.hang = wrong, fail, hang
        self.calls: Counter[str] = Counter()
        self.inflight = 0
        self.max_inflight = 0
        self.gate = gate  # hold calls until this many are in flight at once
        self._open = asyncio.Event()

    async def __call__(self, messages: Sequence[lw.ChatMessage], tools: Any, config: Any) -> str:
        q = question(messages)
        self.calls[q] += 1
        self.inflight += 1
        self.max_inflight = max(self.max_inflight, self.inflight)
        try:
            if self.gate:
                if self.inflight >= self.gate:
                    self._open.set()
                await asyncio.wait_for(self._open.wait(), 10)
            if q in self.hang:
                await asyncio.Event().wait()
            if q in self.fail:
                raise lw.ModelAPIError(f"provider down for {q}")
            a, b = (int(x) for x in q.split("+"))
            return f"The answer is {a + b + (1 if q in self.wrong else 0)}."
        finally:
            self.inflight -= 1

    def model(self) -> lw.Model:
        return lw.get_model("mock", outputs=self)


def dataset(n: int) -> list[dict[str, Any]]:
    return [{"id": f"s{i}", "input": f"{i}+{i}", "target": str(2 * i)} for i in range(n)]


def task(n: int = 10, **kwargs: Any) -> lw.Task:
    kwargs.setdefault("scorer", lw.match("numeric"))
    return lw.Task(dataset(n), agent=lw.react(submit=False), name="add", **kwargs)


class Recorder:
    """An EvalProgress that keeps what it was told."""

    def __init__(self, on_sample: Callable[[int], None] | None = None) -> None:
        self.started: list[tuple[str, int, int]] = []
        self.finished: list[lw.SampleResult] = []
        self.tokens = 0
        self.ended: list[lw.EvalResult] = []
        self.on_sample = on_sample

    def task_started(self, task: lw.Task, result: lw.EvalResult, pending: int) -> None:
        self.started.append((task.name, result.total, pending))

    def tokens_used(self, tokens: int) -> None:
        self.tokens += tokens

    def sample_finished(self, result: lw.SampleResult) -> None:
        self.finished.append(result)
        if self.on_sample is not None:
            self.on_sample(len(self.finished))

    def task_finished(self, result: lw.EvalResult) -> None:
        self.ended.append(result)


async def test_metrics_on_a_known_dataset(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    model = Arithmetic(wrong={"1+1", "4+4", "7+7"})
    progress = Recorder()
    [result] = await lw.eval_async(task(10), model=model.model(), db=db, progress=progress)
    values = [0.0 if i in (1, 4, 7) else 1.0 for i in range(10)]
    mean = sum(values) / 10
    stderr = math.sqrt(sum((v - mean) ** 2 for v in values) / 9) / math.sqrt(10)
    assert result.status == "success" and result.completed == 10 and result.errors == 0
    assert result.metrics == {"match": {"accuracy": 0.7, "stderr": pytest.approx(stderr)}}
    assert result.tokens > 0 and result.tokens == progress.tokens
    assert progress.started == [("add", 10, 10)] and len(progress.finished) == 10
    by_id = {s.id: s for s in result.samples}
    assert by_id["s3"].answer == "The answer is 6." and by_id["s3"].scores["match"].value == 1
    assert by_id["s4"].scores["match"].answer == "9"

    with lw.load_run(result.run_id, db=db) as log:
        info = log.info
        assert info.name == "add" and info.status == "success" and info.samples == 10
        assert info.metadata["kind"] == "eval" and info.metadata["scorers"] == ["match"]
        assert isinstance(info.output, dict)
        assert info.output["metrics"]["match"]["accuracy"] == 0.7
        samples = {s.id: s for s in log.samples}
        assert samples["s4"].status == "success" and samples["s4"].target == "8"
        assert samples["s4"].scores is not None
        assert samples["s4"].scores["match"]["value"] == 0.0
        assert [m.role for m in log.messages("s4")][-2:] == ["user", "assistant"]


async def test_concurrency_is_bounded_by_max_samples() -> None:
    for k in (1, 3):
        model = Arithmetic(gate=k)
        [result] = await lw.eval_async(task(12), model=model.model(), max_samples=k, db=False)
        assert result.completed == 12
        assert model.max_inflight == k  # k reached (the gate waits for it), never more


async def test_default_concurrency_is_the_models_connection_limit() -> None:
    model = Arithmetic(gate=2)
    limited = lw.get_model("mock", outputs=model, config=lw.GenerateConfig(max_connections=2))
    assert default_max_samples(limited) == 2
    await lw.eval_async(task(6), model=limited, db=False)
    assert model.max_inflight == 2
    assert default_max_samples(lw.get_model("mock")) == 10
    assert default_max_samples(lw.get_model("local")) == 1  # one call at a time


async def test_errors_are_isolated_and_recorded(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    model = Arithmetic(fail={"2+2"})

    def picky(state: lw.AgentState, sample: lw.Sample) -> float:
        if sample.id == "s5":
            raise ValueError("scorer bug")
        return 1.0

    t = task(8, scorer=[lw.match("numeric"), lw.scorer(picky)])
    [result] = await lw.eval_async(t, model=model.model(), db=db, max_samples=4)
    assert result.status == "success" and result.errors == 2 and result.completed == 8
    failed = {s.id: s for s in result.samples if s.status == "error"}
    assert set(failed) == {"s2", "s5"}
    assert "provider down" in (failed["s2"].error or "")
    assert "ValueError: scorer bug" in (failed["s5"].error or "")
    assert result.metrics["match"]["accuracy"] == 1.0  # over the 6 scored samples
    with lw.load_run(result.run_id, db=db) as log:
        rows = {s.id: s for s in log.samples}
        assert rows["s2"].status == "error" and rows["s2"].scores is None
        assert "provider down" in (rows["s2"].error or "")
        assert rows["s1"].status == "success"
        errors = [e for e in log.events("s2") if isinstance(e, lw.ErrorEvent)]
        assert errors and errors[0].traceback


async def test_limits_are_per_sample_and_scored() -> None:
    def tool_then_answer(messages: Sequence[lw.ChatMessage], tools: Any, config: Any) -> Any:
        if messages[-1].role == "tool":
            return "4"
        return lw.ModelOutput.for_tool_call("think", {"thought": "hmm"})

    model = lw.get_model("mock", outputs=tool_then_answer)
    agent = lw.react(tools=[lw.think()], submit=False)
    # each sample needs 2 steps: with its own step limit of 2 every sample finishes
    ok = lw.Task(dataset(3), agent=agent, scorer=lw.match("numeric"), limits=[lw.step_limit(2)])
    [result] = await lw.eval_async(ok, model=model, db=False, max_samples=1)
    assert [s.status for s in result.samples] == ["success"] * 3
    # with 1 step every sample ends by its limit, and is still scored
    short = lw.Task(dataset(3), agent=agent, scorer=lw.match("numeric"), limits=[lw.step_limit(1)])
    [result] = await lw.eval_async(short, model=model, db=False, max_samples=1)
    assert [s.status for s in result.samples] == ["limit"] * 3
    assert all(s.limit is not None and s.limit.type == "step" for s in result.samples)
    assert result.limits == 3 and result.metrics["match"]["accuracy"] == 0.0


async def test_a_sample_ended_by_a_limit_records_one_limit_event(tmp_path: Path) -> None:
    model = lw.get_model(
        "mock", outputs=[lw.ModelOutput.for_tool_call("think", {"thought": "x"})] * 4
    )
    agent = lw.react(tools=[lw.think()], submit=False)
    t = lw.Task(dataset(1), agent=agent, scorer=lw.match("numeric"), limits=[lw.step_limit(1)])
    db = tmp_path / "runs.db"
    [result] = await lw.eval_async(t, model=model, db=db, max_samples=1)
    sample = result.samples[0]
    with lw.load_run(result.run_id, db=db) as log:
        limits = [e for e in log.events(log.samples[0]) if isinstance(e, lw.LimitEvent)]
    assert sample.status == "limit"
    assert len(limits) == 1


async def test_a_time_limit_hit_does_not_leak_into_later_samples() -> None:
    # one worker runs the samples one after the other: a sample ended by its time limit
    # must leave nothing behind for the next (its own fresh limits, its own context)
    async def agent(state: lw.AgentState) -> lw.AgentState:
        if question(state.messages) == "0+0":
            await asyncio.sleep(30)
        lw.check_limits()  # what every agent loop does between steps
        state.output = lw.ModelOutput.from_text("ok")
        return state

    t = lw.Task(dataset(4), agent=agent, limits=[lw.time_limit(0.3)], name="slow")
    [result] = await lw.eval_async(t, model="mock", max_samples=1, db=False)
    status = {s.id: s.status for s in result.samples}
    assert status == {"s0": "limit", "s1": "success", "s2": "success", "s3": "success"}


async def test_resume_skips_finished_samples(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    broken = Arithmetic(fail={"3+3", "4+4"})
    [first] = await lw.eval_async(task(6), model=broken.model(), db=db)
    assert first.errors == 2

    fixed = Arithmetic()
    [second] = await lw.eval_async(task(6), model=fixed.model(), db=db, resume=first.run_id)
    assert sorted(fixed.calls) == ["3+3", "4+4"]  # only the failed ones ran again
    assert second.run_id != first.run_id and second.resumed_from == first.run_id
    assert second.completed == 6 and second.errors == 0
    assert sum(s.resumed for s in second.samples) == 4
    assert second.metrics["match"]["accuracy"] == 1.0
    with lw.load_run(second.run_id, db=db) as log:
        rows = log.samples
        assert len(rows) == 6 and {r.status for r in rows} == {"success"}
        carried = [r for r in rows if r.metadata.get("resumed_from") == first.run_id]
        assert len(carried) == 4 and all(r.scores for r in carried)

    again = Arithmetic()
    [third] = await lw.eval_async(task(6), model=again.model(), db=db, resume=second.run_id)
    assert not again.calls and third.completed == 6  # resuming a resumed run chains

    other = lw.Task(dataset(6), name="other")
    with pytest.raises(lw.TaskError, match="evaluated 'add', not 'other'"):
        await lw.eval_async(other, model=again.model(), db=db, resume=first.run_id)


async def test_cancel_keeps_what_ran(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    model = Arithmetic(hang={"4+4", "5+5"})
    two_done = asyncio.Event()
    progress = Recorder(on_sample=lambda n: two_done.set() if n >= 4 else None)
    running = asyncio.create_task(
        lw.eval_async(task(6), model=model.model(), db=db, max_samples=2, progress=progress)
    )
    await asyncio.wait_for(two_done.wait(), 10)
    await asyncio.sleep(0.05)  # the two hanging samples are in flight
    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running
    [ended] = progress.ended
    assert ended.status == "cancelled" and ended.completed == 4
    with lw.load_run(ended.run_id, db=db) as log:
        assert log.info.status == "cancelled"
        statuses = {s.id: s.status for s in log.samples}
        assert statuses == {
            "s0": "success",
            "s1": "success",
            "s2": "success",
            "s3": "success",
            "s4": "cancelled",
            "s5": "cancelled",
        }
    fixed = Arithmetic()
    [resumed] = await lw.eval_async(task(6), model=fixed.model(), db=db, resume=ended.run_id)
    assert sorted(fixed.calls) == ["4+4", "5+5"] and resumed.completed == 6


async def test_epochs_are_averaged_per_sample() -> None:
    seen: Counter[str] = Counter()

    def answer(messages: Sequence[lw.ChatMessage], tools: Any, config: Any) -> str:
        q = question(messages)
        seen[q] += 1
        return "0" if q == "0+0" else ("99" if seen[q] == 3 else str(2 * int(q.split("+")[0])))

    [result] = await lw.eval_async(
        task(2), model=lw.get_model("mock", outputs=answer), epochs=3, db=False
    )
    assert result.total == 6 and result.completed == 6
    assert sorted((s.id, s.epoch) for s in result.samples) == [
        ("s0", 1), ("s0", 2), ("s0", 3), ("s1", 1), ("s1", 2), ("s1", 3),
    ]  # fmt: skip
    # s0 is right 3/3, s1 right 2/3: (1 + 2/3) / 2
    assert result.metrics["match"]["accuracy"] == pytest.approx(5 / 6)


async def test_each_sample_has_its_own_store_and_transcript(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"

    async def agent(state: lw.AgentState) -> lw.AgentState:
        q = question(state.messages)
        lw.store().set("seen", q)
        lw.transcript().info(f"working on {q}")
        state.output = await lw.get_model().generate(state.messages)
        return state

    t = lw.Task(dataset(3), agent=agent, scorer=lw.match("numeric"), name="own")
    [result] = await lw.eval_async(t, model=Arithmetic().model(), db=db)
    with lw.load_run(result.run_id, db=db) as log:
        for s in log.samples:
            assert log.store(s) == {"seen": s.input}
            events = list(log.events(s))
            infos = [e.data for e in events if isinstance(e, lw.InfoEvent)]
            assert infos == [f"working on {s.input}"]
            assert sum(isinstance(e, lw.ModelEvent) for e in events) == 1
        assert not [e for e in log.events() if isinstance(e, lw.ModelEvent)]


async def test_sample_files_go_into_a_sandbox() -> None:
    async def reader(state: lw.AgentState) -> lw.AgentState:
        text = await lw.sandbox().read_file("data/in.txt")
        state.output = lw.ModelOutput.from_text(text.strip())
        return state

    samples = [lw.Sample(input="read it", target="hello file", files={"data/in.txt": "hello file"})]
    t = lw.Task(samples, agent=reader, scorer=lw.match("exact"), sandbox="local")
    [result] = await lw.eval_async(t, db=False, model="mock")
    assert result.samples[0].status == "success"
    assert result.metrics["match"]["accuracy"] == 1.0
    # files but no sandbox: that sample fails, clearly
    no_box = lw.Task(samples, agent=reader, scorer=lw.match("exact"))
    [result] = await lw.eval_async(no_box, db=False, model="mock")
    assert result.samples[0].status == "error"
    assert "no sandbox" in (result.samples[0].error or "")


async def test_grader_defaults_to_the_evaluated_model() -> None:
    def respond(messages: Sequence[lw.ChatMessage], tools: Any, config: Any) -> str:
        text = messages[-1].content
        return "GRADE: C" if "The criterion:" in text else "Paris"

    t = lw.Task(
        [{"input": "Capital of France?", "target": "Paris"}],
        agent=lw.react(submit=False),
        scorer=lw.model_graded(),
    )
    [result] = await lw.eval_async(t, model=lw.get_model("mock", outputs=respond), db=False)
    assert result.samples[0].scores["model_graded"].value == 1.0


async def test_limit_and_argument_checks() -> None:
    model = Arithmetic()
    [result] = await lw.eval_async(task(10), model=model.model(), limit=3, db=False)
    assert result.total == 3 and sorted(model.calls) == ["0+0", "1+1", "2+2"]
    with pytest.raises(lw.ConfigurationError, match="max_samples"):
        await lw.eval_async(task(1), max_samples=0)
    with pytest.raises(lw.ConfigurationError, match="exactly one task"):
        await lw.eval_async([task(1), task(1)], resume="x")
    with pytest.raises(lw.TaskError, match="task_args"):
        await lw.eval_async(task(1), task_args={"n": 1})


def test_eval_sync_returns_results() -> None:
    [result] = lw.eval(task(4), model=Arithmetic().model(), db=False)
    # nothing stored: no run id to offer (one that `runs show` could not find)
    assert result.completed == 4 and result.db is None and result.run_id is None
