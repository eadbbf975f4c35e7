"""Cost: each model call's dollars (ModelEvent.cost), the run's sum (state, run store,
``runs list``), unknown prices said as unknown, and ``cost_limit``."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

import loopwright as lw
from loopwright.model._prices import set_price

from ..cli._cli import cli

# $10 per million input tokens, $20 per million output: 1,000 in + 500 out = $0.02
USAGE = lw.Usage(input_tokens=1_000, output_tokens=500, total_tokens=1_500)
CALL = 0.02


@pytest.fixture(autouse=True)
def prices() -> Iterator[None]:
    set_price("mock/priced", input=10.0, output=20.0)
    yield
    set_price("mock/priced")


class Unpriced(lw.ModelAPI):
    """A provider no price table lists."""

    provider = "acme"
    model_name = "x1"

    def __init__(self, usage: lw.Usage | None = USAGE) -> None:
        self.usage = usage

    async def generate(
        self,
        messages: Sequence[lw.ChatMessage],
        tools: Sequence[lw.ToolInfo],
        config: lw.GenerateConfig,
    ) -> lw.ModelOutput:
        return lw.ModelOutput.from_text("acme", usage=self.usage)


def priced(n: int = 20) -> lw.Model:
    return lw.get_model(
        "mock/priced", outputs=[lw.ModelOutput.from_text(f"r{i}", usage=USAGE) for i in range(n)]
    )


def calls(*models: lw.Model) -> lw.Agent:
    """An agent that calls each model once, in turn."""

    async def agent(state: lw.AgentState) -> lw.AgentState:
        for m in models:
            state.output = await m.generate(state.messages)
        return state

    return agent


async def test_each_call_and_the_run_carry_their_cost(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    m = priced()
    state = await lw.run(calls(m, m, m), "hi", db=db, metadata={"team": "a"})
    assert state.cost == pytest.approx(3 * CALL)
    assert state.unpriced_calls == 0 and state.cost_known
    log = lw.load_run(state.run_id, db=db)
    costs = [e.cost for e in log.events() if isinstance(e, lw.ModelEvent)]
    assert costs == [pytest.approx(CALL)] * 3
    info = lw.list_runs(db)[0]
    assert info.cost == pytest.approx(3 * CALL) and info.unpriced_calls == 0
    # the cost is not mixed into the user's metadata
    assert info.metadata["team"] == "a" and "_cost" not in info.metadata
    out = cli("runs", "list", cwd=tmp_path, db=db).out
    assert "$0.0600" in out
    listed = cli("runs", "list", "--json", cwd=tmp_path, db=db).json()
    assert listed[0]["cost"] == pytest.approx(0.06)
    # an export keeps it
    lw.export_run(state.run_id, tmp_path / "run.json", db=db)
    assert lw.load_run(tmp_path / "run.json").info.cost == pytest.approx(0.06)


async def test_unknown_prices_are_said_not_counted_as_zero(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    acme = lw.Model(Unpriced())
    mixed = await lw.run(calls(priced(), acme), "hi", db=db)
    assert mixed.cost == pytest.approx(CALL)  # the priced part: a lower bound
    assert mixed.unpriced_calls == 1 and not mixed.cost_known
    events = [e for e in lw.load_run(mixed.run_id, db=db).events() if isinstance(e, lw.ModelEvent)]
    assert [e.cost for e in events] == [pytest.approx(CALL), None]
    none = await lw.run(calls(acme, acme), "hi", db=db)
    assert none.cost is None and none.unpriced_calls == 2 and not none.cost_known
    free = await lw.run(calls(lw.get_model("mock")), "hi", db=db)
    assert free.cost == 0.0 and free.cost_known  # the mock provider is listed as free
    rows = {r.id: r for r in lw.list_runs(db)}
    assert rows[none.run_id].cost is None and rows[none.run_id].unpriced_calls == 2
    out = cli("runs", "list", cwd=tmp_path, db=db).out

    def line(run_id: str | None) -> str:
        return next(x for x in out.splitlines() if run_id and run_id in x)

    assert "≥$0.0200" in line(mixed.run_id)
    assert "unknown" in line(none.run_id)
    assert "$0.0000" in line(free.run_id)


async def test_a_sub_agent_s_calls_count_in_the_run() -> None:
    inner = priced()

    async def outer(state: lw.AgentState) -> lw.AgentState:
        sub = await lw.run(calls(inner, inner), "sub", db=False)
        assert sub.cost == pytest.approx(2 * CALL)  # the nested run's own cost
        state.output = await inner.generate(state.messages)
        return state

    state = await lw.run(outer, "hi", db=False)
    assert state.cost == pytest.approx(3 * CALL)


async def test_cost_limit_stops_the_call_after_the_budget_is_spent() -> None:
    m = priced()
    state = await lw.run(calls(*[m] * 10), "hi", db=False, limits=[lw.cost_limit(0.05)])
    assert state.completed == "limit" and state.limit is not None
    assert state.limit.type == "cost"
    # 0.02, 0.04 < 0.05: a third call runs and crosses it; the fourth is refused
    assert state.limit.value == pytest.approx(0.06)
    assert "cost limit reached: $0.0600 spent (limit $0.0500)" in state.limit.message
    assert state.cost == pytest.approx(0.06)
    assert m.api.remaining == 17  # type: ignore[attr-defined]


async def test_cost_limit_refuses_a_model_with_no_price() -> None:
    api = Unpriced()
    with pytest.raises(lw.ConfigurationError, match="'acme/x1' has no known price"):
        await lw.run(calls(lw.Model(api)), "hi", db=False, limits=[lw.cost_limit(1.0)])


async def test_cost_limit_refuses_to_go_on_when_a_call_reports_no_usage() -> None:
    set_price("acme/x1", input=1.0, output=1.0)
    try:
        m = lw.Model(Unpriced(usage=None))
        with lw.cost_limit(1.0) as limit:
            await m.generate([lw.UserMessage(content="hi")])  # its cost is unknown
            with pytest.raises(lw.ConfigurationError, match="reported no token usage"):
                await m.generate([lw.UserMessage(content="hi")])
        assert limit.used == 0
    finally:
        set_price("acme/x1")


def test_cost_limit_refuses_bad_budgets() -> None:
    with pytest.raises(lw.ConfigurationError):
        lw.cost_limit(-1)
    with pytest.raises(lw.ConfigurationError):
        lw.cost_limit(float("nan"))


async def test_an_eval_run_keeps_the_cost_of_all_its_samples(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    model = lw.get_model(
        "mock/priced", outputs=lambda *_: lw.ModelOutput.from_text("4", usage=USAGE)
    )
    data = [{"id": f"s{i}", "input": "2+2", "target": "4"} for i in range(5)]
    task = lw.Task(data, agent=lw.react(submit=False), name="add", scorer=lw.match())
    [result] = await lw.eval_async(task, model=model, db=db)
    assert result.completed == 5
    [run] = lw.list_runs(db)
    assert run.cost == pytest.approx(5 * CALL) and run.unpriced_calls == 0


async def test_a_user_s_metadata_cannot_fake_the_cost(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    for fake in ("lots", {"dollars": "1e9", "unpriced_calls": "x"}, [1, 2]):
        async with lw.recording(name="r", db=db, metadata={"_cost": fake, "k": 1}) as rec:
            await rec.flush()
            running = lw.load_run(rec.run_id, db=db).info
            assert running.cost is None and running.unpriced_calls == 0
            assert running.metadata == {"k": 1}
            rec.finish(output="done")
        ended = lw.load_run(rec.run_id, db=db).info
        assert ended.cost == 0.0 and ended.metadata == {"k": 1}  # the end writes the real one


async def test_a_task_s_cost_limit_bounds_each_sample(tmp_path: Path) -> None:
    model = lw.get_model(
        "mock/priced",
        outputs=lambda *_: lw.ModelOutput.for_tool_call("think", {"thought": "x"}, usage=USAGE),
    )
    data = [{"id": f"s{i}", "input": "go", "target": "4"} for i in range(2)]
    agent = lw.react(tools=[lw.think()], max_steps=None)
    task = lw.Task(data, agent=agent, name="t", scorer=lw.match(), limits=[lw.cost_limit(0.05)])
    [result] = await lw.eval_async(task, model=model, db=tmp_path / "runs.db")
    assert len(result.samples) == 2
    for sample in result.samples:
        assert sample.limit is not None and sample.limit.type == "cost"
    [run] = lw.list_runs(tmp_path / "runs.db")
    assert run.cost == pytest.approx(2 * 3 * CALL)  # three calls a sample: 0.06 > 0.05
