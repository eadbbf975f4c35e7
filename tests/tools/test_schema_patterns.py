"""A schema tool's patterns (``Tool.from_info``: a user's schema, an MCP server's, a
spec a model wrote) are matched in bounded time (``loopwright._patterns``).

Python's ``re`` backtracks for minutes on ``^(a|a)+$`` against ``"aaaa...!"``, with
the event loop stopped; the call is now refused as an error for the model, saying the
argument could not be checked against the tool's pattern. Ordinary patterns accept and
refuse as they did (a search, ``$`` before a final newline, lookarounds)."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import pytest

import loopwright as lw
from loopwright import _patterns
from loopwright.model.providers import _grammar

HOSTILE = "a" * 40 + "!"
pytestmark = pytest.mark.timeout(120)


def echo(**kwargs: Any) -> str:
    return repr(sorted(kwargs.items()))


def schema_tool(schema: dict[str, Any], name: str = "t") -> lw.Tool[..., Any]:
    return lw.Tool.from_info(lw.ToolInfo(name=name, parameters={"type": "object", **schema}), echo)


def word(pattern: str, name: str = "t") -> lw.Tool[..., Any]:
    return schema_tool({"properties": {"w": {"type": "string", "pattern": pattern}}}, name)


async def run_one(tool: lw.Tool[..., Any], **args: Any) -> lw.ToolMessage:
    message = lw.AssistantMessage(tool_calls=[lw.ToolCall(function=tool.name, arguments=args)])
    [result] = await lw.execute_tools(message, [tool])
    return result


def refused(result: lw.ToolMessage) -> str:
    assert result.error is not None and result.error.type == "validation", result.content
    return result.content


async def test_an_agent_run_ends_when_the_models_argument_backtracks_without_end() -> None:
    tools = [word("^(a+)+$", "n"), word("^(a|a)+$", "u")]
    model = lw.get_model(
        "mock",
        outputs=[
            lw.ModelOutput.for_tool_call("n", {"w": HOSTILE}),
            lw.ModelOutput.for_tool_call("u", {"w": HOSTILE}),
            "done.",
        ],
    )
    state = await lw.run(
        lw.react(tools=tools, submit=False),
        "go",
        model=model,
        limits=[lw.time_limit(100)],  # a stopped event loop would not let it fire
        db=False,
    )
    assert state.completed == "answer" and state.limit is None
    nested, either = [m for m in state.messages if isinstance(m, lw.ToolMessage)]
    assert "w: must match the pattern '^(a+)+$'" in refused(nested)
    text = refused(either)
    assert f"could not check the argument {HOSTILE!r} against its pattern '^(a|a)+$'" in text
    assert "matching took over 0.5 seconds" in text


@pytest.mark.parametrize(
    "schema",
    [
        # a key matched by patternProperties, by additionalProperties (through the
        # patterns it consults), by unevaluatedProperties (jsonschema's own walk)
        {"patternProperties": {"^(a|a)+$": {}}},
        {"patternProperties": {"^(a|a)+$": {}}, "additionalProperties": False},
        {"patternProperties": {"^(a|a)+$": {}}, "unevaluatedProperties": False},
        {"allOf": [{"patternProperties": {"^(a|a)+$": {}}}], "unevaluatedProperties": False},
        {
            "$schema": "https://json-schema.org/draft/2019-09/schema",
            "patternProperties": {"^(a|a)+$": {}},
            "unevaluatedProperties": False,
        },
        {"properties": {"w": {"type": "array", "items": {"pattern": "^(a|a)+$"}}}},
    ],
)
async def test_every_keyword_that_matches_a_pattern_is_bounded(schema: dict[str, Any]) -> None:
    tool = schema_tool(schema)
    args = {"w": [HOSTILE] * 50} if "properties" in schema else {HOSTILE: 1}
    assert "matching took over 0.5 seconds" in refused(await run_one(tool, **args))


async def test_ordinary_patterns_accept_and_refuse_as_before() -> None:
    tool = schema_tool(
        {
            "properties": {
                "day": {"type": "string", "pattern": r"^\d{4}-\d{2}-\d{2}$"},
                "name": {"type": "string", "pattern": "^(?!\\s*$).+"},  # a lookahead
                "part": {"type": "string", "pattern": "b+"},  # a search, not a full match
            },
            "patternProperties": {"^x_[a-z]+$": {"type": "integer"}},
            "additionalProperties": False,
        }
    )
    good = await run_one(tool, day="2026-11-27\n", name="Ann", part="abba", x_size=3)
    assert good.error is None, good.content  # re's $ matches before a final newline
    assert "day" in good.content and "x_size" in good.content
    text = refused(await run_one(tool, day="27/11/2026", name="   ", part="aaa", x_Size=3))
    assert r"day: must match the pattern '^\\d{4}-\\d{2}-\\d{2}$'" in text
    assert "name: must match the pattern" in text and "part: must match the pattern" in text
    assert "x_Size: unexpected argument" in text
    assert refused(await run_one(tool, x_size="3")).count("expected integer") == 1


@pytest.mark.parametrize(
    ("pattern", "args", "why"),
    [
        # draft 4's meta-schema does not check patternProperties keys: re.error ended
        # the run
        ("(", {"x": 1}, "not a valid regular expression"),
        # re compiles it; regex would unroll it to a billion nodes and exhaust memory
        ("^(?:(?:a{1000}){1000}){1000}$", {"aaa": 1}, "unroll to over 2,000 parts"),
        ("a" * 2001, {"aaa": 1}, "the pattern is 2,001 characters, over 2,000"),
    ],
)
async def test_a_pattern_that_cannot_be_compiled_refuses_the_call(
    pattern: str, args: dict[str, Any], why: str
) -> None:
    tool = schema_tool(
        {
            "$schema": "http://json-schema.org/draft-04/schema#",
            "patternProperties": {pattern: {"type": "integer"}},
        }
    )
    text = refused(await run_one(tool, **args))
    assert "could not check the argument" in text and why in text
    assert (await run_one(tool)).error is None  # a call that reaches no pattern is made


async def test_a_string_too_long_to_match_refuses_the_call() -> None:
    text = refused(await run_one(word("^[a-z]*$"), w="a" * 100_001))
    assert "the string is 100,001 characters, over 100,000" in text
    assert (await run_one(word("^[a-z]*$"), w="a" * 100_000)).error is None


def test_a_local_models_reply_is_checked_against_its_schema_in_bounded_time() -> None:
    schema = {"type": "object", "properties": {"w": {"type": "string", "pattern": "^(a|a)+$"}}}
    problem = _grammar.schema_problem(f'{{"w": "{HOSTILE}"}}', schema)
    assert problem is not None and "matching took over 0.5 seconds" in problem
    assert _grammar.schema_problem('{"w": "aaaa"}', schema) is None


def test_every_jsonschema_module_that_matches_patterns_is_bounded() -> None:
    """jsonschema matches through its modules' ``re``: one that starts matching in a
    module of its own would be unbounded again (``_format`` only compiles, when a
    schema is checked, and checks formats this validation does not assert)."""
    import jsonschema

    with _patterns.bounded_patterns():
        pass
    matching = re.compile(r"\bre\.(search|match|fullmatch|finditer|findall|sub|split)\(")
    root = Path(jsonschema.__file__).parent
    users = {
        "jsonschema." + path.relative_to(root).with_suffix("").as_posix().replace("/", ".")
        for path in root.rglob("*.py")
        if "tests" not in path.parts and matching.search(path.read_text(encoding="utf-8"))
    }
    assert users <= set(_patterns._SHIMMED) | {"jsonschema._format"}, users
    for name in _patterns._SHIMMED:
        assert isinstance(__import__(name, fromlist=["re"]).re, _patterns._BoundedRe)
    assert jsonschema._keywords.find_additional_properties.original is (
        jsonschema._utils.find_additional_properties
    )
    # outside a block, jsonschema's re is re: other users of the library see no change
    assert jsonschema._keywords.re.search("^(a|a)+$", "aaa") is not None


def test_a_blocks_budget_counts_the_time_spent_matching_only() -> None:
    """All the matches of one call share the budget (a call of many hostile strings
    ends at the first refusal); the time between them (the rest of the validation)
    takes nothing from it."""
    with _patterns.bounded_patterns(budget=0.2):
        time.sleep(0.3)
        assert _patterns.search("b+", "abba") and not _patterns.search("^b", "abba")
        with pytest.raises(_patterns.PatternUnchecked, match=r"matching took over 0\.2 seconds"):
            _patterns.search("^(a|a)+$", HOSTILE)
        with pytest.raises(_patterns.PatternUnchecked, match=r"over 0\.2 seconds"):
            _patterns.search("b+", "abba")  # nothing left for this call
    with _patterns.bounded_patterns():
        assert _patterns.search("b+", "abba")  # the next call has its own


async def test_additional_properties_match_each_pattern_of_many_on_its_own() -> None:
    """jsonschema's additionalProperties joins every patternProperties key with ``|``
    into one pattern: sixty short patterns (2,339 characters joined) went over
    MAX_PATTERN, and keys with an inline flag each (``(?i)``, valid alone) made a
    pattern re refuses, so every call of the tool was refused. Each key is matched on
    its own, as patternProperties itself does."""
    many = {f"^x_field_number_{i:02d}_[a-z]+(?:_[a-z]+)*$": {} for i in range(60)}
    tool = schema_tool({"patternProperties": many, "additionalProperties": False})
    assert (await run_one(tool, x_field_number_03_abc="v")).error is None
    assert "y: unexpected argument" in refused(await run_one(tool, y=1))
    flags = schema_tool(
        {"patternProperties": {"(?i)^a_": {}, "(?i)^b_": {}}, "additionalProperties": False}
    )
    assert (await run_one(flags, A_1=1, b_2=2)).error is None
    assert "c_3: unexpected argument" in refused(await run_one(flags, c_3=3))
