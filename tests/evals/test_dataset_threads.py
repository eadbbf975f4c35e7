"""A streamed dataset read by two threads at once (a thread pool over its samples): the
index of the records read and the ids seen are one reader's at a time, so the same
record is never indexed twice, nor its id taken for a duplicate."""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

import loopwright as lw

N = 5000


@pytest.fixture
def switching() -> Iterator[None]:
    """Threads switched as often as the interpreter can (what a loaded machine does
    now and then), so that two readers interleave between any two steps."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(before)


def read(ds: lw.Dataset, seen: list[list[str]], errors: list[BaseException]) -> None:
    try:
        seen.append([str(s.id) for s in ds])
    except BaseException as ex:  # (the thread's error, for the test to show)
        errors.append(ex)


def test_two_threads_reading_a_streamed_dataset(tmp_path: Path, switching: None) -> None:
    path = tmp_path / "d.jsonl"
    path.write_text("".join(json.dumps({"input": f"q{i}"}) + "\n" for i in range(N)))
    for _ in range(3):
        ds = lw.json_dataset(path)
        seen: list[list[str]] = []
        errors: list[BaseException] = []

        threads = [threading.Thread(target=read, args=(ds, seen, errors)) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
        assert seen == [[str(i) for i in range(1, N + 1)]] * 2
        assert len(ds) == N
        assert [ds[i].input for i in (0, N // 2, N - 1)] == ["q0", f"q{N // 2}", f"q{N - 1}"]
