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
        " 'loopwright.log', 'loopwright.evals', 'loopwright.cli', 'loopwright.sandboxes',"
        " 'loopwright.model', 'loopwright.agents', 'loopwright.viewer', 'loopwright.otel',"
        " 'starlette', 'uvicorn', 'ray', 'opentelemetry', 'loopwright.mcp', 'mcp')\n"
        "print(','.join(m for m in heavy if m in sys.modules))"
    )
    assert loaded == ""


def test_the_agent_parts_load_without_the_sandboxes() -> None:
    """Running an agent needs the model, tools and agents parts, not the sandboxes
    (the sandbox tools load them when asked for)."""
    loaded = run_python(
        "import sys, loopwright as lw\n"
        "lw.run, lw.react, lw.submit, lw.think\n"
        "print('loopwright.agents' in sys.modules, 'loopwright.sandboxes' in sys.modules)\n"
        "from loopwright.tools.builtin import bash\n"
        "print(callable(bash), 'loopwright.sandboxes' in sys.modules)"
    )
    assert loaded.splitlines() == ["True False", "True True"]


def test_no_public_name_shares_its_name_with_a_module_of_its_package() -> None:
    """``import loopwright.x`` always gives the module: no package exports a function or
    object named like one of its own modules or subpackages (at any level)."""
    import importlib
    import pkgutil

    clashes = []
    for info in pkgutil.walk_packages(lw.__path__, "loopwright."):
        if not info.ispkg:
            continue
        package = importlib.import_module(info.name)
        children = {m.name for m in pkgutil.iter_modules(package.__path__)}
        clashes += [f"{info.name}.{n}" for n in getattr(package, "__all__", ()) if n in children]
    children = {m.name for m in pkgutil.iter_modules(lw.__path__)}
    clashes += [f"loopwright.{n}" for n in lw.__all__ if n in children]
    assert clashes == []


def test_importing_a_subpackage_leaves_the_function_of_the_same_word() -> None:
    out = run_python(
        "import loopwright.stores, loopwright.evals, loopwright.sandboxes, loopwright.tools\n"
        "import loopwright as lw\n"
        "print(callable(lw.store), callable(lw.eval), callable(lw.sandbox), callable(lw.tool),"
        " type(lw.store).__name__, type(loopwright.tools).__name__)"
    )
    assert out == "True True True True function module"


def test_every_lazy_name_is_exported_and_resolves_to_its_module() -> None:
    """The TYPE_CHECKING block is the one table of lazy names: each is exported and
    loads from the module it names."""
    table = lw._lazy_table()  # type: ignore[attr-defined]
    assert "Store" in table and "eval" in table
    assert set(table) <= set(lw.__all__)
    for name, module in table.items():
        assert getattr(lw, name) is getattr(sys.modules[module], name)
