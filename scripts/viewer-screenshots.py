"""Make the README's screenshots of `loopwright view`: a run store with a small run and
an eval (the scripted model), served, photographed by headless Chromium.

    python scripts/viewer-screenshots.py [OUT_DIR]     (default docs/img)
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from playwright.sync_api import sync_playwright

import loopwright as lw


@lw.tool
def multiply(a: float, b: float) -> float:
    """Multiply two numbers.

    Args:
        a: The first factor.
        b: The second factor.
    """
    lw.transcript().info(f"multiplying **{a}** by **{b}**")
    lw.store().set("product", a * b)
    return a * b


def make_store(db: Path) -> str:
    model = lw.get_model(
        "mock",
        outputs=[
            lw.ModelOutput.for_tool_call(
                "multiply", {"a": 465, "b": 321}, content="Let me work it out."
            ),
            lw.ModelOutput.for_tool_call("submit", {"answer": "149265"}),
        ],
    )
    agent = lw.react(prompt="You are a careful calculator.", tools=[multiply])
    state = lw.run_sync(agent, "What is 465 * 321?", model=model, db=db, name="calculator")

    def answer(messages: list[lw.ChatMessage], tools: object, config: object) -> str:
        a, b = (int(x) for x in str(messages[-1].content).split("+"))
        return f"The answer is {a + b + (a == 2)}."

    data = [{"id": f"q{i}", "input": f"{i}+{i}", "target": str(2 * i)} for i in range(1, 6)]
    task = lw.Task(data, agent=lw.react(submit=False), scorer=lw.match("numeric"), name="add")
    lw.eval(task, model=lw.get_model("mock", outputs=answer), db=db)
    return str(state.run_id)


def main() -> None:
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "docs/img")
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "runs.db"
        run_id = make_store(db)
        proc = subprocess.Popen(
            [sys.executable, "-m", "loopwright", "view", "--db", str(db), "--port", "0"],
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert proc.stdout is not None
            url = proc.stdout.readline().split()[2]
            with sync_playwright() as p:
                chromium = shutil.which("chromium")
                browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
                page = browser.new_page(viewport={"width": 1100, "height": 560})
                page.goto(url)
                page.wait_for_selector("#runs td.stats:not(:empty)")
                page.screenshot(path=str(out / "viewer-runs.png"))
                page.goto(f"{url}#/run/{run_id}?tab=transcript")
                page.wait_for_selector("details.ev-tool")
                page.click("details.ev-tool summary")
                page.click("details.ev-info summary")
                page.wait_for_selector("details.ev-info .md")
                page.screenshot(path=str(out / "viewer-transcript.png"))
                browser.close()
        finally:
            proc.terminate()
            proc.wait(10)


if __name__ == "__main__":
    main()
