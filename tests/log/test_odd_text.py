"""Text Python allows but UTF-8 does not (lone surrogates) is recorded, not fatal."""

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
