"""Checks of what is given to the agents and to ``run()``, made when it is given.

A mistake in an agent's or a run's configuration is refused with a
:class:`~loopwright.ConfigurationError` naming what was expected, at ``react()`` /
``iterative()`` / ``run()`` time, never as an ``AttributeError`` or ``TypeError`` in
the middle of a run.
"""

from __future__ import annotations

import inspect
import os
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from types import FunctionType
from typing import Any

from .._errors import ConfigurationError
from ..history import HistoryPolicy, as_history_policy
from ..limits import Limit
from ..model import GenerateConfig, Model

__all__ = [
    "check_agent",
    "check_approver",
    "check_callable",
    "check_config",
    "check_count",
    "check_db",
    "check_flag",
    "check_history",
    "check_limits",
    "check_model",
    "check_sandbox",
    "check_text",
    "check_tool_list",
]


def _show(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 80 else f"{text[:77]}..."


def check_text(value: object, what: str, who: str, *, optional: bool = False) -> None:
    """Refuse what is not a string (or ``None`` when ``optional``)."""
    if isinstance(value, str) or (optional and value is None):
        return
    expected = "a string or None" if optional else "a string"
    raise ConfigurationError(f"{who}: {what} must be {expected}, got {_show(value)}")


def check_count(value: object, what: str, who: str, *, least: int = 0) -> None:
    """Refuse what is not a whole number of at least ``least``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise ConfigurationError(
            f"{who}: {what} must be a whole number >= {least}, got {_show(value)}"
        )


def check_callable(value: object, what: str, who: str, expected: str) -> None:
    """Refuse what cannot be called (``expected`` says what it should be)."""
    if not callable(value):
        raise ConfigurationError(f"{who}: {what} must be {expected}, got {_show(value)}")


def check_model(model: object, who: str) -> None:
    """A model as agents take it: a name, a :class:`Model`, or ``None`` (the run's)."""
    if model is not None and not isinstance(model, str | Model):
        raise ConfigurationError(
            f"{who}: model must be a model name ('openai/gpt-4o', 'mock'...), a Model "
            f"(lw.get_model(...)) or None for the run's model, got {_show(model)}"
        )


def check_config(config: object, who: str) -> None:
    """Generation settings: a :class:`GenerateConfig` or ``None``."""
    if config is not None and not isinstance(config, GenerateConfig):
        raise ConfigurationError(
            f"{who}: config must be a GenerateConfig (lw.GenerateConfig(temperature=0.2, "
            f"...)) or None, got {_show(config)}"
        )


def check_history(history: object, who: str) -> HistoryPolicy | None:
    """A history policy, a function ``messages -> messages`` (made a policy) or None."""
    return None if history is None else as_history_policy(history, f"{who}: history")


def check_tool_list(tools: object, who: str) -> list[Any]:
    """A list (or other iterable) of tools, as a list; what is in it is checked by
    ``check_tools``."""
    from ..tools import Tool
    from ._handoff import Handoff

    if isinstance(tools, str | bytes | Tool | Handoff | Mapping) or not isinstance(tools, Iterable):
        raise ConfigurationError(
            f"{who}: tools must be a list of Tools ([lw.bash(), my_tool] where my_tool is "
            f"made with @lw.tool), got {_show(tools)}"
        )
    return list(tools)


def check_agent(agent: object) -> None:
    """An agent: something ``await agent(state)`` can call with the state."""
    from ._iterative import iterative
    from ._react import react

    if agent is react or agent is iterative:
        name = "react" if agent is react else "iterative"
        raise ConfigurationError(f"run: pass an agent, {name}(...), not {name} itself")
    if not callable(agent) or isinstance(agent, type):
        raise ConfigurationError(
            "run: agent must be an agent (lw.react(...), lw.iterative(...), or an async "
            f"function taking and returning an AgentState), got {_show(agent)}"
        )
    if not _takes_state(agent):
        raise ConfigurationError(
            f"run: the agent {_show(agent)} must take the state as its one argument "
            "(async def my_agent(state): ... return state)"
        )


def check_limits(limits: object) -> tuple[Limit, ...]:
    """The run's limits: a list of :class:`Limit` (as a tuple: none is ``()``, which
    costs a live run nothing)."""
    if isinstance(limits, Limit):
        raise ConfigurationError(f"run: limits must be a list: limits=[{limits!r}]")
    if isinstance(limits, str | bytes | Mapping) or not isinstance(limits, Sequence):
        raise ConfigurationError(
            f"run: limits must be a list of limits (lw.step_limit(20), lw.time_limit(60)"
            f"...), got {_show(limits)}"
        )
    for limit in limits:
        if not isinstance(limit, Limit):
            raise ConfigurationError(
                "run: every limit must be a Limit (lw.step_limit(20), lw.time_limit(60), "
                f"lw.token_limit(...), lw.message_limit(...), lw.working_limit(...)), got "
                f"{_show(limit)}"
            )
    return tuple(limits)


def check_approver(approval: object) -> None:
    """An approval policy: a preset name, a rule list, or an approver function, which
    must take ``(call, messages)``."""
    if approval is None or isinstance(approval, str):
        return
    if not callable(approval) and (
        isinstance(approval, bytes | Mapping) or not isinstance(approval, Sequence)
    ):
        raise ConfigurationError(
            "run: approval must be a preset name ('ci', 'dev', 'prod'), an approver "
            f"function or a list of rules, got {_show(approval)}"
        )
    if callable(approval) and not _accepts(approval, 2):
        raise ConfigurationError(
            f"run: the approver {_show(approval)} must take (call, messages) and return "
            "an lw.Approval (async def approve(call, messages): ...)"
        )


def check_flag(value: object, what: str, who: str) -> None:
    """Refuse what is not ``True`` or ``False``."""
    if not isinstance(value, bool):
        raise ConfigurationError(f"{who}: {what} must be True or False, got {_show(value)}")


def check_sandbox(sandbox: object) -> None:
    """A sandbox: a backend name, a :class:`SandboxEnvironment` or ``None``."""
    if sandbox is None or isinstance(sandbox, str):
        return
    from ..sandboxes import SandboxEnvironment

    if not isinstance(sandbox, SandboxEnvironment):
        raise ConfigurationError(
            "run: sandbox must be a backend name ('bwrap', 'local'), a SandboxEnvironment "
            f"or None, got {_show(sandbox)}"
        )


def check_db(db: object, who: str = "run") -> None:
    """A run store: a path, ``None`` (the default store) or ``False`` (none)."""
    if db is None or db is False or isinstance(db, str | os.PathLike):
        return
    raise ConfigurationError(
        f"{who}: db must be a file path, None (the default run store) or False (keep "
        f"nothing), got {_show(db)}"
    )


# whether an agent class's __call__ takes the state, read once per class: run() checks
# its agent every run, and reading a signature costs ~25 µs
_calls_checked: weakref.WeakKeyDictionary[Callable[..., object], bool] = weakref.WeakKeyDictionary()


def _takes_state(agent: Callable[..., object]) -> bool:
    """``_accepts(agent, 1)``; for an instance of a class whose ``__call__`` is a Python
    function (not a function itself, a method, a wrapper), remembered by that function."""
    call = type(agent).__call__  # (a function's or a method's is not a FunctionType)
    if not isinstance(call, FunctionType) or any(
        hasattr(agent, name) for name in ("__signature__", "__wrapped__")
    ):
        return _accepts(agent, 1)
    taken = _calls_checked.get(call)
    if taken is None:
        taken = _calls_checked[call] = _accepts(agent, 1)
    return taken


def _accepts(function: Callable[..., object], arguments: int) -> bool:
    """Whether ``function`` can be called with ``arguments`` positional arguments (True
    when its signature cannot be read: then it is up to the call)."""
    try:
        inspect.signature(function).bind(*([None] * arguments))
    except TypeError:
        return False
    except ValueError:
        return True
    return True
