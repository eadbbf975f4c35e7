"""Run stores made by real runs (the scripted model), for the viewer's tests."""

from __future__ import annotations

import sys
from pathlib import Path

import loopwright as lw

#: Text a model, a tool or a dataset might send: shown as text, never run.
SCRIPT = "<script>window.__pwned = 'script'</script>"
IMG = "<img src=x onerror=\"window.__pwned = 'img'\">"
SVG = "<svg onload=\"window.__pwned = 'svg'\"></svg>"
JS_LINK = "[click me](javascript:window.__pwned='link')"
HOSTILE = f"{SCRIPT} {IMG} {SVG}"


@lw.tool
def lookup(query: str) -> str:
    """Look a thing up.

    Args:
        query: What to look up.
    """
    lw.store().set("looked_up", query)
    lw.transcript().info(f"**looked up** `{query}` {JS_LINK} {SCRIPT}", source="lookup")
    # what JSON has no words for: NaN, and a lone surrogate (a file name that is not UTF-8)
    lw.transcript().info({"ratio": float("nan"), "name": "bad \udcff name"}, source="odd")
    return f"found: {HOSTILE}"


def make_store(path: Path) -> dict[str, str]:
    """A run store with a run (tool calls, store changes, info, hostile text) and an
    eval of three samples (one wrong, one failed); their ids by name."""
    model = lw.get_model(
        "mock",
        outputs=[
            lw.ModelOutput.for_tool_call("lookup", {"query": f"cats {SCRIPT}"}, content=IMG),
            lw.ModelOutput.for_tool_call("lookup", {"query": "dogs"}),
            lw.ModelOutput.for_tool_call("submit", {"answer": f"done {SVG}"}),
        ],
    )
    agent = lw.react(prompt="You look things up.", tools=[lookup])
    state = lw.run_sync(agent, "Find cats.", model=model, db=path, name="finder")
    ids = {"run": str(state.run_id)}

    async def answer(messages: list[lw.ChatMessage], tools: object, config: object) -> str:
        q = str(messages[-1].content)
        if q == "3+3":
            raise lw.ModelAPIError("provider down")
        a, b = (int(x) for x in q.split("+"))
        return f"The answer is {a + b + (1 if q == '2+2' else 0)}."

    data = [{"id": f"s{i}", "input": f"{i}+{i}", "target": str(2 * i)} for i in (1, 2, 3)]
    task = lw.Task(data, agent=lw.react(submit=False), scorer=lw.match("numeric"), name="add")
    [result] = lw.eval(task, model=lw.get_model("mock", outputs=answer), db=path)
    ids["eval"] = str(result.run_id)
    return ids


# a run that goes on until a file appears: written by another process, as a live run is
LIVE_SCRIPT = """
import sys, time
from pathlib import Path
import loopwright as lw

db, stop = sys.argv[1], Path(sys.argv[2])

async def main():
    async with lw.recording(name="live", model="mock", input="go", db=db) as rec:
        print(rec.run_id, flush=True)
        i = 0
        while not stop.exists() and i < 600:
            lw.transcript().info(f"tick {i}", source="live")
            await rec.flush()
            i += 1
            await __import__("asyncio").sleep(0.2)
        rec.finish(output="stopped")

__import__("asyncio").run(main())
"""


def live_command(db: Path, stop: Path) -> list[str]:
    return [sys.executable, "-c", LIVE_SCRIPT, str(db), str(stop)]


#: An <img> short enough to stay whole in a damaged row's reason (it quotes 40 characters).
SHORT_IMG = "<img src=x onerror=window.__pwned=1>"


def damaged_store(path: Path) -> dict[str, str]:
    """Two runs, the older one's row damaged (its created not a time, its name and that
    created hostile HTML): {"good": id, "bad": id}."""
    import sqlite3

    from loopwright.log._file_thread import close_idle_files

    ids = {}
    for which in ("bad", "good"):
        state = lw.run_sync(lw.react(submit=False), "hi", model=lw.get_model("mock"), db=path,
                            name=which)  # fmt: skip
        ids[which] = str(state.run_id)
    close_idle_files()
    conn = sqlite3.connect(path)
    with conn:
        conn.execute(
            "UPDATE runs SET name = ?, created = ? WHERE id = ?", (IMG, SHORT_IMG, ids["bad"])
        )
    conn.close()
    return ids


#: A 1x1 PNG in markdown: an image that could look like any part of the page (a button).
_PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmM" + (
    "IQAAAABJRU5ErkJggg=="
)
MD_IMAGE = f"![approve](data:image/png;base64,{_PNG})"
BIG_LINE = "# big\n" + "z" * 1_000_000
BIG_ANSWER = "w" * 900_000
#: A bidi override (RIGHT-TO-LEFT OVERRIDE) in a name: all after it would read reversed.
RLO_NAME = "huge \u202e"
RLO_TOOL = "fetch\u202e"


def hostile_store(path: Path) -> str:
    """A run whose content is huge: a 900 kB answer, a 1 MB info line, a store value of
    100,000 keys, a 200,000-character input, a markdown image; and whose name and a
    tool call's function end in a bidi override; its id."""

    async def main() -> str:
        many = {str(i): i for i in range(100_000)}
        async with lw.recording(name=RLO_NAME, model="mock", input="i" * 200_000, db=path) as rec:
            lw.transcript().info(BIG_LINE, source="big")
            lw.transcript().info(f"see {MD_IMAGE}", source="image")
            lw.store().set("many", many)
            outputs = [
                lw.ModelOutput.for_tool_call(RLO_TOOL, {}),
                lw.ModelOutput.from_text(BIG_ANSWER),
            ]
            model = lw.get_model("mock", outputs=outputs)
            await lw.run(lw.react(submit=False), "go", model=model)
            rec.finish(output="done")
        return str(rec.run_id)

    import asyncio

    return asyncio.run(main())


def long_input_store(path: Path, n: int = 450) -> str:
    """A run whose second model call's input is ``n`` + 2 messages (its first's ``n``,
    that call's answer and one more); its id."""

    async def main() -> str:
        model = lw.get_model("mock", outputs=[lw.ModelOutput.from_text("ok")] * 2)
        async with lw.recording(name="long", model="mock", db=path) as rec:
            messages: list[lw.ChatMessage] = [lw.UserMessage(content=f"m{i}") for i in range(n)]
            out = await model.generate(messages)
            await model.generate([*messages, out.message, lw.UserMessage(content="last")])
            rec.finish(output="done")
        return str(rec.run_id)

    import asyncio

    return asyncio.run(main())
