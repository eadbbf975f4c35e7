"""Streamed dataset files: JSON Lines and CSV samples are made as they are read, a limit
reads only what it needs, and a record over the bound is an error naming its line, not
a file read whole into memory."""

from __future__ import annotations

import json
import os
import tracemalloc
from pathlib import Path

import pytest

import loopwright as lw

BIG = "x" * 10_000  # each record's padding: 200 records ~ 2 MB


def write_jsonl(path: Path, n: int, broken_at: int | None = None) -> Path:
    with path.open("w", encoding="utf-8") as f:
        for i in range(1, n + 1):
            if i == broken_at:
                f.write('{"input": \n')
            else:
                f.write(json.dumps({"id": f"q{i}", "input": f"question {i}", "pad": BIG}) + "\n")
    return path


def first_ten_peak(load: object, path: Path) -> int:
    tracemalloc.start()
    try:
        ds = load(path)  # type: ignore[operator]
        first = ds[:10]
        assert [s.id for s in first] == [f"q{i}" for i in range(1, 11)]
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_the_first_ten_samples_of_a_large_file_cost_ten_records(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "big.jsonl", 2_000)  # ~20 MB
    assert path.stat().st_size > 20_000_000
    peak = first_ten_peak(lw.json_dataset, path)
    assert peak < 2_000_000, f"peak {peak} bytes for ten records of 10 kB"


def test_the_first_ten_rows_of_a_large_csv_cost_ten_rows(tmp_path: Path) -> None:
    path = tmp_path / "big.csv"
    with path.open("w", encoding="utf-8") as f:
        f.write("id,input,pad\n")
        for i in range(1, 2_001):
            f.write(f"q{i},question {i},{BIG}\n")
    peak = first_ten_peak(lw.csv_dataset, path)
    assert peak < 2_000_000, f"peak {peak} bytes for ten rows of 10 kB"


def test_a_broken_record_past_the_limit_is_never_read(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "d.jsonl", 50, broken_at=20)
    ds = lw.json_dataset(path)
    assert [s.input for s in ds[:3]] == ["question 1", "question 2", "question 3"]
    assert ds[18].id == "q19"
    with pytest.raises(lw.DatasetError, match=r"d\.jsonl line 20: not valid JSON"):
        list(ds)
    with pytest.raises(lw.DatasetError, match=r"d\.jsonl line 20: not valid JSON"):
        len(ds)


async def test_an_eval_with_a_limit_reads_only_its_samples(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "d.jsonl", 50, broken_at=5)
    task = lw.Task(lw.json_dataset(path), agent=lw.react(submit=False), scorer=lw.includes())
    model = lw.get_model("mock", outputs=lambda m, t, c: "question")
    [result] = await lw.eval_async(task, model=model, limit=3, db=False)
    assert [s.id for s in result.samples] == ["q1", "q2", "q3"]
    assert result.errors == 0


def test_a_line_over_the_bound_is_an_error_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from loopwright.evals import _dataset_files

    monkeypatch.setattr(_dataset_files, "MAX_RECORD_BYTES", 1_000)
    path = tmp_path / "d.jsonl"
    lines = ['{"input": "a"}', '{"input": "b"}', json.dumps({"input": "c" * 5_000})]
    path.write_text("\n".join(lines) + "\n")
    ds = lw.json_dataset(path)
    assert [s.input for s in ds[:2]] == ["a", "b"]
    with pytest.raises(lw.DatasetError, match=r"d\.jsonl line 3: longer than 1000 bytes"):
        list(ds)


def test_a_line_of_gigabytes_is_refused_after_the_bound(tmp_path: Path) -> None:
    # one line of 80 MB with no newline: read to the bound (64 MiB), never whole
    path = tmp_path / "d.jsonl"
    with path.open("wb") as f:
        f.write(b'{"input": "')
        f.write(b"y" * (80 << 20))
    tracemalloc.start()
    try:
        with pytest.raises(lw.DatasetError, match=r"d\.jsonl line 1: longer than 67108864"):
            lw.json_dataset(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 80 << 20  # (the bound, and what a bytearray grows by)


def test_a_csv_record_over_the_bound_names_the_line_it_starts_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from loopwright.evals import _dataset_files

    monkeypatch.setattr(_dataset_files, "MAX_RECORD_BYTES", 1_000)
    path = tmp_path / "d.csv"
    # a quote left open on line 3: every line after it would join that one record
    body = 'input,target\na,1\n"b,2\n' + "".join(f"c{i},{i}\n" for i in range(500))
    path.write_text(body)
    ds = lw.csv_dataset(path)
    assert ds[0].input == "a"
    with pytest.raises(lw.DatasetError, match=r"d\.csv line 3: a record longer than 1000"):
        list(ds)


def test_random_access_reads_records_again_at_their_offsets(tmp_path: Path) -> None:
    path = tmp_path / "d.csv"
    bom = "\ufeff".encode()
    rows = "".join(f'r{i},"line\r\n{i}",{i}\r\n' for i in range(1, 8))
    path.write_bytes(bom + b"id,input,target\r\n" + rows.encode() + b"\r\nlast,x,y\r\n")
    ds = lw.csv_dataset(path)
    assert ds[3].id == "r4" and ds[3].input == "line\r\n4"  # (read on to the 4th)
    assert len(ds) == 8
    assert ds[-1].id == "last" and ds[0].id == "r1" and ds[3].target == "4"
    assert [s.id for s in ds[1:7:3]] == ["r2", "r5"]
    assert [s.id for s in ds[-2:]] == ["r7", "last"]
    with pytest.raises(IndexError):
        ds[8]
    assert [s.id for s in ds] == [f"r{i}" for i in range(1, 8)] + ["last"]


def test_ids_by_position_and_duplicates_when_streamed(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    path.write_text('{"input": "a"}\n\n{"input": "b"}\n{"input": "c", "id": "x"}\n')
    ds = lw.json_dataset(path)
    assert [s.id for s in ds] == [1, 2, "x"]
    assert [s.id for s in ds] == [1, 2, "x"]  # (the same when read again)
    assert ds[1].id == 2 and repr(ds) == "Dataset('d', 3 samples)"
    path.write_text('{"input": "a", "id": 1}\n{"input": "b"}\n{"input": "c", "id": 1}\n')
    twice = lw.json_dataset(path)
    assert twice[0].id == 1
    with pytest.raises(lw.DatasetError, match="sample id '1' appears twice"):
        list(twice)


def test_a_file_changed_while_used_is_an_error(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "d.jsonl", 5)
    ds = lw.json_dataset(path)
    with path.open("a") as f:
        f.write('{"input": "more"}\n')
    with pytest.raises(lw.DatasetError, match="changed since it was first read"):
        list(ds)


def test_text_not_utf8_on_a_later_line_names_it(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    path.write_bytes(b'{"input": "a"}\n{"input": "caf\xe9"}\n')
    ds = lw.json_dataset(path)
    with pytest.raises(lw.DatasetError, match=r"d\.jsonl' is not UTF-8 text \(line 2, byte 29"):
        list(ds)


def test_a_json_list_is_read_whole_and_bounded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from loopwright.evals import _dataset_files

    path = tmp_path / "d.json"
    path.write_text(json.dumps([{"input": str(i)} for i in range(100)]))
    assert len(lw.json_dataset(path)) == 100
    one = tmp_path / "one.json"
    one.write_text('{\n  "input": "a"\n}\n')  # one object over lines: not a list
    with pytest.raises(lw.DatasetError, match="must hold a list of objects"):
        lw.json_dataset(one)
    lines = tmp_path / "lines.json"  # JSON Lines under another name: streamed
    lines.write_text('{"input": "a"}\n{"input": "b"}\n')
    assert [s.input for s in lw.json_dataset(lines)] == ["a", "b"]
    monkeypatch.setattr(_dataset_files, "MAX_JSON_DOCUMENT_BYTES", 1_000)
    with pytest.raises(lw.DatasetError, match=r"larger than 1000 bytes.*JSON Lines"):
        lw.json_dataset(path)


def test_a_task_on_an_empty_file_has_no_sample(tmp_path: Path) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_text("\n\n")
    with pytest.raises(lw.TaskError, match="needs at least one sample"):
        lw.Task(lw.json_dataset(path))
    assert not lw.json_dataset(path) and len(lw.json_dataset(path)) == 0
    assert os.path.getsize(path) == 2


def test_a_unicode_line_separator_inside_a_string_ends_no_line(tmp_path: Path) -> None:
    # (valid JSON: U+2028 needs no escape in a string; str.splitlines split the record)
    path = tmp_path / "d.jsonl"
    path.write_text('{"input": "a\u2028b"}\r\n{"input": "c\x85d"}\n', encoding="utf-8")
    assert [s.input for s in lw.json_dataset(path)] == ["a\u2028b", "c\x85d"]
