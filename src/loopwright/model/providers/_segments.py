"""A reply whose fixed parts are read in, not generated one token at a time.

Once the embedded model's action is chosen (:mod:`._choice`), most of a json-protocol
reply is fixed by its schema: ``{"thought": `` , ``, "action": {"name": "multiply",
"arguments": `` and ``}}``. Generating those under the grammar costs a model evaluation
and a grammar-constrained sampling per token (~30 ms each for the 135M model on one
core), while read as part of the prompt they cost a batch evaluation (~10 ms a token).
So the reply is a :func:`plan`: fixed text, evaluated with what precedes it, and the
values the model writes (the thought, the arguments), each generated under its own
schema's grammar, in the schema's order. The text is the same JSON the whole grammar
would allow (with JSON's usual ``", "`` and ``": "`` spacing, that of the worked
example), and the model still writes every value knowing all that comes before it.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["plan", "write_in_parts"]

Segment = str | dict[str, Any]
"""Fixed text, or the schema of a value the model writes."""


def _closed_object(schema: dict[str, Any]) -> bool:
    props = schema.get("properties")
    return (
        schema.get("type", "object") == "object"
        and isinstance(props, dict)
        and bool(props)
        and set(schema.get("required") or ()) == set(props)
        and schema.get("additionalProperties") in (None, False)
        and not any(k in schema for k in ("anyOf", "oneOf", "allOf", "$ref", "enum", "const"))
    )


def plan(schema: dict[str, Any] | None) -> list[Segment] | None:
    """``schema``'s reply as fixed text and generated values, or None when it has no
    fixed structure to read in (not an object whose properties are all required)."""
    if not isinstance(schema, dict) or not _closed_object(schema):
        return None
    defs: dict[str, Any] = {k: schema[k] for k in ("$defs", "definitions") if k in schema}
    out: list[Segment] = []

    def walk(node: dict[str, Any], nested: bool) -> None:
        out.append(" {" if nested else "{")
        for i, (name, value) in enumerate(node["properties"].items()):
            # no space after the colon: the model writes it with the value, as it would
            # (a prompt ending in a space makes a tokenizer's usual " 465" unreachable)
            out.append(("" if i == 0 else ", ") + json.dumps(name) + ":")
            if isinstance(value, dict) and isinstance(value.get("const"), str) and len(value) == 1:
                out.append(" " + json.dumps(value["const"], ensure_ascii=False))
            elif isinstance(value, dict) and _closed_object(value):
                walk(value, True)
            else:
                out.append({**value, **defs} if isinstance(value, dict) else value)
        out.append("}")

    walk(schema, False)
    merged: list[Segment] = []
    for piece in out:  # adjacent fixed texts as one
        if isinstance(piece, str) and merged and isinstance(merged[-1], str):
            merged[-1] += piece
        else:
            merged.append(piece)
    if not any(isinstance(p, dict) for p in merged):
        return None
    return merged


def write_in_parts(
    llm: Any,
    rendered: Any,
    parts: list[str | tuple[Any, str]],
    generate: Callable[[list[int], Any, int], tuple[str, str]],
    max_tokens: int,
    cancel: threading.Event,
    on_text: Callable[[str], None] | None,
) -> tuple[str, str]:
    """A reply written in parts (:mod:`._segments`): fixed text read in with the prompt,
    each value generated under its grammar up to the text after it."""
    text = ""
    for part in parts:
        if isinstance(part, str):
            text += part
            if on_text is not None:
                on_text(part)
            continue
        grammar, suffix = part
        used = len(llm.tokenize(text.encode("utf-8"), add_bos=False)) if text else 0
        if used >= max_tokens:
            return text, "length"
        prompt = llm.tokenize(
            (rendered.prompt + text).encode("utf-8"),
            add_bos=not rendered.added_special,
            special=True,
        )
        if len(prompt) >= int(llm.n_ctx()):
            return text, "length"
        piece, finish = generate(prompt, grammar, max_tokens - used)
        text += piece
        if finish != "stop" or cancel.is_set() or not piece.endswith(suffix):
            return text, finish  # the token limit, a stop sequence
    return text, "stop"
