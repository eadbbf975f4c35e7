"""The fixed question set of ``bench/local_actions.py``: four tool sets (arithmetic, unit
conversion, lookup in a small table, string functions), 40 single-step questions (ten
per set) and 15 that need two tool calls.

Each question names its tool set(s), the calls it needs (tool and arguments, in order)
and its answer. An expected string argument is a set of accepted spellings (compared
without case); the answer is a number (compared to 0.01) or a set of accepted strings.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import loopwright as lw

# --- arithmetic -------------------------------------------------------------------------


@lw.tool
def add(a: float, b: float) -> float:
    """Add two numbers.

    Args:
        a: The first number.
        b: The second number.
    """
    return a + b


@lw.tool
def subtract(a: float, b: float) -> float:
    """Subtract b from a.

    Args:
        a: The number to subtract from.
        b: The number to subtract.
    """
    return a - b


@lw.tool
def multiply(a: float, b: float) -> float:
    """Multiply two numbers.

    Args:
        a: The first factor.
        b: The second factor.
    """
    return a * b


@lw.tool
def divide(a: float, b: float) -> float:
    """Divide a by b.

    Args:
        a: The dividend.
        b: The divisor.
    """
    if b == 0:
        raise lw.ToolError("cannot divide by zero")
    return a / b


# --- units ------------------------------------------------------------------------------

Length = Literal["mm", "cm", "m", "km", "inch", "foot", "mile"]
_METERS = {"mm": 0.001, "cm": 0.01, "m": 1.0, "km": 1000.0, "inch": 0.0254, "foot": 0.3048}
_METERS["mile"] = 1609.344


@lw.tool
def convert_length(value: float, from_unit: Length, to_unit: Length) -> float:
    """Convert a length from one unit to another.

    Args:
        value: The length to convert.
        from_unit: The unit of the value.
        to_unit: The unit to convert to.
    """
    return round(value * _METERS[from_unit] / _METERS[to_unit], 4)


@lw.tool
def convert_temperature(
    value: float, from_scale: Literal["C", "F", "K"], to_scale: Literal["C", "F", "K"]
) -> float:
    """Convert a temperature between Celsius (C), Fahrenheit (F) and Kelvin (K).

    Args:
        value: The temperature to convert.
        from_scale: The scale of the value.
        to_scale: The scale to convert to.
    """
    celsius = {"C": value, "F": (value - 32) * 5 / 9, "K": value - 273.15}[from_scale]
    out = {"C": celsius, "F": celsius * 9 / 5 + 32, "K": celsius + 273.15}[to_scale]
    return round(out, 2)


Weight = Literal["g", "kg", "pound", "ounce"]
_GRAMS = {"g": 1.0, "kg": 1000.0, "pound": 453.59237, "ounce": 28.349523125}


@lw.tool
def convert_weight(value: float, from_unit: Weight, to_unit: Weight) -> float:
    """Convert a weight from one unit to another.

    Args:
        value: The weight to convert.
        from_unit: The unit of the value.
        to_unit: The unit to convert to.
    """
    return round(value * _GRAMS[from_unit] / _GRAMS[to_unit], 4)


# --- lookup in a small table -----------------------------------------------------------

_COUNTRIES = {
    "france": ("Paris", 68.2, "euro"),
    "japan": ("Tokyo", 124.5, "yen"),
    "canada": ("Ottawa", 40.1, "Canadian dollar"),
    "australia": ("Canberra", 26.6, "Australian dollar"),
    "brazil": ("Brasilia", 203.1, "real"),
    "kenya": ("Nairobi", 55.1, "shilling"),
    "norway": ("Oslo", 5.5, "krone"),
    "india": ("New Delhi", 1428.6, "rupee"),
}


def _country(country: str) -> tuple[str, float, str]:
    row = _COUNTRIES.get(country.strip().lower())
    if row is None:
        raise lw.ToolError(f"no country named {country!r}; known: {', '.join(_COUNTRIES)}")
    return row


@lw.tool
def capital_of(country: str) -> str:
    """Look up the capital city of a country.

    Args:
        country: The country's name.
    """
    return _country(country)[0]


@lw.tool
def population_of(country: str) -> float:
    """Look up a country's population, in millions.

    Args:
        country: The country's name.
    """
    return _country(country)[1]


@lw.tool
def currency_of(country: str) -> str:
    """Look up the currency of a country.

    Args:
        country: The country's name.
    """
    return _country(country)[2]


# --- strings ----------------------------------------------------------------------------


@lw.tool
def word_count(text: str) -> int:
    """Count the words in a text.

    Args:
        text: The text whose words to count.
    """
    return len(text.split())


@lw.tool
def reverse_text(text: str) -> str:
    """Reverse a text, last character first.

    Args:
        text: The text to reverse.
    """
    return text[::-1]


@lw.tool
def uppercase(text: str) -> str:
    """Write a text in capital letters.

    Args:
        text: The text to write in capitals.
    """
    return text.upper()


@lw.tool
def text_length(text: str) -> int:
    """Count the characters in a text.

    Args:
        text: The text whose characters to count.
    """
    return len(text)


TOOLSETS: dict[str, list[lw.Tool]] = {
    "arithmetic": [add, subtract, multiply, divide],
    "units": [convert_length, convert_temperature, convert_weight],
    "lookup": [capital_of, population_of, currency_of],
    "strings": [word_count, reverse_text, uppercase, text_length],
}


@dataclass(frozen=True)
class Question:
    text: str
    sets: tuple[str, ...]
    calls: tuple[tuple[str, dict[str, Any]], ...]
    answer: float | frozenset[str]

    @property
    def tools(self) -> list[lw.Tool]:
        return [t for s in self.sets for t in TOOLSETS[s]]


def _q(text: str, sets: str, *calls: tuple[str, dict[str, Any]], answer: Any) -> Question:
    if isinstance(answer, str):
        answer = frozenset({answer.upper()})
    elif isinstance(answer, (set, frozenset)):
        answer = frozenset(a.upper() for a in answer)
    return Question(text, tuple(sets.split("+")), tuple(calls), answer)


def _s(*spellings: str) -> frozenset[str]:
    return frozenset(s.upper() for s in spellings)


SINGLE = [
    # arithmetic
    _q("What is 465 * 321?", "arithmetic", ("multiply", {"a": 465, "b": 321}), answer=149265),
    _q("Add 1200 and 345.", "arithmetic", ("add", {"a": 1200, "b": 345}), answer=1545),
    _q("What is 81 divided by 9?", "arithmetic", ("divide", {"a": 81, "b": 9}), answer=9),
    _q("Subtract 58 from 200.", "arithmetic", ("subtract", {"a": 200, "b": 58}), answer=142),
    _q("What is 17 times 23?", "arithmetic", ("multiply", {"a": 17, "b": 23}), answer=391),
    _q("What is 3.5 plus 2.25?", "arithmetic", ("add", {"a": 3.5, "b": 2.25}), answer=5.75),
    _q("What is 1000 minus 1?", "arithmetic", ("subtract", {"a": 1000, "b": 1}), answer=999),
    _q("Divide 144 by 12.", "arithmetic", ("divide", {"a": 144, "b": 12}), answer=12),
    _q("Multiply 12.5 by 8.", "arithmetic", ("multiply", {"a": 12.5, "b": 8}), answer=100),
    _q("What is the sum of 47 and 38?", "arithmetic", ("add", {"a": 47, "b": 38}), answer=85),
    # units
    _q(
        "Convert 5 km to m.",
        "units",
        ("convert_length", {"value": 5, "from_unit": "km", "to_unit": "m"}),
        answer=5000,
    ),
    _q(
        "How many cm is 3 m?",
        "units",
        ("convert_length", {"value": 3, "from_unit": "m", "to_unit": "cm"}),
        answer=300,
    ),
    _q(
        "Convert 10 mile to km.",
        "units",
        ("convert_length", {"value": 10, "from_unit": "mile", "to_unit": "km"}),
        answer=16.0934,
    ),
    _q(
        "Convert 12 inch to cm.",
        "units",
        ("convert_length", {"value": 12, "from_unit": "inch", "to_unit": "cm"}),
        answer=30.48,
    ),
    _q(
        "Convert 100 C to F.",
        "units",
        ("convert_temperature", {"value": 100, "from_scale": "C", "to_scale": "F"}),
        answer=212,
    ),
    _q(
        "What is 32 F in C?",
        "units",
        ("convert_temperature", {"value": 32, "from_scale": "F", "to_scale": "C"}),
        answer=0,
    ),
    _q(
        "Convert 300 K to C.",
        "units",
        ("convert_temperature", {"value": 300, "from_scale": "K", "to_scale": "C"}),
        answer=26.85,
    ),
    _q(
        "Convert 2 kg to pound.",
        "units",
        ("convert_weight", {"value": 2, "from_unit": "kg", "to_unit": "pound"}),
        answer=4.4092,
    ),
    _q(
        "How many g is 3 kg?",
        "units",
        ("convert_weight", {"value": 3, "from_unit": "kg", "to_unit": "g"}),
        answer=3000,
    ),
    _q(
        "Convert 16 ounce to g.",
        "units",
        ("convert_weight", {"value": 16, "from_unit": "ounce", "to_unit": "g"}),
        answer=453.5924,
    ),
    # lookup
    _q(
        "What is the capital of France?",
        "lookup",
        ("capital_of", {"country": _s("France")}),
        answer="Paris",
    ),
    _q(
        "Which city is the capital of Canada?",
        "lookup",
        ("capital_of", {"country": _s("Canada")}),
        answer="Ottawa",
    ),
    _q(
        "Name the capital of Kenya.",
        "lookup",
        ("capital_of", {"country": _s("Kenya")}),
        answer="Nairobi",
    ),
    _q(
        "What is the population of Japan?",
        "lookup",
        ("population_of", {"country": _s("Japan")}),
        answer=124.5,
    ),
    _q(
        "How many people live in Norway?",
        "lookup",
        ("population_of", {"country": _s("Norway")}),
        answer=5.5,
    ),
    _q(
        "What is the population of Brazil?",
        "lookup",
        ("population_of", {"country": _s("Brazil")}),
        answer=203.1,
    ),
    _q(
        "What currency does India use?",
        "lookup",
        ("currency_of", {"country": _s("India")}),
        answer="rupee",
    ),
    _q(
        "What is the currency of Japan?",
        "lookup",
        ("currency_of", {"country": _s("Japan")}),
        answer="yen",
    ),
    _q(
        "Which currency is used in Australia?",
        "lookup",
        ("currency_of", {"country": _s("Australia")}),
        answer="Australian dollar",
    ),
    _q(
        "What is the capital of Brazil?",
        "lookup",
        ("capital_of", {"country": _s("Brazil")}),
        answer="Brasilia",
    ),
    # strings
    _q(
        "How many words are in 'the quick brown fox jumps'?",
        "strings",
        ("word_count", {"text": _s("the quick brown fox jumps")}),
        answer=5,
    ),
    _q(
        "Count the words in: hello world again",
        "strings",
        ("word_count", {"text": _s("hello world again")}),
        answer=3,
    ),
    _q(
        "Reverse the text 'stressed'.",
        "strings",
        ("reverse_text", {"text": _s("stressed")}),
        answer="desserts",
    ),
    _q(
        "Reverse 'loopwright'.",
        "strings",
        ("reverse_text", {"text": _s("loopwright")}),
        answer="thgirwpool",
    ),
    _q(
        "Write 'good morning' in capital letters.",
        "strings",
        ("uppercase", {"text": _s("good morning")}),
        answer="GOOD MORNING",
    ),
    _q(
        "Uppercase the text 'hello there'.",
        "strings",
        ("uppercase", {"text": _s("hello there")}),
        answer="HELLO THERE",
    ),
    _q(
        "How many characters are in 'banana'?",
        "strings",
        ("text_length", {"text": _s("banana")}),
        answer=6,
    ),
    _q(
        "What is the length of the text 'abcdefgh'?",
        "strings",
        ("text_length", {"text": _s("abcdefgh")}),
        answer=8,
    ),
    _q(
        "How many words does 'one two three four five six' have?",
        "strings",
        ("word_count", {"text": _s("one two three four five six")}),
        answer=6,
    ),
    _q(
        "Reverse the word 'level'.",
        "strings",
        ("reverse_text", {"text": _s("level")}),
        answer="level",
    ),
]

TWO_STEP = [
    _q(
        "What is 12 times 7, plus 5?",
        "arithmetic",
        ("multiply", {"a": 12, "b": 7}),
        ("add", {"a": 84, "b": 5}),
        answer=89,
    ),
    _q(
        "Add 15 and 25, then divide the result by 4.",
        "arithmetic",
        ("add", {"a": 15, "b": 25}),
        ("divide", {"a": 40, "b": 4}),
        answer=10,
    ),
    _q(
        "What is 465 times 321, minus 265?",
        "arithmetic",
        ("multiply", {"a": 465, "b": 321}),
        ("subtract", {"a": 149265, "b": 265}),
        answer=149000,
    ),
    _q(
        "Subtract 30 from 100, then multiply the result by 3.",
        "arithmetic",
        ("subtract", {"a": 100, "b": 30}),
        ("multiply", {"a": 70, "b": 3}),
        answer=210,
    ),
    _q(
        "Divide 90 by 3, then add 12.",
        "arithmetic",
        ("divide", {"a": 90, "b": 3}),
        ("add", {"a": 30, "b": 12}),
        answer=42,
    ),
    _q(
        "Convert 2 km to m, then add 150.",
        "units+arithmetic",
        ("convert_length", {"value": 2, "from_unit": "km", "to_unit": "m"}),
        ("add", {"a": 2000, "b": 150}),
        answer=2150,
    ),
    _q(
        "Convert 100 C to F, then subtract 12.",
        "units+arithmetic",
        ("convert_temperature", {"value": 100, "from_scale": "C", "to_scale": "F"}),
        ("subtract", {"a": 212, "b": 12}),
        answer=200,
    ),
    _q(
        "Convert 3 kg to g, then divide by 6.",
        "units+arithmetic",
        ("convert_weight", {"value": 3, "from_unit": "kg", "to_unit": "g"}),
        ("divide", {"a": 3000, "b": 6}),
        answer=500,
    ),
    _q(
        "What is the population of Japan times 2?",
        "lookup+arithmetic",
        ("population_of", {"country": _s("Japan")}),
        ("multiply", {"a": 124.5, "b": 2}),
        answer=249,
    ),
    _q(
        "Add the population of Norway to that of Kenya.",
        "lookup+arithmetic",
        ("population_of", {"country": _s("Norway")}),
        ("add", {"a": 5.5, "b": 55.1}),
        answer=60.6,
    ),
    _q(
        "What is the capital of France, in capital letters?",
        "lookup+strings",
        ("capital_of", {"country": _s("France")}),
        ("uppercase", {"text": _s("Paris")}),
        answer="PARIS",
    ),
    _q(
        "How many characters does the name of the capital of Canada have?",
        "lookup+strings",
        ("capital_of", {"country": _s("Canada")}),
        ("text_length", {"text": _s("Ottawa")}),
        answer=6,
    ),
    _q(
        "Reverse the name of the capital of Norway.",
        "lookup+strings",
        ("capital_of", {"country": _s("Norway")}),
        ("reverse_text", {"text": _s("Oslo")}),
        answer="olsO",
    ),
    _q(
        "Count the words in 'red green blue', then multiply that by 10.",
        "strings+arithmetic",
        ("word_count", {"text": _s("red green blue")}),
        ("multiply", {"a": 3, "b": 10}),
        answer=30,
    ),
    _q(
        "How many characters are in 'pineapple', plus 100?",
        "strings+arithmetic",
        ("text_length", {"text": _s("pineapple")}),
        ("add", {"a": 9, "b": 100}),
        answer=109,
    ),
]
assert len(SINGLE) == 40 and len(TWO_STEP) == 15
