"""Tool specs written from source: ``@lw.tool(autogenerate=True)``.

For a function without type hints or docstring, a model reads the function's source and
writes the tool's description and JSON schema. This module asks the model
(:func:`write_spec`) and checks what it wrote (:func:`check_spec`): a JSON object with a
``description`` and ``parameters``, a valid JSON schema of an object whose properties
are exactly the function's parameters and whose ``required`` list is exactly the
parameters without a default. Anything else is refused with a
:class:`ToolDefinitionError` that says what differs. The model's text is untrusted: it
is bounded, parsed as JSON, never evaluated.

Where it runs: ``lw.run`` writes the specs of the run's tools (the agent's and the
run's) before the run opens (``runtime/_versions.py``), and an agent that starts with a
spec still unwritten writes it before its first model call (``agents/_specs.py``), both
through a cache in the run store keyed by the function's version and the prompt. A tool
whose spec is not written yet refuses to say what it is (its ``info``) with a clear
error; ``await lw.write_tool_spec(tool)`` writes it.
"""

from __future__ import annotations

import inspect
import json
import re
import textwrap
from typing import TYPE_CHECKING, Any

from ..model import GenerateConfig, Model, ToolInfo, UserMessage
from ._errors import ToolDefinitionError

if TYPE_CHECKING:
    from ._tool import Tool

__all__ = ["DEFAULT_SPEC_PROMPT", "check_spec", "function_source", "write_spec"]

DEFAULT_SPEC_PROMPT = """\
You write tool specifications for a language model's function calling.
Read this Python function and write what it does and its parameters.

```python
{source}
```

Answer with one JSON object and nothing else, of this form:
{{"description": "<what the tool does, one or two sentences>",
 "parameters": {{"type": "object",
   "properties": {{"<parameter>": {{"type": "<JSON type>", "description": "<...>"}}}},
   "required": [<the parameters without a default value>]}}}}
The properties must be exactly the function's parameters: {parameters}.
The required list must be exactly: {required}.
"""
"""The prompt that writes a spec; ``{source}``, ``{name}``, ``{parameters}`` and
``{required}`` are filled in (double the braces of any other ``{``/``}``)."""

_MAX_SOURCE = 20_000  # characters of source sent to the model
_MAX_REPLY = 50_000  # characters of the model's reply read


def settle_autogenerate(
    autogenerate: Any, spec_prompt: Any, name: str
) -> tuple[bool | str | Model, str]:
    """The checked ``autogenerate`` and ``spec_prompt`` options of a tool."""
    if not (isinstance(autogenerate, bool | str | Model)):
        raise ToolDefinitionError(
            f"Tool {name!r}: autogenerate must be True (the run's model), a model's name or "
            f"a Model, got {autogenerate!r}"
        )
    if autogenerate is False:
        if spec_prompt is not None:
            raise ToolDefinitionError(f"Tool {name!r}: spec_prompt goes with autogenerate")
        return False, ""
    if spec_prompt is None:
        return autogenerate, DEFAULT_SPEC_PROMPT
    if not isinstance(spec_prompt, str) or "{source}" not in spec_prompt:
        raise ToolDefinitionError(f"Tool {name!r}: spec_prompt must be a string with {{source}}")
    return autogenerate, spec_prompt


def _signature(fn: Any) -> tuple[list[str], list[str]]:
    """The parameters the model may pass, and those it must."""
    names, required = [], []
    for p in inspect.signature(fn).parameters.values():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        names.append(p.name)
        if p.default is p.empty:
            required.append(p.name)
    return names, required


def function_source(fn: Any) -> str:
    """``fn``'s source, bounded; a clear error when there is none to read."""
    try:
        source = textwrap.dedent(inspect.getsource(inspect.unwrap(fn)))
    except (OSError, TypeError) as ex:
        raise ToolDefinitionError(
            f"autogenerate needs the function's source, and {fn!r} has none ({ex}); "
            "give it type hints and a docstring instead"
        ) from None
    # the decorator lines are not the function's behaviour: start at its def
    match = re.search(r"^(async\s+)?def\s", source, flags=re.MULTILINE)
    return (source[match.start() :] if match else source)[:_MAX_SOURCE]


def render_prompt(tool: Tool[..., Any]) -> str:
    names, required = _signature(tool.fn)
    try:
        return tool.spec_prompt.format(
            source=function_source(tool.fn),
            name=tool.name,
            parameters=json.dumps(names),
            required=json.dumps(required),
        )
    except (KeyError, IndexError, ValueError) as ex:
        raise ToolDefinitionError(
            f"tool {tool.name!r}: the spec prompt may use {{source}}, {{name}}, {{parameters}} "
            f"and {{required}} only (double other braces); {type(ex).__name__}: {ex}"
        ) from None


def _json_object(text: str, name: str) -> Any:
    text = text[:_MAX_REPLY].strip()
    fenced = re.search(r"```(?:json)?\s*(.*?)```", text, flags=re.DOTALL)
    if fenced:
        text = fenced.group(1).strip()
    start, end = text.find("{"), text.rfind("}")
    try:
        return json.loads(text[start : end + 1] if start >= 0 < end else text)
    except json.JSONDecodeError as ex:
        raise ToolDefinitionError(
            f"autogenerate: the model's spec for tool {name!r} is not JSON ({ex.msg})"
        ) from None


def check_spec(tool: Tool[..., Any], spec: Any) -> ToolInfo:
    """``spec`` (the model's JSON) as the tool's :class:`ToolInfo`, or a clear refusal."""
    from jsonschema import Draft202012Validator, SchemaError

    name = tool.name
    where = f"autogenerate: the spec written for tool {name!r}"
    if not isinstance(spec, dict):
        raise ToolDefinitionError(f"{where} is not a JSON object")
    description, params = spec.get("description"), spec.get("parameters")
    if not isinstance(description, str) or not description.strip():
        raise ToolDefinitionError(f"{where} has no description (a non-empty string)")
    if not isinstance(params, dict) or params.get("type") != "object":
        raise ToolDefinitionError(f'{where}: parameters must be a schema with "type": "object"')
    try:
        Draft202012Validator.check_schema(params)
    except SchemaError as ex:
        raise ToolDefinitionError(f"{where} is not a valid JSON schema: {ex.message}") from None
    names, required = _signature(tool.fn)
    props = params.get("properties", {})
    got = sorted(props) if isinstance(props, dict) else []
    if got != sorted(names):
        raise ToolDefinitionError(
            f"{where} does not match the signature: its parameters are {got}, the "
            f"function's are {sorted(names)}"
        )
    got_required = params.get("required", [])
    if not isinstance(got_required, list) or sorted(map(str, got_required)) != sorted(required):
        raise ToolDefinitionError(
            f"{where} does not match the signature: it requires {got_required!r}, the "
            f"function requires {sorted(required)} (the parameters without a default)"
        )
    return ToolInfo(name=name, description=description.strip(), parameters=params)


def reply_schema(fn: Any) -> dict[str, Any]:
    """The shape of a spec for ``fn``, sent as ``response_schema``: a model that can be
    held to a schema (llama.cpp's grammar, OpenAI's ``response_format``) writes one of
    this shape, with the signature's parameter names and required list (the embedded
    135M model gets ``required`` wrong without it); what any model writes is checked by
    :func:`check_spec` all the same."""
    names, required = _signature(fn)
    text = {"type": "string", "maxLength": 200}
    param = {
        "type": "object",
        "properties": {
            "type": {"enum": ["string", "integer", "number", "boolean", "array", "object"]},
            "description": text,
        },
        "required": ["type", "description"],
    }
    return {
        "type": "object",
        "properties": {
            "description": text,
            "parameters": {
                "type": "object",
                "properties": {
                    "type": {"const": "object"},
                    "properties": {
                        "type": "object",
                        "properties": {n: param for n in names},
                        "required": names,
                        "additionalProperties": False,
                    },
                    "required": {"const": required},
                },
                "required": ["type", "properties", "required"],
            },
        },
        "required": ["description", "parameters"],
    }


async def write_spec(tool: Tool[..., Any], model: Model) -> ToolInfo:
    """Ask ``model`` for ``tool``'s spec from its source and check it (no cache)."""
    config = GenerateConfig(temperature=0, response_schema=reply_schema(tool.fn))
    output = await model.generate([UserMessage(content=render_prompt(tool))], config=config)
    return check_spec(tool, _json_object(output.text, tool.name))
