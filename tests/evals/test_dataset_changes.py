"""A streamed dataset file changed while its dataset is used, in ways that keep its size
and its modification time (a copy that keeps times, ``cp -p`` or ``rsync -a``; a tool
that sets the time back): an error, never another file's records under the ids and
offsets of the first."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import loopwright as lw


def records(path: Path, word: str) -> Path:
    path.write_text("".join(json.dumps({"input": f"{word} {i}"}) + "\n" for i in range(3)))
    return path


@pytest.mark.parametrize("how", ["replaced", "rewritten"])
def test_a_file_changed_with_its_size_and_time_kept_is_an_error(tmp_path: Path, how: str) -> None:
    path = records(tmp_path / "d.jsonl", "alpha")
    before = path.stat()
    ds = lw.json_dataset(path)
    assert ds[0].input == "alpha 0"
    if how == "replaced":  # another file renamed over it, its times copied
        other = records(tmp_path / "new.jsonl", "omega")
        os.utime(other, ns=(before.st_atime_ns, before.st_mtime_ns))
        os.replace(other, path)
    else:  # the same file written again in place, its time set back
        records(path, "omega")
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert path.stat().st_size == before.st_size
    assert path.stat().st_mtime_ns == before.st_mtime_ns
    for read in (lambda: ds[1], lambda: list(ds), lambda: len(ds)):
        with pytest.raises(lw.DatasetError, match="changed since it was first read"):
            read()


def test_a_csv_file_with_lines_ending_in_a_carriage_return_alone(tmp_path: Path) -> None:
    """Lines ending in ``\\r`` alone (an old Mac's, Excel's "CSV (Macintosh)"): read as
    they were before datasets were streamed, each row at its own place."""
    path = tmp_path / "mac.csv"
    path.write_bytes(b'input,target\ra,b\r"c\rd",e\r\r"x ""y""",z\rf,g')
    ds = lw.csv_dataset(path)
    rows = [(s.input, s.target) for s in ds]
    assert rows == [("a", "b"), ("c\rd", "e"), ('x "y"', "z"), ("f", "g")]
    assert len(ds) == 4
    assert (ds[3].input, ds[1].input, ds[-2].target) == ("f", "c\rd", "z")
    bad = tmp_path / "bad.csv"
    bad.write_bytes(b'input,target\ra,b\r"open,c\rd,e\r')
    with pytest.raises(lw.DatasetError, match="line 3"):
        list(lw.csv_dataset(bad))
