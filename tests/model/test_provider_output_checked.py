"""What a provider returns is outside data: ``ModelOutput`` and ``Usage`` are dataclasses
(not validated when made), so ``Model.generate`` checks each output's types before it is
stored or acted on — what pydantic did when they were models."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

import loopwright as lw
from loopwright.model._output import checked_output


def _model(output: Any) -> lw.Model:
    async def answer(*_: Any) -> Any:
        return output

    return lw.get_model("mock", outputs=answer)


async def test_a_valid_output_is_kept_as_it_is() -> None:
    out = lw.ModelOutput.from_text("hi", usage=lw.Usage(input_tokens=3, output_tokens=1))
    got = await _model(out).generate([lw.UserMessage(content="q")])
    assert got.text == "hi" and got.usage is not None and got.usage.input_tokens == 3


async def test_whole_number_counts_are_converted() -> None:
    usage = lw.Usage(input_tokens=12.0, output_tokens=2, total_tokens=14.0)  # type: ignore[arg-type]
    got = await _model(lw.ModelOutput.from_text("hi", usage=usage)).generate(
        [lw.UserMessage(content="q")]
    )
    assert got.usage is not None
    assert type(got.usage.input_tokens) is int and got.usage.input_tokens == 12
    assert type(got.usage.total_tokens) is int


@pytest.mark.parametrize(
    "output",
    [
        lw.ModelOutput.from_text("x", stop_reason="length"),  # type: ignore[arg-type]
        lw.ModelOutput.from_text("x", usage=lw.Usage(output_tokens=None)),  # type: ignore[arg-type]
        lw.ModelOutput.from_text("x", usage=lw.Usage(input_tokens=1.5)),  # type: ignore[arg-type]
        lw.ModelOutput(message=lw.AssistantMessage(content="x"), model=7),  # type: ignore[arg-type]
    ],
    ids=["stop-reason", "none-count", "fraction", "model-not-str"],
)
async def test_an_output_of_wrong_types_is_a_model_error(output: lw.ModelOutput) -> None:
    model = _model(output)
    with pytest.raises(lw.ModelError, match=r"not valid|not a ModelOutput"):
        await model.generate([lw.UserMessage(content="q")])
    assert model.usage == lw.Usage()  # nothing counted from it


def test_what_is_not_an_output_is_refused() -> None:
    with pytest.raises(lw.ModelError, match="not a ModelOutput"):
        checked_output({"message": {"content": "x"}})
    with pytest.raises(lw.ModelError, match="not valid"):
        checked_output(lw.ModelOutput(message={"content": 3}))  # type: ignore[arg-type]
    # what pydantic converts is converted, as when ModelOutput was a pydantic model
    got = checked_output(lw.ModelOutput(message={"content": "x"}))  # type: ignore[arg-type]
    assert isinstance(got.message, lw.AssistantMessage) and got.text == "x"


async def test_a_run_whose_provider_returns_garbage_ends_with_the_error(tmp_path: Any) -> None:
    db = tmp_path / "runs.db"
    bad = lw.ModelOutput.from_text("x", stop_reason="length")  # type: ignore[arg-type]
    with pytest.raises(lw.ModelError, match="not valid") as caught:
        await lw.run(lw.react(), "q", model=_model(bad), db=db)
    runs = lw.list_runs(db=db)
    assert [r.status for r in runs] == ["error"] and caught.value is not None


class _Raw(lw.ModelAPI):
    """A provider that returns whatever it is given, untouched (as a user's provider
    that builds its output straight from the wire may)."""

    provider = "raw"

    def __init__(self, value: object) -> None:
        self.value = value
        self.calls = 0

    async def generate(
        self,
        messages: Sequence[lw.ChatMessage],
        tools: Sequence[lw.ToolInfo],
        config: lw.GenerateConfig,
    ) -> lw.ModelOutput:
        self.calls += 1
        return self.value  # type: ignore[return-value]


@pytest.mark.parametrize(
    "value",
    [
        None,
        {"message": {"content": "x"}},
        "x",
        lw.ModelOutput(message=None),  # type: ignore[arg-type]
        lw.ModelOutput(message={"content": 3}),  # type: ignore[arg-type]
    ],
    ids=["none", "dict", "str", "message-none", "message-bad-dict"],
)
async def test_a_provider_returning_what_is_no_output_is_a_model_error_once(
    value: object,
) -> None:
    api = _Raw(value)
    model = lw.Model(api)
    with pytest.raises(lw.ModelError, match=r"not valid|not a ModelOutput"):
        await model.generate([lw.UserMessage(content="q")])
    assert api.calls == 1  # a wrong output is no transient failure: not retried


async def test_a_message_given_as_a_dict_is_converted_through_generate() -> None:
    api = _Raw(lw.ModelOutput(message={"content": "x"}))  # type: ignore[arg-type]
    got = await lw.Model(api).generate([lw.UserMessage(content="q")])
    assert isinstance(got.message, lw.AssistantMessage) and got.text == "x"
    assert got.model == api.name and got.message.model == api.name  # named by generate
