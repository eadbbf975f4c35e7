"""``StoreModel``: a typed view of a :class:`Store` (its fields live in the store), and
``store_as``."""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict

from ._store import Store, _current_or_new

__all__ = ["StoreModel", "store_as"]

M = TypeVar("M", bound="StoreModel")


# --- typed views ------------------------------------------------------------------------
class StoreModel(BaseModel):
    """A pydantic model whose fields live in a :class:`Store`.

    Each field ``f`` of ``class MyState(StoreModel)`` is kept under the key
    ``"MyState:f"`` (``"MyState:<instance>:f"`` with an ``instance`` name). Creating the
    model loads fields already in the store and writes the others (their defaults or
    given values); reading a field reads the store, assigning a field validates the value
    and writes the store. Two views of one store and instance see each other's changes.

    Get one with :func:`store_as` (or ``MyState(store=..., instance=...)``).
    """

    model_config = ConfigDict(validate_assignment=True, defer_build=True)

    def __init__(
        self, *, store: Store | None = None, instance: str | None = None, **data: Any
    ) -> None:
        s = store if store is not None else _current_or_new()
        prefix = f"{type(self).__name__}:" + (f"{instance}:" if instance else "")
        fields = type(self).model_fields
        for name in fields:
            key = prefix + name
            if name not in data and key in s:
                data[name] = s.get(key)
        super().__init__(**data)
        object.__setattr__(self, "_lw_store", s)
        object.__setattr__(self, "_lw_prefix", prefix)
        values = self.__dict__
        for name in fields:
            key = prefix + name
            if key not in s or s._data[key] is not values[name]:
                s.set(key, values[name])

    def __getattribute__(self, name: str) -> Any:
        if name[:1] != "_" and name in type(self).model_fields:
            d = object.__getattribute__(self, "__dict__")
            s: Store | None = d.get("_lw_store")
            if s is not None:
                key = d["_lw_prefix"] + name
                with s._lock or s._locked():
                    if key in s._data:
                        value = s._read(key)
                        d[name] = value
                        return value
        return super().__getattribute__(name)

    def __setattr__(self, name: str, value: Any) -> None:
        super().__setattr__(name, value)
        d = self.__dict__
        s: Store | None = d.get("_lw_store")
        if s is not None and name in type(self).model_fields:
            s.set(d["_lw_prefix"] + name, d[name])

    def _lw_sync(self) -> None:
        for name in type(self).model_fields:
            getattr(self, name)

    def model_dump(self, **kwargs: Any) -> dict[str, Any]:
        """Like ``BaseModel.model_dump``, with the fields' current values in the store."""
        self._lw_sync()
        return super().model_dump(**kwargs)

    def model_dump_json(self, **kwargs: Any) -> str:
        """Like ``BaseModel.model_dump_json``, with the current values in the store."""
        self._lw_sync()
        return super().model_dump_json(**kwargs)

    def __eq__(self, other: object) -> bool:
        self._lw_sync()
        if isinstance(other, StoreModel):
            other._lw_sync()
        return super().__eq__(other)

    def __repr_args__(self) -> Any:
        self._lw_sync()
        return super().__repr_args__()


def store_as(model: type[M], instance: str | None = None, *, store: Store | None = None) -> M:
    """A :class:`StoreModel` view of the current store (or ``store``).

    Args:
        model: The ``StoreModel`` subclass.
        instance: A name that keeps this view's keys apart from other instances of the
            same model (e.g. one per agent).
        store: The store to view; default: the current one.
    """
    return model(store=store, instance=instance)
