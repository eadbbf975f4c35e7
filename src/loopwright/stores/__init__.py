"""``Store``: per-run key/value state, and ``StoreModel``: a typed view of it.

Every run has a store (``store()`` returns the current one); tools, agents and subtasks
share state through it::

    lw.store().set("plan", ["search", "summarise"])
    lw.store().get("links", []).append(url)     # a mutable default is stored, then mutated

    class Progress(lw.StoreModel):
        done: int = 0
        notes: list[str] = []

    progress = lw.store_as(Progress, instance="researcher")
    progress.done += 1                           # reads and writes the store

Changes are recorded as JSON patches (RFC 6902) in ``StoreEvent``\\ s of the transcript,
at each *checkpoint*: before and after every model call, tool call and span, and when a
subtask or run ends. What a change costs, and the patch it gives, follow the change,
never the size of the store or of the value changed:

- a dict or list value is kept as a tracked copy (``loopwright._tracked``: a ``dict`` or
  ``list`` subclass) that records each change made through it as one operation, so an
  append to a list of 100,000 items costs and records one ``add``;
- ``set`` and ``delete`` cost the size of the old and new values of that key (the patch
  is their difference);
- other values (pydantic models, tuples...) are compared with their JSON at the last
  checkpoint when they were read since (they may have been changed in place).

Values must be JSON-serialisable (pydantic models are dumped to JSON for the patches).
The store keeps its own copy of a dict or list you give it: change it through the store
(``store.get("k").append(x)``), not through the object you passed in.
"""

from ._model import StoreModel, store_as
from ._store import (
    JsonPatch,
    Store,
    StoreError,
    apply_store_patch,
    store,
    store_context,
)
from ._store import (
    current_store as current_store,
)

__all__ = [
    "JsonPatch",
    "Store",
    "StoreError",
    "StoreModel",
    "apply_store_patch",
    "store",
    "store_as",
    "store_context",
]
