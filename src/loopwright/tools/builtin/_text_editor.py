"""``text_editor``: view and edit files of the current sandbox, with undo."""

from __future__ import annotations

import weakref
from typing import Any, Literal

from ..._errors import ConfigurationError
from ...sandboxes import ExecResult, SandboxEnvironment, SandboxError, sandbox
from .._errors import ToolError
from .._tool import Tool, tool

__all__ = ["MAX_FILE_BYTES", "TRUNCATED_LISTING", "text_editor", "whole_lines"]

MAX_FILE_BYTES = 2 * 1024 * 1024
"""The largest file the file tools read (a larger one is an error naming other ways):
what the host holds for one read, whatever the sandbox's file is."""

MAX_VIEW_LINES = 2000
"""Lines one ``view`` shows at most; the reply says how to see the rest."""

TRUNCATED_LISTING = (
    "[{path} holds more than fits in the output: only part of it is shown; list parts "
    "with bash, e.g. `ls {path} | head -100` or `find {path} -name '*.py'`]"
)
"""The note ending a folder's listing that passed the sandbox's output cap."""

_SNIPPET_CONTEXT = 4
_MAX_UNDO = 20
_MAX_LISTED_MATCHES = 10

Command = Literal["view", "create", "str_replace", "insert", "undo_edit"]


def _lines(text: str) -> list[str]:
    lines = text.split("\n")
    if lines and lines[-1] == "" and len(lines) > 1:
        lines.pop()  # the final newline ends the last line; it is not a line of its own
    return lines


def _numbered(lines: list[str], first: int) -> str:
    return "\n".join(f"{first + i:6}\t{line}" for i, line in enumerate(lines))


def _line_count(text: str) -> int:
    return text.count("\n") + (0 if not text or text.endswith("\n") else 1)


def _line_start(text: str, line: int) -> int:
    """The offset where ``line`` (1-based) begins: a binary search over C-speed counts,
    so that finding line 1,000,000 does not split a million lines."""
    low, high = 0, len(text)
    while low < high:  # the first offset with line - 1 newlines before it
        mid = (low + high) // 2
        if text.count("\n", 0, mid) < line - 1:
            low = mid + 1
        else:
            high = mid
    return low


def _line_range(text: str, first: int, last: int) -> list[str]:
    """Lines ``first..last`` (1-based, inclusive) of ``text``, without splitting the rest."""
    start = _line_start(text, first)
    lines = text[start:].split("\n", last - first + 1)[: last - first + 1]
    return lines


def _snippet(text: str, around: int, length: int) -> str:
    """Lines ``around .. around+length`` (1-based) with some context, numbered."""
    start = max(1, around - _SNIPPET_CONTEXT)
    end = min(_line_count(text), around + max(length, 1) - 1 + _SNIPPET_CONTEXT)
    end = min(end, start + MAX_VIEW_LINES - 1)
    return _numbered(_line_range(text, start, end), start)


class _Editor:
    """The state of one ``text_editor`` tool: the undo history, per sandbox and file."""

    def __init__(self) -> None:
        self.history: weakref.WeakKeyDictionary[SandboxEnvironment, dict[str, list[str | None]]] = (
            weakref.WeakKeyDictionary()
        )

    def remember(self, sb: SandboxEnvironment, path: str, before: str | None) -> None:
        stack = self.history.setdefault(sb, {}).setdefault(path, [])
        stack.append(before)
        del stack[:-_MAX_UNDO]

    async def read(self, sb: SandboxEnvironment, path: str) -> str:
        try:
            return await sb.read_file(path, max_bytes=MAX_FILE_BYTES)
        except IsADirectoryError:
            raise ToolError(f"{path} is a folder; this command needs a file.") from None
        except UnicodeDecodeError:
            raise ToolError(f"{path} is not UTF-8 text; it cannot be edited here.") from None
        except (SandboxError, ConfigurationError) as e:  # (a NUL byte in the path...)
            raise ToolError(str(e)) from e

    async def write(self, sb: SandboxEnvironment, path: str, text: str) -> None:
        try:
            await sb.write_file(path, text)
        except IsADirectoryError:
            raise ToolError(f"{path} is a folder; give a file path.") from None
        except (SandboxError, ConfigurationError) as e:  # (a NUL byte in the path...)
            raise ToolError(str(e)) from e

    async def exists(self, sb: SandboxEnvironment, path: str) -> str | None:
        """The file's text, or ``None`` when there is no such file."""
        try:
            return await self.read(sb, path)
        except FileNotFoundError:
            return None

    async def view(self, sb: SandboxEnvironment, path: str, view_range: list[int] | None) -> str:
        try:
            text = await sb.read_file(path, max_bytes=MAX_FILE_BYTES)
        except IsADirectoryError:
            if view_range is not None:
                raise ToolError("view_range only applies to files, not folders.") from None
            return await self.listing(sb, path)
        except UnicodeDecodeError:
            raise ToolError(f"{path} is not UTF-8 text; it cannot be shown.") from None
        except (SandboxError, ConfigurationError) as e:  # (a NUL byte in the path...)
            raise ToolError(str(e)) from e
        count = _line_count(text)
        first, last = 1, count
        if view_range is not None:
            if len(view_range) != 2:
                raise ToolError("view_range must be two numbers: [first_line, last_line].")
            first, last = view_range
            if last == -1:
                last = count
            if not 1 <= first <= max(count, 1) or not first <= last <= count:
                raise ToolError(
                    f"view_range {view_range} is outside the file, which has {count} "
                    "lines; use [first, last] with 1 <= first <= last, or last = -1 for the end."
                )
        if not text:
            return f"{path} is empty."
        shown = min(last, first + MAX_VIEW_LINES - 1)
        out = f"{path}, lines {first}-{shown} of {count}:\n" + _numbered(
            _line_range(text, first, shown), first
        )
        if shown < last:
            out += (
                f"\n[{MAX_VIEW_LINES} lines shown; see more with view_range=[{shown + 1}, "
                f"{min(last, shown + MAX_VIEW_LINES)}]]"
            )
        return out

    async def listing(self, sb: SandboxEnvironment, path: str) -> str:
        result = await sb.exec(
            ["find", path, "-maxdepth", "2", "-not", "-path", "*/.*", "-not", "-path", path],
            timeout=sb.file_timeout(),
        )
        if not result.success and not result.truncated:
            raise ToolError(f"Could not list {path}: {result.stderr.strip()}")
        entries = sorted(whole_lines(result).splitlines())
        if not entries:
            return f"{path} is an empty folder."
        text = f"Files and folders in {path} (two levels, hidden ones left out):\n" + "\n".join(
            entries
        )
        return text + ("\n" + TRUNCATED_LISTING.format(path=path) if result.truncated else "")


def whole_lines(result: ExecResult) -> str:
    """A command's standard output; when it passed the output cap, its whole lines (a
    last line cut short is left out)."""
    if not result.truncated:
        return result.stdout
    return result.stdout[: result.stdout.rfind("\n") + 1]


def text_editor() -> Tool[..., Any]:
    """A tool to view, create and edit text files in the current sandbox.

    Commands: ``view`` (a file with line numbers, optionally a line range; a folder's
    listing), ``create`` (write a whole file), ``str_replace`` (replace text that occurs
    exactly once), ``insert`` (after a line) and ``undo_edit`` (revert this tool's last
    change to a file). Each tool made by this function keeps its own undo history per
    sandbox.
    """
    editor = _Editor()

    @tool
    async def text_editor(
        command: Command,
        path: str,
        file_text: str | None = None,
        old_str: str | None = None,
        new_str: str | None = None,
        insert_line: int | None = None,
        view_range: list[int] | None = None,
    ) -> str:
        """View, create and edit text files in the sandbox.

        - view: show a file with line numbers (view_range=[first, last] for part of it,
          last=-1 for the end), or list a folder.
        - create: write file_text as the whole file (creating folders as needed).
        - str_replace: replace old_str, which must appear exactly once (copy it
          exactly, whitespace included), with new_str.
        - insert: insert new_str after line insert_line (0 for the top).
        - undo_edit: revert the last change this tool made to the file.

        Args:
            command: view, create, str_replace, insert or undo_edit.
            path: The file or folder (relative to the working folder, or absolute).
            file_text: The file's content, for create.
            old_str: The text to replace, for str_replace.
            new_str: The new text, for str_replace (default: delete) and insert.
            insert_line: The line after which to insert, for insert.
            view_range: [first_line, last_line] to view, for view.
        """
        sb = sandbox()
        full = sb.resolve(path)
        if command == "view":
            return await editor.view(sb, full, view_range)
        if command == "create":
            if file_text is None:
                raise ToolError("create needs file_text: the whole content of the file.")
            before = await editor.exists(sb, full)
            await editor.write(sb, full, file_text)
            editor.remember(sb, full, before)
            verb = "Created" if before is None else "Overwrote"
            return f"{verb} {full} ({len(_lines(file_text)) if file_text else 0} lines)."
        if command == "str_replace":
            if not old_str:
                raise ToolError("str_replace needs old_str: the exact text to replace.")
            text = await editor.read(sb, full)
            count = text.count(old_str)
            if count == 0:
                raise ToolError(
                    f"old_str was not found in {full}. View the file and copy the text "
                    "exactly, whitespace and indentation included."
                )
            if count > 1:
                at = ", ".join(map(str, _lines_of(text, old_str)))
                more = ", ..." if count > _MAX_LISTED_MATCHES else ""
                raise ToolError(
                    f"old_str appears {count} times in {full} (at lines {at}{more}); include "
                    "more surrounding text so that it appears exactly once."
                )
            replacement = new_str or ""
            start_line = text[: text.index(old_str)].count("\n") + 1
            edited = text.replace(old_str, replacement, 1)
            await editor.write(sb, full, edited)
            editor.remember(sb, full, text)
            snippet = _snippet(edited, start_line, replacement.count("\n") + 1)
            return f"Edited {full}. The changed part, with line numbers:\n{snippet}"
        if command == "insert":
            if insert_line is None or new_str is None:
                raise ToolError("insert needs insert_line and new_str.")
            text = await editor.read(sb, full)
            lines = _lines(text) if text else []
            if not 0 <= insert_line <= len(lines):
                raise ToolError(
                    f"insert_line {insert_line} is outside the file, which has {len(lines)} "
                    f"lines; use 0 to {len(lines)}."
                )
            new_lines = _lines(new_str) if new_str else [""]
            result = [*lines[:insert_line], *new_lines, *lines[insert_line:]]
            edited = "\n".join(result) + ("\n" if text.endswith("\n") or not text else "")
            await editor.write(sb, full, edited)
            editor.remember(sb, full, text)
            snippet = _snippet(edited, insert_line + 1, len(new_lines))
            return f"Inserted {len(new_lines)} lines into {full}:\n{snippet}"
        if command == "undo_edit":
            stack = editor.history.get(sb, {}).get(full)
            if not stack:
                raise ToolError(f"There is no edit of {full} to undo.")
            before = stack.pop()
            if before is None:  # the file did not exist before create
                result_ = await sb.exec(["rm", "-f", "--", full], timeout=sb.file_timeout())
                if not result_.success:
                    raise ToolError(f"Could not remove {full}: {result_.stderr.strip()}")
                return f"Undid the creation of {full}: it no longer exists."
            await editor.write(sb, full, before)
            return f"Undid the last edit of {full}. It is now {len(_lines(before))} lines long."
        raise ToolError(
            f"Unknown command {command!r}; use view, create, str_replace, insert or undo_edit."
        )

    return text_editor


def _lines_of(text: str, part: str) -> list[int]:
    """The line numbers of the first few occurrences of ``part`` (linear in the text)."""
    found: list[int] = []
    line, pos, i = 1, 0, text.find(part)
    while i != -1 and len(found) < _MAX_LISTED_MATCHES:
        line += text.count("\n", pos, i)
        found.append(line)
        pos, i = i, text.find(part, i + 1)
    return found
