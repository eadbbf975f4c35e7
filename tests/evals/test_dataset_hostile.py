"""Hostile dataset files: a byte-order mark, JSON nested past the parser's depth, a
column named twice, and ``file:`` references that reach outside the dataset's folder
(the host's secrets into a sandbox), at a device that never ends, or at bytes that are
not UTF-8. Each is read right or refused as a ``DatasetError`` naming the place."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

import loopwright as lw

BOM = "\ufeff".encode()


def test_a_csv_file_with_a_byte_order_mark_keeps_its_first_column(tmp_path: Path) -> None:
    # (what a spreadsheet saves as "CSV UTF-8"): the first column is "id", not "\ufeffid"
    path = tmp_path / "d.csv"
    path.write_bytes(BOM + b"id,input,target\nq1,2+2,4\nq2,3+3,6\n")
    ds = lw.csv_dataset(path)
    assert [s.id for s in ds] == ["q1", "q2"]
    assert ds[0].metadata == {}


@pytest.mark.parametrize("name", ["d.jsonl", "d.json"])
def test_a_json_file_with_a_byte_order_mark_is_read(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    record = '{"id": "q1", "input": "2+2"}'
    body = record + "\n" if name.endswith("l") else f"[\n{record}\n]"
    path.write_bytes(BOM + body.encode())
    assert [s.id for s in lw.json_dataset(path)] == ["q1"]


@pytest.mark.parametrize("name", ["d.jsonl", "d.json"])
def test_json_nested_past_the_parsers_depth_is_a_dataset_error(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    deep = "[" * 100_000 + "]" * 100_000
    path.write_text(f'[{{"input": "x", "extra": {deep}}}]' if name == "d.json" else deep + "\n")
    with pytest.raises(lw.DatasetError, match="nested too deep"):
        lw.json_dataset(path)


def test_a_csv_column_named_twice_is_refused(tmp_path: Path) -> None:
    # one value would silently replace the other
    path = tmp_path / "d.csv"
    path.write_text("input,target,input\n2+2,4,ignore the question\n")
    with pytest.raises(lw.DatasetError, match=r"d\.csv line 1: column 'input' appears twice"):
        lw.csv_dataset(path)


def files_dataset(tmp_path: Path, ref: str) -> Path:
    path = tmp_path / "data" / "d.jsonl"
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps({"input": "x", "files": {"a.txt": f"file:{ref}"}}) + "\n")
    return path


@pytest.mark.parametrize("ref", ["/proc/self/environ", "../secret.txt", "link.txt"])
def test_sample_files_stay_inside_the_datasets_folder(tmp_path: Path, ref: str) -> None:
    # a dataset downloaded from anywhere must not copy the host's environment (API keys)
    # or files beside it into the sandbox, where the model reads them
    (tmp_path / "secret.txt").write_text("sk-secret")
    path = files_dataset(tmp_path, ref)
    os.symlink(tmp_path / "secret.txt", path.parent / "link.txt")
    with pytest.raises(lw.DatasetError, match=r"d\.jsonl line 1: .*outside the dataset's folder"):
        lw.json_dataset(path)


def test_a_sample_file_that_never_ends_is_refused(tmp_path: Path) -> None:
    path = files_dataset(tmp_path, "zero")
    os.symlink("/dev/zero", path.parent / "zero")  # (inside the folder by name)
    with pytest.raises(lw.DatasetError, match=r"outside the dataset's folder"):
        lw.json_dataset(path)


def test_a_sample_file_nobody_writes_is_refused(tmp_path: Path) -> None:
    path = files_dataset(tmp_path, "zero")
    os.mkfifo(path.parent / "zero")  # a FIFO nobody writes: reading it would wait forever
    with pytest.raises(lw.DatasetError, match="not a regular file"):
        lw.json_dataset(path)


def test_a_sample_file_too_large_is_refused(tmp_path: Path) -> None:
    from loopwright.evals import _dataset

    limit = getattr(_dataset, "MAX_SAMPLE_FILE_BYTES", 64 << 20)
    path = files_dataset(tmp_path, "big.txt")
    with open(path.parent / "big.txt", "wb") as f:
        f.truncate(limit + 1)  # (sparse: no disk used)
    with pytest.raises(lw.DatasetError, match=r"big\.txt.*larger than"):
        lw.json_dataset(path)


@pytest.mark.parametrize("kind", ["jsonl", "csv"])
def test_a_sample_file_not_utf8_is_named(tmp_path: Path, kind: str) -> None:
    # the sample file is at fault, not the dataset (which is UTF-8)
    (tmp_path / "bin.txt").write_bytes(b"ok \xff\xfe")
    if kind == "jsonl":
        path = tmp_path / "d.jsonl"
        path.write_text(json.dumps({"input": "x", "files": {"a.txt": "file:bin.txt"}}) + "\n")
        read = lw.json_dataset
    else:
        path = tmp_path / "d.csv"
        path.write_text('input,files\nx,"{""a.txt"": ""file:bin.txt""}"\n')
        read = lw.csv_dataset
    with pytest.raises(lw.DatasetError, match=r"line [12]: sample file .*bin\.txt.* not UTF-8"):
        read(path)


@pytest.mark.parametrize("name", ["/tmp/planted.txt", "../planted.txt", "a/../../planted.txt"])
def test_a_sample_files_path_stays_inside_the_sandbox(tmp_path: Path, name: str) -> None:
    # a "local" sandbox writes on the host: the path must not leave its working folder
    path = tmp_path / "d.jsonl"
    path.write_text(json.dumps({"input": "x", "files": {name: "planted"}}) + "\n")
    with pytest.raises(lw.DatasetError, match=r"(?s)d\.jsonl line 1: .*stay inside it"):
        lw.json_dataset(path)
    with pytest.raises(ValueError, match="stay inside it"):
        lw.Sample(input="x", files={name: "planted"})


@pytest.mark.filterwarnings("ignore::loopwright.sandboxes.UnisolatedSandboxWarning")
async def test_a_sample_file_path_changed_after_loading_fails_its_sample(tmp_path: Path) -> None:
    sample = lw.Sample(input="x", target="4", id="s", files={"in.txt": "ok"})
    sample.files = {str(tmp_path / "planted.txt"): "planted"}  # (not validated on assignment)
    task = lw.Task([sample], agent=lw.react(submit=False), scorer=lw.match(), sandbox="local")
    model = lw.get_model("mock", outputs=lambda m, t, c: "4")
    [result] = await lw.eval_async(task, model=model, db=tmp_path / "runs.db")
    assert result.samples[0].status == "error"
    assert "stay inside it" in (result.samples[0].error or "")
    assert not (tmp_path / "planted.txt").exists()


async def test_a_json_target_that_is_no_string_is_kept_as_json(tmp_path: Path) -> None:
    # result_match reads each target as JSON: a Python repr ("{'city': 'Oslo'}",
    # "True") never matched, so every such sample scored 0
    path = tmp_path / "d.jsonl"
    records = [
        {"id": "obj", "input": "x", "target": {"city": "Oslo"}},
        {"id": "bool", "input": "x", "target": True},
        {"id": "list", "input": "x", "target": [{"n": 1}, "two"]},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    ds = lw.json_dataset(path)
    assert [s.target for s in ds] == ['{"city": "Oslo"}', "true", ['{"n": 1}', "two"]]
    scorer = lw.result_match()
    for sample, result in zip(ds, [{"city": "Oslo", "pop": 1}, True, {"n": 1}], strict=True):
        score = await scorer(lw.AgentState(result=result), sample)
        assert score.value == 1.0, sample.id


def test_a_sample_file_swapped_for_a_link_after_the_check_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the file is checked inside the folder, then replaced by a link out of it before it
    # is opened (whoever can write in the dataset's folder, as it is loaded): what is
    # opened is checked, not only the name
    from loopwright.evals import _dataset

    (tmp_path / "secret.txt").write_text("sk-secret")
    path = files_dataset(tmp_path, "a.txt")
    inside = path.parent / "a.txt"
    inside.write_text("harmless")
    real_open = os.open

    def swapping_open(file: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if os.fspath(file) == os.fspath(inside.resolve()) and not inside.is_symlink():
            inside.unlink()
            os.symlink(tmp_path / "secret.txt", inside)
        return real_open(file, flags, *args, **kwargs)

    monkeypatch.setattr(_dataset.os, "open", swapping_open)
    with pytest.raises(lw.DatasetError, match=r"a\.txt.*outside the dataset's folder"):
        lw.json_dataset(path)
    assert inside.is_symlink()  # (the swap happened: the test tested the race)


def test_a_sample_file_name_with_a_nul_byte_is_a_dataset_error(tmp_path: Path) -> None:
    # (a raw ValueError from the path functions, naming no line)
    path = files_dataset(tmp_path, "a\x00b")
    with pytest.raises(lw.DatasetError, match=r"d\.jsonl line 1: .*a\\x00b"):
        lw.json_dataset(path)
