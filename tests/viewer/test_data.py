"""What the viewer's pages receive, read from a real run store."""

from __future__ import annotations

from pathlib import Path

import loopwright as lw
from loopwright.log import event_page
from loopwright.viewer._data import Depths, event_json, markdown_html


async def test_nesting_is_found_from_any_page(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    async with lw.recording(name="nested", db=db) as rec:
        lw.transcript().info("top")
        with lw.span("outer"):
            lw.transcript().info("in outer")
            with lw.span("inner"):
                lw.transcript().info("in inner")
            lw.transcript().info("back in outer")
        lw.transcript().info("top again")
    with lw.load_run(rec.run_id, db) as log:
        rows = event_page(log, limit=100)
        depths = Depths(log)
        page = [event_json(log, r, depths) for r in rows]
        by_text = {e["data"]: e for e in page if e["event"] == "info"}
        outer, inner = (e["id"] for e in page if e["event"] == "span_begin")
        assert by_text["top"]["parents"] == [] == by_text["top again"]["parents"]
        assert by_text["in outer"]["parents"] == [outer] == by_text["back in outer"]["parents"]
        assert by_text["in inner"]["parents"] == [outer, inner]
        assert by_text["in inner"]["depth"] == 2
        # a page that begins inside the spans finds them (a fresh cache reads them)
        start = next(r.seq for r in rows if r.event.id == by_text["in inner"]["id"])
        [deep] = event_page(log, after=start - 1, limit=1)
        assert event_json(log, deep, Depths(log))["parents"] == [outer, inner]


def test_markdown_keeps_no_html_and_no_unsafe_link() -> None:
    html = markdown_html(
        "**b** <script>alert(1)</script> <img src=x onerror=alert(1)> "
        "[a](javascript:alert(1)) [b](vbscript:x) [c](data:text/html,<script>x</script>) "
        "[ok](https://example.org/)"
    )
    assert "<strong>b</strong>" in html
    assert "<script" not in html and "<img" not in html
    assert "&lt;script&gt;" in html and "&lt;img" in html
    assert 'href="javascript' not in html and 'href="vbscript' not in html
    assert 'href="data:' not in html
    assert '<a href="https://example.org/">ok</a>' in html


def test_a_cut_value_is_bounded_and_keeps_its_shape() -> None:
    import json

    from loopwright.viewer._bounds import BUDGET, MAX_NEST, MAX_TEXT, Cut

    deep: object = "bottom"
    for _ in range(5_000):  # deeper than json.dumps can go
        deep = [deep]
    many = {f"k{i}": "v" * 100 for i in range(100_000)}
    value = {
        "deep": deep,
        "many": many,
        "long": "x" * 1_000_000,
        "nan": float("nan"),
        "later": {"list": [1, 2], "text": "y" * 50_000},
    }
    cut = Cut()
    out = cut(value)
    assert cut.cut and len(json.dumps(out)) < 2 * BUDGET + 4 * MAX_TEXT
    assert out["nan"] is None
    level, depth = out["deep"], 0
    while isinstance(level, list) and level and isinstance(level[0], list):
        level, depth = level[0], depth + 1
    assert depth <= MAX_NEST and "not shown" in str(level)
    # spent: what comes after keeps its type (the page reads a list as a list)
    assert isinstance(out["later"], dict) and isinstance(out["long"], str)
    assert "characters not shown" in out["long"]
    small = Cut()
    assert small({"a": [1, "b", {"c": None}]}) == {"a": [1, "b", {"c": None}]}
    assert small.cut is False
