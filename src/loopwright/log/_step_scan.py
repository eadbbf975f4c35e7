"""Which top-level model call a resumed run goes on from, found as a scan of its events
meets them (``_resume_point.py``'s ``resume_point``)."""

from __future__ import annotations

__all__ = ["StepScan"]


class StepScan:
    """Which top-level call the run goes on from, as the scan meets them: in each part
    of the run (before its first resume, and after each), the last answered call marked
    as the agent loop's step; in a part with no mark at all (recorded before the mark
    existed, or by a loop that does not mark), the last answered call, unless the part
    went on from a marked step (``continued``: its resume mark says so): then its
    unmarked calls are a hook's or a history policy's, never the step. A part with no
    such call keeps the step before it (a resumed part answers it from the record)."""

    def __init__(self) -> None:
        self.id: str | None = None
        self.tools: list[str] = []
        self._marked = False
        self.continued = False
        self._step: tuple[str, list[str]] | None = None  # (marked) call, its tool events
        self._any: tuple[str, list[str]] | None = None  # any answered call, its tools

    def model(self, id: str, *, marked: bool, answered: bool) -> None:
        self._marked = self._marked or marked
        if answered:
            self._any = (id, [])
            if marked:
                self._step = (id, [])

    def tool(self, id: str) -> None:
        for found in (self._step, self._any):
            if found is not None:
                found[1].append(id)
        if self.id is not None:
            self.tools.append(id)

    def part_ended(self) -> None:
        found = self._step if self._marked else None if self.continued else self._any
        if found is not None:
            self.id, self.tools = found
        self._marked, self._step, self._any = False, None, None
        self.continued = False
