"""``loopwright run``'s live view when the model's text streams (the default).

The console display (:class:`~loopwright.display.ConsoleDisplay`) shows the steps, tool
calls, results, approvals and errors; this one also receives the model's deltas (it is
the model layer's stream sink) and writes them as they come. On a terminal each delta
is written at once (reasoning dimmed); when stderr is not a terminal, the text is
written as plain lines, each once it is complete. A step's reply that streamed is not
repeated when the step ends: the step's line (model, tokens, time) and its tool calls
follow the text. Every line of it begins with the quote (``  │ ``), as the console
display shows a model's text, so none can pass for the display's own lines; on a
terminal, a row the text fills to the terminal's width is ended here, the next one quoted
too (the terminal would wrap it to the first column). Every delta is made terminal-safe with
:func:`~loopwright._terminal.visible` (escape sequences shown, not acted on); an escape
split across two deltas is safe too, since ESC itself is what is replaced.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from .._terminal import questions_asked, visible
from ..display import ConsoleDisplay
from ..display._rows import QUOTE, fold
from ..model import ReasoningDelta, TextDelta
from ..transcripts import Event, ModelEvent

if TYPE_CHECKING:
    from rich.text import Text

__all__ = ["StreamingDisplay"]


class StreamingDisplay(ConsoleDisplay):
    """A console display that also writes the model's deltas (see the module docs)."""

    def __init__(self, console: Any = None, **kwargs: Any) -> None:
        super().__init__(console, **kwargs)
        self._terminal = bool(self.console.is_terminal)
        self._streamed = False  # the current model call streamed text
        self._open = ""  # a line begun and not ended (held, when not a terminal)
        self._column = 0  # where the cursor is on the current row (a terminal), 0: none
        self._kind: type | None = None  # reasoning or text: a change of kind ends the line
        self._asked = questions_asked()  # a question asked since ended the row

    def delta(self, delta: TextDelta | ReasoningDelta) -> None:
        """The stream sink: write ``delta`` now (a terminal) or once its line ends."""
        from rich.text import Text

        text = visible(delta.text)
        if not text:
            return
        style = "dim italic" if isinstance(delta, ReasoningDelta) else ""
        with self._lock:
            self._streamed = True
            if self._kind is not type(delta):
                self._kind = type(delta)
                self._end_text()  # a thought and the answer are never run into one line
            if self._terminal:
                self._after_questions()
                shown = self._quoted(text, style)
                self._show(lambda: self.console.print(shown, end="", soft_wrap=True))
                return
            *lines, self._open = (self._open + text).split("\n")
            if lines:
                held = [
                    Text.assemble((QUOTE if line else QUOTE.rstrip(), "dim"), (line, style))
                    for line in lines
                ]
                self._show(lambda: self._print(held))

    def _quoted(self, text: str, style: str) -> Text:
        """``text`` as written on from where the cursor is: each row it begins (at a line
        break, or where the terminal's width ends a row) begins with the quote."""
        from rich.text import Text

        width = max(len(QUOTE) + 1, self.console.width)
        shown = Text()
        for i, line in enumerate(text.split("\n")):
            if i:
                shown.append("\n")
                self._column = 0
            if not line:
                continue
            line = line.expandtabs()  # (a tab is printed as spaces: counted as them)
            if not self._column:
                shown.append(QUOTE, "dim")
                self._column = len(QUOTE)
            pieces, self._column = fold(line, self._column, width, len(QUOTE))
            for j, piece in enumerate(pieces):
                if j:
                    shown.append("\n")
                    shown.append(QUOTE, "dim")
                shown.append(piece, style)
        return shown

    def _after_questions(self) -> None:
        """A question put on the terminal since the last delta (a parallel call's
        approval) ended the row: its prompt and the person's answer did."""
        if self._asked != questions_asked():
            self._asked, self._column = questions_asked(), 0

    def _end_text(self) -> None:
        """End the streamed text's last line."""
        from rich.text import Text

        self._after_questions()
        if self._terminal and self._column:
            self._column = 0
            self._show(self.console.print)
        elif self._open:  # as Text: never read as rich markup
            shown = [Text.assemble((QUOTE, "dim"), self._open)]
            self._show(lambda: self._print(shown))
        self._open = ""

    def _rows(self, shown: list[Any], indent: int) -> list[Text]:
        """The display's rows for an event; on a terminal, an open streamed row is ended
        before them (a log line, a parallel call's result amid the stream): the text
        streamed after them begins a row of its own, quoted, where the cursor is."""
        out = super()._rows(shown, indent)
        if out and self._terminal and self._column:
            self._end_text()
        return out

    def _render(self, ev: Event) -> list[Any]:
        if not isinstance(ev, ModelEvent) or ev.pending or not self._streamed:
            return super()._render(ev)
        self._streamed, self._kind = False, None
        self._end_text()
        if ev.output is None:
            return super()._render(ev)
        message = ev.output.message.model_copy(update={"content": "", "reasoning": None})
        shown = dataclasses.replace(ev, output=dataclasses.replace(ev.output, message=message))
        return super()._render(shown)
