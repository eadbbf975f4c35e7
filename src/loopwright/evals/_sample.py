"""``Sample``: one dataset item — the input an agent gets and the target it is scored on."""

from __future__ import annotations

import posixpath
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from .._ids import new_id
from ..model import ChatMessage

__all__ = ["Sample", "check_file_path"]


def check_file_path(path: str) -> str:
    """``path`` if it may name a sample's file: relative to the sandbox's working folder
    and staying inside it (no ``..``), as a dataset is data from anywhere and a
    ``local`` sandbox writes on the host.

    Raises:
        ValueError: It is empty, absolute, holds a NUL or leaves the folder.
    """
    if not isinstance(path, str) or not path or "\x00" in path:
        raise ValueError(f"a sample file's path must be a non-empty name, got {path!r}")
    if posixpath.isabs(path) or ".." in path.split("/"):
        raise ValueError(
            f"a sample file's path must be relative to the sandbox's working folder and "
            f"stay inside it (no '..'), got {path!r}"
        )
    return path


class Sample(BaseModel):
    """One item of a dataset.

    Attributes:
        input: The task: a string (sent as a user message) or a list of messages.
        target: What a correct answer looks like, for scorers: a string, or several
            acceptable strings ("" when the task has none).
        id: A unique id within the dataset. Datasets number items without one from 1;
            ``--resume`` finds finished samples by id, so keep ids stable.
        metadata: Anything else about the item (scorers and templates can use it).
        files: Files to put in the sample's sandbox before it runs: path in the
            sandbox (relative to its working folder, staying inside it) -> contents.
            Dataset files may give ``"file:PATH"`` instead of contents, read from the
            host when the dataset is loaded: a UTF-8 regular file of at most 64 MiB in
            the dataset file's folder (or below it).
    """

    model_config = ConfigDict(defer_build=True)

    input: str | list[ChatMessage]
    target: str | list[str] = ""
    id: str | int | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    files: dict[str, str] = Field(default_factory=dict)

    def __init__(
        self,
        input: str | list[ChatMessage],
        target: str | list[str] = "",
        id: str | int | None = None,
        metadata: dict[str, Any] | None = None,
        files: dict[str, str] | None = None,
        **data: Any,
    ) -> None:
        """``Sample("What is 2+2?", "4")`` or with keywords."""
        super().__init__(
            input=input,
            target=target,
            id=id,
            metadata=metadata or {},
            files=files or {},
            **data,
        )

    @field_validator("files")
    @classmethod
    def _relative_paths(cls, files: dict[str, str]) -> dict[str, str]:
        for path in files:
            check_file_path(path)
        return files

    @property
    def targets(self) -> list[str]:
        """The target as a list of acceptable answers (empty when there is none)."""
        if isinstance(self.target, str):
            return [self.target] if self.target else []
        return [t for t in self.target if t]

    @property
    def input_text(self) -> str:
        """The input as text: the string, or the last user message's content."""
        if isinstance(self.input, str):
            return self.input
        for message in reversed(self.input):
            if message.role == "user":
                return message.content
        return ""

    def fresh_input(self) -> str | list[ChatMessage]:
        """The input for one run: message lists are copied with new message ids, so that
        every sample and epoch records its own messages."""
        if isinstance(self.input, str):
            return self.input
        return [m.model_copy(update={"id": new_id()}) for m in self.input]
