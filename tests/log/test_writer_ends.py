"""A writer lets go of its file however its close ends, cancelled included."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

import loopwright as lw
from loopwright.log._writer import RunWriter

from ._rows import event_rows


def remove_store(db: Path) -> None:
    for path in db.parent.glob(db.name + "*"):
        path.unlink()


async def test_a_cancelled_close_still_lets_go_of_the_file(tmp_path: Path) -> None:
    """A run cancelled while its writer closes (a timeout around the run, a second
    Ctrl-C) must not keep the file taken: else a file replaced at the path afterwards
    is never opened afresh, and the next run writes to the removed file (lost)."""
    db = tmp_path / "runs.db"
    first = RunWriter(db)
    first.event("run", "", 0, lw.InfoEvent(data="first"))
    closing = asyncio.ensure_future(first.aclose())
    await asyncio.sleep(0)  # it waits for its flush now
    closing.cancel()
    with pytest.raises(asyncio.CancelledError):
        await closing
    file = first._file
    assert file.users == 0 and first not in file.writers
    assert file.connected.wait(10)  # what was queued is still written
    [(_, _, data)] = event_rows(db)
    assert '"first"' in data
    remove_store(db)  # the store is removed and made anew at the same path
    second = RunWriter(db)
    assert second._file is not file
    second.event("run2", "", 0, lw.InfoEvent(data="second"))
    await second.aclose()
    [(_, _, data)] = event_rows(db)
    assert '"second"' in data
    file.thread.join(10)  # the first file's thread ended (its file was replaced)
    assert not file.thread.is_alive()
