"""``llm_fallback``: answer a sub-question from the model's own knowledge.

Off by default: offer it by adding ``llm_fallback()`` to an agent's tools. It helps when
no other tool fits a step (a definition, a well-known fact, a rough estimate); the
answer is only as reliable as the model, so prefer real tools where they exist.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._errors import ToolError
from .._tool import Tool, tool

if TYPE_CHECKING:
    from ...model import GenerateConfig, Model

__all__ = ["DEFAULT_FALLBACK_PROMPT", "llm_fallback"]

DEFAULT_FALLBACK_PROMPT = (
    "Answer the question from your own knowledge, briefly and precisely. If you do not "
    "know, or the question needs information you cannot have (today's news, private "
    "data), say so plainly instead of guessing."
)
"""The system prompt of the model answering a fallback question."""

_DESCRIPTION = (
    "Answer a question from general knowledge, without any tools. Use it as a fallback "
    "when no other tool fits, or for simple facts and definitions; its answers can be "
    "wrong, so check them where another tool can."
)


def llm_fallback(
    model: str | Model | None = None,
    *,
    name: str = "llm_fallback",
    prompt: str = DEFAULT_FALLBACK_PROMPT,
    config: GenerateConfig | None = None,
) -> Tool[..., Any]:
    """A tool that answers a question with a model's own knowledge (one model call).

    Args:
        model: The model to ask (a name or a ``Model``). Default: the current default
            model at call time, i.e. the run's model inside ``run()``.
        name: The tool's name.
        prompt: The system prompt of the answering model.
        config: Generation settings for the answering call.

    The answering call goes through ``Model.generate`` like any other: the run's
    limits, usage accounting and transcript see it.
    """

    @tool(name=name, description=_DESCRIPTION, parallel=True, defer=True)
    async def fallback(question: str) -> str:
        """Answer a question from general knowledge.

        Args:
            question: The question, complete on its own: the answerer sees nothing else.
        """
        from ...model import SystemMessage, UserMessage, get_model
        from ...model.protocols._parsing import strip_think

        answerer = get_model(model)
        output = await answerer.generate(
            [SystemMessage(content=prompt), UserMessage(content=question)], config=config
        )
        text = strip_think(output.text)[0].strip()
        if not text:
            raise ToolError(
                "The model gave no answer. Rephrase the question, or work it out another way."
            )
        return text

    return fallback
