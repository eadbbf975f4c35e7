"""Exporting a run that is still being written: the export is one moment of the run."""

from __future__ import annotations

import io
import json
import sqlite3
from pathlib import Path

import loopwright as lw
from loopwright.log._export import write_run

from ._scripted import hand_loop, script


class Racing(io.StringIO):
    """The export's output; when the events are about to be written, the run (still
    going) records one more tool call and its result, as its writer thread would."""

    def __init__(self, db: Path, run_id: str) -> None:
        super().__init__()
        self.db, self.run_id, self.raced = db, run_id, False

    def write(self, text: str) -> int:
        if not self.raced and '"events":[' in text:
            self.raced = True
            conn = sqlite3.connect(self.db)
            try:
                [(mid, sample, seq, data)] = conn.execute(
                    "SELECT id, sample, seq, data FROM messages WHERE run_id = ? AND role = 'tool' "
                    "ORDER BY seq DESC LIMIT 1",
                    (self.run_id,),
                ).fetchall()
                [(eseq, eid, span, ts, edata)] = conn.execute(
                    "SELECT seq, id, span_id, timestamp, data FROM events WHERE run_id = ? "
                    "AND type = 'tool' ORDER BY seq DESC LIMIT 1",
                    (self.run_id,),
                ).fetchall()
                conn.execute(
                    "INSERT INTO messages (run_id, id, sample, seq, role, data) "
                    "VALUES (?, ?, ?, ?, 'tool', ?)",
                    (
                        self.run_id,
                        "late-message",
                        sample,
                        seq + 100,
                        data.replace(mid, "late-message"),
                    ),
                )
                conn.execute(
                    "INSERT INTO events (run_id, seq, id, sample, span_id, type, timestamp, data) "
                    "VALUES (?, ?, ?, '', ?, 'tool', ?, ?)",
                    (
                        self.run_id, eseq + 100, "late-event", span, ts,
                        edata.replace(eid, "late-event").replace(mid, "late-message"),
                    ),
                )  # fmt: skip
                conn.commit()
            finally:
                conn.close()
        return super().write(text)


async def test_a_run_exported_while_it_is_written_refers_to_no_message_left_out(
    tmp_path: Path,
) -> None:
    db = tmp_path / "runs.db"
    async with lw.recording(db=db) as rec:
        await hand_loop(lw.get_model("mock", outputs=script(3)))
    out = Racing(db, rec.run_id)
    write_run(rec.run_id, out, db=db)
    assert out.raced
    exported = json.loads(out.getvalue())
    messages = {m["id"] for m in exported["messages"]}
    for event in exported["events"]:
        result = event["data"].get("result")
        if isinstance(result, dict) and "$ref" in result:
            assert result["$ref"] in messages, f"event {event['id']} refers to a message left out"
    # and the file reads back whole
    path = tmp_path / "run.json"
    path.write_text(out.getvalue(), encoding="utf-8")
    with lw.load_run(path) as log:
        assert [ev.event for ev in log.events()]
