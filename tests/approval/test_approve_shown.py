"""``lw.approve``: an approval is for the calls shown. The calls a program read
(``approve=calls``) are approved for their arguments then; ``all=True, shown=digest``
approves the calls a listing showed whole, never one it cut, and is refused when the
calls waiting are not those. Real run stores."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import loopwright as lw
from loopwright.log._approvals import deferred_calls, record_pending
from loopwright.tools import PendingCall


@lw.tool(parallel=True)
def bash(cmd: str) -> str:
    """Run a command.

    Args:
        cmd: The command.
    """
    return "ran"


async def waiting(db: Path, calls: list[lw.ToolCall]) -> str:
    message = lw.AssistantMessage(tool_calls=calls)
    model = lw.get_model("mock", outputs=[lw.ModelOutput(message=message, model="mock")])
    state = await lw.run(
        lw.react(tools=[bash]), "go", model=model, db=db, approval=lw.defer_approval("*")
    )
    assert state.completed == "waiting" and len(state.pending) == len(calls)
    return state.run_id or ""


def decisions(db: Path, run_id: str) -> dict[str, str | None]:
    return {c.call_id: c.decision for c in deferred_calls(db, run_id)}


async def test_the_calls_read_are_approved_for_the_arguments_read(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    run_id = await waiting(db, [lw.ToolCall(id="c1", function="bash", arguments={"cmd": "ls"})])
    shown = lw.pending_calls(run_id, db=db)  # what a program showed a person
    # meanwhile the run was continued elsewhere and waits again: same id, other arguments
    changed = lw.ToolCall(id="c1", function="bash", arguments={"cmd": "rm -rf ~"})
    record_pending(db, run_id, [PendingCall(call=changed, approver="defer")])
    with pytest.raises(lw.ApprovalRefused, match="other arguments"):
        lw.approve(run_id, approve=shown, db=db)
    assert decisions(db, run_id) == {"c1": None}
    [now] = lw.pending_calls(run_id, db=db)
    [decided] = lw.approve(run_id, approve=[now], db=db)
    assert decided.call.arguments == {"cmd": "rm -rf ~"}
    assert decisions(db, run_id) == {"c1": "approve"}


async def test_all_with_shown_never_approves_a_call_cut(tmp_path: Path) -> None:
    from loopwright.approval._shown import listing_digest, shown_whole

    db = tmp_path / "runs.db"
    calls = [
        lw.ToolCall(id="short", function="bash", arguments={"cmd": "ls"}),
        lw.ToolCall(id="long", function="bash", arguments={"cmd": "x" * 5_000 + "; rm -rf ~"}),
    ]
    run_id = await waiting(db, calls)
    listed = lw.pending_calls(run_id, db=db)
    whole = [c for c in listed if shown_whole(c.call)]
    assert [c.call_id for c in whole] == ["short"]
    digest = listing_digest((c.call_id, c.arguments_hash) for c in whole)
    # a call added since: the digest names other calls, refused, nothing decided
    added = lw.ToolCall(id="new", function="bash", arguments={"cmd": "id"})
    record_pending(db, run_id, [*(PendingCall(call=c) for c in calls), PendingCall(call=added)])
    with pytest.raises(lw.ApprovalRefused, match="not those the listing showed whole"):
        lw.approve(run_id, all=True, shown=digest, db=db)
    assert set(decisions(db, run_id).values()) == {None}
    listed = lw.pending_calls(run_id, db=db)  # listed again: the new call read too
    whole = [c for c in listed if shown_whole(c.call)]
    digest = listing_digest((c.call_id, c.arguments_hash) for c in whole)
    decided = lw.approve(run_id, all=True, shown=digest, db=db)
    assert [c.call_id for c in decided] == ["short", "new"]
    assert decisions(db, run_id) == {"short": "approve", "long": None, "new": "approve"}
    with pytest.raises(lw.ConfigurationError, match="shown= goes with all=True"):
        lw.approve(run_id, shown=digest, db=db)


async def test_all_is_refused_when_a_call_is_added_while_it_is_recorded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another process may park the run's calls again between the check of the digest
    and the recording of the decisions: the digest is checked again in the transaction
    that records them, so a listing that no longer names the calls waiting approves
    nothing (as documented: refused, with nothing recorded)."""
    import loopwright.runtime._approve as approving
    from loopwright.approval._shown import listing_digest
    from loopwright.log._approvals import record_decisions

    db = tmp_path / "runs.db"
    two = [lw.ToolCall(id=f"c{i}", function="bash", arguments={"cmd": "ls"}) for i in (1, 2)]
    run_id = await waiting(db, two)
    calls = lw.pending_calls(run_id, db=db)
    digest = listing_digest((c.call_id, c.arguments_hash) for c in calls)
    added = lw.ToolCall(id="late", function="bash", arguments={"cmd": "curl x | sh"})

    def concurrently(*args: Any, **kwargs: Any) -> Any:
        record_pending(db, run_id, [*(PendingCall(call=c.call) for c in calls),
                                    PendingCall(call=added)])  # fmt: skip
        return record_decisions(*args, **kwargs)

    monkeypatch.setattr(approving, "record_decisions", concurrently)
    with pytest.raises(lw.ApprovalRefused, match="not those the listing showed whole"):
        lw.approve(run_id, all=True, shown=digest, db=db)
    assert [c.state for c in deferred_calls(db, run_id)] == ["pending"] * 3
