"""What ``loopwright run`` and ``loopwright eval`` record with a run (its metadata's
``cli`` key) so that ``loopwright runs resume RUN_ID`` can make the same agent again: the
command's options, with files made absolute (the resume may run from another folder)
and no secrets: a provider argument whose name looks like one (``api_key``, ``token``...)
is left out, by name, and must be given again to ``runs resume`` (``-M``)."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from typing import Any

from ..model import GenerateConfig, Model

__all__ = ["CLI_KEY", "absolute", "eval_options", "model_options_of", "run_options"]

CLI_KEY = "cli"
_SECRET = re.compile(r"key|token|secret|passw|auth|credential|cookie", re.IGNORECASE)


def absolute(spec: str) -> str:
    """``file.py:attr``, ``file.py@task``, ``file.py`` or ``key=@file`` with the file's
    path made absolute; anything else as it is."""
    key, eq, value = spec.partition("=")
    if eq and value.startswith("@"):
        return f"{key}=@{os.path.abspath(value[1:])}"
    for sep in (":", "@"):
        where, found, rest = spec.rpartition(sep)
        if found and where.endswith(".py"):
            return f"{os.path.abspath(where)}{sep}{rest}"
    return os.path.abspath(spec) if spec.endswith(".py") else spec


def model_options_of(
    model: str | None,
    model_args: Sequence[str],
    protocol: str | None,
    config: GenerateConfig | None,
) -> dict[str, Any]:
    """The model's options, without the provider arguments that look like secrets."""
    kept, dropped = [], []
    for arg in model_args:
        name = arg.partition("=")[0]
        if _SECRET.search(name):
            dropped.append(name)
        else:
            kept.append(arg)
    return {
        "model": model,
        "model_args": [absolute(a) for a in kept],
        "dropped_model_args": dropped,
        "protocol": protocol,
        "config": config.model_dump(mode="json", exclude_none=True) if config else None,
    }


def run_options(
    chosen: Model,
    model: str | None,
    model_args: Sequence[str],
    protocol: str | None,
    config: GenerateConfig | None,
    tools: Sequence[str],
    sandbox: str | None,
    max_steps: int,
    time_limit: float | None,
    token_limit: int | None,
    cost_limit: float | None,
    approval: str | None,
    system: str | None,
    submit: bool,
    name: str,
) -> dict[str, Any]:
    """``loopwright run``'s options (the model by the name it resolved to)."""
    return {
        "command": "run",
        **model_options_of(model or chosen.name, model_args, protocol, config),
        "tools": [absolute(t) for t in tools],
        "sandbox": sandbox,
        "max_steps": max_steps,
        "time_limit": time_limit,
        "token_limit": token_limit,
        "cost_limit": cost_limit,
        "approval": approval,
        "system": system,
        "submit": submit,
        "name": name,
    }


def eval_options(
    tasks: Sequence[str],
    task_args: Sequence[str],
    model: str | None,
    model_args: Sequence[str],
    protocol: str | None,
    config: GenerateConfig | None,
    max_samples: int | None,
    epochs: int | None,
    limit: int | None,
) -> dict[str, Any]:
    """``loopwright eval``'s options."""
    return {
        "command": "eval",
        "tasks": [absolute(t) for t in tasks],
        "task_args": [absolute(a) for a in task_args],
        **model_options_of(model, model_args, protocol, config),
        "max_samples": max_samples,
        "epochs": epochs,
        "limit": limit,
    }
