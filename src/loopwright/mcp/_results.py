"""What an MCP tool call returns, as the text a loopwright tool result holds.

A ``ToolMessage`` holds text, so each content block becomes text: text as it is, an
image or audio clip as a one-line note of its type and size (the model cannot see it;
:meth:`MCPServer.call` returns the blocks themselves to Python), an embedded text
resource as its text under its URI, a binary one and a resource link as a note.
Structured content is JSON, used when the server sent no content blocks (the
specification asks servers to send both; the text is then the same data).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from loopwright._terminal import visible

if TYPE_CHECKING:
    import mcp_types

__all__ = ["block_text", "clean", "resource_text", "result_text"]


def _b64_size(data: str) -> int:
    return len(data) * 3 // 4 - data[-2:].count("=") if data else 0


def block_text(block: Any) -> str:
    """One content block (text, image, audio, embedded resource, resource link) as text."""
    kind = getattr(block, "type", None)
    if kind == "text":
        return str(block.text)
    if kind in ("image", "audio"):
        return f"[{kind}: {block.mime_type}, {_b64_size(block.data):,} bytes]"
    if kind == "resource":
        res = block.resource
        text = getattr(res, "text", None)
        if text is not None:
            return f"[resource {res.uri}]\n{text}"
        mime = getattr(res, "mime_type", None) or "application/octet-stream"
        return f"[resource {res.uri}: {mime}, {_b64_size(res.blob):,} bytes]"
    if kind == "resource_link":
        return f"[resource link {block.uri}: {block.name}]"
    return f"[{kind or type(block).__name__} content]"


def result_text(result: mcp_types.CallToolResult) -> str:
    """The text of a tool call's result: its content blocks, else its structured content."""
    parts = [block_text(b) for b in result.content]
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content, ensure_ascii=False))
    return "\n".join(parts)


def clean(text: str, limit: int = 4000) -> str:
    """Text from a server (its stderr, an error) for a message: control sequences
    stripped, at most ``limit`` characters (its end, where the error usually is)."""
    text = visible(text)
    return text if len(text) <= limit else "..." + text[-limit:]


def resource_text(contents: Any) -> str:
    """A resource's contents as text (each part's text, or what a block of it says)."""
    parts = []
    for c in contents:
        text = getattr(c, "text", None)
        parts.append(text if text is not None else block_text(_Embedded(c)))
    return "\n".join(parts)


class _Embedded:
    type = "resource"

    def __init__(self, resource: Any) -> None:
        self.resource = resource
