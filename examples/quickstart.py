"""A first look at loopwright: a scripted model answering a question.

Run it with ``python examples/quickstart.py``.
"""

import asyncio

import loopwright as lw


async def main() -> None:
    model = lw.get_model(
        "mock",
        outputs=[
            lw.ModelOutput.for_tool_call("multiply", {"a": 465, "b": 321}),
            "465 * 321 = 149265",
        ],
    )
    messages: list[lw.ChatMessage] = [lw.UserMessage(content="What is 465 * 321?")]
    first = await model.generate(messages)
    call = first.tool_calls[0]
    print(f"model asks for {call.function}({call.arguments})")
    messages += [
        first.message,
        lw.ToolMessage(tool_call_id=call.id, function=call.function, content="149265"),
    ]
    answer = await model.generate(messages)
    print("answer:", answer.text)
    print("usage:", model.usage)


if __name__ == "__main__":
    asyncio.run(main())
