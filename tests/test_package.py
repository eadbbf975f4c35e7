"""The public package: every exported name resolves, lazily, to the right object."""

import subprocess
import sys
import types

import pytest

import loopwright as lw


def test_every_exported_name_resolves_and_none_is_a_module() -> None:
    for name in lw.__all__:
        value = getattr(lw, name)
        assert not isinstance(value, types.ModuleType), name
    assert set(lw.__all__) <= set(dir(lw))


def test_dir_shows_the_public_api_only() -> None:
    shown = dir(lw)
    for helper in ("sys", "types", "importlib", "TYPE_CHECKING", "annotations"):
        assert helper not in shown
    assert not [name for name in shown if name.startswith("_") and name != "__version__"]
    assert shown == sorted(lw.__all__)


def test_unknown_names_raise_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no_such_thing"):
        lw.no_such_thing  # type: ignore[attr-defined]  # noqa: B018


def run_python(code: str) -> str:
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    return out.stdout.strip()


def test_import_loads_no_optional_or_deferred_module() -> None:
    loaded = run_python(
        "import sys, loopwright\n"
        "heavy = ('openai', 'anthropic', 'llama_cpp', 'rich', 'jinja2', 'click', 'sqlite3',"
        " 'loopwright.log', 'loopwright.eval', 'loopwright.sandbox', 'loopwright.cli')\n"
        "print(','.join(m for m in heavy if m in sys.modules))"
    )
    assert loaded == ""


def test_functions_named_like_their_modules_stay_functions() -> None:
    # importing the module first (as other parts do) must not replace the function
    out = run_python(
        "import loopwright.store, loopwright.eval, loopwright.sandbox\n"
        "import loopwright as lw\n"
        "print(callable(lw.store), callable(lw.eval), callable(lw.sandbox),"
        " type(lw.store).__name__)"
    )
    assert out == "True True True function"


def test_lazy_names_are_those_the_type_checkers_see() -> None:
    """Each lazily loaded name is imported under TYPE_CHECKING from the module the lazy
    table names, and exported."""
    import ast
    from pathlib import Path

    tree = ast.parse(Path(lw.__file__).read_text(encoding="utf-8"))
    [block] = [
        n for n in tree.body if isinstance(n, ast.If) and ast.unparse(n.test) == "TYPE_CHECKING"
    ]
    seen: dict[str, str] = {}
    for node in ast.walk(block):
        if isinstance(node, ast.ImportFrom):
            module = "loopwright." + (node.module or "")
            for alias in node.names:
                seen[alias.asname or alias.name] = module
    assert seen == lw._LAZY  # type: ignore[attr-defined]
    assert set(lw._LAZY) <= set(lw.__all__)  # type: ignore[attr-defined]
