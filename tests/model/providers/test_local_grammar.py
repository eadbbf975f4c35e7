"""Response schemas with hostile strings as llama.cpp grammars (issue 26).

llama-cpp-python's converter left backslashes unescaped: a ``const`` with a double quote
killed the process (SIGSEGV), one with a newline made the model write a raw newline.
The real model runs in a subprocess, so a crash fails the test instead of pytest.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from typing import Any

import pytest

import loopwright as lw
from loopwright.model.protocols._grounding import plain_thought_pattern
from loopwright.model.providers import _grammar, _llama_engine

HOSTILE = [
    'say "hi"',
    "back\\slash \\n not a newline",
    "line one\nline two\r\n\ttab",
    'both \\" at once',
    "café ü 中 😀",
    "\x00\x1f\x7f controls",
    "\u2028 line separator",
    "x" * 600,
]


def test_a_literal_matches_exactly_its_text() -> None:
    assert _grammar.gbnf_literal('a"b') == '"a\\"b"'
    assert _grammar.gbnf_literal("a\\b") == '"a\\\\b"'
    assert _grammar.gbnf_literal("a\nb") == '"a\\x0Ab"'
    assert _grammar.gbnf_literal("é😀") == '"\\u00E9\\U0001F600"'
    with pytest.raises(ValueError):
        _grammar.gbnf_literal("\ud800")


def test_what_the_grammar_cannot_enforce_is_loosened_and_named() -> None:
    schema = {
        "type": "object",
        "properties": {
            "code": {"type": "string", "pattern": '^\\d+"$'},
            "word": {"type": "string", "pattern": "^[a-z]+$"},
            "long": {"type": "string", "maxLength": 100_000},
            "list": {
                "type": "array",
                "items": {"type": "string", "minLength": 9},
                "minItems": 5000,
            },
            "pattern": {"type": "string"},
        },
    }
    loose, notes = _grammar.loosen(schema)
    props = loose["properties"]
    assert "pattern" not in props["code"] and props["word"]["pattern"] == "^[a-z]+$"
    assert "maxLength" not in props["long"] and "minItems" not in props["list"]
    assert props["list"]["items"]["minLength"] == 9 and "pattern" in props  # a property
    assert notes == [
        "$.properties.code: pattern",
        "$.properties.long: maxLength",
        "$.properties.list: minItems",
    ]
    assert schema["properties"]["code"]["pattern"] == '^\\d+"$'  # the input is untouched


def test_the_json_protocols_own_patterns_stay_in_the_grammar() -> None:
    thought = {"type": "string", "pattern": plain_thought_pattern(60)}  # a plain thought
    assert _grammar.loosen(thought) == (thought, [])
    assert _grammar.loosen({"type": "string", "pattern": "^(ab|[a-z]){2}$"})[1] == []
    assert _grammar.loosen({"type": "string", "pattern": "^.{0,9}$"})[1] == ["$: pattern"]
    assert _grammar.loosen({"type": "string", "pattern": "^[^a]$"})[1] == ["$: pattern"]
    parses = []

    def accept(gbnf: str) -> bool:
        parses.append(gbnf)
        return len(parses) > 1  # the first grammar refused: the patterns go too

    built = _grammar.build(thought, accept)
    assert built.loosened == ("$: pattern",)
    assert ".!?0-9" in parses[0] and ".!?0-9" not in built.gbnf


def test_the_check_after_names_the_problem() -> None:
    schema = {"type": "string", "pattern": "^[0-9]+$"}
    assert _grammar.schema_problem('"123"', schema) is None
    assert "does not match" in (_grammar.schema_problem('"12a"', schema) or "")
    assert "not JSON" in (_grammar.schema_problem('"12', schema) or "")


def _model_installed() -> bool:
    try:
        _llama_engine.default_model_path()
        import llama_cpp  # noqa: F401
    except (lw.MissingDependencyError, ImportError):
        return False
    return True


_SCRIPT = textwrap.dedent(
    """
    import asyncio, json, sys
    from typing import Literal
    import loopwright as lw

    async def main():
        model = lw.get_model("local", config=lw.GenerateConfig(max_retries=0))
        ask = [lw.UserMessage(content="Answer in JSON.")]
        for schema in json.loads(sys.stdin.read()):
            out = await model.generate(ask, config=lw.GenerateConfig(
                response_schema=schema, max_tokens=800))
            print(json.dumps({"text": out.text, "stop": out.stop_reason,
                              "error": out.error}), flush=True)

        Kind = Literal['say "hi"', "a\\\\b", "two\\nlines"]

        def pick(kind: Kind, note: str = "") -> str:
            "Pick a kind."
            return kind

        tool = lw.tool(pick, name="pick")
        out = await model.generate([lw.UserMessage(content='Pick the kind say "hi".')],
                                   tools=[tool])
        print(json.dumps({"calls": [[c.function, c.arguments] for c in out.tool_calls],
                          "text": out.text}), flush=True)

    asyncio.run(main())
    """
)


@pytest.mark.local_model
@pytest.mark.timeout(600)
@pytest.mark.skipif(not _model_installed(), reason="the embedded model is not installed")
def test_hostile_consts_enums_and_tool_schemas_with_the_real_model() -> None:
    schemas: list[dict[str, Any]] = [{"const": s} for s in HOSTILE]
    schemas += [
        {"enum": HOSTILE[:4]},
        {
            "type": "object",
            "properties": {'a "key"\\': {"enum": ["x\ny", 'q"']}},
            "required": ['a "key"\\'],
        },
        {"type": "string", "pattern": '^"\\d+$'},
        {"type": "string", "maxLength": 100_000},
    ]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run(
        [sys.executable, "-c", _SCRIPT],
        input=json.dumps(schemas),
        capture_output=True,
        text=True,
        timeout=900,
        env=env,
    )
    assert done.returncode == 0, (
        f"the model process died ({done.returncode}): {done.stderr[-2000:]}"
    )
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(lines) == len(schemas) + 1
    for text, out in zip(HOSTILE, lines, strict=False):  # each const, exactly
        assert json.loads(out["text"]) == text, out
        assert out["error"] is None
    assert json.loads(lines[len(HOSTILE)]["text"]) in HOSTILE[:4]
    assert json.loads(lines[len(HOSTILE) + 1]["text"])['a "key"\\'] in ("x\ny", 'q"')
    pattern, unbounded = lines[len(HOSTILE) + 2], lines[len(HOSTILE) + 3]
    assert isinstance(json.loads(pattern["text"]), str)  # the grammar kept it a string
    assert "does not match" in pattern["error"] and "pattern" in pattern["error"]
    assert isinstance(json.loads(unbounded["text"]), str) and unbounded["error"] is None
    tool = lines[-1]
    for name, arguments in tool["calls"]:
        assert name in ("pick", "submit")
        if name == "pick":
            assert arguments["kind"] in ('say "hi"', "a\\b", "two\nlines")


def test_a_chosen_reply_is_planned_as_fixed_text_and_values() -> None:
    from loopwright.model.providers import _segments

    thought = {"type": "string", "maxLength": 60}
    args = {"type": "object", "properties": {"a": {"$ref": "#/$defs/n"}}, "required": ["a"]}
    schema = {
        "type": "object",
        "properties": {
            "thought": thought,
            "action": {
                "type": "object",
                "properties": {"name": {"const": 'mul"t'}, "arguments": args},
                "required": ["name", "arguments"],
                "additionalProperties": False,
            },
        },
        "required": ["thought", "action"],
        "$defs": {"n": {"type": "number"}},
    }
    defs = {"$defs": {"n": {"type": "number"}}}
    assert _segments.plan(schema) == [
        '{"thought":',
        {**thought, **defs},
        ', "action": {"name": "mul\\"t", "arguments": {"a":',
        {"$ref": "#/$defs/n", **defs},
        "}}}",
    ]
    optional = {**schema, "required": ["thought"]}
    assert _segments.plan(optional) is None  # an optional property: generated whole
    assert _segments.plan({"type": "string"}) is None


def test_a_value_grammar_ends_with_the_text_after_it() -> None:
    gbnf = 'root ::= "\\"" char* "\\"" space\nchar ::= [a-z]\nspace ::= " "?'
    out = _grammar.with_suffix(gbnf, ",")
    assert out is not None and out.endswith('root ::= " "? value0-root ","')
    assert 'value0-root ::= "\\"" char*' in out
    assert _grammar.with_suffix('root ::= "[" root? "]"', ",") is None  # recursive
    assert _grammar.build_segment({"type": "string", "pattern": "^.$"}, ",", bool) is None


@pytest.mark.parametrize(
    ("schema", "text", "said"),
    [
        # a schema from elsewhere (an MCP server's) whose $ref leads nowhere
        ({"$ref": "#/$defs/missing"}, '{"a": 1}', "cannot be resolved"),
        ({"properties": {"a": {"$ref": "https://example.invalid/s.json"}}}, '{"a": 1}', ""),
        # or back to itself without end
        ({"$defs": {"loop": {"$ref": "#/$defs/loop"}}, "$ref": "#/$defs/loop"}, "1", ""),
    ],
)
def test_a_reply_checked_against_a_schema_that_cannot_be_used_is_a_problem_not_a_crash(
    schema: dict[str, Any], text: str, said: str
) -> None:
    problem = _grammar.schema_problem(text, schema)
    assert problem is not None and "schema" in problem and said in problem


def test_a_reply_nested_past_the_parsers_depth_is_a_problem_not_a_crash() -> None:
    problem = _grammar.schema_problem("[" * 100_000 + "]" * 100_000, {"type": "array"})
    assert problem is not None and "not JSON" in problem


def test_a_ref_out_of_the_schema_is_never_fetched() -> None:
    # a schema from elsewhere naming a URL: checking a reply must not open it
    from tests._schema_server import schema_server

    with schema_server() as (url, asked):
        problem = _grammar.schema_problem('{"a": 1}', {"properties": {"a": {"$ref": url}}})
    assert asked == []
    assert problem is not None and "cannot be resolved" in problem
