"""A writer lets go of its file however its close ends (cancelled included), and what a
run wrote after a failure of its store still gets the redaction every row gets."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

import loopwright as lw
from loopwright.log import _file_thread
from loopwright.log._writer import RunWriter

from ._rows import event_rows


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
    assert [data for _, _, data in event_rows(db)][0].count('"first"') == 1
    # the store is removed and made anew at the same path
    for path in tmp_path.glob("runs.db*"):
        path.unlink()
    second = RunWriter(db)
    assert second._file is not file
    second.event("run2", "", 0, lw.InfoEvent(data="second"))
    await second.aclose()
    assert [data for _, _, data in event_rows(db)][0].count('"second"') == 1
    file.thread.join(10)  # the first file's thread ended (it was replaced)
    assert not file.thread.is_alive()
    assert os.path.realpath(db) in _file_thread._files
