"""A deferred call's arguments reach the run store's ``approvals`` table as every row
does: with the secrets learnt redacted, and a lone surrogate written escaped; the hash a
decision is checked against is of the arguments as stored, so the continuation (which
reads the call back from the store) applies the decision."""

from __future__ import annotations

from pathlib import Path

import loopwright as lw
from loopwright.model._redact import REDACTED, learn_secrets
from loopwright.tools import arguments_hash

SECRET = "sk-deferred-0d9c2b7e51aa4f3c8e6b"
ran: list[str] = []


@lw.tool
def deploy(env: str, token: str = "") -> str:
    """Deploy.

    Args:
        env: Where.
        token: A token.
    """
    ran.append(f"{env} {token}")
    return f"deployed {env}"


def _bytes(db: Path) -> bytes:
    return b"".join(p.read_bytes() for p in db.parent.glob(db.name + "*"))


async def test_a_deferred_call_holding_a_secret_is_stored_redacted_and_continues(
    tmp_path: Path,
) -> None:
    learn_secrets([SECRET])
    db = tmp_path / "runs.db"
    args = {"env": "prod \udce9", "token": SECRET}
    out = lw.ModelOutput.for_tool_call("deploy", args, tool_call_id="c0")
    agent = lw.react(tools=[deploy], submit=False)
    model = lw.get_model("mock", outputs=[out])
    state = await lw.run(agent, "go", model=model, db=db, approval=lw.defer_approval("deploy"))
    assert state.completed == "waiting" and ran == []
    [pending] = lw.pending_calls(state.run_id or "", db=db)
    assert pending.call.arguments == {"env": "prod \udce9", "token": REDACTED}
    assert pending.arguments_hash == arguments_hash(pending.call)  # of what is shown
    assert SECRET.encode() not in _bytes(db)
    lw.approve(state.run_id or "", approve={"c0": pending.arguments_hash}, db=db)
    live = lw.get_model("mock", outputs=["done"])
    state = await lw.resume(
        state.run_id or "", agent=agent, model=live, db=db, approval=lw.defer_approval("deploy")
    )
    # the call read back from the store holds what the store kept: the decision applies
    assert state.completed == "answer" and ran == [f"prod \udce9 {REDACTED}"]
    assert SECRET.encode() not in _bytes(db)


def test_the_hash_of_a_call_is_the_same_with_its_secrets_redacted() -> None:
    learn_secrets([SECRET])
    call = lw.ToolCall(id="c", function="deploy", arguments={"token": f"Bearer {SECRET}"})
    stored = lw.ToolCall(id="c", function="deploy", arguments={"token": f"Bearer {REDACTED}"})
    other = lw.ToolCall(id="c", function="deploy", arguments={"token": "Bearer other"})
    assert arguments_hash(call) == arguments_hash(stored) != arguments_hash(other)


def test_the_hash_of_a_call_is_of_its_arguments_as_stored() -> None:
    """A float that is not finite is stored as null: the call read back hashes alike."""
    call = lw.ToolCall(id="c", function="deploy", arguments={"x": float("inf"), "y": [1.5]})
    stored = lw.ToolCall(id="c", function="deploy", arguments={"x": None, "y": [1.5]})
    assert arguments_hash(call) == arguments_hash(stored)
