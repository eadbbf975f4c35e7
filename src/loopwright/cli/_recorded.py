"""What ``loopwright run`` and ``loopwright eval`` record with a run (its metadata's
``cli`` key) so that ``loopwright runs resume RUN_ID`` can make the same agent again: the
command's options, with files made absolute (the resume may run from another folder)
and no secrets. In provider (``-M``) and task (``-T``) arguments and the generation
settings, at any depth of a JSON value: a value whose name looks like a secret
(``api_key``, ``token``, ``password``, ``default_headers``, ``cookie``...) is left out,
and a URL loses its ``user:password@`` and its query (``?key=...``) and fragment. What
was left out is recorded by name (``dropped_model_args``, ``dropped_task_args``,
``dropped_config``); ``runs resume`` says so, and takes them again with ``-M`` / ``-T``."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import Any

from ..model import GenerateConfig, Model
from ..model._redact import scrub_secrets, secret_name

__all__ = [
    "CLI_KEY",
    "absolute",
    "eval_options",
    "model_options_of",
    "run_options",
    "scrubbed_args",
]

CLI_KEY = "cli"


def scrubbed_args(args: Sequence[str]) -> tuple[list[str], list[str]]:
    """``key=value`` arguments (``-M``, ``-T``) without secrets (see :func:`scrub_secrets`;
    a value is read as JSON when it parses, as the commands read it), files made
    absolute; and the names of what was left out."""
    kept, dropped = [], []
    for arg in args:
        name, eq, raw = arg.partition("=")
        if secret_name(name):
            dropped.append(name)
            continue
        if not eq or raw.startswith("@"):
            kept.append(absolute(arg))
            continue
        try:
            value, as_json = json.loads(raw), True
        except ValueError:
            value, as_json = raw, False
        lost: list[str] = []
        clean = scrub_secrets(value, name, lost)
        if not lost:
            kept.append(arg)
            continue
        dropped.extend(lost)
        kept.append(f"{name}={json.dumps(clean) if as_json else clean}")
    return kept, dropped


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
    """The model's options, without what looks like a secret (:func:`scrub_secrets`)."""
    kept, dropped = scrubbed_args(model_args)
    settings, lost = None, list[str]()
    if config is not None:
        settings = scrub_secrets(config.model_dump(mode="json", exclude_none=True), "config", lost)
    return {
        "model": model,
        "model_args": kept,
        "dropped_model_args": dropped,
        "protocol": protocol,
        "config": settings,
        "dropped_config": lost,
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
    kept, dropped = scrubbed_args(task_args)
    return {
        "command": "eval",
        "tasks": [absolute(t) for t in tasks],
        "task_args": kept,
        "dropped_task_args": dropped,
        **model_options_of(model, model_args, protocol, config),
        "max_samples": max_samples,
        "epochs": epochs,
        "limit": limit,
    }
