"""Versions of functions: stable across processes, changed by what changes behaviour."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from loopwright._versions import canonical, function_version

BASE = '''
import math

RATE = 0.5
UNUSED = 1

def helper(x):
    return x * RATE

def other(x):
    return x

def tool_fn(x: int) -> float:
    """Scale x."""
    return helper(x) + math.pi
'''


def version_in_process(tmp_path: Path, source: str, name: str = "tool_fn") -> str:
    """The version of ``name`` in a module with ``source``, computed in a fresh process."""
    folder = tmp_path / f"m{abs(hash(source))}"
    folder.mkdir(exist_ok=True)
    (folder / "usermod.py").write_text(textwrap.dedent(source))
    code = (
        f"import sys; sys.path.insert(0, {str(folder)!r}); import usermod; "
        "from loopwright._versions import function_version; "
        f"print(function_version(usermod.{name}))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    return out.stdout.strip()


def test_same_code_same_version_in_two_processes(tmp_path: Path) -> None:
    a = version_in_process(tmp_path, BASE)
    b = version_in_process(tmp_path / "..", BASE)
    assert a == b
    assert len(a) == 16


@pytest.mark.parametrize(
    ("change", "changes"),
    [
        (lambda s: s.replace("return x * RATE", "return x * RATE * 2"), True),  # a helper
        (lambda s: s.replace("RATE = 0.5", "RATE = 0.25"), True),  # a value it uses
        (lambda s: s.replace('"""Scale x."""', '"""Scale x twice."""'), True),  # description
        (lambda s: s.replace("+ math.pi", "- math.pi"), True),  # its own code
        (lambda s: s.replace("UNUSED = 1", "UNUSED = 2"), False),  # a value it doesn't use
        (lambda s: s.replace("return x\n", "return -x\n"), False),  # a function it doesn't call
        (lambda s: s.replace("    return helper", "    # why\n\n    return  helper"), False),
    ],
)
def test_what_changes_the_version(tmp_path: Path, change, changes: bool) -> None:  # type: ignore[no-untyped-def]
    before = version_in_process(tmp_path, BASE)
    after = version_in_process(tmp_path, change(BASE))
    assert (before != after) is changes


def test_closed_over_values_count() -> None:
    def make(limit: int):  # type: ignore[no-untyped-def]
        def check(x: int) -> bool:
            return x < limit

        return check

    assert function_version(make(3)) == function_version(make(3))
    assert function_version(make(3)) != function_version(make(4))


def test_an_object_without_a_stable_repr_counts_by_its_type() -> None:
    class Thing:
        pass

    def make(thing: Thing):  # type: ignore[no-untyped-def]
        def f() -> object:
            return thing

        return f

    assert function_version(make(Thing())) == function_version(make(Thing()))
    assert canonical(Thing()).startswith("<")


def test_recursion_and_huge_values_are_bounded() -> None:
    def loop(n: int) -> int:
        return loop(n - 1) if n else 0

    assert function_version(loop) == function_version(loop)
    big = list(range(100_000))

    def uses() -> int:
        return len(big)

    assert function_version(uses)  # no error, no 100k-item JSON
    assert canonical(big) == "<builtins.list>"


def test_a_loopwright_tool_has_the_version_of_its_function() -> None:
    import loopwright as lw

    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    assert function_version(lw.tool(add)) == function_version(add)


def test_canonical_is_order_free_for_sets_and_dicts() -> None:
    assert canonical({"b": 1, "a": 2}) == canonical({"a": 2, "b": 1})
    assert canonical({3, 1, 2}) == canonical({1, 2, 3})
    assert canonical(float("nan")) == "nan"
