"""Dataset files: JSON Lines and CSV streamed record by record, a JSON list read whole.

A JSON Lines or CSV file is never read whole: its records are read as its samples are
used (see :class:`Dataset`), each line at most :data:`MAX_RECORD_BYTES` (a longer one is
an error naming it, found after reading that many bytes, not the whole line), so a
dataset of any size, or one holding a line of gigabytes, costs memory for the records in
use only, and ``--limit 10`` reads ten records. A JSON file holding a list is one
document, parsed whole: at most :data:`MAX_JSON_DOCUMENT_BYTES`.
"""

from __future__ import annotations

import codecs
import json
import os
import re
from collections.abc import Generator, Iterator, Mapping
from pathlib import Path
from typing import IO, Any

from ._dataset import Dataset, DatasetError, Fields, FieldSpec, _spec, _to_sample
from ._sample import Sample

__all__ = ["MAX_JSON_DOCUMENT_BYTES", "MAX_RECORD_BYTES", "csv_dataset", "json_dataset"]

MAX_RECORD_BYTES = 64 << 20
"""The longest line of a JSON Lines file, and the longest record of a CSV file (its
lines together), newline included: 64 MiB."""

MAX_JSON_DOCUMENT_BYTES = 256 << 20
"""The largest JSON file holding a list (read whole): 256 MiB. Write a larger dataset
as JSON Lines, which is streamed."""

_Place = tuple[int, int]  # (byte offset, line number) where a record starts


def _open(path: str | os.PathLike[str]) -> Path:
    p = Path(path)
    if not p.is_file():
        raise DatasetError(f"no dataset file at {str(p)!r}")
    return p


def _not_utf8(
    p: Path, ex: UnicodeDecodeError, offset: int = 0, line: int | None = None
) -> DatasetError:
    at = f"line {line}, " if line is not None else ""
    return DatasetError(
        f"{str(p)!r} is not UTF-8 text ({at}byte {offset + ex.start}: {ex.reason}); "
        "save it as UTF-8"
    )


def _too_deep(where: str) -> DatasetError:
    return DatasetError(f"{where}: JSON nested too deep to read")


def _stamp(f: IO[bytes]) -> tuple[int, ...]:
    """What says an open file is the one read before, as it was: the file (device and
    inode: not another renamed over it), its size and times, the change time too (which
    a write sets and nothing sets back: a copy keeping the modification time, ``cp -p``
    or ``rsync -a``, or a tool setting it back, changes it)."""
    st = os.fstat(f.fileno())
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


class _File:
    """A dataset file, checked unchanged each time it is opened again: a streamed
    dataset reads it again at the offsets it noted."""

    def __init__(self, p: Path) -> None:
        self.p = p
        with p.open("rb") as f:
            self.stamp = _stamp(f)
            self.size = os.fstat(f.fileno()).st_size
            self.data_start = 3 if f.read(3) == codecs.BOM_UTF8 else 0  # (a BOM is no text)

    def open(self) -> IO[bytes]:
        f = self.p.open("rb")
        if _stamp(f) != self.stamp:
            f.close()
            raise DatasetError(
                f"{str(self.p)!r} changed since it was first read; a dataset file must "
                "not change while its dataset is used"
            )
        return f

    def lines(
        self, f: IO[bytes], offset: int, line: int, cr: bool = False
    ) -> Iterator[tuple[int, int, str, int]]:
        """Each line from ``offset`` (line number ``line``): its offset, number, text and
        the offset after it. Lines end with ``\n`` (or ``\r\n``); with ``cr``, with a
        ``\r`` alone too (a CSV file's, as ``open(newline="")`` reads them)."""
        f.seek(offset)
        while read := _readline(f):
            if len(read) > MAX_RECORD_BYTES:
                raise DatasetError(
                    f"{self.p.name} line {line}: longer than {MAX_RECORD_BYTES} bytes "
                    "(MAX_RECORD_BYTES); a record is read whole, so it is bounded"
                )
            pieces = _CR.split(read) if cr and b"\r" in read[:-2] else (read,)
            for raw in pieces:
                if not raw:
                    continue
                try:
                    text = raw.decode("utf-8")
                except UnicodeDecodeError as ex:
                    raise _not_utf8(self.p, ex, offset, line) from None
                yield offset, line, text, offset + len(raw)
                offset, line = offset + len(raw), line + 1


_CR = re.compile(rb"(?<=\r)(?!\n)")  # after a \r ending a line alone


def _readline(f: IO[bytes], chunk: int = 1 << 20) -> bytes | bytearray:
    """The next line of ``f``, newline included, or its first ``MAX_RECORD_BYTES + 1``
    bytes if it is longer (never more: a line of gigabytes is not read whole)."""
    raw = f.readline(min(chunk, MAX_RECORD_BYTES + 1))
    if not raw or raw.endswith(b"\n"):
        return raw
    buf = bytearray(raw)
    while len(buf) <= MAX_RECORD_BYTES:
        more = f.readline(min(chunk, MAX_RECORD_BYTES + 1 - len(buf)))
        buf += more
        if not more or more.endswith(b"\n"):
            break
    return buf


def json_dataset(
    path: str | os.PathLike[str],
    *,
    fields: Fields = None,
    name: str | None = None,
) -> Dataset:
    """Samples from a JSON Lines file (one object per line) or a JSON file holding a list.

    A JSON Lines file is streamed (see :class:`Dataset`): its samples are read as they
    are used, and a line is at most :data:`MAX_RECORD_BYTES`; lines end with ``\n`` or
    ``\r\n`` (a ``\r`` alone, or a Unicode line separator, ends none). A JSON list is
    read whole (at most :data:`MAX_JSON_DOCUMENT_BYTES`).

    Args:
        path: The file (``.jsonl`` / ``.ndjson``: lines; otherwise a JSON list if it
            starts with ``[`` and parses as one document, else lines).
        fields: How records map to samples: a :class:`FieldSpec`, a mapping of its
            arguments (``{"input": "question", "target": "answer"}``), or a function
            ``record -> Sample``. Default: fields named ``input``, ``target``, ``id``,
            ``metadata``-worthy rest, ``files``.
        name: The dataset's name (default: the file's stem).
    """
    p = _open(path)
    if isinstance(fields, (FieldSpec, Mapping)) or fields is None:
        _spec(fields)  # (unknown names are an error before anything is read)
    file = _File(p)
    name = name or p.stem
    if p.suffix.lower() not in (".jsonl", ".ndjson"):
        listed = _json_list(file, fields, name)
        if listed is not None:
            return listed

    def read(offset: int, line: int) -> Generator[tuple[int, int, Sample], None, None]:
        with file.open() as f:
            for at, n, text, _ in file.lines(f, offset, line):
                if not text.strip():
                    continue
                where = f"{p.name} line {n}"
                try:
                    record = json.loads(text)
                except json.JSONDecodeError as ex:
                    raise DatasetError(f"{where}: not valid JSON: {ex}") from None
                except RecursionError:
                    raise _too_deep(where) from None
                yield at, n, _to_sample(record, fields, where, p.parent)

    return Dataset._streamed(read, (file.data_start, 1), name=name, location=str(p))


def _json_list(file: _File, fields: Fields, name: str) -> Dataset | None:
    """The dataset of a JSON file holding a list (read whole), or None for lines."""
    p = file.p
    with file.open() as f:
        f.seek(file.data_start)
        head = f.read(4096).lstrip()
        if head.startswith(b"{"):  # lines, unless one object spread over lines
            try:
                f.seek(file.data_start)
                json.loads(f.readline(MAX_RECORD_BYTES).decode("utf-8"))
                return None
            except (ValueError, RecursionError):  # (JSONDecodeError, UnicodeDecodeError)
                pass
        elif not head.startswith(b"["):
            return None
        if file.size > MAX_JSON_DOCUMENT_BYTES:
            raise DatasetError(
                f"{str(p)!r}: a JSON document larger than {MAX_JSON_DOCUMENT_BYTES} bytes "
                "(MAX_JSON_DOCUMENT_BYTES) is read whole; write the dataset as JSON Lines "
                "(one object a line, a .jsonl file), which is streamed"
            )
        f.seek(file.data_start)
        raw = f.read()
    try:
        data = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as ex:
        raise _not_utf8(p, ex, file.data_start) from None
    except json.JSONDecodeError:
        return None
    except RecursionError:
        raise _too_deep(p.name) from None
    if not isinstance(data, list):
        raise DatasetError(f"{str(p)!r}: a JSON dataset must hold a list of objects")
    samples = [
        _to_sample(r, fields, f"{p.name} item {i}", p.parent) for i, r in enumerate(data, start=1)
    ]
    return Dataset(samples, name=name, location=str(p))


def csv_dataset(
    path: str | os.PathLike[str],
    *,
    fields: Fields = None,
    name: str | None = None,
    delimiter: str = ",",
) -> Dataset:
    """Samples from a CSV file with a header row (every value is a string).

    The file is streamed (see :class:`Dataset`): its samples are read as they are used,
    and a record (its lines together) is at most :data:`MAX_RECORD_BYTES`; the header is
    read at once. Lines end with ``\\n``, ``\\r\\n`` or ``\\r`` (an old Mac's; such a
    file reads a record again from its place up to the next ``\\n``, up to
    :data:`MAX_RECORD_BYTES`: save a large one with ``\\n`` line ends). A ``target``
    cell may hold several acceptable answers as a JSON list (``["4", "four"]``), a
    ``files`` cell a JSON object. See :func:`json_dataset` for ``fields`` and ``name``.

    It is read strictly: a quote left open, text after a closing quote, or a row whose
    field count differs from the header's is an error naming the line where that row
    starts, not a sample made of whatever followed.
    """
    p = _open(path)
    file = _File(p)
    spec = _spec(fields) if isinstance(fields, (FieldSpec, Mapping)) or fields is None else None
    header, start = _Rows(file, delimiter).header()
    twice = next((c for i, c in enumerate(header) if c in header[:i]), None)
    if twice is not None:  # (one value would silently replace the other)
        raise DatasetError(f"{p.name} line 1: column {twice!r} appears twice")
    json_cells = (spec.target if spec else "target", list), (spec.files if spec else "files", dict)

    def read(offset: int, line: int) -> Generator[tuple[int, int, Sample], None, None]:
        for at, n, row in _Rows(file, delimiter).rows(offset, line):
            where = f"{p.name} line {n}"
            if len(row) != len(header):
                raise DatasetError(
                    f"{where}: {len(row)} field{'s' if len(row) != 1 else ''} where the "
                    f"header has {len(header)} (a quote left open, or a stray delimiter?)"
                )
            record: dict[str, Any] = dict(zip(header, row, strict=True))
            for column, kind in json_cells:
                cell = record.get(column)
                if isinstance(cell, str) and cell.startswith(("[", "{")):
                    try:
                        parsed = json.loads(cell)
                    except (json.JSONDecodeError, RecursionError):
                        parsed = None
                    if isinstance(parsed, kind):
                        record[column] = parsed
            yield at, n, _to_sample(record, fields, where, p.parent)

    return Dataset._streamed(read, start, name=name or p.stem, location=str(p))


class _Rows:
    """The rows of a CSV file from a place where one starts, through ``csv.reader`` fed
    line by line: each row's place, and a row over :data:`MAX_RECORD_BYTES` refused."""

    def __init__(self, file: _File, delimiter: str) -> None:
        self.file, self.delimiter = file, delimiter
        self.at: _Place = (file.data_start, 1)  # the place of the next line to read
        self.row_start: _Place = self.at

    def _feed(self, f: IO[bytes]) -> Iterator[str]:
        for _, line, text, end in self.file.lines(f, *self.at, cr=True):
            if end - self.row_start[0] > MAX_RECORD_BYTES:
                raise DatasetError(
                    f"{self.file.p.name} line {self.row_start[1]}: a record longer than "
                    f"{MAX_RECORD_BYTES} bytes (MAX_RECORD_BYTES)"
                )
            self.at = (end, line + 1)
            yield text

    def header(self) -> tuple[list[str], _Place]:
        """The header row and the place after it."""
        import csv

        with self.file.open() as f:
            reader = csv.reader(self._feed(f), delimiter=self.delimiter, strict=True)
            try:
                header = next(reader, None)
            except csv.Error as ex:
                raise DatasetError(f"{self.file.p.name} line 1: not valid CSV: {ex}") from None
        if not header:
            raise DatasetError(f"{str(self.file.p)!r}: the CSV file has no header row")
        return header, self.at

    def rows(self, offset: int, line: int) -> Iterator[tuple[int, int, list[str]]]:
        import csv

        self.at = (offset, line)
        with self.file.open() as f:
            reader = csv.reader(self._feed(f), delimiter=self.delimiter, strict=True)
            while True:
                start = self.row_start = self.at  # the place this row starts
                try:
                    row = next(reader, None)
                except csv.Error as ex:
                    hint = " (a quote left open?)" if "end of data" in str(ex) else ""
                    raise DatasetError(
                        f"{self.file.p.name} line {start[1]}: not valid CSV: {ex}{hint}"
                    ) from None
                if row is None:
                    return
                if row:  # (not a blank line)
                    yield start[0], start[1], row
