"""Options shared by commands: the model (``--model``, ``-M``, ``--protocol``), its
generation settings (``--temperature``, ``--max-tokens``, ``-G``), key=value arguments,
the run store."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

import click

from .._errors import ConfigurationError, ModelAPIError
from ..model import (
    AssistantMessage,
    GenerateConfig,
    Model,
    ModelOutput,
    ToolCall,
    get_model,
    output_from_data,
)

__all__ = [
    "EXIT_ERROR",
    "EXIT_INTERRUPTED",
    "EXIT_LIMIT",
    "EXIT_OK",
    "EXIT_USAGE",
    "EXIT_WAITING",
    "PROTOCOLS",
    "build_model",
    "db_option",
    "generate_config",
    "generate_options",
    "json_option",
    "mock_script",
    "model_options",
    "parse_pairs",
]

from ._exit_codes import (
    EXIT_ERROR,
    EXIT_INTERRUPTED,
    EXIT_LIMIT,
    EXIT_OK,
    EXIT_USAGE,
    EXIT_WAITING,
)

PROTOCOLS = ("native", "react", "json")

F = TypeVar("F", bound=Callable[..., Any])

MODEL_HELP = (
    "The model, as provider/name: local (the embedded model, the default), "
    "openai/gpt-4o-mini, anthropic/claude-sonnet-4-5, ollama/qwen2.5... "
    "Default: $LOOPWRIGHT_MODEL, else local. `loopwright models` lists the providers."
)
MODEL_ARG_HELP = (
    "A provider argument as key=value (repeatable), e.g. -M base_url=http://127.0.0.1:8000/v1. "
    "Values are read as JSON when they parse (numbers, true, lists), else as text; "
    "@FILE reads the value from a JSON file. For the scripted model (--model mock), "
    "-M outputs=@script.json gives its replies: a JSON list whose items are a text "
    'answer, {"tool": NAME, "arguments": {...}} for a tool call, or {"error": TEXT} '
    "for a failed call. For the replay model (--model replay/RUN_ID or -M run=RUN_ID), "
    "the run is read from --db."
)
GENERATE_HELP = (
    "A generation setting as key=value (repeatable), checked against GenerateConfig "
    f"({', '.join(GenerateConfig.model_fields)}); values are read as JSON when they parse, "
    """e.g. -G seed=7 -G 'stop_seqs=["END"]'."""
)


def parse_pairs(pairs: Iterable[str], what: str) -> dict[str, Any]:
    """``["a=1", "b=x", "c=@f.json"]`` -> ``{"a": 1, "b": "x", "c": <f.json's JSON>}``
    (see :func:`~loopwright.evals.parse_task_args`), a usage error naming ``what``."""
    from ..evals import parse_task_args

    try:
        return parse_task_args(pairs)
    except ConfigurationError as ex:
        raise click.BadParameter(str(ex), param_hint=what) from None


def _script_item(item: Any, i: int) -> ModelOutput | str | BaseException:
    if isinstance(item, str):
        return item
    if not isinstance(item, dict):
        raise ConfigurationError(
            f"mock script item {i} is a {type(item).__name__}; expected a string or an object"
        )
    if "error" in item:
        return ModelAPIError(str(item["error"]))
    if "tool" in item:
        return ModelOutput.for_tool_call(
            str(item["tool"]), dict(item.get("arguments") or {}), content=item.get("content", "")
        )
    if "tool_calls" in item:
        calls = [ToolCall.model_validate(c) for c in item["tool_calls"]]
        message = AssistantMessage(content=item.get("content", ""), tool_calls=calls)
        return ModelOutput(message=message, stop_reason="tool_calls")
    try:
        return output_from_data(item)
    except ValueError as ex:
        raise ConfigurationError(f"mock script item {i} is not a model output: {ex}") from None


def mock_script(value: Any) -> list[ModelOutput | str | BaseException]:
    """The scripted model's ``outputs`` from JSON (see ``-M`` in ``--help``)."""
    if not isinstance(value, list):
        raise ConfigurationError(
            "the mock model's outputs must be a JSON list (-M outputs=@script.json)"
        )
    return [_script_item(item, i) for i, item in enumerate(value)]


def generate_config(
    pairs: Sequence[str], temperature: float | None = None, max_tokens: int | None = None
) -> GenerateConfig | None:
    """The generation settings of ``-G key=value``, ``--temperature`` and
    ``--max-tokens`` (``None`` when none is given).

    Raises:
        click.BadParameter: A malformed ``-G``, an unknown setting or a bad value.
    """
    from pydantic import ValidationError

    values = parse_pairs(pairs, "-G")
    if temperature is not None:
        values["temperature"] = temperature
    if max_tokens is not None:
        values["max_tokens"] = max_tokens
    if not values:
        return None
    unknown = sorted(set(values) - set(GenerateConfig.model_fields))
    if unknown:
        raise click.BadParameter(
            f"unknown generation setting {unknown[0]!r}; the settings are "
            f"{', '.join(GenerateConfig.model_fields)}",
            param_hint="-G",
        )
    try:
        return GenerateConfig(**values)
    except ValidationError as ex:
        problems = "; ".join(
            f"{'.'.join(map(str, e['loc']))}: {e['msg']} (got {e.get('input')!r})"
            for e in ex.errors()
        )
        raise click.BadParameter(problems, param_hint="-G") from None


def build_model(
    name: str | None,
    args: Sequence[str],
    protocol: str | None,
    *,
    config: GenerateConfig | None = None,
    db: str | None = None,
) -> Model:
    """The model the options ask for: ``config`` applies to every call; the replay
    model reads its run from ``db`` (the command's ``--db``) unless ``-M db=`` says.

    Raises:
        click.BadParameter: A malformed ``-M``, or a generation setting given as one.
        ConfigurationError: An unknown provider or protocol, bad provider arguments.
    """
    kwargs = parse_pairs(args, "-M")
    settings = sorted(set(kwargs) & set(GenerateConfig.model_fields))
    if settings:
        key = settings[0]
        option = {"temperature": "--temperature", "max_tokens": "--max-tokens"}.get(key)
        how = f"{option} or -G {key}=..." if option else f"-G {key}=..."
        raise click.BadParameter(
            f"{key!r} is a generation setting, not a provider argument: give it with {how}",
            param_hint="-M",
        )
    provider = (name or "").split("/", 1)[0].split(":", 1)[0]
    if provider == "mock" and "outputs" in kwargs:
        kwargs["outputs"] = mock_script(kwargs["outputs"])
    if provider == "replay" and db is not None:
        kwargs.setdefault("db", db)
    try:
        return get_model(name, config=config, tool_protocol=protocol, **kwargs)
    except TypeError as ex:  # a provider argument it does not take
        raise ConfigurationError(f"model {name or 'default'!r}: {ex}") from None


def model_options(f: F) -> F:
    """``--model``, ``-M key=value``, ``--protocol``."""
    f = click.option(
        "--protocol",
        type=click.Choice(PROTOCOLS),
        help="How tools reach the model: native tool calling, react (Thought/Action "
        "text) or json (one JSON action per turn). Default: native where the provider "
        "supports tools, else json.",
    )(f)
    f = click.option(
        "-M", "--model-arg", "model_args", multiple=True, metavar="KEY=VALUE", help=MODEL_ARG_HELP
    )(f)
    f = click.option("--model", "-m", "model", metavar="NAME", help=MODEL_HELP)(f)
    return f


def generate_options(f: F) -> F:
    """``--temperature``, ``--max-tokens``, ``-G key=value``."""
    f = click.option(
        "-G", "--generate", "generate", multiple=True, metavar="KEY=VALUE", help=GENERATE_HELP
    )(f)
    f = click.option(
        "--max-tokens",
        type=click.IntRange(min=1),
        help="The most tokens the model may generate in one call.",
    )(f)
    f = click.option(
        "--temperature", type=click.FloatRange(min=0), help="The sampling temperature."
    )(f)
    return f


def db_option(f: F) -> F:
    """``--db PATH``."""
    return click.option(
        "--db",
        type=click.Path(dir_okay=False),
        help="The run store (a SQLite file). Default: $LOOPWRIGHT_DB, else ./loopwright-runs.db.",
    )(f)


def json_option(f: F) -> F:
    """``--json``."""
    return click.option(
        "--json", "as_json", is_flag=True, help="Print the result as JSON on stdout."
    )(f)
