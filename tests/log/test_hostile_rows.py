"""A run store is untrusted input: a row damaged or crafted (a wrong type, JSON of the
wrong shape, a time out of range) is one clear RunStoreError naming the file, from
every reader, never an exception from deep inside."""

from __future__ import annotations

import json
import socket
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import loopwright as lw
from loopwright.log import runs_page
from loopwright.log._file_thread import close_idle_files

from ._scripted import add, script


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "runs.db"
    model = lw.get_model("mock", outputs=script(3))
    lw.run_sync(lw.react(tools=[add], submit=False, max_steps=5), "count", model=model, db=path)
    close_idle_files()
    return path


def damage(db: Path, sql: str, *params: object) -> None:
    conn = sqlite3.connect(db)
    with conn:
        conn.execute(sql, params)
    conn.close()


def one_clear_error(db: Path, call: object) -> lw.RunStoreError:
    with pytest.raises(lw.RunStoreError) as caught:
        call()  # type: ignore[operator]
    message = str(caught.value)
    assert str(db) in message and "\n" not in message, message
    return caught.value


def run_row_readers(db: Path) -> list[object]:
    def info() -> object:
        with lw.load_run(None, db=db) as log:
            return log.info

    return [lambda: lw.list_runs(db), lambda: runs_page(db), info]


@pytest.mark.parametrize(
    "sql",
    [
        "UPDATE runs SET created = 'yesterday'",
        "UPDATE runs SET created = 1e300",
        "UPDATE runs SET finished = 'soon'",
        "UPDATE runs SET metadata = '[1, 2]'",
        "UPDATE runs SET status = 'running', host = ?, pid = 'abc'",
    ],
)
def test_a_damaged_run_row_is_one_clear_error(db: Path, sql: str) -> None:
    """Reading the run is one clear error; listings show it as damaged, saying why
    (tests/log/test_damaged_runs.py)."""
    damage(db, sql, *([socket.gethostname()] if "?" in sql else []))
    one_clear_error(db, run_row_readers(db)[-1])
    for listed in (lw.list_runs(db), runs_page(db)):
        [info] = listed
        assert info.status == "damaged" and info.error and info.error.startswith("its ")


@pytest.mark.parametrize("pid", [-1, 99999999999999])
def test_a_running_row_whose_pid_is_no_process_id_reads_as_interrupted(db: Path, pid: int) -> None:
    damage(db, "UPDATE runs SET status = 'running', host = ?, pid = ?", socket.gethostname(), pid)
    [info] = lw.list_runs(db)
    assert info.status == "interrupted"


def event_readers(db: Path, kind: str) -> list[object]:
    """The readers of the rows of events of this kind (``tool_events`` reads only tool
    events)."""
    from loopwright.log import event_page

    def read(how: str) -> object:
        with lw.load_run(None, db=db) as log:
            if how == "events":
                return list(log.events())
            if how == "tools":
                return log.tool_events()
            return event_page(log, before=-1)

    hows = ("events", "tools", "page") if kind == "tool" else ("events", "page")
    return [lambda how=how: read(how) for how in hows]


@pytest.mark.parametrize(
    ("kind", "path", "value"),
    [
        ("tool", "$", "[1, 2]"),
        ("model", "$.output", '"text"'),
        ("model", "$.tools", '{"$ref": [1]}'),
        ("tool", "$.result", '{"$ref": {"id": 1}}'),
    ],
)
def test_an_event_row_of_the_wrong_shape_is_one_clear_error(
    db: Path, kind: str, path: str, value: str
) -> None:
    damage(
        db,
        "UPDATE events SET data = json_set(data, ?, json(?)) WHERE rowid = "
        "(SELECT MIN(rowid) FROM events WHERE type = ?)",
        path,
        value,
        kind,
    )
    for read in event_readers(db, kind):
        assert "cannot be read" in str(one_clear_error(db, read))


@pytest.mark.parametrize("value", ["not json", '{"a": 1}', "5", "[1, 2]"])
def test_a_damaged_list_of_final_messages_is_one_clear_error(db: Path, value: str) -> None:
    damage(db, "UPDATE runs SET messages = ?", value)

    def messages() -> object:
        with lw.load_run(None, db=db) as log:
            return log.messages()

    one_clear_error(db, messages)


@pytest.mark.parametrize(
    "sql",
    [
        "UPDATE runs SET metadata = 'not json'",
        "UPDATE runs SET name = x'00ff'",
        "UPDATE events SET data = 'not json' WHERE seq = 1",
        "UPDATE messages SET data = '{' WHERE rowid = 1",
    ],
)
def test_exporting_a_damaged_run_is_one_clear_error(db: Path, sql: str) -> None:
    damage(db, sql)
    out = db.parent / "run.json"
    one_clear_error(db, lambda: lw.export_run(None, out, db=db))
    assert not out.exists()


def _twice(data: dict[str, Any]) -> None:
    data["events"].append(data["events"][0])


@pytest.mark.parametrize(
    "edit",
    [
        lambda d: d.__setitem__("samples", ["not a sample"]),
        _twice,  # an event id twice
        lambda d: d["run"].__setitem__("id", {"not": "an id"}),
        lambda d: d["run"].__setitem__("status", None),
        lambda d: d["events"][0].__setitem__("seq", 10**30),
    ],
    ids=["a_sample_not_an_object", "an_event_twice", "an_id_not_text", "no_status", "a_huge_seq"],
)
def test_a_damaged_export_is_one_clear_error(db: Path, edit: Callable[[Any], None]) -> None:
    exported = lw.export_run(None, db.parent / "run.json", db=db)
    data = json.loads(exported.read_text())
    edit(data)
    exported.write_text(json.dumps(data))
    other = db.parent / "other.db"
    for read in (lambda: lw.import_run(exported, db=other), lambda: lw.load_run(exported)):
        one_clear_error(exported, read)
    assert lw.list_runs(other) == []  # nothing half imported


def test_an_export_nested_too_deep_is_one_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "deep.json"
    path.write_text('{"format": "loopwright-run", "run": ' + "[" * 100_000 + "]" * 100_000 + "}")
    one_clear_error(path, lambda: lw.load_run(path))


@pytest.mark.parametrize(
    "sql",
    [
        "UPDATE events SET timestamp = 'not a time' WHERE seq = 1",
        "UPDATE events SET data = json_set(data, '$.wait_time', 'abc') WHERE type = 'model'",
        "UPDATE events SET data = json_set(data, '$.usage', 'abc') WHERE type = 'model'",
        "UPDATE events SET data = json_set(data, '$.input_base_count', 'x') WHERE seq = 3",
        # (an earlier call's input, read only through the chain the last call extends)
        "UPDATE events SET data = json_set(data, '$.input', 5) WHERE seq = 3",
    ],
)
def test_a_damaged_row_met_finding_the_resume_point_is_one_clear_error(db: Path, sql: str) -> None:
    from loopwright.log._resume_point import resume_point

    damage(db, "UPDATE runs SET status = 'error'")
    damage(db, sql)
    [info] = lw.list_runs(db)
    one_clear_error(db, lambda: resume_point(info.id, db))


def test_a_resume_point_reads_times_without_a_zone_and_carried_infinities(db: Path) -> None:
    """A hand-edited row's time without a zone is UTC; a continued sample's carried
    counts that are not finite numbers are left out."""
    from loopwright.log._resume_point import resume_point

    damage(db, "UPDATE runs SET status = 'error'")
    damage(db, "UPDATE events SET timestamp = substr(timestamp, 1, 19) WHERE seq = 1")
    damage(db, """UPDATE runs SET metadata = '{"_resume": {"consumed": {"steps": 1e999}}}'""")
    [info] = lw.list_runs(db)
    point = resume_point(info.id, db)
    assert point.consumed.steps == 3 and point.last is not None


DEEP = "[" * 100_000 + "]" * 100_000


@pytest.mark.parametrize(
    "sql",
    [
        "UPDATE runs SET metadata = ?",
        "UPDATE runs SET messages = ?",
        "UPDATE events SET data = ? WHERE seq = 1",
        "UPDATE messages SET data = ? WHERE rowid = 1",
        "UPDATE tool_sets SET data = ?",
    ],
)
def test_json_nested_too_deep_in_a_row_is_one_clear_error(db: Path, sql: str) -> None:
    damage(db, sql, DEEP)

    def read_all() -> None:
        for info in lw.list_runs(db):
            with lw.load_run(info.id, db=db) as log:
                _ = log.info
                log.messages()
                for event in log.events():
                    if isinstance(event, lw.ModelEvent):
                        log.model_input(event)

    one_clear_error(db, read_all)
    one_clear_error(db, lambda: lw.export_run(None, db.parent / "run.json", db=db))


@pytest.mark.parametrize(
    "sql",
    [
        # a patch that does not apply to the store rebuilt so far
        """UPDATE events SET data = json_set(data, '$.changes',
           json('[{"op": "replace", "path": "/nothing/here", "value": 1}]')) WHERE seq = 2""",
        "UPDATE events SET seq = -seq - 1",  # the patches out of order
        # a row marked as a store event that holds another kind of event
        "UPDATE events SET type = 'store' WHERE seq = 1",
    ],
)
def test_a_store_that_cannot_be_rebuilt_is_one_clear_error(db: Path, sql: str) -> None:
    from loopwright.log import store_at

    damage(db, sql)

    def rebuilt(how: str) -> object:
        with lw.load_run(None, db=db) as log:
            return log.store() if how == "store" else store_at(log)

    for how in ("store", "store_at"):
        if "type = 'store'" in sql:  # (not a store event: not a change of the store)
            assert rebuilt(how) == {"sums": [1, 2]}
        else:
            assert "store event" in str(one_clear_error(db, lambda how=how: rebuilt(how)))


def test_a_token_count_that_is_not_a_whole_number_is_not_summed(db: Path) -> None:
    from loopwright.log import usage_totals

    damage(db, "UPDATE events SET data = json_set(data, '$.usage.total_tokens', json('1e999'))")
    with lw.load_run(None, db=db) as log:
        assert usage_totals(log) == (3, 0)


@pytest.mark.parametrize("table", ["runs", "events"])
def test_a_store_whose_table_is_a_view_is_refused(db: Path, table: str) -> None:
    """A view's query runs on every read: a recursive one never ends (a crafted file
    would hang ``runs list``). This view ends; it is refused all the same."""
    damage(db, f"ALTER TABLE {table} RENAME TO {table}_rows")
    damage(db, f"CREATE VIEW {table} AS SELECT * FROM {table}_rows")
    for read in (*run_row_readers(db), *event_readers(db, "tool")):
        assert "is a view" in str(one_clear_error(db, read))
    with pytest.raises(lw.RunStoreError, match="is a view"):  # (and it is not written)
        lw.run_sync(lw.react(submit=False), "hi", model=lw.get_model("mock"), db=db)
