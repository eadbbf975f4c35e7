"""A server that repeats a tool-call id (or sends none): each call of the reply still
gets its own id, so each is approved, answered and sent back once (issue 21)."""

from __future__ import annotations

from pathlib import Path

import pytest

import loopwright as lw

from .wire_server import WireServer, openai_reply

pytest.importorskip("openai", reason="the openai SDK is not installed (loopwright[openai])")

ran: list[str] = []


@lw.tool(parallel=True)
def deploy(host: str) -> str:
    """Deploy.

    Args:
        host: Where.
    """
    ran.append(host)
    return f"deployed {host}"


@pytest.mark.parametrize("call_id", ["call_1", ""])
async def test_repeated_ids_from_the_wire_become_unique(
    wire: WireServer, tmp_path: Path, call_id: str
) -> None:
    ran.clear()
    db = tmp_path / "runs.db"
    wire.push(
        openai_reply(
            None,
            tool_calls=[
                (call_id, "deploy", '{"host": "staging"}'),
                (call_id, "deploy", '{"host": "prod"}'),
            ],
            finish_reason="tool_calls",
        )
    )
    wire.push(openai_reply("both deployed"))

    def agent() -> lw.ReactAgent:
        model = lw.get_model(
            "openai/test-model",
            base_url=wire.url + "/v1",
            api_key="sk-test",
            config=lw.GenerateConfig(max_retries=0),
        )
        return lw.react(tools=[deploy], model=model, submit=False)

    policy = lw.defer_approval("deploy")
    state = await lw.run(agent(), "ship", db=db, approval=policy)
    ids = [p.call.id for p in state.pending]
    assert state.completed == "waiting" and len(set(ids)) == 2 and all(ids)
    lw.approve(state.run_id, all=True, db=db)
    state = await lw.resume(state.run_id, agent=agent(), db=db, approval=policy)
    assert state.completed == "answer" and sorted(ran) == ["prod", "staging"]
    # what went back to the server: two distinct calls, each answered once
    sent = wire.bodies[-1]["messages"]
    [assistant] = [m for m in sent if m["role"] == "assistant"]
    sent_ids = [c["id"] for c in assistant["tool_calls"]]
    assert len(set(sent_ids)) == 2
    assert sorted(m["tool_call_id"] for m in sent if m["role"] == "tool") == sorted(sent_ids)
