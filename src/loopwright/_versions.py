"""Versions: a stable hash of what determines a function's (or an agent's) behaviour.

``function_version(fn)`` hashes, in this order:

1. ``fn``'s source as a syntax tree (``ast.dump`` without positions), so whitespace,
   comments and blank lines do not change the version, while any change to the code,
   its docstring (a tool's description) or its decorators does;
2. the same, recursively, for each function and class of *its own module* that it names
   (what it calls or uses), found through the names its code refers to;
3. the values it closes over (its closure cells) and the plain values of its own module
   it names (numbers, strings, containers of them, dataclasses and pydantic models by
   their fields), as canonical JSON. A value of any other kind counts by its type's
   qualified name only: its ``repr`` may hold a memory address, which would make the
   version differ in every process;
4. functions and classes from *other* modules count by their qualified name only: a
   library upgrade is not a change of the user's tool.

The result is the same in another process and on another machine for the same code,
as long as the source is available (``inspect.getsource``); a function without source
(defined in a REPL, or compiled) falls back to its code object's bytecode and constants,
which are stable for one Python version only.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import hashlib
import inspect
import json
import textwrap
import types
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["canonical", "digest", "function_version"]

_MAX_VALUE_ITEMS = 10_000  # a closed-over container larger than this counts by its type


def digest(*parts: str) -> str:
    """A short, stable hex digest of ``parts`` (16 hex digits of SHA-256)."""
    h = hashlib.sha256()
    for part in parts:
        h.update(part.encode("utf-8", "surrogatepass"))
        h.update(b"\x00")
    return h.hexdigest()[:16]


def canonical(value: Any, _depth: int = 0) -> Any:
    """``value`` as plain JSON data that is the same in every process, or its type name."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return repr(value)  # nan, inf and -0.0 stay distinct and valid JSON
    if _depth > 20:
        return f"<{_type_name(value)}>"
    if isinstance(value, list | tuple | set | frozenset):
        if len(value) > _MAX_VALUE_ITEMS:
            return f"<{_type_name(value)}>"
        items = [canonical(v, _depth + 1) for v in value]
        if isinstance(value, set | frozenset):
            items.sort(key=lambda v: json.dumps(v, sort_keys=True))
        return {_type_name(value): items}
    if isinstance(value, dict):
        if len(value) > _MAX_VALUE_ITEMS:
            return "<dict>"
        pairs = [[canonical(k, _depth + 1), canonical(v, _depth + 1)] for k, v in value.items()]
        pairs.sort(key=lambda kv: json.dumps(kv[0], sort_keys=True))
        return {"dict": pairs}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = {
            f.name: canonical(getattr(value, f.name), _depth + 1) for f in dataclasses.fields(value)
        }
        return {_type_name(value): fields}
    dump = getattr(value, "model_dump", None)  # a pydantic model
    if callable(dump) and not isinstance(value, type):
        try:
            return {_type_name(value): canonical(dump(mode="json"), _depth + 1)}
        except Exception:  # a model that cannot dump itself counts by its type
            return f"<{_type_name(value)}>"
    return f"<{_type_name(value)}>"


def _type_name(value: Any) -> str:
    cls = type(value)
    return f"{cls.__module__}.{cls.__qualname__}"


def _qualified(obj: Any) -> str:
    return f"{getattr(obj, '__module__', '?')}.{getattr(obj, '__qualname__', type(obj).__name__)}"


@functools.lru_cache(maxsize=4096)
def _source_tree(obj: Any) -> str | None:
    """``obj``'s source as a position-free syntax tree, or None without source."""
    try:
        source = inspect.getsource(obj)
    except (OSError, TypeError):
        return None
    try:
        tree = ast.parse(textwrap.dedent(source))
    except SyntaxError:  # a lambda cut from the middle of a line
        return None
    return ast.dump(tree, annotate_fields=False, include_attributes=False)


def _code_names(code: types.CodeType) -> Iterator[str]:
    yield from code.co_names
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _code_names(const)


def _code_fallback(code: types.CodeType) -> str:
    consts = [
        _code_fallback(c) if isinstance(c, types.CodeType) else canonical(c) for c in code.co_consts
    ]
    return json.dumps([code.co_code.hex(), consts, list(code.co_names)], sort_keys=True)


def _unwrap(obj: Any) -> Any:
    fn = getattr(obj, "fn", None)  # a loopwright Tool holds its function as .fn
    if fn is not None and callable(fn) and not isinstance(obj, types.FunctionType):
        obj = fn
    return inspect.unwrap(obj) if callable(obj) else obj


def function_version(fn: Callable[..., Any]) -> str:
    """The version of ``fn``: see the module's docstring for what it covers."""
    parts: list[str] = []
    _describe(_unwrap(fn), parts, set())
    return digest(*parts)


def _describe(obj: Any, parts: list[str], seen: set[int]) -> None:
    if id(obj) in seen:
        parts.append(f"seen:{_qualified(obj)}")
        return
    seen.add(id(obj))
    module = getattr(obj, "__module__", None)
    tree = _source_tree(obj) if isinstance(obj, types.FunctionType | type) else None
    code = getattr(obj, "__code__", None)
    if tree is not None:
        parts.append(tree)
    elif isinstance(code, types.CodeType):
        parts.append(_code_fallback(code))
    else:
        parts.append(f"nosource:{_qualified(obj)}")
    if isinstance(obj, type):
        members = [v for v in vars(obj).values() if isinstance(v, types.FunctionType)]
        for member in members:
            _dependencies(member, module, parts, seen)
        return
    if isinstance(code, types.CodeType):
        _dependencies(obj, module, parts, seen)


def _dependencies(fn: Any, module: str | None, parts: list[str], seen: set[int]) -> None:
    code = fn.__code__
    # what it closes over
    for name, cell in zip(code.co_freevars, fn.__closure__ or (), strict=False):
        try:
            value = cell.cell_contents
        except ValueError:  # an empty cell (a name assigned later)
            parts.append(f"free:{name}=<empty>")
            continue
        parts.append(f"free:{name}")
        _value(value, module, parts, seen)
    # the globals it names, in a stable order
    namespace = getattr(fn, "__globals__", {})
    for name in sorted(set(_code_names(code))):
        if name not in namespace:
            continue  # an attribute name or a builtin
        parts.append(f"global:{name}")
        _value(namespace[name], module, parts, seen)


def _value(value: Any, module: str | None, parts: list[str], seen: set[int]) -> None:
    if isinstance(value, types.ModuleType):
        parts.append(f"module:{value.__name__}")
    elif isinstance(value, types.FunctionType | type) or callable(getattr(value, "fn", None)):
        target = _unwrap(value)
        if getattr(target, "__module__", None) == module and module is not None:
            _describe(target, parts, seen)
        else:
            parts.append(f"ref:{_qualified(target)}")
    elif callable(value) and not hasattr(value, "__dict__"):
        parts.append(f"ref:{_qualified(value)}")  # a builtin function
    else:
        parts.append(json.dumps(canonical(value), sort_keys=True))
