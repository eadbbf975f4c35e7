"""The import map is true: no part of loopwright imports a part above it.

``LAYERS`` is the one place the order is written (``docs/architecture.md`` points here):
the parts from the bottom up, and a part may import the parts before it in the list (and
itself), never one after it. Every import counts — at module level, inside a function
(a lazy import is still a dependency) and under ``TYPE_CHECKING`` (an annotation that
names a part above is a design dependency too). Strings that a registry imports later
(``"name": "loopwright.x:factory"``) are not imports: a registry may point anywhere,
which is how a lower part finds a plug-in that lives above it.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import loopwright

SRC = Path(loopwright.__file__).parent

#: The parts, bottom up. A part is a top-level module or subpackage of ``loopwright``;
#: ``"_*"`` stands for every private top-level module (the shared helpers).
LAYERS: tuple[str, ...] = (
    "_*",
    "stores",
    "model",  # with model/protocols/ and model/providers/
    "limits",
    "sandboxes",
    "tools",
    "history",
    "transcripts",
    "approval",
    "log",
    "agents",
    "runtime",
    "mcp",  # MCP servers' tools as tools (client), tools and agents served (server)
    "display",
    "evals",
    "otel",
    "viewer",
    "cli",
    "__init__",  # and __main__.py
)

#: Imports that point up the order on purpose: (importing module, imported part) -> why.
#: Keep this tiny; each entry is a design question still open.
EXCEPTIONS: dict[tuple[str, str], str] = {}


def _part(module: str) -> str:
    """The part a ``loopwright...`` module name belongs to."""
    names = module.split(".")
    if len(names) == 1:
        return "__init__"
    top = names[1]
    if top == "__main__":
        return "__init__"
    if top.startswith("_"):
        return "_*"
    return top


def _module_name(path: Path) -> str:
    relative = path.relative_to(SRC.parent).with_suffix("")
    names = list(relative.parts)
    if names[-1] == "__init__":
        names.pop()
    return ".".join(names)


def _imports(path: Path) -> list[tuple[int, str]]:
    """Every ``loopwright...`` module ``path`` imports, with the line, resolved."""
    module = _module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    return _imports_in(path.read_text(encoding="utf-8"), package)


def _imports_in(source: str, package: str) -> list[tuple[int, str]]:
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if node.module is None or target == "loopwright":
                # ``from . import x`` / ``from loopwright import x``: x may be a module
                found += [(node.lineno, f"{target}.{alias.name}") for alias in node.names]
            else:
                found.append((node.lineno, target))
    return [(line, name) for line, name in found if name.split(".")[0] == "loopwright"]


def _rank(part: str) -> int:
    return LAYERS.index(part)


def upward_imports() -> list[str]:
    problems = []
    for path in sorted(SRC.rglob("*.py")):
        module = _module_name(path)
        own = _part(module)
        for line, target in _imports(path):
            other = _part(target)
            if other not in LAYERS and target.count(".") == 1:
                # ``from loopwright import name``: a name of the top-level API
                other = "__init__"
            if _rank(other) > _rank(own) and (module, other) not in EXCEPTIONS:
                where = path.relative_to(SRC.parent)
                problems.append(f"{where}:{line}: {own} imports {target} ({other} is above)")
    return problems


def test_every_part_is_in_the_order() -> None:
    parts = {_part(_module_name(path)) for path in SRC.rglob("*.py")}
    assert parts <= set(LAYERS), f"parts missing from LAYERS: {sorted(parts - set(LAYERS))}"


def test_no_part_imports_a_part_above_it() -> None:
    problems = upward_imports()
    assert not problems, "imports pointing up the order:\n" + "\n".join(problems)


def test_exceptions_are_still_needed() -> None:
    used = {
        (_module_name(path), _part(target))
        for path in SRC.rglob("*.py")
        for _, target in _imports(path)
    }
    stale = set(EXCEPTIONS) - used
    assert not stale, f"exceptions no longer needed, remove them: {sorted(stale)}"


def test_the_walk_sees_lazy_and_type_checking_imports() -> None:
    """The checker itself: imports in functions and under TYPE_CHECKING are found."""
    source = (
        "from typing import TYPE_CHECKING\n"
        "from . import mock\n"
        "if TYPE_CHECKING:\n    from ...agents import Agent\n"
        "def f():\n    from ...log import load_run\n    import loopwright.cli\n"
    )
    names = [name for _, name in _imports_in(source, "loopwright.model.providers")]
    assert names == [
        "loopwright.model.providers.mock",
        "loopwright.agents",
        "loopwright.log",
        "loopwright.cli",
    ]


def test_the_documented_table_lists_the_parts_in_this_order() -> None:
    """``docs/architecture.md``'s parts table is the readable copy of ``LAYERS``."""
    doc = Path(__file__).parents[1] / "docs" / "architecture.md"
    section = doc.read_text(encoding="utf-8").split("## The parts", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `([^`]+)`", section, re.MULTILINE)
    parts = []
    for cell in rows:
        name = cell.removesuffix("/").removesuffix(".py")
        if "/" in name:
            continue  # model/protocols/, model/providers/: inside model
        part = "_*" if name.startswith("_") and name != "__init__" else name
        if part not in parts:
            parts.append(part)
    assert tuple(parts) == LAYERS
