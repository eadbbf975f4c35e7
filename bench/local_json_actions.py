"""How well the embedded model picks a first action through the ``json`` protocol.

Twenty fixed single-step tool questions go to the local model (SmolLM2-135M by default)
with six tools, through the ``json`` tool protocol, whose grammar-constrained decoding
(``GenerateConfig.response_schema`` -> a llama.cpp grammar) forces a well-formed action.
For each question the first reply is checked:

- valid: it parsed into one action naming an offered tool (or the final answer) whose
  arguments have the required fields with the right JSON types;
- correct: it names the expected tool with the expected arguments.

It also measures what the KV cache saves: the prompt cost of a second step (the history
extended by one action and its observation) against the same prompt evaluated cold.

    python bench/local_json_actions.py [--model local] [--max-tokens 200] [--verbose]

Needs the local extra (``bash scripts/install-local-model.sh PYTHON``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from dataclasses import dataclass
from typing import Any

import loopwright as lw


@lw.tool
def multiply(a: int, b: int) -> int:
    """Multiply two integers.

    Args:
        a: The first factor.
        b: The second factor.
    """
    return a * b


@lw.tool
def add(a: float, b: float) -> float:
    """Add two numbers.

    Args:
        a: The first number.
        b: The second number.
    """
    return a + b


@lw.tool
def get_weather(city: str) -> str:
    """Get the current weather in a city.

    Args:
        city: The city's name.
    """
    return f"Sunny in {city}"


@lw.tool
def convert_currency(amount: float, from_currency: str, to_currency: str) -> float:
    """Convert an amount of money from one currency to another.

    Args:
        amount: How much money.
        from_currency: The currency to convert from, as a three-letter code (USD, EUR...).
        to_currency: The currency to convert to, as a three-letter code.
    """
    return amount


@lw.tool
def word_count(text: str) -> int:
    """Count the words in a text.

    Args:
        text: The text whose words to count.
    """
    return len(text.split())


@lw.tool
def capital_of(country: str) -> str:
    """Look up the capital city of a country.

    Args:
        country: The country's name.
    """
    return "?"


TOOLS = [multiply, add, get_weather, convert_currency, word_count, capital_of]

USD = {"USD", "US DOLLARS", "US DOLLAR", "DOLLARS", "DOLLAR"}
EUR = {"EUR", "EUROS", "EURO"}
GBP = {"GBP", "BRITISH POUNDS", "POUNDS", "POUND"}
JPY = {"JPY", "YEN", "JAPANESE YEN"}


@dataclass(frozen=True)
class Question:
    text: str
    tool: str
    arguments: dict[str, Any]
    """Expected values; a set holds the accepted spellings of a string."""


QUESTIONS = [
    Question("What is 465 times 321?", "multiply", {"a": 465, "b": 321}),
    Question("Multiply 12 by 9.", "multiply", {"a": 12, "b": 9}),
    Question("What is 7 * 8?", "multiply", {"a": 7, "b": 8}),
    Question("Compute the product of 25 and 4.", "multiply", {"a": 25, "b": 4}),
    Question("What is 3.5 plus 2.25?", "add", {"a": 3.5, "b": 2.25}),
    Question("Add 100 and 250.", "add", {"a": 100, "b": 250}),
    Question("What is the sum of 17 and 26?", "add", {"a": 17, "b": 26}),
    Question("What's 1200 + 345?", "add", {"a": 1200, "b": 345}),
    Question("What is the weather in Paris?", "get_weather", {"city": {"PARIS"}}),
    Question("Is it raining in Tokyo right now?", "get_weather", {"city": {"TOKYO"}}),
    Question("How warm is it in Berlin today?", "get_weather", {"city": {"BERLIN"}}),
    Question(
        "Tell me the current weather for New York.",
        "get_weather",
        {"city": {"NEW YORK", "NEW YORK CITY"}},
    ),
    Question(
        "Convert 100 US dollars to euros.",
        "convert_currency",
        {"amount": 100, "from_currency": USD, "to_currency": EUR},
    ),
    Question(
        "How many Japanese yen is 50 British pounds?",
        "convert_currency",
        {"amount": 50, "from_currency": GBP, "to_currency": JPY},
    ),
    Question(
        "Change 20 EUR into USD.",
        "convert_currency",
        {"amount": 20, "from_currency": EUR, "to_currency": USD},
    ),
    Question(
        "How many words are in the sentence 'the quick brown fox jumps'?",
        "word_count",
        {"text": {"THE QUICK BROWN FOX JUMPS"}},
    ),
    Question(
        "Count the words in this text: hello world again",
        "word_count",
        {"text": {"HELLO WORLD AGAIN"}},
    ),
    Question("What is the capital of Italy?", "capital_of", {"country": {"ITALY"}}),
    Question("Which city is the capital of Canada?", "capital_of", {"country": {"CANADA"}}),
    Question("Name the capital city of Australia.", "capital_of", {"country": {"AUSTRALIA"}}),
]
assert len(QUESTIONS) == 20


def _examples() -> list[Any]:
    from loopwright.model.protocols import ActionExample

    return [
        ActionExample.of(multiply, {"a": 6, "b": 4}, thought="I multiply 6 by 4."),
        ActionExample.of(get_weather, {"city": "London"}, thought="I look up London."),
        ActionExample.of(capital_of, {"country": "Spain"}, thought="I look up Spain."),
    ]


EXAMPLES = _examples()
"""Worked examples for ``--examples`` (none of them is one of the questions)."""

SYSTEM = "You are a helpful assistant. Use the tools to answer the user's question."
_TYPES: dict[str, tuple[type, ...]] = {
    "integer": (int,),
    "number": (int, float),
    "string": (str,),
    "boolean": (bool,),
}


def _type_ok(value: Any, schema: dict[str, Any]) -> bool:
    kind = schema.get("type")
    if kind not in _TYPES:
        return True
    if isinstance(value, bool) and kind != "boolean":
        return False
    return isinstance(value, _TYPES[kind])


def check(output: lw.ModelOutput, question: Question) -> tuple[bool, bool, str]:
    """(valid, correct, what the model did)."""
    calls = output.tool_calls
    if not calls:
        # the protocol's final-answer action, with no answer tool offered, is plain text
        valid = bool(output.text.strip()) and output.stop_reason == "stop"
        return valid, False, f"finish({output.text[:80]!r})"
    call = calls[0]
    shown = f"{call.function}({json.dumps(call.arguments)})"
    if call.parse_error is not None:
        return False, False, f"format error: {call.parse_error.splitlines()[0]}"
    tool = next((t.info for t in TOOLS if t.info.name == call.function), None)
    if tool is None:
        # the final answer tool (answering without a tool) is valid, never correct
        return call.function in ("submit", "finish"), False, shown
    props = tool.parameters.get("properties", {})
    valid = all(k in call.arguments for k in tool.parameters.get("required", [])) and all(
        k in props and _type_ok(v, props[k]) for k, v in call.arguments.items()
    )
    correct = valid and call.function == question.tool
    for key, expected in question.arguments.items():
        got = call.arguments.get(key)
        if isinstance(expected, set):
            ok = isinstance(got, str) and got.strip().strip(".").upper() in expected
        else:
            ok = isinstance(got, (int, float)) and abs(float(got) - expected) < 1e-9
        correct = correct and ok
    return valid, correct, shown


async def prompt_cost(model: lw.Model) -> tuple[float, float]:
    """Seconds to evaluate a step-2 prompt with the step-1 prefix cached, and cold."""
    one_token = lw.GenerateConfig(max_tokens=1)
    call = lw.ToolCall(id="c1", function="multiply", arguments={"a": 465, "b": 321})
    step1: list[lw.ChatMessage] = [
        lw.SystemMessage(content=SYSTEM),
        lw.UserMessage(content="What is 465 times 321, plus 17?"),
    ]
    step2 = [
        *step1,
        lw.AssistantMessage(content="", tool_calls=[call], reasoning="First the product."),
        lw.ToolMessage(content="149265", tool_call_id="c1", function="multiply"),
    ]
    evict = [lw.UserMessage(content="Something unrelated.")]
    warm, cold = [], []
    for _ in range(3):
        await model.generate(step1, TOOLS, one_token)
        start = time.perf_counter()
        await model.generate(step2, TOOLS, one_token)
        warm.append(time.perf_counter() - start)
        await model.generate(evict, config=one_token)  # replaces the cached prefix
        start = time.perf_counter()
        await model.generate(step2, TOOLS, one_token)
        cold.append(time.perf_counter() - start)
        await model.generate(evict, config=one_token)
    return statistics.median(warm), statistics.median(cold)


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="local")
    parser.add_argument("--max-tokens", type=int, default=200)
    parser.add_argument("--verbose", action="store_true", help="show every reply")
    parser.add_argument(
        "--examples", action="store_true", help="show the model three worked examples"
    )
    args = parser.parse_args()

    config = lw.GenerateConfig(max_tokens=args.max_tokens, max_retries=0)
    protocol: Any = "json"
    if args.examples:
        from loopwright.model.protocols import JsonProtocol

        protocol = JsonProtocol(examples=EXAMPLES)
    model = lw.get_model(args.model, tool_protocol=protocol, config=config)
    valid = correct = 0
    times: list[float] = []
    for i, q in enumerate(QUESTIONS, 1):
        messages: list[lw.ChatMessage] = [
            lw.SystemMessage(content=SYSTEM),
            lw.UserMessage(content=q.text),
        ]
        start = time.perf_counter()
        output = await model.generate(messages, TOOLS)
        times.append(time.perf_counter() - start)
        ok_valid, ok_correct, shown = check(output, q)
        valid += ok_valid
        correct += ok_correct
        mark = "correct" if ok_correct else "valid" if ok_valid else "INVALID"
        print(f"{i:2d}. {mark:8s} {times[-1]:5.1f}s  {q.text}")
        print(f"      -> {shown}")
        if args.verbose:
            print(f"      raw: {output.message.reasoning!r}")
    n = len(QUESTIONS)
    warm, cold = await prompt_cost(model)
    print()
    shots = ", 3 examples" if args.examples else ""
    print(f"model: {model.name}, protocol: json (grammar-constrained{shots})")
    print(f"valid first actions:   {valid}/{n} ({100 * valid / n:.0f}%)")
    print(f"correct first actions: {correct}/{n} ({100 * correct / n:.0f}%)")
    print(f"median time per question: {statistics.median(times):.2f}s")
    print(
        f"step-2 prompt: {warm:.3f}s with the cached prefix, {cold:.3f}s cold ({warm / cold:.2f}x)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
