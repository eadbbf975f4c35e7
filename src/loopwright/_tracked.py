"""JSON containers that report their own changes, as JSON patch operations.

The run's store keeps each dict or list value as a :class:`TrackedDict` or
:class:`TrackedList` (subclasses of ``dict`` and ``list``, used like them). Each change
made through one (``append``, ``d[k] = v``, ``pop``...) is reported to its owner as one
RFC 6902 operation at the container's JSON pointer, so recording a change costs the size
of the change, not of the container: an append to a list of 100,000 items is one
``add``. A container knows its place (its parent and its key or index in it); operations
that move items (``insert``, ``pop(0)``, ``sort``) renumber the containers after that
place, which costs what the operation itself costs.

What goes into a tracked container is copied in as JSON data (nested dicts and lists
tracked too); a container taken out (replaced, popped, deleted) stops reporting.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Callable, Iterable
from typing import Any, Protocol, SupportsIndex

__all__ = ["Owner", "TrackedDict", "TrackedList", "is_plain", "track"]

_SCALARS = (str, int, float, bool, type(None))


class Owner(Protocol):
    """What a top-level tracked container reports to (the store)."""

    def _lock_for(self) -> contextlib.AbstractContextManager[Any]: ...

    def _changed_in_place(self, key: str, op: dict[str, Any]) -> None: ...


def is_plain(value: Any) -> bool:
    """Whether ``value`` is JSON data as Python builds it: dicts with string keys, lists,
    strings, numbers, booleans and ``None`` (nested any way)."""
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, dict):
            if not all(isinstance(k, str) for k in v):
                return False
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
        elif not isinstance(v, _SCALARS):
            return False
    return True


def track(value: Any, parent: Any, key: str | int) -> Any:
    """``value`` (plain JSON data) as tracked containers placed at ``key`` in ``parent``;
    scalars as they are."""
    if isinstance(value, dict):
        d = TrackedDict()
        d._parent, d._key = parent, key
        for k, v in value.items():
            dict.__setitem__(d, k, track(v, d, k))
        return d
    if isinstance(value, list):
        lst = TrackedList()
        lst._parent, lst._key = parent, key
        list.extend(lst, (track(v, lst, i) for i, v in enumerate(value)))
        return lst
    return value


def _json(value: Any) -> Any:
    from pydantic_core import to_jsonable_python

    return to_jsonable_python(value)


def _esc(token: str | int) -> str:
    return str(token).replace("~", "~0").replace("/", "~1")


def _locate(node: TrackedDict | TrackedList) -> tuple[Owner, str, str] | None:
    """The owner, the top-level key and the JSON pointer of ``node`` (None: detached)."""
    parts: list[str | int] = []
    parent: Any = node
    while isinstance(parent, (TrackedDict, TrackedList)):
        parts.append(parent._key)
        parent = parent._parent
    if parent is None:
        return None
    parts.reverse()
    return parent, str(parts[0]), "".join("/" + _esc(p) for p in parts)


def _report(node: TrackedDict | TrackedList, op: str, at: str | int | None, value: Any) -> None:
    where = _locate(node)
    if where is None:
        return
    owner, key, path = where
    change: dict[str, Any] = {"op": op, "path": path if at is None else f"{path}/{_esc(at)}"}
    if op != "remove":
        change["value"] = value
    owner._changed_in_place(key, change)


def _lock(node: TrackedDict | TrackedList) -> contextlib.AbstractContextManager[Any]:
    where = _locate(node)
    return where[0]._lock_for() if where is not None else contextlib.nullcontext()


def _detach(value: Any) -> None:
    if isinstance(value, (TrackedDict, TrackedList)):
        value._parent = None


def _incoming(value: Any) -> Any:
    """A value going into a container as JSON data (a fresh copy). It is recorded in the
    operation, and stored as tracked containers (which ``track`` builds anew: the two
    share nothing mutable).

    Raises:
        TypeError: JSON cannot hold ``value``.
    """
    from pydantic_core import PydanticSerializationError

    try:
        return _json(value)
    except (PydanticSerializationError, TypeError, ValueError) as ex:
        raise TypeError(
            f"store value is not JSON-serialisable ({type(value).__name__}): {ex}"
        ) from ex


class TrackedDict(dict[str, Any]):
    """A ``dict`` that reports its changes (see the module docs)."""

    __slots__ = ("_key", "_parent")
    _parent: Any
    _key: str | int

    def __setitem__(self, key: str, value: Any) -> None:
        if not isinstance(key, str):
            raise TypeError(f"store keys must be strings, got {type(key).__name__} {key!r}")
        data = _incoming(value)
        with _lock(self):
            op = "replace" if key in self else "add"
            _detach(self.get(key))
            dict.__setitem__(self, key, track(data, self, key))
            _report(self, op, key, data)

    def __delitem__(self, key: str) -> None:
        with _lock(self):
            _detach(self[key])
            dict.__delitem__(self, key)
            _report(self, "remove", key, None)

    def pop(self, key: str, *default: Any) -> Any:
        with _lock(self):
            if key not in self:
                return dict.pop(self, key, *default)
            value = self[key]
            del self[key]
            return value

    def popitem(self) -> tuple[str, Any]:
        with _lock(self):
            key = next(reversed(self))
            return key, self.pop(key)

    def setdefault(self, key: str, default: Any = None) -> Any:
        with _lock(self):
            if key not in self:
                self[key] = default
            return self[key]

    def update(self, *args: Any, **kwargs: Any) -> None:
        with _lock(self):
            for key, value in dict(*args, **kwargs).items():
                self[key] = value

    def __ior__(self, other: Any) -> TrackedDict:  # type: ignore[override,misc]
        self.update(other)
        return self

    def clear(self) -> None:
        with _lock(self):
            for value in self.values():
                _detach(value)
            dict.clear(self)
            _report(self, "replace", None, {})

    def __copy__(self) -> dict[str, Any]:
        return dict(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> dict[str, Any]:
        return copy.deepcopy(dict(self), memo)

    def __reduce__(self) -> tuple[Callable[..., Any], tuple[Any, ...]]:
        return dict, (dict(self),)


class TrackedList(list[Any]):
    """A ``list`` that reports its changes (see the module docs)."""

    __slots__ = ("_key", "_parent")
    _parent: Any
    _key: str | int

    def _renumber(self, start: int) -> None:
        for i in range(start, len(self)):
            item = list.__getitem__(self, i)
            if isinstance(item, (TrackedDict, TrackedList)):
                item._key = i

    def _replaced(self) -> None:
        """Report the whole list (after an operation that moves many items)."""
        self._renumber(0)
        _report(self, "replace", None, _json(self))

    def append(self, value: Any) -> None:
        data = _incoming(value)
        with _lock(self):
            i = len(self)
            list.append(self, track(data, self, i))
            _report(self, "add", i, data)

    def extend(self, values: Iterable[Any]) -> None:
        for value in list(values):
            self.append(value)

    def __iadd__(self, values: Iterable[Any]) -> TrackedList:  # type: ignore[misc]
        self.extend(values)
        return self

    def insert(self, index: SupportsIndex, value: Any) -> None:
        data = _incoming(value)
        with _lock(self):
            i, n = index.__index__(), len(self)
            i = max(0, i + n) if i < 0 else min(i, n)  # where list.insert puts it
            list.insert(self, i, track(data, self, i))
            self._renumber(i + 1)
            _report(self, "add", i, data)

    def __setitem__(self, index: Any, value: Any) -> None:
        if isinstance(index, slice):
            with _lock(self):
                for item in list.__getitem__(self, index):
                    _detach(item)
                list.__setitem__(self, index, [track(_json(v), self, 0) for v in value])
                self._replaced()
            return
        data = _incoming(value)
        with _lock(self):
            i = range(len(self))[index]  # (an IndexError as list gives it)
            _detach(list.__getitem__(self, i))
            list.__setitem__(self, i, track(data, self, i))
            _report(self, "replace", i, data)

    def __delitem__(self, index: Any) -> None:
        with _lock(self):
            if isinstance(index, slice):
                for item in list.__getitem__(self, index):
                    _detach(item)
                list.__delitem__(self, index)
                self._replaced()
                return
            i = range(len(self))[index]
            _detach(list.__getitem__(self, i))
            list.__delitem__(self, i)
            self._renumber(i)
            _report(self, "remove", i, None)

    def pop(self, index: SupportsIndex = -1) -> Any:
        with _lock(self):
            if not self:
                raise IndexError("pop from empty list")
            i = range(len(self))[index]
            value = list.__getitem__(self, i)
            del self[i]
            return value

    def remove(self, value: Any) -> None:
        with _lock(self):
            del self[self.index(value)]

    def clear(self) -> None:
        with _lock(self):
            for item in self:
                _detach(item)
            list.clear(self)
            _report(self, "replace", None, [])

    def sort(self, *args: Any, **kwargs: Any) -> None:
        with _lock(self):
            list.sort(self, *args, **kwargs)
            self._replaced()

    def reverse(self) -> None:
        with _lock(self):
            list.reverse(self)
            self._replaced()

    def __imul__(self, n: SupportsIndex) -> TrackedList:
        with _lock(self):
            items = [_json(v) for v in self]
            list.__imul__(self, 0)
            for _ in range(n.__index__()):
                list.extend(self, (track(copy.deepcopy(v), self, 0) for v in items))
            self._replaced()
        return self

    def __copy__(self) -> list[Any]:
        return list(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> list[Any]:
        return copy.deepcopy(list(self), memo)

    def __reduce__(self) -> tuple[Callable[..., Any], tuple[Any, ...]]:
        return list, (list(self),)
