"""Built-in scorers comparing the answer with the target: ``match``, ``includes``,
``pattern``."""

from __future__ import annotations

import math
import re
import string
import unicodedata
from typing import Literal, TypeAlias

from .._errors import ConfigurationError
from ..agents import AgentState
from ._sample import Sample
from ._score import Score, Scorer

__all__ = ["Location", "MatchMethod", "includes", "match", "normalize_text", "pattern"]

MatchMethod: TypeAlias = Literal["exact", "normalized", "numeric"]
Location: TypeAlias = Literal["exact", "begin", "end", "any"]

_MINUS = "\u2212"  # the Unicode minus sign
_NUMBER = re.compile(r"[-+\u2212]?(?:(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?")
_PUNCT = str.maketrans("", "", string.punctuation)


def normalize_text(text: str) -> str:
    """``text`` for lenient comparison: Unicode-normalised, case-folded, punctuation
    removed, whitespace collapsed."""
    text = unicodedata.normalize("NFKC", text).casefold().translate(_PUNCT)
    return " ".join(text.split())


def _numbers(text: str) -> list[float]:
    found = []
    for m in _NUMBER.finditer(text):
        raw = m.group().replace(",", "").replace(_MINUS, "-")
        try:
            found.append(float(raw))
        except ValueError:
            continue
    return found


def _locate(answer: str, target: str, location: Location) -> bool:
    if location == "exact":
        return answer == target
    if location == "begin":
        return answer.startswith(target)
    if location == "end":
        return answer.endswith(target)
    return target in answer


def match(
    method: MatchMethod = "normalized",
    *,
    location: Location = "end",
    tolerance: float = 1e-6,
    rel_tolerance: float = 0.0,
    name: str = "match",
) -> Scorer:
    """Score 1 when the answer matches a target, else 0.

    Args:
        method: ``exact``: the texts are equal (surrounding whitespace aside);
            ``normalized``: equal after :func:`normalize_text` (case, punctuation and
            spacing ignored); ``numeric``: a number in the answer equals the target's
            number within the tolerances (``1,234.0`` matches ``1234``).
        location: Where in the answer the target must be: ``exact`` (the whole answer),
            ``begin``, ``end`` (the default: "The answer is 42." matches ``42``), or
            ``any``. For ``numeric``: the only number, the first, the last, or any.
        tolerance: Absolute tolerance for ``numeric``.
        rel_tolerance: Relative tolerance for ``numeric`` (``0.01``: within 1%).
        name: The scorer's name.
    """
    if method not in ("exact", "normalized", "numeric"):
        raise ConfigurationError(
            f"match: method must be exact, normalized or numeric, not {method!r}"
        )
    if location not in ("exact", "begin", "end", "any"):
        raise ConfigurationError(
            f"match: location must be exact, begin, end or any, not {location!r}"
        )
    if tolerance < 0 or rel_tolerance < 0:
        raise ConfigurationError("match: tolerances must be >= 0")

    def score(state: AgentState, sample: Sample) -> Score:
        answer = state.text.strip()
        targets = sample.targets
        if method == "numeric":
            return _numeric(answer, targets, location, tolerance, rel_tolerance)
        prepare = normalize_text if method == "normalized" else str.strip
        a = prepare(answer)
        ok = any(_locate(a, prepare(t), location) for t in targets if prepare(t))
        return Score(value=1.0 if ok else 0.0, answer=answer)

    return Scorer(score, name=name)


def _numeric(answer: str, targets: list[str], location: Location, tol: float, rel: float) -> Score:
    numbers = _numbers(answer)
    if location == "exact":
        candidates = numbers if len(numbers) == 1 and _NUMBER.fullmatch(answer.strip(" .")) else []
    elif location == "begin":
        candidates = numbers[:1]
    elif location == "end":
        candidates = numbers[-1:]
    else:
        candidates = numbers
    wanted: list[float] = []
    for t in targets:
        parsed = _numbers(t)
        if len(parsed) != 1:
            raise ConfigurationError(
                f"match(numeric): the target {t!r} is not a number; use method='normalized'"
            )
        wanted.append(parsed[0])
    ok = any(math.isclose(c, w, rel_tol=rel, abs_tol=tol) for c in candidates for w in wanted)
    picked = f"{candidates[-1]:g}" if candidates else None
    return Score(
        value=1.0 if ok else 0.0,
        answer=picked,
        explanation=None if candidates else "no number in the answer",
    )


def includes(*, ignore_case: bool = True, name: str = "includes") -> Scorer:
    """Score 1 when the answer contains a target, else 0.

    Args:
        ignore_case: Compare case-insensitively.
        name: The scorer's name.
    """

    def score(state: AgentState, sample: Sample) -> Score:
        answer = state.text
        a = answer.casefold() if ignore_case else answer
        ok = any((t.casefold() if ignore_case else t) in a for t in sample.targets)
        return Score(value=1.0 if ok else 0.0, answer=answer)

    return Scorer(score, name=name)


def pattern(
    regex: str,
    *,
    ignore_case: bool = True,
    name: str = "pattern",
) -> Scorer:
    """Extract the answer with a regular expression and compare it with the target.

    The answer is the regex's first group (the whole match if it has no group), taken
    from the last match in the output. It is right when it equals a target after
    :func:`normalize_text`; for a sample without a target, when the regex matches at all.

    Args:
        regex: The regular expression (e.g. ``r"ANSWER:\\s*(\\w+)"``).
        ignore_case: Match the regex case-insensitively.
        name: The scorer's name.
    """
    try:
        compiled = re.compile(regex, re.IGNORECASE if ignore_case else 0)
    except re.error as ex:
        raise ConfigurationError(f"pattern: invalid regular expression {regex!r}: {ex}") from None

    def score(state: AgentState, sample: Sample) -> Score:
        found = list(compiled.finditer(state.text))
        if not found:
            return Score(value=0.0, answer=None, explanation="the pattern did not match")
        last = found[-1]
        answer = last.group(1) if compiled.groups else last.group(0)
        answer = answer or ""
        if not sample.targets:
            return Score(value=1.0, answer=answer)
        ok = any(normalize_text(answer) == normalize_text(t) for t in sample.targets)
        return Score(value=1.0 if ok else 0.0, answer=answer)

    return Scorer(score, name=name)
