"""Regular expressions from a schema loopwright did not write, matched in bounded time.

A JSON schema from elsewhere (an MCP server's ``inputSchema``, a user's schema tool, a
tool spec a model wrote, a response schema that holds them) may have a ``pattern`` or a
``patternProperties`` key that backtracks without end: ``^(a|a)+$`` against forty
``a`` and a ``!``. Python's ``re`` has no timeout and holds the GIL, so one such call
stopped the event loop for minutes, and no limit of the run could fire.

So while :func:`bounded_patterns` is in force (around the check of one call's
arguments, or of a reply against its schema), every ``re.search`` the ``jsonschema``
library makes is :func:`search` instead: ``pattern``, ``patternProperties``, and the
patterns ``additionalProperties`` and ``unevaluatedProperties`` consult. The name
``re`` in its ``_keywords``, ``_utils`` and ``_legacy_keywords`` modules is a stand-in
(:class:`_BoundedRe`, set on first use) that is ``re`` itself outside a block, so
another user of jsonschema in the process sees no change. (jsonschema's ``extend()``
could replace the ``pattern`` and ``patternProperties`` keywords only, not the
matching inside the other two.) Inside a block ``additionalProperties`` matches each
``patternProperties`` key on its own (:func:`_additional`), not all of them joined with
``|`` into one pattern as jsonschema does. :func:`search`:

- parses the pattern with ``re``'s parser, so what ``re`` refuses is refused, and
  compiles it with the ``regex`` package: the syntax and meaning of ``re`` for what
  ``re`` accepts (a search, not a full match, as jsonschema does; ``$`` also before a
  final newline), but for POSIX classes (``[[:alpha:]]``, which ``re`` reads as a set
  of the characters ``[:alph`` followed by ``]``, with a warning) and for what some
  characters are: ``\\w``, ``\\b`` and ``\\s`` follow Unicode's properties, not Python's
  ``str`` methods (``²`` and ``¼`` are no word characters, combining marks are;
  ``\\x1c``-``\\x1f`` are no spaces, as in the ECMA-262 patterns JSON Schema means), and
  ``(?i)`` does not take dotless ``i`` (U+0131) or dotted ``I`` (U+0130) for ``i``;
- matches with ``regex``'s ``timeout`` (processor time): the matches of one block share
  :data:`BUDGET` seconds, the wall-clock time each match took taken off, so the time
  the rest of the validation takes counts for nothing, and a call that has spent it
  all is refused at its next match. A block inside a :func:`reply_patterns` scope
  (``execute_tools`` enters one per model reply) also draws on the scope's
  :data:`REPLY_BUDGET`, shared by every call of the reply: a reply of 500 calls of a
  hostile schema costs that, not 500 times :data:`BUDGET`. (A run's matching is
  bounded by its replies, its step limit, and by its time limit; a budget per run
  would refuse the ordinary calls of a long run once spent.) A scope is stopped when
  it ends (the reply's calls done, or cancelled: a run's time limit), and so is a
  check that :class:`OffLoop` runs in a worker thread when its caller is cancelled,
  and a block whose ``cancel`` event is set (a local model's reply check): a match
  still running ends at its timeout, the next one is refused at once;
- on the event loop, in an :func:`on_loop` block (the binder's, the MCP session's
  check of structured content), matches at most :data:`LOOP_SLICE` seconds in all and
  raises :class:`PatternsTooSlow` past it: the caller checks again in a worker thread
  (:class:`OffLoop`; the checks of one reply in threads take turns), the loop free
  meanwhile, so a run's time limit and cancellation go on working;
- refuses a pattern over :data:`MAX_PATTERN` characters, and one whose counted repeats
  would unroll past :data:`MAX_UNROLLED` nodes (``regex`` compiles ``a{1000}`` as a
  thousand of them: ``(?:(?:a{1000}){1000}){1000}``, 31 characters, would exhaust the
  memory), and does not match a string over :data:`MAX_TEXT` characters.

Whatever it cannot do raises :class:`PatternUnchecked`, which the caller turns into an
error for the model (the call is refused: its argument could not be checked). Compiled
patterns (and why one cannot be) are kept in a bounded cache (:data:`_CACHE`): a call
compiles nothing its tool's patterns did not already need.
"""

from __future__ import annotations

import contextlib
import functools
import re
import threading
import time
from collections.abc import Callable, Iterator
from contextvars import ContextVar, Token
from typing import Any, TypeVar

__all__ = [
    "BUDGET",
    "LOOP_SLICE",
    "MAX_PATTERN",
    "MAX_TEXT",
    "MAX_UNROLLED",
    "REPLY_BUDGET",
    "OffLoop",
    "PatternUnchecked",
    "PatternsTooSlow",
    "bounded_patterns",
    "on_loop",
    "reply_patterns",
    "search",
]

BUDGET = 0.5
"""Seconds all the matches inside one :func:`bounded_patterns` block may take."""
REPLY_BUDGET = 2.0
"""Seconds all the matches of one :func:`reply_patterns` scope (the argument checks of
one model reply's calls, and the checks of what its MCP tools answer) may take."""
LOOP_SLICE = 0.02
"""Seconds an :func:`on_loop` block may match on the event loop before
:class:`PatternsTooSlow` sends the check to a worker thread."""
MAX_PATTERN = 2_000
"""The longest pattern matched, in characters."""
MAX_TEXT = 100_000
"""The longest string matched against a pattern, in characters."""
MAX_UNROLLED = 2_000
"""The most nodes a pattern's counted repeats may unroll to (``regex`` compiles
``x{n}`` as ``n`` copies of ``x``, some 250 bytes each: 2,000 are half a megabyte)."""
_T = TypeVar("_T")
_CACHE = 256
"""Compiled patterns kept (at most some 128 MB, hostile ones; an ordinary one is a few
kilobytes)."""


class _Budget:
    """The seconds of matching left to a block or a scope (the wall-clock time its
    matches took is taken off; ``regex`` stops a match once its ``timeout`` of processor
    time ran), and the scope it draws on too (``parent``)."""

    __slots__ = ("left", "parent", "stopped", "total")

    def __init__(self, total: float, parent: _Budget | None = None) -> None:
        self.left = self.total = total
        self.parent = parent
        self.stopped = False  # (set from the event loop's thread, read by a worker's)

    def spent(self) -> str:
        """Why a match is refused once this budget is spent."""
        return f"matching took over {self.total:g} seconds"


class _LoopSlice(_Budget):
    """An :func:`on_loop` block's slice: spent, it raises :class:`PatternsTooSlow`."""

    __slots__ = ()


_BLOCK: ContextVar[_Budget | None] = ContextVar("loopwright_patterns", default=None)
_SCOPE: ContextVar[_Budget | None] = ContextVar("loopwright_pattern_scope", default=None)
_STOPPED = "the check was stopped (its run was cancelled or reached a limit)"


class PatternsTooSlow(Exception):
    """The matches of an :func:`on_loop` block took over :data:`LOOP_SLICE`: check again
    off the event loop (:class:`OffLoop`). Not an error for the model."""


class PatternUnchecked(Exception):
    """A string could not be checked against a pattern from a schema.

    Attributes:
        pattern: The pattern.
        text: The string.
        why: Why, for the model (``"matching took over 0.5 seconds"``).
    """

    def __init__(self, pattern: str, text: str, why: str) -> None:
        super().__init__(f"{text[:60]!r} could not be checked against {pattern[:200]!r}: {why}")
        self.pattern, self.text, self.why = pattern, text, why


class bounded_patterns:
    """Within the block, jsonschema matches patterns with :func:`search`, all of them
    in ``budget`` seconds (a block inside another shares the outer one's), and in what
    is left of the scopes in force (:func:`reply_patterns`, :func:`on_loop`). Once
    ``cancel`` (an event another thread sets) is set, the next match is refused."""

    __slots__ = ("_budget", "_cancel", "_token")

    def __init__(self, budget: float = BUDGET, cancel: threading.Event | None = None) -> None:
        if not _installed:
            _install()
        self._budget = budget
        self._cancel = cancel
        self._token: Token[_Budget | None] | None = None

    def __enter__(self) -> None:
        if _BLOCK.get() is None:
            scope = _SCOPE.get()
            if self._cancel is not None:
                block: _Budget = _Cancellable(self._budget, scope, self._cancel)
            elif type(scope) is _LoopSlice and scope.left <= self._budget:
                block = scope  # (the tighter: one budget less for each match to walk)
            else:
                block = _Budget(self._budget, scope)
            self._token = _BLOCK.set(block)

    def __exit__(self, *exc: object) -> None:
        if self._token is not None:
            _BLOCK.reset(self._token)
            self._token = None


class _Cancellable(_Budget):
    """A block stopped once its event is set."""

    __slots__ = ("cancel",)

    def __init__(self, total: float, parent: _Budget | None, cancel: Any) -> None:
        super().__init__(total, parent)
        self.cancel = cancel

    @property
    def stopped(self) -> bool:
        return bool(self.cancel.is_set())

    @stopped.setter
    def stopped(self, value: bool) -> None:
        if value:
            self.cancel.set()


class _Scope:
    """A budget in force for a ``with`` block (the blocks within draw on it)."""

    __slots__ = ("_token", "budget")

    def __init__(self, budget: _Budget) -> None:
        self.budget = budget
        self._token: Token[_Budget | None] | None = None

    def __enter__(self) -> _Budget:
        self._token = _SCOPE.set(self.budget)
        return self.budget

    def __exit__(self, *exc: object) -> None:
        if type(self.budget) is _Reply:  # a reply's calls are done (or cancelled)
            self.budget.stopped = True
        if self._token is not None:
            _SCOPE.reset(self._token)
            self._token = None


def reply_patterns(budget: float | None = None) -> _Scope:
    """``with reply_patterns():`` the blocks within (each call's check, in its task or
    worker thread) share ``budget`` seconds as well as their own; a scope in force
    before is not drawn on (a run a tool starts has replies of its own). Once the
    block ends, the scope is stopped: a check still running in a thread stops at its
    next match."""
    budget = REPLY_BUDGET if budget is None else budget
    return _Scope(_Reply(budget))


class _Reply(_Budget):
    """A reply's budget, and the lock its checks in worker threads take in turn."""

    __slots__ = ("lock",)

    def __init__(self, total: float) -> None:
        super().__init__(total)
        self.lock: threading.Lock | None = None  # made by the first OffLoop

    def spent(self) -> str:
        return f"this reply's calls took over {self.total:g} seconds in all matching patterns"


def on_loop() -> _Scope:
    """``with on_loop():`` the checks within, on the event loop, match at most
    :data:`LOOP_SLICE` seconds in all, then raise :class:`PatternsTooSlow`."""
    return _Scope(_LoopSlice(LOOP_SLICE, _SCOPE.get()))


class OffLoop:
    """A check made again in a worker thread (``run_in_thread(off.run, fn, ...)``),
    within the scopes in force where it was made (make it on the event loop); the
    checks of one reply in threads take turns (a reply of many parallel calls does not
    match in as many threads at once, each with what is left of the reply's budget);
    :meth:`stop` (its caller cancelled) refuses its next match."""

    __slots__ = ("budget", "lock")

    def __init__(self) -> None:
        scope = _SCOPE.get()
        self.budget = _Budget(float("inf"), scope)
        self.lock: threading.Lock | None = None
        while scope is not None and not isinstance(scope, _Reply):
            scope = scope.parent
        if scope is not None:
            if scope.lock is None:
                scope.lock = threading.Lock()
            self.lock = scope.lock

    def run(self, fn: Callable[..., _T], /, *args: Any) -> _T:
        with self.lock or contextlib.nullcontext(), _Scope(self.budget):
            return fn(*args)

    def stop(self) -> None:
        self.budget.stopped = True


def search(pattern: str, text: str) -> bool:
    """Whether ``pattern`` matches somewhere in ``text``, within what is left of the
    block's budget and its scopes' (:data:`BUDGET` seconds outside a block).

    Raises:
        PatternUnchecked: The pattern cannot be used, the string is too long, or the
            time ran out.
        PatternsTooSlow: An :func:`on_loop` block's slice ran out.
    """
    compiled = _compile(pattern)
    if isinstance(compiled, str):
        raise PatternUnchecked(pattern, text, compiled)
    if len(text) > MAX_TEXT:
        why = f"the string is {len(text):,} characters, over {MAX_TEXT:,}"
        raise PatternUnchecked(pattern, text, why)
    block = _BLOCK.get() or _Budget(BUDGET)
    tight = block
    budget: _Budget | None = block
    while budget is not None:  # the tightest budget of the block and its scopes
        if budget.stopped:
            raise PatternUnchecked(pattern, text, _STOPPED)
        if budget.left < tight.left:
            tight = budget
        budget = budget.parent
    if tight.left > 0:
        start = time.perf_counter()
        try:
            return compiled.search(text, timeout=tight.left) is not None
        except TimeoutError:
            tight.left = 0
        finally:
            took = time.perf_counter() - start
            budget = block
            while budget is not None:
                budget.left -= took
                budget = budget.parent
    if isinstance(tight, _LoopSlice):
        raise PatternsTooSlow()
    raise PatternUnchecked(pattern, text, tight.spent())


@functools.lru_cache(maxsize=_CACHE)
def _compile(pattern: str) -> Any:
    """``pattern`` compiled by ``regex``, or why it cannot be (a ``str``)."""
    if len(pattern) > MAX_PATTERN:
        return f"the pattern is {len(pattern):,} characters, over {MAX_PATTERN:,}"
    from re import _parser  # type: ignore[attr-defined]  # re's own parser: re's syntax

    try:
        parsed = _parser.parse(pattern)
    except re.error as ex:
        return f"the pattern is not a valid regular expression ({ex})"
    except RecursionError:
        return "the pattern nests too deep"
    if _unrolled(parsed) > MAX_UNROLLED:
        return f"the pattern's counted repeats unroll to over {MAX_UNROLLED:,} parts"
    import regex

    try:
        return regex.compile(pattern)
    except regex.error as ex:
        return f"the pattern is not a valid regular expression ({ex})"
    except (RecursionError, MemoryError, OverflowError, ValueError) as ex:
        return f"the pattern cannot be compiled ({type(ex).__name__})"


_REPEATS = frozenset({"MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"})


def _unrolled(parsed: Any) -> int:
    """How many nodes ``parsed`` (``re``'s parse tree) unrolls to, each counted repeat
    taken as often as its minimum, at least once (stops counting past the bound)."""
    total = 0
    stack: list[tuple[Any, int]] = [(parsed, 1)]
    while stack:
        sub, times = stack.pop()
        for op, av in sub:
            total += times
            if total > MAX_UNROLLED:
                return total
            if str(op) in _REPEATS:  # av: (min, max, the repeated subpattern)
                stack.append((av[2], times * max(1, av[0])))
            else:
                stack.extend((part, times) for part in _subpatterns(av))
    return total


def _subpatterns(av: Any) -> Iterator[Any]:
    """The subpatterns in an item's argument (a group's, a branch's, an assertion's)."""
    from re import _parser  # type: ignore[attr-defined]

    todo = [av]
    while todo:
        part = todo.pop()
        if isinstance(part, _parser.SubPattern):
            yield part
        elif isinstance(part, (list, tuple)):
            todo.extend(part)


class _BoundedRe:
    """What jsonschema's modules find as ``re``: ``re``, but for ``search`` inside a
    :func:`bounded_patterns` block, which is :func:`search` for a ``str`` pattern."""

    def __getattr__(self, name: str) -> Any:
        return getattr(re, name)

    @staticmethod
    def search(pattern: Any, string: Any, flags: int = 0) -> Any:
        plain = isinstance(pattern, str) and isinstance(string, str) and not flags
        if not plain or _BLOCK.get() is None:
            return re.search(pattern, string, flags)
        return True if search(pattern, string) else None


def _additional(original: Any) -> Any:
    """jsonschema's ``find_additional_properties`` (``original``), but inside a block
    each ``patternProperties`` key is matched on its own, as ``patternProperties``
    itself matches them: the original joins them with ``|`` into one pattern, which
    many short keys make longer than :data:`MAX_PATTERN`, and keys with an inline flag
    each (``(?i)``) make one ``re`` refuses, so every call was refused."""

    def find_additional_properties(instance: Any, schema: Any) -> Iterator[Any]:
        if _BLOCK.get() is None:
            yield from original(instance, schema)
            return
        properties = schema.get("properties", {})
        patterns = schema.get("patternProperties", {})
        for name in instance:
            if name not in properties and not any(_BoundedRe.search(p, name) for p in patterns):
                yield name

    find_additional_properties.original = original  # type: ignore[attr-defined]
    return find_additional_properties


_SHIMMED = ("jsonschema._keywords", "jsonschema._utils", "jsonschema._legacy_keywords")
_installed = False


def _install() -> None:
    global _installed
    if _installed:
        return
    import importlib

    shim = _BoundedRe()
    for name in _SHIMMED:
        module = importlib.import_module(name)
        if isinstance(getattr(module, "re", None), _BoundedRe):
            continue  # another thread was first
        if getattr(module, "re", None) is not re:
            raise RuntimeError(f"{name} no longer matches patterns with re: see _patterns")
        module.re = shim  # type: ignore[attr-defined]
    # additionalProperties' matching: the one caller of _utils' function, by its name
    keywords, utils = (importlib.import_module(f"jsonschema.{m}") for m in ("_keywords", "_utils"))
    found = keywords.find_additional_properties
    if getattr(found, "original", None) is None:  # (else another thread was first)
        if found is not utils.find_additional_properties:
            raise RuntimeError("jsonschema finds additional properties elsewhere: see _patterns")
        keywords.find_additional_properties = _additional(found)  # type: ignore[attr-defined]
    _installed = True
