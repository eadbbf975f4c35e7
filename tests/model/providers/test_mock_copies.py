"""The scripted model hands out outputs that share nothing mutable with its script."""

from __future__ import annotations

import loopwright as lw

HI = [lw.UserMessage(content="hi")]


async def test_outputs_share_no_mutable_part_with_the_script() -> None:
    usage = lw.Usage(input_tokens=3, output_tokens=2, total_tokens=5)
    scripted = lw.ModelOutput.for_tool_call(
        "f", {"items": [1, {"deep": "x"}], "n": 2}, tool_call_id="c1", usage=usage
    )
    model = lw.get_model("mock", outputs=[scripted], repeat=True)
    first = await model.generate(HI)
    second = await model.generate(HI)

    call = first.tool_calls[0]
    call.arguments["items"][1]["deep"] = "changed"
    call.arguments["n"] = 99
    call.id = "other"
    first.message.tool_calls.append(lw.ToolCall(function="g"))
    assert first.usage is not None
    first.usage.input_tokens = 1000

    for out in (scripted, second):
        assert out.tool_calls[0].arguments == {"items": [1, {"deep": "x"}], "n": 2}
        assert len(out.tool_calls) == 1
        assert out.usage is not None and out.usage.input_tokens == 3
    assert scripted.tool_calls[0].id == "c1"
    assert second.tool_calls[0].id not in ("c1", "other")


async def test_non_json_argument_values_are_copied_too() -> None:
    scripted = lw.ModelOutput.for_tool_call("f", {"s": {1, 2}})
    model = lw.get_model("mock", outputs=[scripted])
    out = await model.generate(HI)
    out.tool_calls[0].arguments["s"].add(3)
    assert scripted.tool_calls[0].arguments["s"] == {1, 2}
