"""One damaged row of the ``runs`` table (hand-edited, or written by another version)
does not hide the others: listings show it as a ``damaged`` placeholder saying why, and
reading that run itself is still one clear error."""

from __future__ import annotations

import socket
from datetime import UTC, datetime
from pathlib import Path

import pytest

import loopwright as lw
from loopwright.log import runs_page
from loopwright.log._file_thread import close_idle_files

from .test_hostile_rows import DEEP, damage

# as RunInfo's docstring says: a reason is at most 160 characters; a damaged row's id
# that is not text, and its created that cannot be read, are these stand-ins
MAX_REASON = 160
NOT_TEXT_ID = "(id not text)"
UNKNOWN_TIME = datetime.fromtimestamp(0, UTC)


def three_runs(tmp_path: Path) -> tuple[Path, list[str]]:
    """A store of three finished runs; their ids, newest first."""
    db = tmp_path / "runs.db"
    for name in ("old", "middle", "new"):
        lw.run_sync(lw.react(submit=False), name, model=lw.get_model("mock"), db=db, name=name)
    close_idle_files()
    return db, [r.id for r in lw.list_runs(db)]


# (the damage done to the middle run, what its reason names)
DAMAGE = [
    ("UPDATE runs SET created = 'yesterday' WHERE name = 'middle'", "its created"),
    ("UPDATE runs SET created = 1e300 WHERE name = 'middle'", "its created"),
    ("UPDATE runs SET finished = 'soon' WHERE name = 'middle'", "its finished"),
    ("UPDATE runs SET metadata = '[1, 2]' WHERE name = 'middle'", "its metadata"),
    ("UPDATE runs SET metadata = 'not json' WHERE name = 'middle'", "its metadata"),
    ("UPDATE runs SET output = '{' WHERE name = 'middle'", "its output"),
    ("UPDATE runs SET \"limit\" = '[1]' WHERE name = 'middle'", "its limit"),
    ("UPDATE runs SET messages = '5' WHERE name = 'middle'", "its message_ids"),
    ("UPDATE runs SET status = 'running', host = ?, pid = 'abc' WHERE name = 'middle'", "its pid"),
    ("UPDATE runs SET model = CAST(x'61ff' AS TEXT) WHERE name = 'middle'", "its model"),
    ("UPDATE runs SET metadata = ? WHERE name = 'middle'", "its metadata: JSON nested too deep"),
]


@pytest.mark.parametrize(("sql", "named"), DAMAGE, ids=[f"{i}" for i in range(len(DAMAGE))])
def test_a_damaged_row_is_listed_as_such_beside_the_others(
    tmp_path: Path, sql: str, named: str
) -> None:
    db, ids = three_runs(tmp_path)
    before = {r.id: r for r in lw.list_runs(db)}
    params = [socket.gethostname()] if "host = ?" in sql else [DEEP] if "?" in sql else []
    damage(db, sql, *params)
    for listed in (lw.list_runs(db), runs_page(db)):
        by_id = {r.id: r for r in listed}
        assert set(by_id) == set(ids)
        for good in (ids[0], ids[2]):  # the others, intact
            assert by_id[good] == before[good]
        bad = by_id[ids[1]]
        assert bad.status == "damaged" and bad.name == "middle"
        assert bad.error is not None and bad.error.startswith(named), bad.error
        assert len(bad.error) <= MAX_REASON and "\n" not in bad.error
        assert bad.output is None and bad.metadata == {} and bad.cost is None
        if "created" in sql:  # (a stand-in, at its place in the order SQLite gives)
            assert bad.created == UNKNOWN_TIME
        else:
            assert bad.created == before[ids[1]].created
            assert [r.id for r in listed] == ids  # newest first, as before
    # reading that run itself is still the clear error
    with lw.load_run(ids[1], db=db) as log, pytest.raises(lw.RunStoreError) as caught:
        _ = log.info
    assert str(db) in str(caught.value) and "\n" not in str(caught.value)


def test_a_row_whose_id_is_not_text_is_listed_under_a_stand_in(tmp_path: Path) -> None:
    db, ids = three_runs(tmp_path)
    damage(db, "UPDATE runs SET id = x'00ff' WHERE name = 'middle'")
    listed = lw.list_runs(db)
    assert [r.id for r in listed] == [ids[0], NOT_TEXT_ID, ids[2]]
    assert listed[1].status == "damaged" and listed[1].error == "its id: not text but b'\\x00\\xff'"
    with pytest.raises(lw.RunStoreError, match="no run"):  # (no run has the stand-in)
        lw.load_run(NOT_TEXT_ID, db=db)


def test_the_reason_is_bounded_and_never_the_whole_value(tmp_path: Path) -> None:
    db, _ = three_runs(tmp_path)
    huge = "\x1b[31m" + "x" * 100_000
    damage(db, "UPDATE runs SET created = ?, name = ? WHERE name = 'middle'", huge, "mid")
    damage(db, "UPDATE runs SET pid = ? WHERE name = 'new'", huge)
    for bad in lw.list_runs(db, status="damaged"):
        assert bad.error is not None and len(bad.error) <= MAX_REASON
        assert "x" * 50 not in bad.error and "\x1b" not in bad.error, bad.error
    assert [r.status for r in lw.list_runs(db)] == ["damaged", "damaged", "success"]


def test_filters_with_damaged_rows(tmp_path: Path) -> None:
    db, (new, middle, old) = three_runs(tmp_path)
    # damaged, though the row says success: never listed as a success
    damage(db, "UPDATE runs SET metadata = 'not json', status = 'success' WHERE name = 'new'")
    damage(db, "UPDATE runs SET output = '{' WHERE name = 'old'")

    def ids(**filters: object) -> list[str]:
        return [r.id for r in lw.list_runs(db, **filters)]  # type: ignore[arg-type]

    assert ids(status="damaged") == [new, old]
    assert ids(status="success") == [middle]
    assert ids(status="success", limit=1) == [middle]  # (the damaged row first: not counted)
    assert ids(status="damaged", limit=1) == [new]
    assert ids(limit=2) == [new, middle]  # damaged rows count, in their place
    assert ids(name="new") == [new] and ids(name="new", status="success") == []
    # an agent's or version's filter reads the metadata: one that is not JSON is no match
    # (or matches by the run's name), not an error for the whole store
    assert ids(agent="react") == [middle, old]
    assert ids(agent="new") == [new]
    assert ids(version="zz") == []
    # the viewer's pages, by the same rules
    page_ids = [r.id for r in runs_page(db, status="damaged", limit=1, offset=1)]
    assert page_ids == [old]
    assert [r.id for r in runs_page(db, status="success")] == [middle]
    assert [r.id for r in runs_page(db, limit=2, offset=1)] == [middle, old]


def test_a_damaged_run_of_an_eval_s_task_is_a_clear_error_for_its_shards(
    tmp_path: Path,
) -> None:
    """An eval's shards and merge read the runs named like its task: a damaged one may
    hold its samples (which cannot be told), so it is named, not skipped; one of another
    name is no matter."""
    from loopwright.evals._shard import latest_samples

    db = tmp_path / "runs.db"
    task = lw.Task([{"id": "a", "input": "q", "target": "4"}], agent=lw.react(submit=False),
                   scorer=lw.match("numeric"), name="tiny")  # fmt: skip
    lw.eval(task, model=lw.get_model("mock", outputs=["it is 4"]), db=db)
    lw.run_sync(lw.react(submit=False), "hi", model=lw.get_model("mock"), db=db, name="other")
    close_idle_files()
    damage(db, "UPDATE runs SET metadata = '[1]' WHERE name = 'other'")
    found = latest_samples([db], task="tiny", params={})
    assert list(found) == [("a", 1)]
    damage(db, "UPDATE runs SET created = 'x' WHERE name = 'tiny'")
    with pytest.raises(lw.RunStoreError, match=r"of the task 'tiny' .*its created"):
        latest_samples([db], task="tiny", params={})


def test_pruning_keeps_the_folder_of_a_damaged_run(tmp_path: Path) -> None:
    from loopwright.runtime._resume import prune_sandbox_folders
    from loopwright.sandboxes._folders import run_folder

    db, (new, middle, _) = three_runs(tmp_path)
    damage(db, "UPDATE runs SET finished = 'soon' WHERE name = 'middle'")
    for run_id in (new, middle):
        run_folder(db, run_id).mkdir(parents=True)
    removed = prune_sandbox_folders(db)
    assert removed == [str(run_folder(db, new))]
    assert run_folder(db, middle).is_dir() and not run_folder(db, new).exists()
