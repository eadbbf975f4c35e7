"""Text Python allows but UTF-8 does not (lone surrogates) is recorded, not fatal."""

import json
import os
from pathlib import Path

import loopwright as lw

ODD = os.fsdecode(b"caf\xe9.txt")  # a file name that is not UTF-8: 'caf\udce9.txt'


@lw.tool
def list_dir() -> str:
    """List a folder."""
    return ODD


async def test_a_lone_surrogate_in_a_message_is_stored_and_read_back(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    model = lw.get_model(
        "mock",
        outputs=[
            lw.ModelOutput.for_tool_call("list_dir"),
            lw.ModelOutput.for_tool_call("submit", {"answer": ODD}),
        ],
    )
    state = await lw.run(lw.react(tools=[list_dir]), "ls", model=model, db=db)
    [info] = lw.list_runs(db)
    assert info.status == "success"
    with lw.load_run(info.id, db=db) as log:
        messages = log.messages()
    assert [m.id for m in messages] == [m.id for m in state.messages]
    assert messages[2].text == ODD


async def test_other_runs_on_the_same_file_are_unaffected(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"

    def script() -> lw.Model:
        return lw.get_model(
            "mock",
            outputs=[
                lw.ModelOutput.for_tool_call("list_dir"),
                lw.ModelOutput.for_tool_call("submit", {"answer": "ok"}),
            ],
        )

    import asyncio

    await asyncio.gather(
        lw.run(lw.react(tools=[list_dir]), "a", model=script(), db=db),
        lw.run(lw.react(tools=[list_dir]), "b", model=script(), db=db),
    )
    assert [r.status for r in lw.list_runs(db)] == ["success", "success"]


@lw.tool
def put(files: dict[str, str]) -> str:
    """Keep some files.

    Args:
        files: Their contents by name.
    """
    return f"kept {len(files)}"


async def test_a_lone_surrogate_in_a_key_of_a_calls_arguments_is_stored_and_read_back(
    tmp_path: Path,
) -> None:
    """A key is where a file name often goes: pydantic's JSON mode refuses a lone
    surrogate there, and the call's message and event were not written (the run stopped,
    its row said success, and reading it failed on the missing message)."""
    db = tmp_path / "runs.db"
    arguments = {"files": {ODD: "x"}}
    model = lw.get_model(
        "mock",
        outputs=[lw.ModelOutput.for_tool_call("put", arguments), "done"],
    )
    offered = lw.ToolInfo(name="odd", parameters={"type": "object", "properties": {ODD: {}}})
    state = await lw.run(lw.react(tools=[put], submit=False), "keep", model=model, db=db)
    assert state.text == "done"
    [info] = lw.list_runs(db)
    assert info.status == "success"
    with lw.load_run(info.id, db=db) as log:
        calls = [e.call for e in log.events() if isinstance(e, lw.ToolEvent)]
        messages = log.messages()
    assert [c.arguments for c in calls] == [arguments]
    assert messages[1].tool_calls[0].arguments == arguments  # type: ignore[union-attr]
    from loopwright.log._serialize import dump_tools

    assert json.loads(dump_tools([offered]))[0]["parameters"]["properties"] == {ODD: {}}
