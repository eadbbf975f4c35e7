"""``lw.rollouts``: one agent over many inputs, the final states in order."""

from __future__ import annotations

from typing import Any

import pytest

import loopwright as lw


def echo(messages: list[lw.ChatMessage], tools: Any, config: Any) -> str:
    q = next(m.content for m in messages if m.role == "user")
    if q == "boom":
        raise RuntimeError("the model fell over")
    return f"you said {q}"


def test_states_in_the_inputs_order_and_a_failure_is_data() -> None:
    inputs = [f"n{i}" for i in range(25)] + ["boom"]
    agent = lw.react(submit=False)
    with lw.default_model(lw.get_model("mock", outputs=echo)):
        states = lw.rollouts(agent, inputs, max_concurrency=4, limits=[lw.step_limit(3)])
    assert [s.text for s in states[:-1]] == [f"you said n{i}" for i in range(25)]
    assert states[-1].error is not None and "fell over" in states[-1].error


def test_bad_options_are_refused() -> None:
    with pytest.raises(lw.ConfigurationError, match="max_concurrency"):
        lw.rollouts(lw.react(), ["x"], max_concurrency=0)
    with pytest.raises(lw.ConfigurationError, match="backend"):
        lw.rollouts(lw.react(), ["x"], backend="spark")  # type: ignore[arg-type]
    with pytest.raises(lw.ConfigurationError, match="by name"):
        lw.rollouts(lw.react(), ["x"], model=lw.get_model("mock"))  # type: ignore[arg-type]


def test_a_stopped_and_a_waiting_rollout_say_so() -> None:
    from ._status_task import StopOnOnes, answer, bash

    agent = lw.react(tools=[bash], submit=False, hooks=[StopOnOnes()])
    with lw.default_model(lw.get_model("mock", outputs=answer)):
        states = lw.rollouts(
            agent, ["0+0", "1+1", "2+2"], approval=lw.defer_approval("bash"), max_concurrency=2
        )
    assert [s.completed for s in states] == ["answer", "stopped", "waiting"]
    assert states[1].error == "budget spent on 1+1"
    assert [p.call.id for p in states[2].pending] == ["call-2"] and states[2].error is None
