"""``LazyRegistry``: things registered by name, imported on first use (providers, sandbox
backends), with third-party ones found through an entry point group."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any, Generic, TypeVar, cast

from ._errors import ConfigurationError

__all__ = ["LazyRegistry"]

T = TypeVar("T")


class LazyRegistry(Generic[T]):
    """Names to objects, or to ``"module:attribute"`` paths imported when first asked for.

    ``check(obj)`` says whether something may be registered (an SDK-free import path is
    checked when it is imported); ``expected`` says what it should be, for errors.
    """

    def __init__(
        self,
        kind: str,
        group: str,
        builtin: Mapping[str, str],
        check: Callable[[Any], bool],
        expected: str,
    ) -> None:
        self.kind, self.group, self.expected = kind, group, expected
        self._check = check
        self._entries: dict[str, T | str] = dict(builtin)
        self._loaded = False  # the entry point group was read

    def copy(self) -> LazyRegistry[T]:
        """The same entries; the entry point group is read again (for tests)."""
        other: LazyRegistry[T] = LazyRegistry(self.kind, self.group, {}, self._check, self.expected)
        other._entries = dict(self._entries)
        return other

    def add(self, name: str, entry: T | str) -> None:
        """Register ``entry`` (an object, or its ``"module:attribute"`` path) as ``name``.

        Raises:
            ConfigurationError: ``entry`` is neither.
        """
        if isinstance(entry, str):
            _split_path(entry, f"{self.kind} {name!r}")
        elif not self._check(entry):
            raise ConfigurationError(f"{self.kind} {name!r}: {entry!r} is not {self.expected}")
        self._entries[name] = entry

    def names(self) -> list[str]:
        """Every registered name, the entry point group's included."""
        self._load()
        return sorted(self._entries)

    def get(self, name: str) -> T | None:
        """The object registered as ``name`` (imported now if it was a path), or None.

        Raises:
            ConfigurationError: Its path cannot be imported, or is not what it should be.
        """
        entry = self._entries.get(name)
        if entry is None:
            self._load()
            entry = self._entries.get(name)
            if entry is None:
                return None
        if isinstance(entry, str):
            where = f"{self.kind} {name!r} ({entry})"
            module, attr = _split_path(entry, where)
            try:
                obj: Any = importlib.import_module(module)
            except ImportError as ex:
                raise ConfigurationError(f"{where}: cannot import {module!r}: {ex}") from ex
            for part in attr.split("."):
                try:
                    obj = getattr(obj, part)
                except AttributeError:
                    raise ConfigurationError(f"{where}: {module!r} has no {attr!r}") from None
            if not self._check(obj):
                raise ConfigurationError(f"{where} is not {self.expected}")
            self._entries[name] = entry = obj
        return cast(T, entry)

    def _load(self) -> None:
        if self._loaded:
            return
        self._loaded = True
        from importlib.metadata import entry_points

        for ep in entry_points(group=self.group):
            # (ep.value may end with "[extra]": the module and attribute are what is used)
            self._entries.setdefault(ep.name, f"{ep.module}:{ep.attr}")


def _split_path(path: str, where: str) -> tuple[str, str]:
    module, _, attr = path.partition(":")
    if not module or not attr:
        raise ConfigurationError(f"{where}: {path!r} is not a 'module:attribute' path")
    return module, attr
