"""Task arguments (``-T key=value``): parsed from text, checked against the ``@task``
function's signature and type hints before the task is built, so a bad value is a
usage error and not a thousand failed samples."""

from __future__ import annotations

import inspect
import json
import types
import typing
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from pydantic import ConfigDict, TypeAdapter, ValidationError
from pydantic.errors import PydanticUserError

from .._errors import ConfigurationError

__all__ = ["TaskArgText", "bind_task_args", "parse_task_args"]


class TaskArgText(str):
    """A task argument given as text (``-T key=value``): when the task is built it is
    read as the parameter's type hint asks — as JSON first (``3``, ``[1, 2]``,
    ``null``), else as the text itself (``hard`` for a ``str``, ``3`` for an ``int``
    too); without a hint, as JSON when it parses, else as text."""

    __slots__ = ()


def parse_task_args(pairs: Iterable[str], *, as_text: bool = False) -> dict[str, Any]:
    """``["level=hard", "n=3", "cfg=@c.json"]`` -> ``{"level": "hard", "n": 3, "cfg": ...}``:
    each value is read as JSON when it parses (numbers, ``true``, lists), else kept as a
    string; ``@FILE`` stands for the file's text.

    With ``as_text=True`` every value is a :class:`TaskArgText` instead, read by the
    task parameter's type hint when the task is built (``loopwright eval -T`` does this,
    so that ``-T name=007`` stays ``"007"`` for a ``str`` parameter).

    Raises:
        ConfigurationError: A pair without ``=``, or a file that cannot be read.
    """
    args: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ConfigurationError(f"expected key=value, got {pair!r}")
        if value.startswith("@"):
            path = Path(value[1:])
            try:
                value = path.read_text(encoding="utf-8")
            except OSError as ex:
                raise ConfigurationError(
                    f"cannot read {str(path)!r} for {key}: {ex.strerror or ex}"
                ) from None
        args[key] = TaskArgText(value) if as_text else _json_or_text(value)
    return args


def _json_or_text(value: str) -> Any:
    try:
        return json.loads(value)
    except json.JSONDecodeError:
        return value


def _hints(fn: Callable[..., Any]) -> dict[str, Any]:
    """``fn``'s resolved type hints. When one cannot be resolved (a name imported only
    for type checking), each is resolved on its own and the unresolvable ones are left
    out, so their parameters take any value."""
    try:
        return typing.get_type_hints(fn)
    except Exception:
        pass
    target = inspect.unwrap(fn)
    namespace = getattr(target, "__globals__", {})
    hints: dict[str, Any] = {}
    for name, annotation in getattr(target, "__annotations__", {}).items():
        probe = types.FunctionType((lambda: None).__code__, namespace)
        probe.__annotations__ = {name: annotation}
        try:
            hints.update(typing.get_type_hints(probe))
        except Exception:
            continue
    return hints


def _type_name(hint: Any) -> str:
    name = getattr(hint, "__name__", None)
    if isinstance(name, str) and not getattr(hint, "__args__", None):
        return name
    return repr(hint).replace("typing.", "")


def _shown(value: Any) -> str:
    text = repr(str(value) if isinstance(value, TaskArgText) else value)
    return text if len(text) <= 60 else text[:59] + "…"


def _convert(task: str, key: str, hint: Any, value: Any) -> Any:
    """``value`` for a parameter hinted ``hint``."""
    if hint is Any:
        return _json_or_text(str(value)) if isinstance(value, TaskArgText) else value
    try:
        adapter: TypeAdapter[Any] = TypeAdapter(
            hint, config=ConfigDict(arbitrary_types_allowed=True)
        )
    except (PydanticUserError, TypeError):
        return value  # a hint pydantic cannot check: the value as given
    try:
        if isinstance(value, TaskArgText):
            try:
                return adapter.validate_json(str(value))
            except ValidationError:
                return adapter.validate_python(str(value))
        return adapter.validate_python(value)
    except ValidationError as ex:
        first = ex.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ()))
        reason = f"{first['msg']}" + (f" (at {where})" if where else "")
        raise ConfigurationError(
            f"task {task!r}: {key}={_shown(value)} is not a valid {_type_name(hint)}: {reason}"
        ) from None


def bind_task_args(task: str, fn: Callable[..., Any], args: Mapping[str, Any]) -> dict[str, Any]:
    """``args`` checked against ``fn``'s signature and converted by its type hints.

    Raises:
        ConfigurationError: An unknown name, a required parameter left out, or a value
            that does not fit its parameter's type hint.
    """
    sig = inspect.signature(fn)
    params = sig.parameters
    var_kw = next((p for p in params.values() if p.kind is inspect.Parameter.VAR_KEYWORD), None)
    named = {
        n: p
        for n, p in params.items()
        if p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    }
    hints = _hints(fn)
    out: dict[str, Any] = {}
    for key, value in args.items():
        param = named.get(key, var_kw)
        if param is None:
            known = ", ".join(named) or "none"
            raise ConfigurationError(
                f"task {task!r} has no parameter {key!r} (its parameters: {known})"
            )
        out[key] = _convert(task, key, hints.get(param.name, Any), value)
    missing = [n for n, p in named.items() if p.default is inspect.Parameter.empty and n not in out]
    if missing:
        raise ConfigurationError(
            f"task {task!r} needs a value for {', '.join(map(repr, missing))} "
            f"(-T {missing[0]}=VALUE)"
        )
    return out
