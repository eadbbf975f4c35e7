"""Grammars for the embedded model: strings hold only what JSON allows."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed")

from llama_cpp.llama_grammar import LlamaGrammar, json_schema_to_gbnf

from loopwright.model.providers._grammar import json_text_only

SCHEMA = {
    "type": "object",
    "properties": {"thought": {"type": "string", "maxLength": 20}, "answer": {"type": "string"}},
    "required": ["thought", "answer"],
}


def test_schema_grammar_strings_refuse_raw_control_characters() -> None:
    raw = json_schema_to_gbnf(json.dumps(SCHEMA))
    [before] = [line for line in raw.splitlines() if line.startswith("char ::= ")]
    assert "x00-" not in before  # the converter lets raw newlines into strings
    fixed = json_text_only(raw)
    [after] = [line for line in fixed.splitlines() if line.startswith("char ::= ")]
    assert after.startswith('char ::= [^"\\\\\\x7F\\x00-\\x1F] | "\\\\"')
    # every other rule is untouched, and llama.cpp parses the result
    assert [x for x in fixed.splitlines() if not x.startswith("char")] == [
        x for x in raw.splitlines() if not x.startswith("char")
    ]
    LlamaGrammar.from_string(fixed, verbose=False)
