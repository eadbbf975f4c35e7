"""Functions whose tool schemas the schema tests check (module level: hints resolve here)."""

# the corpus spells types the ways users do: Optional/Union, Field(...) defaults
# ruff: noqa: UP007, UP045, B008

from __future__ import annotations

import dataclasses
import datetime
import enum
from typing import Annotated, Any, Literal, NotRequired, Optional, Union

from pydantic import BaseModel, Field
from typing_extensions import TypedDict


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


class Point(BaseModel):
    """A point on the plane."""

    x: float
    y: float = Field(0.0, description="The vertical coordinate.")


class Tree(BaseModel):
    value: int
    children: list[Tree] = []


@dataclasses.dataclass
class Options:
    verbose: bool
    tags: list[str] = dataclasses.field(default_factory=list)


class Person(TypedDict):
    name: str
    age: NotRequired[int]
    home: Point


def no_params() -> str:
    """Say hello."""
    return "hello"


def scalars(s: str, i: int, f: float, b: bool) -> None:
    """Scalars.

    Args:
        s: A string.
        i: An integer.
        f: A float.
        b: A flag.
    """


def defaults(n: int = 5, name: str = "x", flag: bool = False, ratio: float = 0.5) -> None:
    """Defaults."""


def optionals(a: Optional[int], b: int | None = None, c: Union[int, str] = 1) -> None:
    """Optionals and unions."""


def containers(
    a: list[int],
    b: tuple[int, str],
    c: tuple[int, ...],
    d: set[str],
    e: dict[str, int],
    f: list[list[str]],
    g: frozenset[int] = frozenset(),
) -> None:
    """Containers."""


def literals(mode: Literal["fast", "slow"], level: Literal[1, 2, 3] = 1) -> None:
    """Literals."""


def enums(color: Color, level: Level = Level.LOW) -> None:
    """Enums."""


def times(
    when: datetime.datetime, day: datetime.date, at: datetime.time, span: datetime.timedelta
) -> None:
    """Dates and times."""


def models(point: Point, tree: Tree, options: Options, person: Person) -> None:
    """Structured parameters.

    Args:
        point: Where.
        tree: A tree.
        options: How.
        person: Who.
    """


def optional_model(start: Point, end: Optional[Point] = None) -> None:
    """The same model twice, once optional."""


def annotated(
    count: Annotated[int, Field(ge=0, le=10, description="How many (0-10).")],
    word: Annotated[str, Field(min_length=1, max_length=20)] = "hi",
) -> None:
    """Annotated fields.

    Args:
        count: Overridden by the Field's description.
        word: A word.
    """


def field_defaults(
    query: str = Field(description="What to look for."),
    limit: int = Field(10, description="The most results.", gt=0),
    tags: list[str] = Field(default_factory=list, description="Filters."),
) -> None:
    """Field defaults."""


def var_args(first: str, *args: int, last: bool = True, **kwargs: str) -> None:
    """Star arguments are not part of the schema.

    Args:
        first: The first.
        *args: Extra positional values (ignored).
        last: The last.
        **kwargs: Extra named values (ignored).
    """


def kinds(a: int, /, b: int, *, c: int = 3) -> int:
    """Positional-only, normal and keyword-only parameters."""
    return a + b + c


def untyped(a, b=2):  # type: ignore[no-untyped-def]
    """No annotations: any value."""
    return a


def anything(x: Any, y: object = None) -> None:
    """Any and object."""


async def async_tool(url: str, retries: int = 3) -> str:
    """Fetch a page.

    Args:
        url: The address.
        retries: How often to retry.
    """
    return url


def google_style(path: str, depth: int = 1) -> None:
    """List a directory.

    Shows files and folders, one per line. The listing
    can be long.

    Args:
        path: The directory to list,
            relative to the working directory.
        depth (int): How deep to go.

    Returns:
        The listing.

    Raises:
        FileNotFoundError: When the directory does not exist.
    """


def numpy_style(path: str, depth: int = 1) -> None:
    """List a directory.

    Shows files and folders, one per line.

    Parameters
    ----------
    path : str
        The directory to list.
    depth : int, optional
        How deep to go.

    Returns
    -------
    str
        The listing.
    """


def rest_style(path: str, depth: int = 1) -> None:
    """List a directory.

    Shows files and folders, one per line.

    :param path: The directory to list.
    :param depth: How deep to go.
    :type depth: int
    :returns: The listing.
    """


def epydoc_style(path: str, depth: int = 1) -> None:
    """List a directory.

    Shows files and folders, one per line.

    @param path: The directory to list.
    @param depth: How deep to go.
    @return: The listing.
    """


def no_docstring(a: int) -> int:
    return a
