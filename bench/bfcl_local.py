"""The embedded model on public function-calling data: BFCL, scored by its own checker.

The Berkeley Function Calling Leaderboard's questions and possible answers ship in the
``bfcl-eval`` wheel, with its AST checker. The package's own dependencies (every model
vendor's SDK, sentence-transformers, faiss...) are not needed for the checker: install it
without them, ``pip install --no-deps bfcl-eval``. The checker module imports one table
of the model handlers (``bfcl_eval.constants.model_config``, which imports every
handler) only to ask whether a model's function names have ``.`` written as ``_``; that
one module is replaced here by a table saying yes for every model (this bench writes
names with ``_``, as OpenAI's API needs), so nothing else is imported. No BFCL code is
copied.

Each item's first user turn goes to the model once (one reply, no tool run) with its
functions as tools, through the model's default tool protocol (``json`` for the
embedded model); the reply's calls are scored by ``ast_checker``. Categories: simple
(``simple_python``), multiple (one right function among several) and parallel (several
calls in one reply: the json protocol makes one call per reply, so expect 0).

    pip install --no-deps bfcl-eval
    python bench/bfcl_local.py [--per-category 20] [--model local] [--no-choose-first]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
import types
from collections import defaultdict
from importlib import resources
from typing import Any

import loopwright as lw

CATEGORIES = ("simple_python", "multiple", "parallel")
_TYPES = {"dict": "object", "float": "number", "tuple": "array"}


def _checker() -> Any:
    try:
        import bfcl_eval  # noqa: F401
    except ImportError:
        sys.exit(
            "needs the bfcl-eval package without its dependencies: pip install --no-deps bfcl-eval"
        )
    table = types.ModuleType("bfcl_eval.constants.model_config")
    table.MODEL_CONFIG_MAPPING = defaultdict(  # type: ignore[attr-defined]
        lambda: types.SimpleNamespace(underscore_to_dot=True)
    )
    sys.modules["bfcl_eval.constants.model_config"] = table
    from bfcl_eval.eval_checker.ast_eval.ast_checker import ast_checker

    return ast_checker


def _schema(value: Any) -> Any:
    """A BFCL parameter description as JSON schema (``dict`` -> ``object``...)."""
    if isinstance(value, list):
        return [_schema(v) for v in value]
    if not isinstance(value, dict):
        return value
    out = {k: _schema(v) for k, v in value.items() if k not in ("type", "default")}
    kind = value.get("type")
    if kind == "any":
        return out
    if isinstance(kind, str):
        out["type"] = _TYPES.get(kind, kind)
    if "properties" in value:
        out["properties"] = {k: _schema(v) for k, v in value["properties"].items()}
    return out


def _items(category: str, n: int) -> list[tuple[dict[str, Any], Any]]:
    data = resources.files("bfcl_eval") / "data"
    questions = (data / f"BFCL_v4_{category}.json").read_text().splitlines()[:n]
    answers = (data / "possible_answer" / f"BFCL_v4_{category}.json").read_text().splitlines()
    by_id = {a["id"]: a["ground_truth"] for a in map(json.loads, answers)}
    return [(q, by_id[q["id"]]) for q in map(json.loads, questions)]


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="local")
    parser.add_argument("--per-category", type=int, default=20)
    parser.add_argument("--verbose", action="store_true")
    parser.add_argument("--no-choose-first", action="store_true", help="see local_actions.py")
    args = parser.parse_args()
    ast_checker = _checker()
    from bfcl_eval.constants.enums import Language

    options: dict[str, Any] = {"choose_first": False} if args.no_choose_first else {}
    config = lw.GenerateConfig(max_retries=0, max_tokens=400)
    model = lw.get_model(args.model, config=config, **options)
    await model.generate([lw.UserMessage(content="Hi")], config=lw.GenerateConfig(max_tokens=1))
    how = ", no choose-first" if args.no_choose_first else ""
    print(f"model: {model.name}, protocol: {model.tool_protocol.name}{how}")
    for category in CATEGORIES:
        right, seconds, items = 0, 0.0, _items(category, args.per_category)
        for item, answer in items:
            functions = item["function"]
            tools = [
                lw.ToolInfo(
                    name=f["name"].replace(".", "_"),
                    description=f.get("description", ""),
                    parameters=_schema(f["parameters"]),
                )
                for f in functions
            ]
            messages = [lw.UserMessage(content=m["content"]) for m in item["question"][0]]
            start = time.perf_counter()
            out = await model.generate(messages, tools)
            seconds += time.perf_counter() - start
            calls = [{c.function: c.arguments} for c in out.message.tool_calls]
            verdict = ast_checker(functions, calls, answer, Language.PYTHON, category, "local")
            right += bool(verdict["valid"])
            if args.verbose:
                print(f"  {'right' if verdict['valid'] else 'wrong'} {item['id']}: {calls}")
        n = len(items)
        print(f"{category}: {right}/{n} right, {seconds / max(1, n):.1f} s per item")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
