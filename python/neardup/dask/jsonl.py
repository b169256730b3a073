"""JSONL on Dask as one machine reads it: each partition a byte range of a file cut at line ends
(a compressed file is one partition), its records parsed, and each record's line kept as it was,
so that the kept lines are written back byte for byte (:func:`write_lines`), not re-serialized.
A partition holds the text, the id when there is one, and the line (:data:`LINE`)."""

from __future__ import annotations

import functools
import json
import os
from typing import Any

import pandas as pd

from neardup.io.compression import compression_of, decompressed

__all__ = ["LINE", "frame", "write_part"]

#: The column of each record's line, as read (its text, with its line end when it has one).
LINE = "__neardup_line"
#: Bytes of a file a partition reads, at most (and a line more).
BLOCK = 64 << 20


def _ranges(paths: list[str], block: int) -> list[tuple[str, int, int | None]]:
    """``(path, start, end)`` of each partition: byte ranges of ``block`` bytes of each plain file
    (a range holds the lines that start in it), a compressed file whole (``end`` None)."""
    out: list[tuple[str, int, int | None]] = []
    for path in paths:
        if compression_of(path) is not None:
            out.append((path, 0, None))
            continue
        size = os.path.getsize(path)
        out.extend((path, a, min(a + block, size)) for a in range(0, max(size, 1), block))
    return out


def _lines(path: str, start: int, end: int | None) -> Any:
    """``(byte offset, line)`` of the lines that start in ``[start, end)`` of ``path``."""
    if end is None:
        with open(path, "rb") as raw, decompressed(raw, compression_of(path)) as f:
            at = 0
            for line in f:
                yield at, line
                at += len(line)
        return
    with open(path, "rb") as f:
        at = start
        if start > 0:
            # The line under way at `start` belongs to the range before.
            f.seek(start - 1)
            at = start - 1 + len(f.readline())
        f.seek(at)
        while at < end:
            line = f.readline()
            if not line:
                break
            yield at, line
            at += len(line)


def _read(
    path: str, start: int, end: int | None, text_field: str, id_field: str | None
) -> pd.DataFrame:
    """One partition: the text, id and line of each record of the range."""
    texts: list[Any] = []
    ids: list[Any] = []
    lines: list[str] = []
    for at, line in _lines(path, start, end):
        body = line.rstrip(b"\r\n")
        if not body.strip():
            continue  # a blank line, as one machine passes it over
        try:
            record = json.loads(body)
        except (ValueError, UnicodeDecodeError) as err:
            raise ValueError(f"{path}: the line at byte {at:,} is not JSON ({err})") from None
        if not isinstance(record, dict) or text_field not in record:
            raise ValueError(
                f"{path}: the line at byte {at:,} is not a JSON object with a {text_field!r} field"
            )
        texts.append(record[text_field])
        if id_field is not None:
            if id_field not in record:
                raise ValueError(f"{path}: the line at byte {at:,} has no {id_field!r} field")
            ids.append(record[id_field])
        # As text (JSON is UTF-8: the line decodes, and encodes back to the same bytes), which
        # Dask's string columns hold.
        lines.append(line.decode("utf-8"))
    columns: dict[str, Any] = {text_field: pd.Series(texts, dtype=object)}
    if id_field is not None:
        columns[id_field] = pd.Series(ids, dtype="int64" if _all_ints(ids) else object)
    columns[LINE] = pd.Series(lines, dtype=object)
    return pd.DataFrame(columns)


def _all_ints(values: list[Any]) -> bool:
    return bool(values) and all(type(v) is int and -(2**63) <= v < 2**63 for v in values)


def frame(paths: list[str], text_field: str, id_field: str | None) -> tuple[Any, str | None]:
    """The dask DataFrame of JSONL files, and its id field: ``id_field``, or ``"id"`` when the
    first record has one."""
    import dask.dataframe as dd

    ranges = _ranges(paths, BLOCK)
    first = None
    for r in ranges:
        lines = _lines(*r)
        try:
            first = next((line for _, line in lines if line.strip()), None)
        finally:
            lines.close()  # its file, at once
        if first is not None:
            break
    record: Any = None
    if first is not None:
        try:
            record = json.loads(first)
        except ValueError:
            record = None
        if id_field is None and isinstance(record, dict) and "id" in record:
            id_field = "id"
    # The first record's id type decides the column's (as a reader of its first rows would).
    first_id = record.get(id_field) if isinstance(record, dict) and id_field else None
    meta = pd.DataFrame(
        {
            text_field: pd.Series([], dtype=object),
            **(
                {id_field: pd.Series([], dtype="int64" if _all_ints([first_id]) else object)}
                if id_field is not None
                else {}
            ),
            LINE: pd.Series([], dtype=object),
        }
    )
    ddf = dd.from_map(
        functools.partial(_read_range, text_field=text_field, id_field=id_field),
        ranges,
        meta=meta,
        enforce_metadata=False,
    )
    return ddf, id_field


def _read_range(
    r: tuple[str, int, int | None], text_field: str, id_field: str | None
) -> pd.DataFrame:
    return _read(*r, text_field, id_field)


def write_part(part: pd.DataFrame, folder: str, partition_info: Any = None) -> pd.Series:
    """Partition i's kept records, written as the lines they were read from to
    ``folder/part-0000i.jsonl``; their number."""
    from neardup.dask.frames import _number

    path = os.path.join(folder, f"part-{_number(partition_info):05d}.jsonl")
    with open(path, "wb") as f:
        for line in part[LINE]:
            f.write(line.encode("utf-8"))
            if not line.endswith("\n"):
                f.write(b"\n")
    return pd.Series([len(part)], dtype="int64")
