"""``Sample``: one dataset item — the input an agent gets and the target it is scored on."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from .._ids import new_id
from ..model import ChatMessage

__all__ = ["Sample"]


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
            sandbox -> contents. Dataset files may give ``"file:PATH"`` instead of
            contents, read from the host when the dataset is loaded: a UTF-8 regular
            file of at most 64 MiB in the dataset file's folder (or below it).
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
