"""Datasets: samples from lists, JSONL/JSON files and CSV files, with field mapping."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from dataclasses import fields as dataclass_fields
from pathlib import Path
from typing import Any, TypeAlias, overload

from pydantic import ValidationError

from .._errors import ConfigurationError
from ._sample import Sample

__all__ = [
    "Dataset",
    "DatasetError",
    "FieldSpec",
    "RecordToSample",
    "as_dataset",
    "csv_dataset",
    "json_dataset",
]


class DatasetError(ConfigurationError):
    """A dataset could not be read, or one of its records is not a valid sample."""


@dataclass(frozen=True)
class FieldSpec:
    """Which record fields make a :class:`Sample`.

    Attributes:
        input: The field holding the input.
        target: The field holding the target ("" when the record has none).
        id: The field holding the id (items without one are numbered from 1).
        metadata: Fields copied into ``metadata`` (default: every field not used above).
        files: The field holding a ``{path: contents}`` object (JSON datasets).
    """

    input: str = "input"
    target: str = "target"
    id: str = "id"
    metadata: Sequence[str] | None = None
    files: str = "files"
    _used: frozenset[str] = field(init=False, repr=False, default=frozenset())

    def __post_init__(self) -> None:
        object.__setattr__(self, "_used", frozenset({self.input, self.target, self.id, self.files}))


RecordToSample: TypeAlias = Callable[[Mapping[str, Any]], Sample | Mapping[str, Any]]
"""A function turning one record (a JSON object, a CSV row) into a :class:`Sample`."""

Fields: TypeAlias = FieldSpec | Mapping[str, Any] | RecordToSample | None


class Dataset(Sequence[Sample]):
    """An ordered collection of samples with unique ids.

    Build one with :func:`as_dataset`, :func:`json_dataset` or :func:`csv_dataset`
    (``Task`` accepts a plain list too).

    Attributes:
        name: A name for listings (the file's stem for file datasets).
        location: Where it was read from, if anywhere.
    """

    def __init__(
        self,
        samples: Iterable[Sample],
        *,
        name: str | None = None,
        location: str | None = None,
    ) -> None:
        self.samples = list(samples)
        self.name = name
        self.location = location
        seen: set[str] = set()
        for i, s in enumerate(self.samples, start=1):
            if s.id is None:
                s.id = i
            key = str(s.id)
            if key in seen:
                raise DatasetError(
                    f"dataset {name or ''!r}: sample id {key!r} appears twice; ids must be "
                    "unique (they identify samples in the run store and for --resume)"
                )
            seen.add(key)

    def __repr__(self) -> str:
        return f"Dataset({self.name!r}, {len(self.samples)} samples)"

    def __len__(self) -> int:
        return len(self.samples)

    @overload
    def __getitem__(self, index: int) -> Sample: ...
    @overload
    def __getitem__(self, index: slice) -> Dataset: ...
    def __getitem__(self, index: int | slice) -> Sample | Dataset:
        if isinstance(index, slice):
            return Dataset(self.samples[index], name=self.name, location=self.location)
        return self.samples[index]

    def __iter__(self) -> Iterator[Sample]:
        return iter(self.samples)

    def filter(self, predicate: Callable[[Sample], bool]) -> Dataset:
        """The samples for which ``predicate(sample)`` is true."""
        return Dataset(
            [s for s in self.samples if predicate(s)], name=self.name, location=self.location
        )


def _to_sample(record: Any, fields: Fields, where: str, base: Path | None) -> Sample:
    try:
        if isinstance(record, Sample):
            return record
        if isinstance(record, str):
            return Sample(input=record)
        if not isinstance(record, Mapping):
            raise DatasetError(
                f"{where}: expected an object (a mapping), got {type(record).__name__}"
            )
        if callable(fields) and not isinstance(fields, FieldSpec):
            made = fields(record)
            sample = made if isinstance(made, Sample) else Sample.model_validate(made)
        else:
            sample = _from_spec(record, _spec(fields), where)
    except ValidationError as ex:
        raise DatasetError(f"{where}: not a valid sample: {ex}") from None
    if base is not None and any(v.startswith("file:") for v in sample.files.values()):
        sample.files = {k: _read_file(v, base, where) for k, v in sample.files.items()}
    return sample


def _from_spec(record: Mapping[str, Any], spec: FieldSpec, where: str) -> Sample:
    if spec.input not in record:
        fields = ", ".join(map(repr, record)) or "none"
        raise DatasetError(
            f"{where}: no {spec.input!r} field (fields: {fields}); map fields with "
            f"fields=FieldSpec(input=..., target=...)"
        )
    target = record.get(spec.target, "")
    if target is None:
        target = ""
    elif isinstance(target, list):
        target = [_as_text(t) for t in target]
    else:
        target = _as_text(target)
    if spec.metadata is None:
        metadata = {k: v for k, v in record.items() if k not in spec._used}
    else:
        metadata = {k: record[k] for k in spec.metadata if k in record}
    raw_id = record.get(spec.id)
    return Sample(
        input=record[spec.input],
        target=target,
        id=raw_id if raw_id not in (None, "") else None,
        metadata=metadata,
        files=record.get(spec.files) or {},
    )


def _as_text(value: Any) -> str:
    """A target as text: a string as it is, anything else as JSON (``{"a": 1}``,
    ``true``), which ``result_match`` reads back (a Python repr it could not)."""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):  # (a record from Python, not JSON)
        return str(value)


MAX_SAMPLE_FILE_BYTES = 64 << 20
"""The largest file a dataset's ``"file:PATH"`` may name (64 MiB)."""


def _opened_inside(fd: int, folder: Path) -> bool:
    """Whether the file open on ``fd`` is in ``folder``: what was opened, not the name
    checked before (a part of it may have been replaced by a link in between). Where
    the system cannot say (no ``/proc``), the check of the name stands."""
    try:
        opened = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return True
    return Path(opened).is_relative_to(folder)


def _read_file(value: str, base: Path, where: str) -> str:
    """The text of the file ``value`` names (``file:PATH``), which must be a regular
    file inside the dataset's folder ``base``: a dataset is data from anywhere, and what
    it names goes into a sandbox the model reads (the host's ``/proc/self/environ``
    holds its API keys); a device or FIFO would never end."""
    if not value.startswith("file:"):
        return value
    shown = value[5:]
    if "\x00" in shown:  # (the path functions raise a bare ValueError on it)
        raise DatasetError(f"{where}: sample file {shown!r}: a file name holds no NUL byte")
    folder = base.resolve()
    path = (folder / shown).resolve()  # (links followed: a link out is outside too)
    if not path.is_relative_to(folder):
        raise DatasetError(
            f"{where}: sample file {shown!r} is outside the dataset's folder; put it "
            "there (it is read relative to the dataset file)"
        )
    try:
        # (not blocking: opening a FIFO would wait for a writer; no effect on a file)
        with os.fdopen(os.open(path, os.O_RDONLY | os.O_NONBLOCK), "rb") as f:
            if not _opened_inside(f.fileno(), folder):  # (swapped for a link meanwhile)
                raise DatasetError(
                    f"{where}: sample file {shown!r} is outside the dataset's folder"
                )
            st = os.fstat(f.fileno())
            if not stat.S_ISREG(st.st_mode):
                raise DatasetError(f"{where}: sample file {shown!r} is not a regular file")
            data = f.read(MAX_SAMPLE_FILE_BYTES + 1)
    except OSError as ex:
        raise DatasetError(f"{where}: cannot read sample file {shown!r}: {ex}") from None
    if len(data) > MAX_SAMPLE_FILE_BYTES:
        raise DatasetError(
            f"{where}: sample file {shown!r} is larger than {MAX_SAMPLE_FILE_BYTES} bytes"
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as ex:
        raise DatasetError(
            f"{where}: sample file {shown!r} is not UTF-8 text (byte {ex.start}: {ex.reason})"
        ) from None


def as_dataset(
    items: Dataset | Iterable[Sample | Mapping[str, Any] | str],
    *,
    fields: Fields = None,
    name: str | None = None,
) -> Dataset:
    """A dataset from samples, records (mappings, mapped by ``fields``) or input strings."""
    if isinstance(items, Dataset):
        return items
    if isinstance(items, (str, bytes, Mapping)):
        raise DatasetError(
            "a dataset must be a list of samples or records, not a single "
            f"{type(items).__name__} (for a file use json_dataset() or csv_dataset())"
        )
    samples = [_to_sample(r, fields, f"item {i}", None) for i, r in enumerate(items, start=1)]
    return Dataset(samples, name=name)


def _open(path: str | os.PathLike[str]) -> Path:
    p = Path(path)
    if not p.is_file():
        raise DatasetError(f"no dataset file at {str(p)!r}")
    return p


def _not_utf8(p: Path, ex: UnicodeDecodeError) -> DatasetError:
    return DatasetError(
        f"{str(p)!r} is not UTF-8 text (byte {ex.start}: {ex.reason}); save it as UTF-8"
    )


def _too_deep(where: str) -> DatasetError:
    return DatasetError(f"{where}: JSON nested too deep to read")


def _spec(fields: FieldSpec | Mapping[str, Any] | None) -> FieldSpec:
    """``fields`` as a :class:`FieldSpec` (a mapping holds its arguments)."""
    if isinstance(fields, FieldSpec):
        return fields
    known = [f.name for f in dataclass_fields(FieldSpec)]
    unknown = sorted(set(fields or {}) - set(known))
    if unknown:
        raise DatasetError(f"fields: unknown names {', '.join(unknown)}; known: {', '.join(known)}")
    return FieldSpec(**(fields or {}))


def json_dataset(
    path: str | os.PathLike[str],
    *,
    fields: Fields = None,
    name: str | None = None,
) -> Dataset:
    """Samples from a JSON Lines file (one object per line) or a JSON file holding a list.

    Args:
        path: The file (``.jsonl`` / ``.ndjson``: lines; otherwise a JSON list, or lines
            if it does not parse as one document).
        fields: How records map to samples: a :class:`FieldSpec`, a mapping of its
            arguments (``{"input": "question", "target": "answer"}``), or a function
            ``record -> Sample``. Default: fields named ``input``, ``target``, ``id``,
            ``metadata``-worthy rest, ``files``.
        name: The dataset's name (default: the file's stem).
    """
    p = _open(path)
    try:
        text = p.read_text(encoding="utf-8-sig")  # (a byte-order mark is no text)
    except UnicodeDecodeError as ex:
        raise _not_utf8(p, ex) from None
    records: list[tuple[str, Any]] = []
    lines = p.suffix.lower() in (".jsonl", ".ndjson")
    if not lines:
        try:
            data = json.loads(text)
        except json.JSONDecodeError:
            lines = True
        except RecursionError:
            raise _too_deep(p.name) from None
        else:
            if not isinstance(data, list):
                raise DatasetError(f"{str(p)!r}: a JSON dataset must hold a list of objects")
            records = [(f"{p.name} item {i}", r) for i, r in enumerate(data, start=1)]
    if lines:
        for n, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                records.append((f"{p.name} line {n}", json.loads(line)))
            except json.JSONDecodeError as ex:
                raise DatasetError(f"{p.name} line {n}: not valid JSON: {ex}") from None
            except RecursionError:
                raise _too_deep(f"{p.name} line {n}") from None
    samples = [_to_sample(r, fields, where, p.parent) for where, r in records]
    return Dataset(samples, name=name or p.stem, location=str(p))


def csv_dataset(
    path: str | os.PathLike[str],
    *,
    fields: Fields = None,
    name: str | None = None,
    delimiter: str = ",",
) -> Dataset:
    """Samples from a CSV file with a header row (every value is a string).

    A ``target`` cell may hold several acceptable answers as a JSON list
    (``["4", "four"]``), a ``files`` cell a JSON object. See :func:`json_dataset` for
    ``fields`` and ``name``.
    """
    p = _open(path)
    try:
        return _read_csv(p, fields, name, delimiter)
    except UnicodeDecodeError as ex:
        raise _not_utf8(p, ex) from None


def _read_csv(p: Path, fields: Fields, name: str | None, delimiter: str) -> Dataset:
    """The samples of a CSV file, read strictly: a quote left open, text after a
    closing quote, or a row whose field count differs from the header's is an error
    naming the line where that row starts, not a sample made of whatever followed."""
    import csv

    samples = []
    with p.open(newline="", encoding="utf-8-sig") as f:
        reader = csv.reader(f, delimiter=delimiter, strict=True)
        try:
            header = next(reader, None)
        except csv.Error as ex:
            raise DatasetError(f"{p.name} line 1: not valid CSV: {ex}") from None
        if not header:
            raise DatasetError(f"{str(p)!r}: the CSV file has no header row")
        twice = next((c for i, c in enumerate(header) if c in header[:i]), None)
        if twice is not None:  # (one value would silently replace the other)
            raise DatasetError(f"{p.name} line 1: column {twice!r} appears twice")
        spec = _spec(fields) if isinstance(fields, (FieldSpec, Mapping)) else None
        spec_target = spec.target if spec is not None else "target"
        spec_files = spec.files if spec is not None else "files"
        while True:
            start = reader.line_num + 1  # the line this row starts on
            try:
                row = next(reader, None)
            except csv.Error as ex:
                hint = " (a quote left open?)" if "end of data" in str(ex) else ""
                raise DatasetError(f"{p.name} line {start}: not valid CSV: {ex}{hint}") from None
            if row is None:
                break
            if not row:
                continue  # a blank line
            where = f"{p.name} line {start}"
            if len(row) != len(header):
                raise DatasetError(
                    f"{where}: {len(row)} field{'s' if len(row) != 1 else ''} where the "
                    f"header has {len(header)} "
                    "(a quote left open, or a stray delimiter?)"
                )
            record: dict[str, Any] = dict(zip(header, row, strict=True))
            for column, kind in ((spec_target, list), (spec_files, dict)):
                cell = record.get(column)
                if isinstance(cell, str) and cell.startswith(("[", "{")):
                    try:
                        parsed = json.loads(cell)
                    except json.JSONDecodeError:
                        parsed = None
                    if isinstance(parsed, kind):
                        record[column] = parsed
            samples.append(_to_sample(record, fields, where, p.parent))
    return Dataset(samples, name=name or p.stem, location=str(p))
