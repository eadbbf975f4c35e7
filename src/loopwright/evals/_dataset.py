"""Datasets: samples from lists, or streamed from JSONL and CSV files (read in
``_dataset_files.py``), with field mapping."""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import stat
import threading
from array import array
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping, Sequence
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


Reader: TypeAlias = Callable[[int, int], Generator[tuple[int, int, Sample], None, None]]
"""Reads a file's records from a place (byte offset, line number) where one starts:
yields each record's place and its sample, in the file's order."""


class Dataset(Sequence[Sample]):
    """An ordered collection of samples with unique ids.

    Build one with :func:`as_dataset`, :func:`json_dataset` or :func:`csv_dataset`
    (``Task`` accepts a plain list too).

    A JSON Lines or CSV file's dataset is streamed: its samples are made as they are
    read, each time it is iterated, and only as far as needed (``ds[:10]`` reads ten
    records; the first record is read when it is made, to check the fields). What it
    keeps is an index (the byte offset and line of each record read, 16 bytes each) and
    the ids read (to refuse one that appears twice), never the texts: ``ds[i]`` reads
    one record again at its offset, ``len(ds)`` reads the file through once. A record
    that is not a valid sample is an error when it is read; the file must not change
    meanwhile (a ``DatasetError`` says so). A slice or :meth:`filter` is a dataset in
    memory, and so is what an eval plans to run: ``limit=10`` takes ``ds[:10]``, ten
    records read; an eval of the whole file holds all its samples while it runs.

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
        self._list: list[Sample] | None = list(samples)
        self._stream: _Stream | None = None
        self.name = name
        self.location = location
        seen: set[str] = set()
        for i, s in enumerate(self._list, start=1):
            _number(s, i, seen, name)

    @classmethod
    def _streamed(
        cls, read: Reader, start: tuple[int, int], *, name: str, location: str
    ) -> Dataset:
        """A dataset whose samples ``read`` makes from the file, from ``start`` (the place
        of the first record); the first record is read now."""
        ds = cls([], name=name, location=location)
        ds._list, ds._stream = None, _Stream(read, start, name)
        bool(ds)
        return ds

    @property
    def samples(self) -> Sequence[Sample]:
        """The samples: a list for a dataset in memory, the dataset itself if streamed."""
        return self if self._list is None else self._list

    def __repr__(self) -> str:
        if self._stream is not None and not self._stream.complete:
            return f"Dataset({self.name!r}, streamed from {self.location!r})"
        return f"Dataset({self.name!r}, {len(self)} samples)"

    def __len__(self) -> int:
        if self._list is not None:
            return len(self._list)
        assert self._stream is not None
        return self._stream.count()

    def __bool__(self) -> bool:
        if self._list is not None:
            return bool(self._list)
        assert self._stream is not None
        return self._stream.known > 0 or next(self._stream.produce(0), None) is not None

    @overload
    def __getitem__(self, index: int) -> Sample: ...
    @overload
    def __getitem__(self, index: slice) -> Dataset: ...
    def __getitem__(self, index: int | slice) -> Sample | Dataset:
        if isinstance(index, slice):
            return Dataset(self._slice(index), name=self.name, location=self.location)
        if self._list is not None:
            return self._list[index]
        assert self._stream is not None
        return self._stream.at(index)

    def _slice(self, index: slice) -> list[Sample]:
        if self._list is not None:
            return self._list[index]
        start, stop, step = index.start or 0, index.stop, index.step or 1
        if start >= 0 and stop is not None and stop >= 0 and step > 0:
            return list(itertools.islice(self, start, stop, step))  # (read as far as stop)
        return [self[i] for i in range(*index.indices(len(self)))]

    def __iter__(self) -> Iterator[Sample]:
        if self._list is not None:
            return iter(self._list)
        assert self._stream is not None
        return self._stream.produce(0)

    def filter(self, predicate: Callable[[Sample], bool]) -> Dataset:
        """The samples for which ``predicate(sample)`` is true (a dataset in memory)."""
        return Dataset([s for s in self if predicate(s)], name=self.name, location=self.location)


def _number(sample: Sample, position: int, seen: set[str], name: str | None) -> None:
    """Give ``sample`` its position as id if it has none; refuse an id ``seen`` before."""
    if sample.id is None:
        sample.id = position
    key = str(sample.id)
    if key in seen:
        raise DatasetError(
            f"dataset {name or ''!r}: sample id {key!r} appears twice; ids must be "
            "unique (they identify samples in the run store and for --resume)"
        )
    seen.add(key)


class _Stream:
    """A streamed dataset's reading: the index of the records read so far (offset and
    line of each) and their ids."""

    def __init__(self, read: Reader, start: tuple[int, int], name: str) -> None:
        self.read, self.start, self.name = read, start, name
        self.offsets, self.lines = array("q"), array("q")
        self.ids: set[str] = set()
        self.complete = False
        # (two threads reading at once: one indexes a record, the other sees it indexed)
        self._indexing = threading.Lock()

    @property
    def known(self) -> int:
        return len(self.offsets)

    def produce(self, first: int) -> Iterator[Sample]:
        """The samples from number ``first`` (at most :attr:`known`) on, indexing those
        never read before."""
        if first < self.known:
            at, skip = (self.offsets[first], self.lines[first]), 0
        elif first == 0:
            at, skip = self.start, 0
        else:  # (from the last record known, which is read again and skipped)
            at, skip = (self.offsets[first - 1], self.lines[first - 1]), 1
        i = first - skip
        with contextlib.closing(self.read(*at)) as records:
            for offset, line, sample in records:
                with self._indexing:
                    if i == self.known:
                        _number(sample, i + 1, self.ids, self.name)
                        self.offsets.append(offset)
                        self.lines.append(line)
                    elif sample.id is None:
                        sample.id = i + 1
                if skip:
                    skip, i = 0, i + 1
                    continue
                yield sample
                i += 1
        if i >= self.known:
            self.complete = True

    def count(self) -> int:
        if not self.complete:
            for _ in self.produce(self.known):
                pass
        return self.known

    def at(self, index: int) -> Sample:
        if index < 0:
            index += self.count()
        if 0 <= index < self.known:
            with contextlib.closing(self.read(self.offsets[index], self.lines[index])) as one:
                _, _, sample = next(one)
            if sample.id is None:
                sample.id = index + 1
            return sample
        if index >= 0 and not self.complete:
            for i, sample in enumerate(self.produce(self.known), start=self.known):
                if i == index:
                    return sample
        raise IndexError(f"dataset {self.name!r}: no sample {index}")


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


def _spec(fields: FieldSpec | Mapping[str, Any] | None) -> FieldSpec:
    """``fields`` as a :class:`FieldSpec` (a mapping holds its arguments)."""
    if isinstance(fields, FieldSpec):
        return fields
    known = [f.name for f in dataclass_fields(FieldSpec)]
    unknown = sorted(set(fields or {}) - set(known))
    if unknown:
        raise DatasetError(f"fields: unknown names {', '.join(unknown)}; known: {', '.join(known)}")
    return FieldSpec(**(fields or {}))
