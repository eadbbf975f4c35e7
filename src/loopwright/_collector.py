"""Collector tuning for a process that runs many agents: ``tuned_collector()``.

CPython's cyclic garbage collector runs a young collection every 700 new container
objects and a full one whenever the objects that survived since the last full
collection reach a quarter of the old generation. With thousands of agents alive at
once, the old generation is mostly those agents (their transcripts, messages, frames),
so full collections come again and again and each walks every live agent: at 10,000
interleaved agents they took ~40% of the time (``bench/README.md``, issue 22).

``tuned_collector()`` is what an application that owns its process may do about it:
freeze the heap that exists when it is entered (the imports, the configuration: objects
that live as long as the process, ``gc.freeze()``) so that no collection walks them, and
raise the thresholds while its body runs, so that collections come less often and full
ones mostly not at all. Garbage in cycles is still collected, later. On leaving, the
thresholds are what they were, and the frozen objects are unfrozen, unless something
had frozen objects before (then all stay frozen: ``gc.unfreeze()`` cannot tell them
apart).

The library never does this on its own (``run()`` and ``eval()`` leave the collector as
they find it): the command line's ``loopwright run`` and ``loopwright eval`` do, since the
process is theirs, and ``eval(..., tune_collector=True)`` asks for it.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

__all__ = ["TUNED_THRESHOLDS", "tuned_collector"]

#: The thresholds while agents run: a young collection every 50,000 new container
#: objects (a few milliseconds each), the middle generation every 20 of those, and a
#: full collection only when the middle one has been collected 100 times (and the
#: survivors since the last full one are a quarter of the old generation).
TUNED_THRESHOLDS = (50_000, 20, 100)


@contextlib.contextmanager
def tuned_collector(thresholds: tuple[int, int, int] = TUNED_THRESHOLDS) -> Iterator[None]:
    """Freeze the objects alive now and use ``thresholds`` while the body runs; restore
    the thresholds, and unfreeze what this froze, after (see the module)."""
    before = gc.get_threshold()
    froze = gc.get_freeze_count() == 0
    gc.freeze()
    gc.set_threshold(*thresholds)
    try:
        yield
    finally:
        gc.set_threshold(*before)
        if froze:
            gc.unfreeze()
