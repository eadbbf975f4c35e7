import contextlib
import io
import logging

from rich.console import Console

import loopwright as lw
from loopwright.display import abbreviate


@lw.tool
def shout(text: str) -> str:
    """Repeat text loudly.

    Args:
        text: What to shout.
    """
    return text.upper() * 200


@lw.tool
def broken() -> str:
    """Always fails."""
    raise lw.ToolError("the disk is full")


def console() -> tuple[Console, io.StringIO]:
    buffer = io.StringIO()
    return Console(file=buffer, width=100, color_system=None, force_terminal=False), buffer


async def test_the_display_shows_steps_tool_calls_and_abbreviated_results() -> None:
    out, buffer = console()
    model = lw.get_model(
        "mock",
        outputs=[
            lw.ModelOutput.for_tool_call("shout", {"text": "hi"}, content="Let me shout."),
            lw.ModelOutput.for_tool_call("broken"),
            "All done.",
        ],
    )
    with lw.console_display(out, max_chars=60):
        async with lw.recording(db=False):
            messages: list[lw.ChatMessage] = [lw.UserMessage(content="go")]
            for _ in range(3):
                reply = await model.generate(messages, [shout, broken])
                messages.append(reply.message)
                messages.extend(await lw.execute_tools(reply.message, [shout, broken]))
            with lw.span("wrap-up"):
                lw.transcript().info({"answer": 42})
                logging.getLogger("lwtest.display").warning("careful")
    text = buffer.getvalue()
    lines = text.splitlines()
    assert lines[0].startswith("step 1  mock")
    assert lines[1] == "  │ Let me shout."  # the model's words, quoted
    assert lines[2] == '→ shout(text="hi")'
    assert lines[3].startswith("← shout: HIHIHI") and "… (+" in lines[3]
    assert len(lines[3]) < 100
    assert "✗ broken: the disk is full" in text
    assert "step 3" in text and "All done." in text
    assert "┌ wrap-up" in text
    assert '  • {"answer": 42}' in text  # indented inside the span
    assert "warning lwtest.display: careful" in text


async def test_the_display_attaches_to_one_transcript_and_shows_limits_and_errors() -> None:
    out, buffer = console()
    t = lw.Transcript()
    display = lw.console_display(out)
    stop = display.attach(t)
    t.record(lw.LimitEvent(type="step", limit=3, value=3, message="step limit reached: 3 steps"))
    t.record(lw.ErrorEvent(error="RuntimeError", message="boom"))
    t.record(lw.StoreEvent(changes=[{"op": "add", "path": "/x", "value": 1}]))  # hidden
    stop()
    t.info("not shown")
    assert buffer.getvalue().splitlines() == [
        "■ step limit reached: 3 steps",
        "■ error: RuntimeError: boom",
    ]


async def test_subtasks_are_shown_with_their_nested_steps() -> None:
    out, buffer = console()
    model = lw.get_model("mock", outputs=["inner reply"])

    @lw.subtask
    async def helper(q: str) -> str:
        return (await model.generate([lw.UserMessage(content=q)])).text

    with lw.console_display(out):
        async with lw.recording(db=False):
            await helper("question")
    lines = buffer.getvalue().splitlines()
    assert lines[0] == "▸ subtask helper"
    assert lines[1].startswith("  step 1  mock")
    assert lines[2] == "    │ inner reply"
    assert lines[3].startswith('◂ helper → "inner reply"')


def test_abbreviate() -> None:
    assert abbreviate("short", 10) == "short"
    assert abbreviate("x" * 30, 10) == "xxxxxxxxxx … (+20 chars)"
    assert abbreviate("a\nb\nc\nd", 100, max_lines=2) == "a\nb … (+3 chars)"


async def test_a_model_call_stopped_by_a_limit_is_not_shown_as_a_step() -> None:
    out, buffer = console()
    model = lw.get_model("mock", outputs=[lw.ModelOutput.for_tool_call("shout", {"text": "a"})] * 5)
    with lw.console_display(out):
        state = await lw.run(
            lw.react(tools=[shout]), "go", model=model, db=False, limits=[lw.step_limit(2)]
        )
    assert state.limit is not None
    text = buffer.getvalue()
    assert "step 2" in text
    assert "step 3" not in text
    assert "model error" not in text
    assert "■ step limit reached: 2 steps" in text


async def test_a_log_record_of_an_unnamed_level_is_shown_and_the_display_goes_on() -> None:
    out, buffer = console()
    model = lw.get_model("mock", outputs=["one", "two"])
    with lw.console_display(out):
        async with lw.recording(db=False):
            await model.generate([lw.UserMessage(content="go")])
            logging.getLogger("lwtest.display").log(35, "an unnamed level")
            await model.generate([lw.UserMessage(content="go")])
    text = buffer.getvalue()
    # the display compared level names with numbers, failed, and was dropped from the run
    assert "an unnamed level" in text and "step 2" in text


HOSTILE = (
    "ok\x1b[8mhidden\x1b]0;title\x07 \r\x9b31m \u202eevil\u2066 \ud800 [bold red]x[/] :warning:"
)


def assert_terminal_safe(text: str) -> None:
    for raw in ("\x1b", "\x07", "\r", "\x9b", "\u202e", "\u2066", "\ud800"):
        assert raw not in text, repr(raw)
    text.encode("utf-8")  # a lone surrogate would fail here


@lw.tool
def echo(text: str) -> str:
    """Echo text.

    Args:
        text: What to echo.
    """
    return text


@lw.tool
def explode(text: str) -> str:
    """Raise.

    Args:
        text: The message.
    """
    raise RuntimeError(text)


async def test_untrusted_text_reaches_the_terminal_escaped_never_as_markup() -> None:
    out, buffer = console()
    reply = lw.ModelOutput.for_tool_call("echo", {"text": HOSTILE}, content=HOSTILE)
    reply.message = reply.message.model_copy(update={"reasoning": HOSTILE})
    model = lw.get_model("mock", outputs=[reply, lw.ModelAPIError(HOSTILE)])
    with lw.console_display(out):
        async with lw.recording(db=False):
            lw.transcript().info(HOSTILE)
            logging.getLogger("lwtest.display").warning(HOSTILE)
            messages: list[lw.ChatMessage] = [lw.UserMessage(content="go")]
            reply = await model.generate(messages, [echo])
            messages.extend(await lw.execute_tools(reply.message, [echo]))
            with contextlib.suppress(lw.ModelError):
                await model.generate(messages, [echo])
    text = buffer.getvalue()
    assert_terminal_safe(text)
    assert text.count("ok\\x1b[8mhidden\\x1b]0;title\\x07 \\r\\x9b31m \\u202eevil\\u2066") == 6
    # (7: the call's argument too, as JSON, its \r not taken for the end of its line)
    assert '→ echo(text="ok\\u001b[8mhidden\\u001b]0;title\\u0007 \\r\\u009b31m' in text
    assert text.count("[bold red]x[/] :warning:") == 7  # as written: not markup, no emoji
    assert "← echo: ok\\x1b[8m" in text and "✗ model error: ModelAPIError: ok\\x1b" in text


async def test_an_error_is_shown_once_and_a_cancellation_as_one() -> None:
    out, buffer = console()
    model = lw.get_model(
        "mock", outputs=[lw.ModelOutput.for_tool_call("explode", {"text": "kaboom"})]
    )
    display = lw.console_display(out)
    with display, contextlib.suppress(RuntimeError):
        await lw.run(lw.react(tools=[explode]), "go", model=model, db=False)
    lines = buffer.getvalue().splitlines()
    assert lines[-1] == "✗ explode: RuntimeError: kaboom"  # no "■ error:" repeating it
    assert display.shown_errors == {"RuntimeError: kaboom"}

    out, buffer = console()
    t = lw.Transcript()
    stop = lw.console_display(out).attach(t)
    t.record(lw.ErrorEvent(error="CancelledError", message=""))
    stop()
    assert buffer.getvalue().splitlines() == ["■ cancelled"]


async def test_a_logged_traceback_is_one_line_unless_asked_for() -> None:
    for tracebacks in (False, True):
        out, buffer = console()
        with lw.console_display(out, tracebacks=tracebacks):
            async with lw.recording(db=False):
                try:
                    raise ValueError("deep down")
                except ValueError:
                    logging.getLogger("lwtest.display").exception("it failed")
        text = buffer.getvalue()
        assert "it failed (ValueError: deep down)" in text or tracebacks
        assert ("Traceback (most recent call last)" in text) == tracebacks


def test_a_carriage_return_or_separator_in_long_text_is_shown_not_made_a_line_break() -> None:
    # the first lines of a long text are kept: their \r, \x1c or U+2028 are shown as
    # escapes, as in a short text, not turned into line breaks that split what is shown
    text = "ok\rrm -rf ~\x1cz\u2028w\n" * 20
    out, buffer = console()
    display = lw.console_display(out, max_chars=10_000)
    display(lw.InfoEvent(data=text))
    shown = buffer.getvalue()
    assert shown.count("\n") == 8  # the 8 lines kept, each on one line
    assert shown.splitlines()[0] == "• ok\\rrm -rf ~\\x1cz\\u2028w"
    assert abbreviate("a\rb\nc\nd", 100, max_lines=1) == "a\rb … (+3 chars)"
