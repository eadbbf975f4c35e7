"""Tool and parameter descriptions from Google, NumPy, reST and Epydoc docstrings."""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Docstring", "parse_docstring"]

# a line that starts a list item, a quote or an indented block keeps its line break
_KEEP_BREAK = re.compile(r"^(\s|[-*+>•|]|\d+[.)]\s)")


@dataclass(slots=True)
class Docstring:
    """What a docstring says about a tool.

    Attributes:
        description: The prose of the docstring (summary and body), without the
            parameter, return and raise sections.
        params: Parameter name -> description (names without leading ``*``).
    """

    description: str = ""
    params: dict[str, str] = field(default_factory=dict)


def _unwrap(text: str) -> str:
    """Join lines hard-wrapped inside a paragraph; keep paragraphs, lists and blocks."""
    out: list[str] = []
    for line in text.strip().splitlines():
        prev = out[-1] if out else ""
        if (
            prev.strip()
            and line.strip()
            and not _KEEP_BREAK.match(line)
            and not prev.startswith((" ", "\t"))
        ):
            out[-1] = f"{prev.rstrip()} {line.strip()}"
        else:
            out.append(line.rstrip())
    return "\n".join(out)


def parse_docstring(obj: Any) -> Docstring:
    """Parse ``obj``'s docstring, detecting its style (Google, NumPy, reST, Epydoc).

    A docstring the parser does not understand becomes the description as it is.
    """
    doc = inspect.getdoc(obj)
    if not doc:
        return Docstring()
    import docstring_parser  # lazily: only needed when a tool is defined

    try:
        parsed = docstring_parser.parse(doc)
    except docstring_parser.ParseError:
        return Docstring(description=_unwrap(doc))
    params: dict[str, str] = {}
    for p in parsed.params:
        if p.description:
            params[p.arg_name.lstrip("*")] = _unwrap(p.description)
    return Docstring(description=_unwrap(parsed.description or ""), params=params)
