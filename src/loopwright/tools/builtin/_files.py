"""``files``: read, write and list files of the current sandbox."""

from __future__ import annotations

from typing import Any, Literal

from ..._errors import ConfigurationError
from ...sandboxes import SandboxError, sandbox
from ...sandboxes._environment import file_error
from .._errors import ToolError
from .._tool import Tool, tool
from ._text_editor import MAX_FILE_BYTES, TRUNCATED_LISTING, whole_lines

__all__ = ["files"]


def files() -> Tool[..., Any]:
    """A tool to read, write and list files in the current sandbox.

    ``read`` returns a text file's content, ``write`` replaces a file with ``content``
    (creating folders as needed), ``list`` shows a folder (``ls -lA``). A missing file
    reaches the model as a ``file_not_found`` error, other failures as tool errors.
    """

    @tool
    async def files(
        action: Literal["read", "write", "list"],
        path: str = ".",
        content: str | None = None,
    ) -> str:
        """Read, write or list files in the sandbox.

        - read: return the text of the file at path.
        - write: write content to the file at path (replacing it; folders are created).
        - list: list the folder at path (default: the working folder).

        Args:
            action: read, write or list.
            path: The file or folder (relative to the working folder, or absolute).
            content: The text to write, for write.
        """
        sb = sandbox()
        full = sb.resolve(path)
        try:
            if action == "read":
                try:
                    return await sb.read_file(full, max_bytes=MAX_FILE_BYTES)
                except UnicodeDecodeError:
                    raise ToolError(f"{full} is not UTF-8 text.") from None
                except IsADirectoryError:
                    raise ToolError(f"{full} is a folder; use action 'list'.") from None
            if action == "write":
                if content is None:
                    raise ToolError("write needs content: the text of the file.")
                await sb.write_file(full, content)
                return f"Wrote {len(content.encode('utf-8'))} bytes to {full}."
            if action == "list":
                result = await sb.exec(["ls", "-lA", "--", full], timeout=sb.file_timeout())
                if result.truncated:  # (a folder of thousands of files)
                    return whole_lines(result) + TRUNCATED_LISTING.format(path=full)
                if not result.success:
                    raise file_error(full, result.stderr, reading=True)
                return result.stdout or f"{full} is empty."
        except IsADirectoryError as e:
            raise ToolError(str(e)) from e
        except (SandboxError, ConfigurationError) as e:  # (a NUL byte in the path...)
            raise ToolError(str(e)) from e
        raise ToolError(f"Unknown action {action!r}; use read, write or list.")

    return files
