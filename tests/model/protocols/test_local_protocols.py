"""The json protocol on the real embedded model: constrained decoding yields valid actions.

Skipped when llama-cpp-python or the embedded model is not installed.
"""

from __future__ import annotations

import pytest

import loopwright as lw

pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed")


def _model_installed() -> bool:
    from loopwright.model.providers import _llama_engine

    try:
        _llama_engine.default_model_path()
    except lw.MissingDependencyError:
        return False
    return True


pytestmark = [
    pytest.mark.local_model,
    pytest.mark.slow,
    pytest.mark.skipif(not _model_installed(), reason="the embedded model is not installed"),
]


@lw.tool
def multiply(a: int, b: int) -> int:
    """Multiply two numbers.

    Args:
        a: The first factor.
        b: The second factor.
    """
    return a * b


@pytest.mark.timeout(400)
async def test_a_tiny_model_always_emits_a_valid_action_naming_a_real_tool() -> None:
    model = lw.get_model(
        "local",
        tool_protocol=lw.JsonProtocol(max_thought=100),
        config=lw.GenerateConfig(max_tokens=200, temperature=0),
    )
    messages: list[lw.ChatMessage] = [
        lw.SystemMessage(content="You are a careful calculator."),
        lw.UserMessage(content="What is 465 * 321?"),
    ]
    tools = [multiply, lw.submit()]
    for _ in range(2):
        out = await model.generate(messages, tools)
        assert not lw.is_format_error(out), out.tool_calls
        assert len(out.tool_calls) == 1
        call = out.tool_calls[0]
        assert call.function in {"multiply", "submit"}
        messages.append(out.message)
        results = await lw.execute_tools(out.message, tools)
        assert results[0].error is None, results[0].content
        messages.extend(results)
    # the second request reused the cached prompt prefix of the first
    assert out.usage is not None and (out.usage.cache_read_tokens or 0) > 0
