"""``human_approver``: ask a person in the terminal about each call.

What the person is shown comes from the model, so it must not be able to deceive them:
the arguments are shown whole as JSON with every control character, bidi override and lone
surrogate escaped (:func:`~loopwright.approval._shown.arguments_text`: exactly what will
run, a conceal sequence shown as ``\\u001b[8m``); the call's id and tool name on the
prompt's own lines as typed (:func:`~loopwright._terminal.as_typed`: as they are when
plain ASCII, else a JSON string, so a line break cannot forge a line and ``b\\u0430sh``
cannot pass for ``bash``), bounded; a run of blank characters long enough to push what
follows it off the screen is noted (:func:`~loopwright.approval._shown.notes`), and the
last line before the question names the call again (the header may have scrolled away
under long arguments). The model's text before the call has
the same characters made visible and every line quoted (``| ``), so it cannot pass for
the prompt's own lines; on a terminal, a line longer than its width is cut into rows
that each begin with the gutter (:func:`~loopwright._terminal.wrapped`), so the terminal
wraps nothing to the first column. While the person is asked, the displays hold what they print
(:func:`~loopwright._terminal.asking`): nothing another call or run shows can appear
under the question and pass for it.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import threading
from collections.abc import Callable, Sequence
from typing import TextIO

from .._terminal import Question, as_typed, asking, one_line, visible, wrapped
from ..model import AssistantMessage, ChatMessage, ToolCall
from ..tools._approval import Approval, ApprovalDecision, Approver
from ..tools._threads import run_in_thread
from ._record import recorded
from ._shown import MAX_NAME, arguments_text, notes

__all__ = ["human_approver"]

_ANSWERS: dict[str, ApprovalDecision] = {
    "y": "approve",
    "yes": "approve",
    "a": "approve",
    "approve": "approve",
    "n": "reject",
    "no": "reject",
    "r": "reject",
    "reject": "reject",
    "m": "modify",
    "modify": "modify",
    "e": "escalate",
    "escalate": "escalate",
    "t": "terminate",
    "terminate": "terminate",
    "d": "defer",
    "defer": "defer",
}
_CONTEXT_CHARS = 400
_WITHDRAWN = "the question was withdrawn: the run stopped waiting for the answer"

# one question at a time on a terminal, whatever the event loop or thread asking
_terminal = threading.Lock()


class _Closed(Exception):
    """The input stream ended."""


def _width(output: TextIO) -> int | None:
    """The terminal's width in cells, if ``output`` is a terminal."""
    try:
        return os.get_terminal_size(output.fileno()).columns if output.isatty() else None
    except (OSError, ValueError, AttributeError):  # (closed, no descriptor: not a terminal)
        return None


def _describe(call: ToolCall, messages: Sequence[ChatMessage], width: int | None = None) -> str:
    # (on the prompt's own lines, as typed: a line break in them would forge the next
    # line, a lookalike letter or a trailing space pass for another tool's name)
    name = as_typed(call.function, MAX_NAME)
    call_id = as_typed(call.id, MAX_NAME)
    lines = ["", f"--- tool call needs approval: {name} (id {call_id}) ---"]
    said = next(
        (m.content for m in reversed(messages) if isinstance(m, AssistantMessage)), ""
    ).strip()
    if said:
        short = said if len(said) <= _CONTEXT_CHARS else said[:_CONTEXT_CHARS] + " [...]"
        lines.append("the model said:")
        lines.extend(f"  | {line}" for line in visible(short).split("\n"))
    if call.parse_error:
        lines.append(f"arguments could not be parsed: {one_line(call.parse_error, 400)}")
    lines.append(f"arguments of {name}:")
    text = arguments_text(call)
    lines.append(text)
    lines.extend(f"note: {note}" for note in notes(text))
    # (the header may have scrolled away: what is asked about is said again last)
    lines.append(
        f"--- end of the call to {name} (id {call_id}): {len(text):,} characters of "
        f"arguments on {text.count(chr(10)) + 1:,} lines ---"
    )
    # (on a terminal, a long line is cut into rows here, each after the first quoted:
    # wrapped by the terminal, a row of the model's text would begin at the first column)
    return wrapped("\n".join(lines), width) + "\n"


def _ask(
    call: ToolCall,
    messages: Sequence[ChatMessage],
    input: TextIO,
    output: TextIO,
    question: Question,
) -> Approval:
    def prompt(text: str) -> str:
        output.write(text)
        output.flush()
        line = input.readline()
        if not line:
            raise _Closed
        return line.strip()

    # (the displays hold their lines until it is answered, or withdrawn)
    with _terminal, asking(question):
        if not question.open:  # withdrawn while it waited for the terminal
            return Approval(decision="reject", explanation=_WITHDRAWN, approver="human")
        output.write(_describe(call, messages, _width(output)))
        try:
            while True:
                answer = prompt(
                    "Approve? [y]es, [n]o, [m]odify, [e]scalate, [t]erminate, [d]efer: "
                )
                decision = _ANSWERS.get(answer.lower())
                if decision is None:
                    output.write("Please answer y, n, m, e, t or d.\n")
                elif decision in ("approve", "escalate", "defer"):
                    return Approval(decision=decision, approver="human")
                elif decision == "modify":
                    modified = _modify(call, prompt, output)
                    if modified is not None:
                        return Approval(decision="modify", modified=modified, approver="human")
                else:
                    try:
                        reason = prompt("Reason (shown to the model; optional): ")
                    except _Closed:  # the answer stands: the optional reason is empty
                        reason = ""
                    default = "rejected by the human reviewer"
                    if decision == "terminate":
                        default = "the human reviewer ended the run"
                    return Approval(
                        decision=decision,
                        explanation=reason or default,
                        approver="human",
                    )
        except _Closed:
            output.write("\n(no answer: input closed; the call is rejected)\n")
            output.flush()
            return Approval(
                decision="reject",
                explanation="no answer from the human reviewer (the terminal input closed)",
                approver="human",
            )


def _modify(call: ToolCall, prompt: Callable[[str], str], output: TextIO) -> ToolCall | None:
    text = prompt("New arguments as a JSON object (empty: back): ")
    if not text:
        return None
    try:
        arguments = json.loads(text)
    except json.JSONDecodeError as e:
        output.write(f"Not valid JSON ({e}); try again.\n")
        return None
    if not isinstance(arguments, dict):
        output.write("The arguments must be a JSON object ({...}); try again.\n")
        return None
    return call.model_copy(update={"arguments": arguments, "parse_error": None})


def human_approver(*, input: TextIO | None = None, output: TextIO | None = None) -> Approver:
    """An approver that asks a person in the terminal, showing the call.

    The person answers approve, reject (with a reason the model is shown), modify
    (new arguments as JSON), escalate (to the next policy), terminate (the run ends) or
    defer (the run stops and waits for a decision made later: ``loopwright runs approve``).
    Questions are asked one at a time; the terminal is read in a worker thread, so the
    event loop keeps running. If the input ends before an answer, the call is rejected
    (an answer given stands when the input ends at the optional reason); so is it when
    there is no input or output to ask on (``sys.stdin`` or ``sys.stderr`` closed).

    Args:
        input: Where answers are read (default ``sys.stdin`` at the time of asking).
        output: Where the call and questions are shown (default ``sys.stderr``, at the
            time of asking: standard output may be the program's answer, piped away).
    """

    async def human(call: ToolCall, messages: Sequence[ChatMessage]) -> Approval:
        answers, shown = input or sys.stdin, output or sys.stderr
        if answers is None or shown is None:  # (closed: Python sets sys.stdin to None)
            missing = "stdin" if answers is None else "stderr"
            return Approval(
                decision="reject",
                explanation=f"no human reviewer could be asked (no {missing}: it is closed)",
                approver="human",
            )
        # a daemon thread of our own: asyncio.to_thread's executor thread, blocked in
        # readline after a time limit fired, kept the program from exiting
        question = Question()
        try:
            approval: Approval = await run_in_thread(_ask, call, messages, answers, shown, question)
        except BaseException:  # cancelled (a time limit, Ctrl-C): the question is void
            if question.open:
                with contextlib.suppress(Exception):
                    shown.write(f"\n({_WITHDRAWN}: an answer to it is ignored)\n")
                    shown.flush()
            question.end()  # (the displays print again; the thread reads on, unheard)
            raise
        return approval

    return recorded("human", human)
