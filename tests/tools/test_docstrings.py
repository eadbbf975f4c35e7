"""Descriptions from docstrings: styles, wrapping, and what is left out."""

from __future__ import annotations

import docstring_parser
import pytest

from loopwright.tools._docstrings import Docstring, parse_docstring


def test_no_docstring() -> None:
    def f() -> None:
        pass

    assert parse_docstring(f) == Docstring()


def test_google_with_types_multiline_and_star_params() -> None:
    def f() -> None:
        """Run a query
        against the index.

        The index is rebuilt
        nightly.

        - results are ranked
        - at most 100 are returned

        Args:
            query (str): What to
                look for.
            *args: Extra terms.
            **kwargs: Options.

        Returns:
            The hits.

        Example:
            >>> f()
        """

    doc = parse_docstring(f)
    assert doc.description == (
        "Run a query against the index.\n\n"
        "The index is rebuilt nightly.\n\n"
        "- results are ranked\n- at most 100 are returned"
    )
    assert doc.params == {
        "query": "What to look for.",
        "args": "Extra terms.",
        "kwargs": "Options.",
    }


def test_numpy_and_rest_and_epydoc_params() -> None:
    def numpy() -> None:
        """Sum.

        Parameters
        ----------
        a : int
            First.
        b : int, optional
            Second,
            wrapped.
        """

    def rest() -> None:
        """Sum.

        :param int a: First.
        :param b: Second.
        :type b: int
        """

    def epydoc() -> None:
        """Sum.

        @param a: First.
        @param b: Second.
        """

    assert parse_docstring(numpy) == Docstring("Sum.", {"a": "First.", "b": "Second, wrapped."})
    assert parse_docstring(rest) == Docstring("Sum.", {"a": "First.", "b": "Second."})
    assert parse_docstring(epydoc) == Docstring("Sum.", {"a": "First.", "b": "Second."})


def test_indented_blocks_keep_their_lines() -> None:
    def f() -> None:
        """Format code.

        For example::

            x = 1
            y = 2
        """

    assert parse_docstring(f).description == "Format code.\n\nFor example::\n\n    x = 1\n    y = 2"


def test_unparseable_docstring_becomes_the_description(monkeypatch: pytest.MonkeyPatch) -> None:
    def f() -> None:
        """Something odd.
        Really odd."""

    def fail(text: str) -> None:
        raise docstring_parser.ParseError("no")

    monkeypatch.setattr(docstring_parser, "parse", fail)
    assert parse_docstring(f) == Docstring("Something odd. Really odd.")
