"""``Store``: a run's key/value state (see the package's documentation), the current
store, and applying a store's patches."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from contextvars import ContextVar
from typing import Any, NoReturn

from .._contexts import var_set
from .._errors import LoopwrightError
from .._ids import new_id
from .._json_patch import JsonPatch, diff, dumps, pointer
from .._tracked import TrackedDict, TrackedList, is_plain, track

__all__ = [
    "JsonPatch",
    "Store",
    "StoreError",
    "apply_store_patch",
    "current_store",
    "store",
    "store_context",
]


_IMMUTABLE = (str, int, float, bool, type(None))
_MISSING: Any = object()


class StoreError(LoopwrightError, TypeError):
    """A value cannot be kept in the store (it is not JSON-serialisable)."""


def _jsonable(key: str, value: Any) -> Any:
    from pydantic_core import PydanticSerializationError, to_jsonable_python

    try:
        return to_jsonable_python(value)
    except (PydanticSerializationError, TypeError, ValueError) as ex:
        raise StoreError(
            f"store value for {key!r} is not JSON-serialisable ({type(value).__name__}): "
            f"{ex}. Store plain data (dict, list, str, numbers, bools, None) or pydantic "
            "models"
        ) from ex


def _refuse(self: _NoData, *args: Any, **kwargs: Any) -> NoReturn:
    raise TypeError("a store's shared empty table is never written (a bug in loopwright)")


class _NoData(dict[str, Any]):
    """The one empty dict a store's tables are until their first entry (most runs never
    touch their store): read like any empty dict, refuses changes."""

    __slots__ = ()
    __setitem__ = __delitem__ = __ior__ = _refuse
    setdefault = update = pop = popitem = clear = _refuse


_NO_DATA: dict[str, Any] = _NoData()

# makes a store's lock, once: the first use of a store from two threads at once must not
# give it two locks (held for the making only, once per store that is used)
_MAKING_LOCK = threading.Lock()


class Store:
    """A run's key/value state, with change tracking whose cost follows the change.

    Keys are strings; values are JSON-serialisable data (or pydantic models). Use it like
    a mapping (``store["k"]``, ``"k" in store``, ``len(store)``) or through
    :meth:`get`/:meth:`set`/:meth:`delete`. It is safe to use from worker threads.

    Attributes:
        id: Identifies this store in ``StoreEvent``\\ s (a run's store and each subtask's
            store are distinct).
    """

    # Every run has a store and most never touch it: a store holds its id and nothing
    # else until it is used. Its tables are the shared empty ``_NO_DATA`` until their
    # first entry, its journal ``None`` until the first change, its lock made at its first
    # locked use (``_locked()``); every table is made under that lock.
    __slots__ = (
        "__weakref__",
        "_before",
        "_committed",
        "_data",
        "_journal",
        "_lock",
        "_read_since",
        "id",
    )

    def __init__(self, data: Mapping[str, Any] | None = None) -> None:
        """
        Args:
            data: Initial content; it is recorded as additions at the first checkpoint.
        """
        self.id = new_id()
        self._data: dict[str, Any] = _NO_DATA
        # what changed since the last checkpoint: the changes made through tracked
        # containers, in order; the keys set or deleted, with their JSON value before
        # (_MISSING: there was none); the keys of other values read
        self._journal: JsonPatch | None = None
        self._before: dict[str, Any] = _NO_DATA
        self._read_since: dict[str, None] = _NO_DATA
        # the JSON text at the last checkpoint of each value that is neither tracked nor
        # immutable (it may change in place unseen)
        self._committed: dict[str, str] = _NO_DATA
        self._lock: threading.RLock | None = None
        if data:
            for key, value in data.items():
                self.set(key, value)

    def _locked(self) -> threading.RLock:
        """The store's lock, made at its first use (by one thread only): where it is
        taken, ``self._lock or self._locked()``."""
        lock = self._lock
        if lock is None:
            with _MAKING_LOCK:
                lock = self._lock
                if lock is None:
                    lock = self._lock = threading.RLock()
        return lock

    def __repr__(self) -> str:
        return f"Store({len(self._data)} keys)"

    def __reduce_ex__(self, protocol: Any) -> NoReturn:
        # (a used store always failed here, on its lock: an unused one would copy with a
        # table of its own that is the shared empty one, and fail at its first change)
        raise TypeError("a Store is live state, not copied or pickled: Store(s.to_dict())")

    # --- what tracked containers report (see loopwright._tracked) -------------------
    def _lock_for(self) -> threading.RLock:
        return self._lock or self._locked()

    def _changed_in_place(self, key: str, op: dict[str, Any]) -> None:
        # (called under the lock: a tracked container takes it through _lock_for)
        if key not in self._before:  # (else the key's new value is recorded whole)
            if self._journal is None:
                self._journal = [op]
            else:
                self._journal.append(op)

    # --- reading --------------------------------------------------------------------
    def get(self, key: str, default: Any = None) -> Any:
        """The value of ``key``; if it is missing, ``default`` (which, when not ``None``,
        is stored under ``key`` first and the stored copy returned, so a mutable default
        can be filled in place)."""
        with self._lock or self._locked():
            if key in self._data:
                return self._read(key)
            if default is None:
                return None
            self.set(key, default)
            return self._data[key]

    def _read(self, key: str) -> Any:
        """``key``'s value (under the lock: ``key`` is in the store)."""
        if key in self._committed:  # may be changed in place: look at it next checkpoint
            if self._read_since is _NO_DATA:
                self._read_since = {}
            self._read_since[key] = None
        return self._data[key]

    def __getitem__(self, key: str) -> Any:
        with self._lock or self._locked():
            if key not in self._data:
                raise KeyError(key)
            return self._read(key)

    def __contains__(self, key: object) -> bool:
        return key in self._data

    def __len__(self) -> int:
        return len(self._data)

    def __iter__(self) -> Iterator[str]:
        return iter(self.keys())

    def keys(self) -> list[str]:
        """The keys, in insertion order."""
        with self._lock or self._locked():
            return list(self._data)

    def values(self) -> list[Any]:
        """The values, in key insertion order."""
        with self._lock or self._locked():
            return [self._read(k) for k in list(self._data)]

    def items(self) -> list[tuple[str, Any]]:
        """``(key, value)`` pairs, in insertion order."""
        with self._lock or self._locked():
            return [(k, self._read(k)) for k in list(self._data)]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able deep copy of the content (costs the size of the store)."""
        with self._lock or self._locked():
            return {k: json.loads(dumps(_jsonable(k, v))) for k, v in self._data.items()}

    # --- writing --------------------------------------------------------------------
    def set(self, key: str, value: Any) -> None:
        """Set ``key`` to ``value``.

        Raises:
            StoreError: ``value`` is not JSON-serialisable, or ``key`` is not a string.
        """
        if not isinstance(key, str):
            raise StoreError(f"store keys must be strings, got {type(key).__name__} {key!r}")
        _jsonable(key, value)
        if isinstance(value, (dict, list)) and is_plain(value):
            value = track(value, self, key)  # a tracked copy
        with self._lock or self._locked():
            self._forget(key)
            if self._data is _NO_DATA:
                self._data = {}
            self._data[key] = value

    def _forget(self, key: str) -> None:
        """``key`` is about to be set or deleted: keep its JSON value as of the last
        checkpoint plus the changes recorded since (the patch starts from it). Under the
        lock."""
        before = self._before
        if key not in before:
            if before is _NO_DATA:
                before = self._before = {}
            if key not in self._data:
                before[key] = _MISSING
            elif key in self._committed:
                before[key] = json.loads(self._committed[key])
            else:
                from pydantic_core import to_jsonable_python

                before[key] = to_jsonable_python(self._data[key])
        old = self._data.get(key)
        if isinstance(old, (TrackedDict, TrackedList)):
            old._parent = None  # changes through it are no longer the store's

    def __setitem__(self, key: str, value: Any) -> None:
        self.set(key, value)

    def delete(self, key: str) -> None:
        """Remove ``key`` (nothing happens if it is missing)."""
        with self._lock or self._locked():
            if key in self._data:
                self._forget(key)
                del self._data[key]

    def __delitem__(self, key: str) -> None:
        with self._lock or self._locked():
            if key not in self._data:
                raise KeyError(key)
            self.delete(key)

    def clear(self) -> None:
        """Remove every key."""
        with self._lock or self._locked():
            for key in list(self._data):
                self.delete(key)

    # --- change tracking ------------------------------------------------------------
    @property
    def dirty(self) -> bool:
        """Whether something may have changed since the last :meth:`checkpoint`."""
        return bool(self._journal or self._before or self._read_since)

    def checkpoint(self) -> JsonPatch:
        """The changes since the previous checkpoint as a JSON patch, and start anew.

        Costs time proportional to the changes made since then (for keys set or
        deleted, and other values read, the size of those values), not to the store's
        size.
        """
        if self._journal is None and not self._before and not self._read_since:
            return []  # nothing changed (a change made meanwhile comes after this one)
        with self._lock or self._locked():
            ops, self._journal = self._journal or [], None
            befores, read_since, committed = self._before, self._read_since, self._committed
            for key, before in befores.items():
                if key in self._data:
                    value = self._data[key]
                    new = _jsonable(key, value)
                    text = dumps(new)
                    if before is _MISSING:
                        ops.append({"op": "add", "path": pointer(key), "value": new})
                    elif dumps(before) != text:
                        ops.extend(diff(key, before, new, text))
                    if isinstance(value, (_IMMUTABLE, TrackedDict, TrackedList)):
                        if key in committed:
                            del committed[key]
                    else:
                        if committed is _NO_DATA:
                            committed = self._committed = {}
                        committed[key] = text
                elif before is not _MISSING:
                    ops.append({"op": "remove", "path": pointer(key)})
                    if key in committed:
                        del committed[key]
            for key in read_since:
                if key in befores or key not in committed:
                    continue
                new = _jsonable(key, self._data[key])
                text = dumps(new)
                old = committed[key]
                if text != old:
                    ops.extend(diff(key, json.loads(old), new, text))
                    committed[key] = text
            # (given up, not cleared: a store that stops changing holds no table of
            # changes until its next change)
            self._before = self._read_since = _NO_DATA
            # the values in ops are fresh JSON data (to_jsonable_python builds new
            # containers), so later changes to the store's values do not reach them
            return ops


def apply_store_patch(data: dict[str, Any], patch: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Apply a store patch (from a ``StoreEvent``) to ``data`` in place and return it.

    Raises:
        StoreError: The patch does not apply (it is invalid, or does not follow from
            ``data``).
    """
    import jsonpatch

    try:
        result: dict[str, Any] = jsonpatch.apply_patch(data, list(patch), in_place=True)
    except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException, TypeError) as ex:
        raise StoreError(
            f"store patch does not apply: {ex}; apply a run's StoreEvents in order, "
            "starting from an empty store"
        ) from ex
    return result


# --- the current store ------------------------------------------------------------------
_current: ContextVar[Store | None] = ContextVar("loopwright_store", default=None)


def store() -> Store:
    """The current run's store.

    Outside a run (or a :func:`store_context`) a new empty store is created for the
    current context and returned from then on.
    """
    current = _current.get()
    if current is None:
        current = Store()
        _current.set(current)
    return current


def current_store() -> Store | None:
    """The store installed in this context, or ``None`` (never creates one)."""
    return _current.get()


_current_or_new = store


def store_context(s: Store) -> AbstractContextManager[Store]:
    """Make ``s`` the current store (what :func:`store` returns) within this context."""
    return var_set(_current, s, s)
