"""Every jsonschema validator loopwright builds is given a registry of its own.

Built without one, a validator resolves a ``$ref`` or ``$dynamicRef`` to a URL with
jsonschema's default registry, which fetches it: a schema from elsewhere (an MCP
server's, a model's) would make this process open any URL. So every construction in
``src/loopwright`` must say ``registry=`` (an empty ``referencing.Registry()``). This
reads the source's syntax trees (not its text) for what builds a validator:

- a ``Draft*Validator`` class of jsonschema called (by whatever name it was imported as);
- a class made by ``validator_for(...)``, ``extend(...)`` or ``create(...)`` called, or
  a name or attribute bound to one (``cls = validator_for(schema); cls(schema)``), or
  what a function of loopwright that returns one returns (in any module);
- ``jsonschema.validate(...)`` (it builds one from its keyword arguments);
- ``.evolve(...)`` on anything that is not a module (a validator's copy).

``iter_errors``, ``is_valid`` and ``validate`` on a fresh validator are calls on one of
these constructions, so they are caught with it. A construction through ``**kwargs``
counts as one without a registry: it cannot be read.
"""

from __future__ import annotations

import ast
import re
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import loopwright

SRC = Path(loopwright.__file__).parent
_MAKERS = frozenset({"validator_for", "extend", "create"})
_DRAFT = re.compile(r"Draft\w*Validator")


@dataclass
class _Module:
    """A module's syntax, read once: the scan goes over it until it learns nothing new."""

    name: str  # loopwright.tools._schema_spec
    package: str  # what its relative imports are relative to
    tree: ast.Module
    aliases: dict[str, str] = field(default_factory=dict)  # imported name -> qualified
    assigns: list[tuple[list[ast.expr], ast.expr]] = field(default_factory=list)
    returns: list[tuple[str, list[ast.expr]]] = field(default_factory=list)
    calls: list[ast.Call] = field(default_factory=list)

    def __post_init__(self) -> None:
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Call):
                self.calls.append(node)
            elif isinstance(node, ast.Assign):
                self.assigns.append((node.targets, node.value))
            elif isinstance(node, ast.AnnAssign) and node.value is not None:
                self.assigns.append(([node.target], node.value))
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                values = [r.value for r in _own_returns(node) if r.value is not None]
                if values:
                    self.returns.append((node.name, values))
            elif isinstance(node, ast.Import | ast.ImportFrom):
                self._imported(node)

    def _imported(self, node: ast.Import | ast.ImportFrom) -> None:
        """What each name an import binds stands for (wherever in the module it is)."""
        if isinstance(node, ast.Import):
            for a in node.names:  # import a.b as c: c is a.b; import a.b: a is a
                top = a.name.split(".")[0]
                self.aliases[a.asname or top] = a.name if a.asname else top
            return
        base = node.module or ""
        if node.level:
            parts = self.package.split(".")
            parts = parts[: len(parts) - node.level + 1]
            base = ".".join(parts + ([base] if base else []))
        for a in node.names:
            self.aliases[a.asname or a.name] = f"{base}.{a.name}"


def _own_returns(function: ast.FunctionDef | ast.AsyncFunctionDef) -> Iterator[ast.Return]:
    """The ``return`` statements of ``function`` itself (not of functions inside it)."""
    todo: list[ast.AST] = list(function.body)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Return):
            yield node
        elif not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            todo.extend(ast.iter_child_nodes(node))


class _Scanner:
    def __init__(self, modules: list[_Module]) -> None:
        self.modules = modules
        self.producers: set[str] = set()  # loopwright functions returning a validator class
        self.bound: dict[str, set[str]] = {}  # module -> targets bound to a validator class
        for _ in range(5):  # until nothing new (a producer may call another)
            before = len(self.producers) + sum(len(v) for v in self.bound.values())
            for m in modules:
                self._learn(m)
            if before == len(self.producers) + sum(len(v) for v in self.bound.values()):
                break

    def qualified(self, m: _Module, node: ast.expr) -> str | None:
        if isinstance(node, ast.Name):
            if node.id in m.aliases:
                return m.aliases[node.id]
            return f"{m.name}.{node.id}"
        if isinstance(node, ast.Attribute):
            base = self.qualified(m, node.value)
            return None if base is None else f"{base}.{node.attr}"
        return None

    def is_class(self, m: _Module, node: ast.expr) -> bool:
        """Whether ``node`` is a jsonschema validator class."""
        if isinstance(node, ast.Call):
            name = self.qualified(m, node.func)
            if name is None:
                return False
            if name.startswith("jsonschema") and name.rpartition(".")[2] in _MAKERS:
                return True
            return name in self.producers
        name = self.qualified(m, node)
        if name is not None and name.startswith("jsonschema"):
            return bool(_DRAFT.fullmatch(name.rpartition(".")[2]))
        return ast.unparse(node) in self.bound.get(m.name, set())

    def _learn(self, m: _Module) -> None:
        bound = self.bound.setdefault(m.name, set())
        for targets, value in m.assigns:
            if self.is_class(m, value):
                bound.update(ast.unparse(t) for t in targets)
        for name, values in m.returns:
            if any(self.is_class(m, v) for v in values):
                self.producers.add(f"{m.name}.{name}")

    def constructions(self, m: _Module) -> Iterator[tuple[int, str, bool]]:
        """(line, source, whether it names a registry) of each validator built."""
        for node in m.calls:
            func = node.func
            name = self.qualified(m, func)
            builds = self.is_class(m, func)
            builds = builds or name in ("jsonschema.validate", "jsonschema.validators.validate")
            if isinstance(func, ast.Attribute) and func.attr == "evolve":
                root = func.value
                while isinstance(root, ast.Attribute):
                    root = root.value
                # (attrs.evolve(x), a module's function, is no validator's copy)
                builds = builds or not (isinstance(root, ast.Name) and root.id in m.aliases)
            if builds:
                registry = any(
                    k.arg == "registry"
                    and not (isinstance(k.value, ast.Constant) and k.value.value is None)
                    for k in node.keywords
                )
                yield node.lineno, ast.unparse(node)[:120], registry


def _scan(sources: dict[str, str]) -> list[tuple[str, int, str, bool]]:
    """The constructions in ``sources`` (module name: text; a package's own module is
    named ``package.__init__``)."""
    modules = []
    for name, text in sources.items():
        tree = ast.parse(text)
        module = name.removesuffix(".__init__")
        package = module if module != name else module.rpartition(".")[0]
        modules.append(_Module(module, package, tree))
    scanner = _Scanner(modules)
    return [(m.name, *c) for m in modules for c in scanner.constructions(m)]


def _sources() -> dict[str, str]:
    out = {}
    for path in sorted(SRC.rglob("*.py")):
        parts = path.relative_to(SRC.parent).with_suffix("").parts
        out[".".join(parts)] = path.read_text("utf-8")
    return out


def test_every_validator_loopwright_builds_names_a_registry() -> None:
    sources = _sources()
    found = _scan(sources)
    missing = [f"{m}:{line}: {text}" for m, line, text, registry in found if not registry]
    assert not missing, "validators built without registry=:\n" + "\n".join(missing)
    # what the scan must see: the schema tools' validator (a class extend() made, by a
    # function of the module, called through a local name) and the local model's
    built = {(m, text.split("(")[0]) for m, _, text, _ in found}
    assert ("loopwright.tools._schema_spec", "cls") in built, found
    assert ("loopwright.model.providers._grammar", "jsonschema.Draft202012Validator") in built
    # and the same sources without the schema tools' registry fail
    name = "loopwright.tools._schema_spec"
    assert sources[name].count(", registry=Registry())") == 1
    sources[name] = sources[name].replace(", registry=Registry())", ")")
    assert [(m, t) for m, _, t, registry in _scan(sources) if not registry] == [
        (name, "cls(parameters)")
    ]


SYNTHETIC = """
import jsonschema
import jsonschema.validators as jv
from jsonschema import Draft7Validator as D7, validate
from jsonschema.validators import extend, validator_for
from referencing import Registry

from .other import made_elsewhere


def direct(s):
    return jsonschema.Draft202012Validator(s).iter_errors({})


def chosen(s):
    return validator_for(s)(s)


def checked(s):
    jsonschema.validate({}, s)
    validate({}, s, registry=None)


def copied(v, s):
    return v.evolve(schema=s)


def _cls(s):
    return extend(jv.validator_for(s))


def through_a_name(s):
    cls = _cls(s)
    return cls(s).is_valid({})


class Holder:
    def __init__(self, s, options):
        self._cls = D7
        self.v = self._cls(s, **options)


def across_modules(s):
    return made_elsewhere(s)(s)


def fine(s, items):
    items.extend([1])  # not jsonschema's extend
    jsonschema.Draft202012Validator(s, registry=Registry())
    validator_for(s)(s, registry=Registry()).evolve(schema=s, registry=Registry())
    validate({}, s, registry=Registry())
    return D7.check_schema(s)
"""


def test_the_scan_finds_each_way_of_building_a_validator_without_a_registry() -> None:
    other = "from jsonschema.validators import create\n\ndef made_elsewhere(s):\n"
    other += "    return create({})\n"
    found = _scan({"pkg.mod": textwrap.dedent(SYNTHETIC), "pkg.other": other})
    without = sorted(text for _, _, text, registry in found if not registry)
    assert without == sorted(
        [
            "cls(s)",
            "jsonschema.Draft202012Validator(s)",
            "jsonschema.validate({}, s)",
            "made_elsewhere(s)(s)",
            "self._cls(s, **options)",
            "v.evolve(schema=s)",
            "validate({}, s, registry=None)",
            "validator_for(s)(s)",
        ]
    ), without
    with_registry = [text for _, _, text, registry in found if registry]
    assert len(with_registry) == 4, with_registry
