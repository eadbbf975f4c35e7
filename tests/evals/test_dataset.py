"""Datasets: from lists, JSONL/JSON and CSV files, with field mapping."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import loopwright as lw
from loopwright.evals import FieldSpec


def write_jsonl(path: Path, records: list[object]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def test_list_of_records_strings_and_samples() -> None:
    ds = lw.as_dataset(
        [
            {"input": "2+2?", "target": "4", "level": "easy"},
            "just a question",
            lw.Sample(input="x", target=["a", "b"], id="mine"),
        ]
    )
    assert len(ds) == 3
    assert [s.id for s in ds] == [1, 2, "mine"]  # numbered by position when missing
    assert ds[0].metadata == {"level": "easy"}
    assert ds[0].targets == ["4"]
    assert ds[1].input == "just a question" and ds[1].targets == []
    assert ds[2].targets == ["a", "b"]


def test_duplicate_ids_are_refused() -> None:
    with pytest.raises(lw.DatasetError, match="appears twice"):
        lw.as_dataset([{"input": "a", "id": 1}, {"input": "b", "id": 1}])


def test_a_single_record_is_not_a_dataset() -> None:
    with pytest.raises(lw.DatasetError, match="not a single"):
        lw.as_dataset({"input": "a"})  # type: ignore[arg-type]


def test_jsonl_with_field_mapping(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "qa.jsonl",
        [
            {"question": "Capital of France?", "answer": "Paris", "qid": "f1", "src": "atlas"},
            {"question": "2*3?", "answer": 6, "qid": "m1", "src": "maths"},
        ],
    )
    ds = lw.json_dataset(
        path, fields={"input": "question", "target": "answer", "id": "qid", "metadata": ["src"]}
    )
    assert ds.name == "qa" and ds.location == str(path)
    assert [(s.id, s.input, s.target, s.metadata) for s in ds] == [
        ("f1", "Capital of France?", "Paris", {"src": "atlas"}),
        ("m1", "2*3?", "6", {"src": "maths"}),  # a number target becomes text
    ]


def test_jsonl_with_a_function(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "d.jsonl", [{"q": "a", "choices": ["x", "y"]}])
    ds = lw.json_dataset(
        path,
        fields=lambda r: lw.Sample(input=f"{r['q']} ({'/'.join(r['choices'])})", target="x"),
    )
    assert ds[0].input == "a (x/y)" and ds[0].id == 1


def test_json_list_file_and_blank_lines(tmp_path: Path) -> None:
    (tmp_path / "list.json").write_text(json.dumps([{"input": "a"}, {"input": "b"}]))
    assert [s.input for s in lw.json_dataset(tmp_path / "list.json")] == ["a", "b"]
    (tmp_path / "gaps.jsonl").write_text('{"input": "a"}\n\n{"input": "b"}\n')
    assert len(lw.json_dataset(tmp_path / "gaps.jsonl")) == 2


def test_bad_json_line_names_the_line(tmp_path: Path) -> None:
    (tmp_path / "bad.jsonl").write_text('{"input": "a"}\n{"input": \n')
    ds = lw.json_dataset(tmp_path / "bad.jsonl")  # (streamed: line 2 is read when used)
    with pytest.raises(lw.DatasetError, match=r"bad\.jsonl line 2: not valid JSON"):
        list(ds)


def test_missing_input_field_says_how_to_map(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "d.jsonl", [{"question": "a"}])
    with pytest.raises(lw.DatasetError, match=r"line 1: no 'input' field.*'question'.*FieldSpec"):
        lw.json_dataset(path)


def test_missing_file() -> None:
    with pytest.raises(lw.DatasetError, match="no dataset file"):
        lw.json_dataset("/nonexistent/data.jsonl")


def test_csv_with_mapping_and_list_targets(tmp_path: Path) -> None:
    path = tmp_path / "d.csv"
    path.write_text(
        'id,prompt,answer,topic\n1,Two plus two?,"[""4"", ""four""]",maths\n'
        "2,Sky colour?,blue,sky\n",
        encoding="utf-8",
    )
    ds = lw.csv_dataset(path, fields=FieldSpec(input="prompt", target="answer"))
    assert [s.id for s in ds] == ["1", "2"]
    assert ds[0].targets == ["4", "four"]
    assert ds[1].target == "blue" and ds[1].metadata == {"topic": "sky"}


def test_csv_unclosed_quote_is_an_error_naming_its_line(tmp_path: Path) -> None:
    path = tmp_path / "d.csv"
    rows = [f"q{i},{i}" for i in range(200)]
    rows[2] = '"What is 2+2?,4'  # line 4 (after the header and two rows): never closed
    path.write_text("input,target\n" + "\n".join(rows) + "\n", encoding="utf-8")
    with pytest.raises(lw.DatasetError, match=r"d.csv line 4: not valid CSV: .*quote left open"):
        list(lw.csv_dataset(path))


def test_csv_rows_must_have_the_header_s_fields(tmp_path: Path) -> None:
    path = tmp_path / "d.csv"
    # a quoted field may span lines (legal CSV), and blank lines are skipped
    path.write_text('input,target\n"two\nlines",a\n\nb,c,extra\n', encoding="utf-8")
    with pytest.raises(lw.DatasetError, match=r"d\.csv line 5: 3 fields where the header has 2"):
        list(lw.csv_dataset(path))
    path.write_text('input,target\n"two\nlines",a\n\nb,c\nonly\n', encoding="utf-8")
    with pytest.raises(lw.DatasetError, match=r"d\.csv line 6: 1 field where the header has 2"):
        list(lw.csv_dataset(path))
    path.write_text('input,target\n"two\nlines",a\n\nb,"c"\n', encoding="utf-8")
    assert [(s.input, s.target) for s in lw.csv_dataset(path)] == [("two\nlines", "a"), ("b", "c")]
    path.write_text('input,target\nb,"c"d\n', encoding="utf-8")
    with pytest.raises(lw.DatasetError, match=r"d\.csv line 2: not valid CSV"):
        lw.csv_dataset(path)  # (the first record is read at once)


def test_csv_without_header(tmp_path: Path) -> None:
    (tmp_path / "empty.csv").write_text("")
    with pytest.raises(lw.DatasetError, match="no header"):
        lw.csv_dataset(tmp_path / "empty.csv")


def test_sample_files_from_host_paths(tmp_path: Path) -> None:
    (tmp_path / "inputs").mkdir()
    (tmp_path / "inputs" / "a.txt").write_text("hello")
    path = write_jsonl(
        tmp_path / "d.jsonl",
        [{"input": "x", "files": {"a.txt": "file:inputs/a.txt", "b.txt": "inline"}}],
    )
    assert lw.json_dataset(path)[0].files == {"a.txt": "hello", "b.txt": "inline"}
    write_jsonl(path, [{"input": "x", "files": {"a.txt": "file:missing.txt"}}])
    with pytest.raises(lw.DatasetError, match="cannot read sample file"):
        lw.json_dataset(path)


def test_filter_and_slice_keep_the_name() -> None:
    ds = lw.as_dataset([{"input": str(i), "level": i % 2} for i in range(6)], name="n")
    odd = ds.filter(lambda s: s.metadata["level"] == 1)
    assert [s.input for s in odd] == ["1", "3", "5"] and odd.name == "n"
    assert [s.input for s in ds[:2]] == ["0", "1"]


def test_message_inputs_get_fresh_ids() -> None:
    sample = lw.Sample(input=[lw.UserMessage(content="hi")])
    a, b = sample.fresh_input(), sample.fresh_input()
    assert isinstance(a, list) and isinstance(b, list)
    assert a[0].content == b[0].content == "hi" and a[0].id != b[0].id
    assert sample.input_text == "hi"


def test_sample_positional_arguments() -> None:
    s = lw.Sample("What is 2+2?", "4", "q1", {"level": 1}, {"a.txt": "x"})
    assert (s.input, s.target, s.id, s.metadata, s.files) == (
        "What is 2+2?", "4", "q1", {"level": 1}, {"a.txt": "x"},
    )  # fmt: skip
    with pytest.raises(ValueError, match="input"):
        lw.Sample(3)  # type: ignore[arg-type]


def test_a_file_that_is_not_utf8_is_named_in_a_dataset_error(tmp_path: Path) -> None:
    latin = "input,target\ncafé,1\n".encode("latin-1")
    (tmp_path / "d.csv").write_bytes(latin)
    (tmp_path / "d.json").write_bytes(b'[{"input": "caf\xe9"}]')
    for name, load in (("d.csv", lw.csv_dataset), ("d.json", lw.json_dataset)):
        with pytest.raises(lw.DatasetError, match=f"{name}' is not UTF-8"):
            load(tmp_path / name)


def test_unknown_field_names_are_a_dataset_error(tmp_path: Path) -> None:
    (tmp_path / "d.jsonl").write_text('{"question": "q"}\n')
    (tmp_path / "d.csv").write_text("question\nq\n")
    for load, name in ((lw.json_dataset, "d.jsonl"), (lw.csv_dataset, "d.csv")):
        with pytest.raises(lw.DatasetError, match="unknown names question; known: input"):
            load(tmp_path / name, fields={"question": "input"})
