"""The json protocol's response schema bounds the whole action when asked to."""

from __future__ import annotations

import enum
from typing import Any, Literal

import pytest

import loopwright as lw


class Unit(enum.Enum):
    KG = "kg"
    LB = "lb"


@lw.tool
def label(text: str, unit: Unit, kind: Literal["a", "b"], count: int) -> str:
    """Make a label.

    Args:
        text: Free text.
        unit: A unit.
        kind: A kind.
        count: How many.
    """
    return text


async def _schema(**options: Any) -> dict[str, Any]:
    seen: list[dict[str, Any]] = []

    def respond(messages: Any, tools: Any, config: lw.GenerateConfig) -> str:
        assert config.response_schema is not None
        seen.append(config.response_schema)
        return '{"thought": "done", "action": {"name": "finish", "arguments": {"answer": "x"}}}'

    model = lw.get_model("mock", outputs=respond, tool_protocol=lw.JsonProtocol(**options))
    await model.generate([lw.UserMessage(content="go")], [label])
    return seen[0]


def _strings(node: Any) -> list[dict[str, Any]]:
    found, stack = [], [node]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if item.get("type") == "string":
                found.append(item)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return found


async def test_max_string_bounds_every_free_text_argument_and_nothing_else() -> None:
    schema = await _schema(max_thought=30, max_string=50)
    assert schema["properties"]["thought"]["maxLength"] == 30
    free = [s for s in _strings(schema) if not {"enum", "const"} & set(s)]
    # label's text and finish's answer (the thought has its own bound)
    assert sorted(s["maxLength"] for s in free) == [30, 50, 50]
    fixed = [s for s in _strings(schema) if {"enum", "const"} & set(s)]
    assert fixed and all("maxLength" not in s for s in fixed)


async def test_no_bound_unless_asked() -> None:
    schema = await _schema()
    assert all("maxLength" not in s for s in _strings(schema))


@pytest.mark.parametrize("bad", [0, -3])
def test_a_bound_below_one_is_refused(bad: int) -> None:
    with pytest.raises(lw.ConfigurationError, match="max_string"):
        lw.JsonProtocol(max_string=bad)
