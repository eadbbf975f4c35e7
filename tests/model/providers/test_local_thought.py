"""The embedded model's thought reads as a sentence: its grammar and its decoding.

The README's first command once showed ``The answer is .`` as the model's thought at
each step: digits are banned from the thought, the model's likeliest token after ``The
answer is`` is the bare space its tokenizer puts before a number, and after it the
grammar left almost nothing the model wanted (bench/README.md).
"""

from __future__ import annotations

import re
import threading
from pathlib import Path

import pytest

import loopwright as lw
from loopwright.model.protocols._grounding import plain_thought_pattern
from loopwright.model.providers import _grammar, _llama_engine

ROOT = Path(__file__).resolve().parents[3]

# the broken shapes: a space before a closing mark, a double space, a sentence left
# hanging on a word that needs one after it, no closing mark at all
_GAP = re.compile(r"\s[.,;:!?]|\s\s|\b(is|are|of|the|a|to|by)[.,;:!?]?$|[^.!?]$", re.I)


@pytest.mark.parametrize(
    ("thought", "ok"),
    [
        ("", True),
        ("I use multiply.", True),
        ("Is it the product, or not?", True),
        ("Café au lait!", True),
        ("The answer is .", False),  # the old thought
        ("The answer is ?", False),
        ("The answer is 149265.", False),
        ("The answer is ⅛.", False),  # a number of another script
        ("The answer is ൩.", False),
        ("Two squared is x².", False),
        ("The sum of  a number.", False),  # where a digit was left out
        (" Leading space.", False),
        ("Trailing space. ", False),
        ("No end", False),
        ("Two sentences. Here.", False),
        ('A "quote".', False),
        ("A back\\slash.", False),
        ("A\nnewline.", False),
        ("A\x7fdelete.", False),
        ("Emoji 🙂.", False),
    ],
)
def test_a_plain_thought_is_one_sentence_without_numbers(thought: str, ok: bool) -> None:
    assert bool(re.fullmatch(plain_thought_pattern(60), thought)) is ok


def test_a_plain_thoughts_bound_counts_its_characters_but_spaces() -> None:
    pattern = plain_thought_pattern(10)
    assert re.fullmatch(pattern, "abcdefghi.")  # 10 characters
    assert not re.fullmatch(pattern, "abcdefghij.")  # 11
    assert re.fullmatch(pattern, "a b c d e f g h i.")  # 10 besides its spaces
    assert re.fullmatch(plain_thought_pattern(1), "")  # too short for a sentence: empty
    assert not re.fullmatch(plain_thought_pattern(1), "a.")
    assert re.fullmatch(plain_thought_pattern(None), "a" * 5000 + ".")  # unbounded
    with pytest.raises(ValueError):
        lw.JsonProtocol(plain_thought=True, max_thought=0)


def test_the_plain_thought_stays_in_the_grammar() -> None:
    thought = {"type": "string", "pattern": plain_thought_pattern(60)}
    assert _grammar.loosen(thought) == (thought, [])  # enforced while generating
    protocol = lw.JsonProtocol(plain_thought=True, max_thought=60)
    schema = protocol._schema([("finish", {"type": "object"})], "finish", "answer", None)
    assert schema["properties"]["thought"] == thought


def _model_installed() -> bool:
    try:
        _llama_engine.default_model_path()
        import llama_cpp  # noqa: F401
    except (lw.MissingDependencyError, ImportError):
        return False
    return True


def _arithmetic() -> list[lw.Tool]:
    def add(a: float, b: float) -> float:
        """Add two numbers."""
        return a + b

    def multiply(a: float, b: float) -> float:
        """Multiply two numbers."""
        return a * b

    def divide(a: float, b: float) -> float:
        """Divide a by b."""
        return a / b

    return [lw.tool(f) for f in (add, multiply, divide)]


@pytest.mark.parametrize(
    ("task", "tools"),
    [
        ("What is 465 * 321?", "readme"),  # the README's first command
        ("What is 81 divided by 9?", "arithmetic"),
        ("What is 17 times 23?", "arithmetic"),
    ],
)
@pytest.mark.local_model
@pytest.mark.timeout(900)
@pytest.mark.skipif(not _model_installed(), reason="the embedded model is not installed")
async def test_the_embedded_models_thoughts_read_as_sentences(task: str, tools: str) -> None:
    from loopwright.cli._run import DEFAULT_SYSTEM
    from loopwright.cli._tools import resolve_tools

    chosen = (
        resolve_tools([str(ROOT / "examples" / "calculator.py") + ":multiply"])
        if tools == "readme"
        else _arithmetic()
    )
    agent = lw.react(prompt=DEFAULT_SYSTEM, tools=chosen)
    state = await lw.run(agent, task, model="local", db=False, limits=[lw.step_limit(5)])
    replies = [m for m in state.messages if isinstance(m, lw.AssistantMessage)]
    thoughts = [m.reasoning or "" for m in replies]
    assert any(thoughts), thoughts  # the model said something
    for thought in thoughts:
        assert not thought or not _GAP.search(thought), thoughts
        assert re.fullmatch(plain_thought_pattern(60), thought), thoughts
    assert state.output is not None  # and it still answers
    if tools == "readme":
        assert float(state.output.text) == 149265 and len(replies) == 2


@pytest.mark.local_model
@pytest.mark.skipif(not _model_installed(), reason="the embedded model is not installed")
def test_steps_back_end_within_their_budget_on_hostile_grammars() -> None:
    from loopwright.model.providers._steps_back import greedy_steps_back

    engine = _llama_engine.get_engine(
        _llama_engine.default_model_path(), {"n_ctx": 2048, "n_threads": 1}
    )
    with engine.lock:
        llm = engine._load()
        prompt = llm.tokenize(b"Count: 1 2 3 4", add_bos=False)
        never = threading.Event()
        # every token a dead end (the model wants digits, only "z" is allowed): the
        # budget ends the steps back and the grammar's text comes out whole
        done = greedy_steps_back(llm, prompt, 'root ::= " z" "z"? "z"? ","', 40, never, None)
        assert done is not None and done[1] == "stop"
        assert re.fullmatch(r" z{1,3},", done[0]), done
        # a grammar llama.cpp refuses: None (the caller generates as usual)
        assert greedy_steps_back(llm, prompt, "root ::= (", 40, never, None) is None
        # the token bound, a stop sequence, a cancel
        long = 'root ::= [a-z ]{1,200} "."'
        text, finish = greedy_steps_back(llm, prompt, long, 3, never, None) or ("", "")
        assert finish == "length" and text
        stopped = greedy_steps_back(llm, prompt, long, 60, never, None, stops=(" ",))
        assert stopped is not None and " " not in stopped[0]
        cancelled = threading.Event()
        cancelled.set()
        assert greedy_steps_back(llm, prompt, long, 60, cancelled, None) == ("", "length")
        pieces: list[str] = []
        out = greedy_steps_back(llm, prompt, long, 8, never, pieces.append)
        assert out is not None and "".join(pieces) == out[0]
