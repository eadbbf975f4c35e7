"""The benchmark's report: tables printed as they are measured, and kept as markdown."""

from __future__ import annotations

from typing import Any


class Report:
    """Collects tables and target checks; prints each table when it is added."""

    def __init__(self) -> None:
        self._md: list[str] = []
        self._targets: list[tuple[str, str, bool]] = []
        self.raw: dict[str, Any] = {}

    def line(self, text: str) -> None:
        print(text, flush=True)
        self._md.append(text + "\n")

    def table(self, title: str, headers: list[str], rows: list[list[str]]) -> None:
        widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
        print(f"\n{title}")
        print("  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)))
        for row in rows:
            cells = [
                c.ljust(w) if i == 0 else c.rjust(w)
                for i, (c, w) in enumerate(zip(row, widths, strict=True))
            ]
            print("  ".join(cells), flush=True)
        self._md.append(f"\n## {title}\n")
        self._md.append("| " + " | ".join(headers) + " |")
        self._md.append("|" + "|".join(["---"] + ["---:"] * (len(headers) - 1)) + "|")
        self._md.extend("| " + " | ".join(row) + " |" for row in rows)

    def target(self, what: str, measured: str, ok: bool) -> None:
        self._targets.append((what, measured, ok))

    def finish(self) -> None:
        if self._targets:
            rows = [[w, m, "met" if ok else "NOT met"] for w, m, ok in self._targets]
            self.table("Targets", ["target", "measured", ""], rows)

    def markdown(self) -> str:
        return "\n".join(self._md) + "\n"
