"""A response schema as a llama.cpp grammar that cannot crash the process.

llama-cpp-python's schema converter (``json_schema_to_gbnf``) writes a ``const`` or
``enum`` string into a grammar literal without escaping its backslashes: a string with
a double quote gives a grammar llama.cpp cannot parse, and llama-cpp-python 0.3 then
uses the parser's null result and the process dies (SIGSEGV); a string with a newline
gives a literal that makes the model write a raw newline (not JSON). Its regex
translation copies a ``pattern`` into the grammar unescaped (``\\d``: a parse error;
``"``: a reply that is not JSON), and a ``maxLength`` of some thousands makes a grammar
llama.cpp refuses. So, here:

- literals are escaped for the grammar (:func:`gbnf_literal`), ``const``/``enum``
  strings written as JSON (non-ASCII as itself, so the model writes ``café``);
- what the grammar cannot express safely is left out of it (:func:`loosen`): a
  ``pattern`` beyond plain characters and classes, a length or item bound over
  :data:`MAX_REPEAT`; each is named in the result's ``loosened``;
- the grammar is parsed by llama.cpp itself before use (:func:`parses`, the sampler's
  constructor, whose null result is checked here); one it refuses falls back to the
  loosened schema's, then to any JSON;
- a reply under a loosened grammar is validated after, against the whole schema
  (:func:`schema_problem`, its patterns matched in bounded time by
  :mod:`loopwright._patterns`), and the output says what failed.
"""

from __future__ import annotations

import functools
import json
import re
import threading
from dataclasses import dataclass
from typing import Any

__all__ = [
    "MAX_REPEAT",
    "SchemaGrammar",
    "build",
    "build_segment",
    "gbnf_literal",
    "loosen",
    "schema_problem",
    "with_suffix",
]

MAX_REPEAT = 1000
"""A ``minLength``/``maxLength``/``minItems``/``maxItems`` over this is validated after,
not written into the grammar (llama.cpp's grammars grow with the bound)."""

# what the converter translates soundly: anchored; outside classes plain characters and
# operators (no ".", quote or backslash); a class without quote, backslash or control
# character, or a negated one that excludes all of them (the json protocol's thought)
_OUTSIDE = re.compile(r"[A-Za-z0-9 _\-+*?{}(),|:@#%&=~<>;'/!]*")
_CLASS = re.compile(r"\[([^\]]*)\]")
_INSIDE = re.compile(r"[A-Za-z0-9 _\-+*?{}(),|:@#%&=~<>;'/!.^$]*")
_EXCLUDED = ('"', "\\\\", "\\x00-\\x1f")


def _safe_pattern(pattern: Any) -> bool:
    if not isinstance(pattern, str) or not pattern.startswith("^") or not pattern.endswith("$"):
        return False
    body, at = pattern[1:-1], 0
    for found in _CLASS.finditer(body):
        inside = found.group(1)
        if not _OUTSIDE.fullmatch(body, at, found.start()):
            return False
        if inside.startswith("^"):
            if not all(e in inside for e in _EXCLUDED):
                return False
        elif not _INSIDE.fullmatch(inside):
            return False
        at = found.end()
    return _OUTSIDE.fullmatch(body, at) is not None


_SCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SCHEMA_MAPS = ("properties", "$defs", "definitions")
_SCHEMA_ONE = ("items", "additionalProperties", "not")
_BOUNDS = ("minLength", "maxLength", "minItems", "maxItems")


@dataclass(frozen=True, slots=True)
class SchemaGrammar:
    """A schema's grammar and what it leaves to the check after."""

    gbnf: str
    loosened: tuple[str, ...]
    """What the grammar does not enforce (empty: the grammar is the whole schema)."""


def gbnf_literal(text: str) -> str:
    """``text`` as a GBNF string literal matching exactly ``text``."""
    out = ['"']
    for ch in text:
        code = ord(ch)
        if ch in '"\\':
            out.append("\\" + ch)
        elif 0xD800 <= code <= 0xDFFF:
            raise ValueError("a lone surrogate cannot appear in a grammar")
        elif code < 0x20 or code == 0x7F:
            out.append(f"\\x{code:02X}")
        elif code > 0x7E:
            out.append(f"\\u{code:04X}" if code <= 0xFFFF else f"\\U{code:08X}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _json_text(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: JSON's \\u escape instead
        return json.dumps(value)
    return text


@functools.cache
def _converter_class() -> Any:
    from llama_cpp.llama_grammar import SchemaConverter

    class Converter(SchemaConverter):
        def _format_literal(self, literal: str) -> str:
            return gbnf_literal(literal)

        def _generate_constant_rule(self, value: Any) -> str:
            return gbnf_literal(_json_text(value))

    return Converter


def _to_gbnf(schema: dict[str, Any]) -> str:
    converter = _converter_class()(
        prop_order={}, allow_fetch=False, dotall=False, raw_pattern=False
    )
    resolved = converter.resolve_refs(json.loads(json.dumps(schema)), "stdin")
    converter.visit(resolved, "")
    return json_text_only(str(converter.format_grammar()))


def json_text_only(gbnf: str) -> str:
    """``gbnf`` with its string characters limited to what JSON allows.

    The converter lets a string hold raw control characters (``char ::= [^"\\\\] |
    ...``), which JSON forbids: a small model then fills a string with raw newlines and
    repeats itself until the token limit. Its own JSON grammar excludes them; this does
    the same for schema grammars.
    """
    lines = gbnf.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("char ::= "):
            lines[i] = line.replace('[^"\\\\]', '[^"\\\\\\x7F\\x00-\\x1F]', 1)
    return "\n".join(lines)


def loosen(schema: Any, where: str = "$", *, patterns: bool = True) -> tuple[Any, list[str]]:
    """``schema`` without what its grammar cannot enforce safely, and what that was
    (each named by its place in the schema, shortened)."""
    notes: list[str] = []
    where = where if len(where) <= 120 else "..." + where[-117:]
    if isinstance(schema, list):
        items = [loosen(s, f"{where}[{i}]", patterns=patterns) for i, s in enumerate(schema)]
        return [s for s, _ in items], [n for _, ns in items for n in ns]
    if not isinstance(schema, dict):
        return schema, notes
    out = dict(schema)
    pattern = out.get("pattern")
    if pattern is not None and not (patterns and _safe_pattern(pattern)):
        del out["pattern"]
        notes.append(f"{where}: pattern")
    for bound in _BOUNDS:
        value = out.get(bound)
        if value is not None and (not isinstance(value, int) or not 0 <= value <= MAX_REPEAT):
            del out[bound]
            notes.append(f"{where}: {bound}")
    low, high = out.get("minLength", 0), out.get("maxLength", MAX_REPEAT)
    if low > high:
        del out["minLength"], out["maxLength"]
        notes.append(f"{where}: minLength > maxLength")
    for key in _SCHEMA_LISTS:
        if isinstance(out.get(key), list):
            out[key], more = loosen(out[key], f"{where}.{key}", patterns=patterns)
            notes += more
    for key in _SCHEMA_MAPS:
        if isinstance(out.get(key), dict):
            loose = {
                k: loosen(v, f"{where}.{key}.{k}", patterns=patterns) for k, v in out[key].items()
            }
            out[key] = {k: s for k, (s, _) in loose.items()}
            notes += [n for _, ns in loose.values() for n in ns]
    for key in _SCHEMA_ONE:
        if isinstance(out.get(key), dict):
            out[key], more = loosen(out[key], f"{where}.{key}", patterns=patterns)
            notes += more
    return out, notes


def build(schema: dict[str, Any], parses: Any) -> SchemaGrammar:
    """The strictest grammar for ``schema`` that ``parses`` (llama.cpp's own parser,
    ``Callable[[str], bool]``) accepts: the schema less what :func:`loosen` takes out,
    then also less every pattern, else any JSON (the whole schema then checked after)."""
    from llama_cpp.llama_grammar import JSON_GBNF

    notes: list[str] = []
    for patterns in (True, False):  # the patterns kept, then none
        loose, notes = loosen(schema, patterns=patterns)
        try:
            gbnf = _to_gbnf(loose)
        except Exception as ex:  # an unsupported construct, a deep schema
            notes = [f"the schema ({type(ex).__name__}: {str(ex)[:200]})"]
            continue
        if parses(gbnf):
            return SchemaGrammar(gbnf, tuple(notes))
        notes = ["the schema (llama.cpp refused its grammar)"]
    return SchemaGrammar(JSON_GBNF, tuple(notes))


def with_suffix(gbnf: str, suffix: str) -> str | None:
    """``gbnf`` after an optional space and followed by the literal ``suffix`` (so a
    value ends where the text after it begins, not where the model would go on writing
    digits), or None when the grammar refers to its own root (a recursive schema)."""
    lines = gbnf.splitlines()
    rules = {line.split(" ::= ", 1)[0] for line in lines}
    roots = [i for i, line in enumerate(lines) if line.startswith("root ::= ")]
    rest = [line[len("root ::= ") :] if i in roots else line for i, line in enumerate(lines)]
    if len(roots) != 1 or any(re.search(r"(?<![\w-])root(?![\w-])", r) for r in rest):
        return None
    name = next(f"value{i}-root" for i in range(len(rules) + 1) if f"value{i}-root" not in rules)
    lines[roots[0]] = f"{name} ::= {rest[roots[0]]}"
    return "\n".join([*lines, f'root ::= " "? {name} {gbnf_literal(suffix)}'])


def build_segment(schema: dict[str, Any], suffix: str, parses: Any) -> str | None:
    """The grammar of one value of a reply written in parts (:mod:`._segments`) and the
    literal ``suffix`` after it, or None when the schema needs any loosening (the reply
    is then generated whole, checked after as usual)."""
    if loosen(schema)[1]:
        return None
    try:
        gbnf = with_suffix(_to_gbnf(schema), suffix)
    except Exception:  # an unsupported construct, a deep schema
        return None
    return gbnf if gbnf is not None and parses(gbnf) else None


def schema_problem(
    text: str, schema: dict[str, Any], cancel: threading.Event | None = None
) -> str | None:
    """Why ``text`` is not JSON following ``schema``, or None when it is; its patterns'
    matching is stopped once ``cancel`` (a ``threading.Event``: the call was cancelled)
    is set."""
    import jsonschema
    from referencing import Registry
    from referencing.exceptions import Unresolvable

    from ..._patterns import PatternUnchecked, bounded_patterns

    try:
        value = json.loads(text)
    except (ValueError, RecursionError) as ex:  # (nested past the parser's depth)
        return f"not JSON ({type(ex).__name__}: {str(ex)[:200]})"
    try:
        # (an empty registry: a $ref out of the schema is never fetched, jsonschema's
        # default would open its URL)
        validator = jsonschema.Draft202012Validator(schema, registry=Registry())
        # a tool's schema from elsewhere may hold any pattern
        with bounded_patterns(cancel=cancel):
            error = jsonschema.exceptions.best_match(validator.iter_errors(value))
    except jsonschema.exceptions.SchemaError as ex:
        return f"the schema is not valid JSON Schema ({ex.message[:200]})"
    except (Unresolvable, RecursionError) as ex:  # a $ref to nowhere, or back to itself
        return f"the schema cannot be used: a $ref cannot be resolved ({str(ex)[:200]})"
    except PatternUnchecked as ex:
        return f"{ex.text[:60]!r} could not be checked against {ex.pattern[:200]!r}: {ex.why}"
    return None if error is None else error.message[:300]
