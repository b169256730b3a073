"""JSONL on Dask as one machine reads it: each partition a byte range of a file cut at line ends
(a compressed file is one partition), its records parsed, and each record's line kept as it was,
so that the kept lines are written back byte for byte (:func:`write_lines`), not re-serialized.
A partition holds the text, the id when there is one, and the line (:data:`LINE`)."""

from __future__ import annotations

import contextlib
import functools
import io
import json
import os
from typing import Any

import numpy as np
import pandas as pd

from neardup.io.compression import compression_of, decompressed
from neardup.lines import DEFAULT_MAX_RECORD_SIZE as MAX_RECORD
from neardup.lines import too_long_reason

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


def _skip_line(f: Any) -> int:
    """Reads past the end of the line under way (a megabyte at a time, however long it is);
    returns the bytes passed."""
    passed = 0
    while True:
        piece = f.readline(1 << 20)
        passed += len(piece)
        if not piece or piece.endswith(b"\n"):
            return passed


def _check_lengths(path: str, at: int, data: bytes | bytearray, limit: int) -> None:
    """Refuses a line of ``data`` (read from byte ``at`` of ``path``) longer than ``limit``
    bytes, naming its byte, as one machine refuses it: from each line's start, the last line
    end within ``limit`` bytes (found from the right, so a few bytes are read a line)."""
    pos = 0
    while len(data) - pos > limit:
        end = data.rfind(b"\n", pos, pos + limit + 1)
        if end < 0:
            raise ValueError(f"{path}: the line at byte {at + pos:,}: {too_long_reason(limit)}")
        pos = end + 1


def _block(
    path: str, start: int, end: int | None, limit: int = MAX_RECORD
) -> tuple[int, bytes | bytearray]:
    """``(byte offset, bytes)`` of the lines that start in ``[start, end)`` of ``path``, whole
    (a compressed file: all of it, decompressed). A line over ``limit`` bytes is refused before
    more than ``limit`` bytes of it are read."""
    if end is None:
        with open(path, "rb") as raw, decompressed(raw, compression_of(path)) as f:
            data = f.read()
        _check_lengths(path, 0, data, limit)
        return 0, data
    with open(path, "rb") as f:
        at = start
        if start > 0:
            # The line under way at `start` belongs to the range before.
            f.seek(start - 1)
            at = start - 1 + _skip_line(f)
        if at >= end:
            return at, b""
        # The last line that starts in the range, to its end (or past the limit); then the
        # range read in one piece.
        f.seek(end - 1)
        tail = 0 if f.read(1) == b"\n" else len(f.readline(limit + 1))
        block = bytearray(end - at + tail)
        f.seek(at)
        got = f.readinto(block)
        block = block if got == len(block) else block[:got]
        _check_lengths(path, at, block, limit)
        return at, block


def _lines(path: str, start: int, end: int | None, limit: int = MAX_RECORD) -> Any:
    """``(byte offset, line)`` of the lines that start in ``[start, end)`` of ``path``, read one
    at a time (the first record, for the columns); a line over ``limit`` bytes is refused."""
    with contextlib.ExitStack() as held:
        f: Any = held.enter_context(open(path, "rb"))
        at = 0
        if end is None:
            f = held.enter_context(decompressed(f, compression_of(path)))
        else:
            at = start
            if start > 0:
                # The line under way at `start` belongs to the range before.
                f.seek(start - 1)
                at = start - 1 + _skip_line(f)
                f.seek(at)
        while end is None or at < end:
            line = f.readline(limit + 2)
            if not line:
                break
            if len(line) > limit + 1 or (len(line) == limit + 1 and not line.endswith(b"\n")):
                raise ValueError(f"{path}: the line at byte {at:,}: {too_long_reason(limit)}")
            yield at, line
            at += len(line)


def _read(
    path: str,
    start: int,
    end: int | None,
    text_field: str,
    id_field: str | None,
    int_ids: bool = False,
    limit: int = MAX_RECORD,
) -> pd.DataFrame:
    """One partition: the text, id and line of each record of the range (each at most ``limit``
    bytes)."""
    at, data = _block(path, start, end, limit)
    parsed = _parsed(data, text_field, id_field, int_ids)
    if parsed is not None:
        return parsed
    texts: list[Any] = []
    ids: list[Any] = []
    lines: list[str] = []
    for line in io.BytesIO(data):
        body = line.rstrip(b"\r\n")
        if not body.strip():
            at += len(line)
            continue  # a blank line, as one machine passes it over
        try:
            record = json.loads(body)
        except (ValueError, UnicodeDecodeError) as err:
            raise ValueError(f"{path}: the line at byte {at:,} is not JSON ({err})") from None
        if not isinstance(record, dict) or text_field not in record:
            raise ValueError(
                f"{path}: the line at byte {at:,} is not a JSON object with a {text_field!r} field"
            )
        text = record[text_field]
        if not isinstance(text, str):
            # Refused here, as one machine refuses it: dask would take a number for its string.
            raise ValueError(
                f"{path}: the line at byte {at:,}: field {text_field!r} is {_json_kind(text)}, "
                "expected a string"
            )
        texts.append(text)
        if id_field is not None:
            if id_field not in record:
                raise ValueError(f"{path}: the line at byte {at:,} has no {id_field!r} field")
            ids.append(record[id_field])
        # As text (JSON is UTF-8: the line decodes, and encodes back to the same bytes), which
        # Dask's string columns hold.
        lines.append(line.decode("utf-8"))
        at += len(line)
    columns: dict[str, Any] = {text_field: pd.Series(texts, dtype=object)}
    if id_field is not None:
        columns[id_field] = pd.Series(ids, dtype="int64" if _all_ints(ids) else object)
    columns[LINE] = pd.Series(lines, dtype=object)
    return pd.DataFrame(columns)


def _parsed(
    data: bytes | bytearray, text_field: str, id_field: str | None, int_ids: bool
) -> pd.DataFrame | None:
    """The partition of :func:`_read` parsed by Arrow's JSON reader, in C++: each record's text
    (a string), id (an integer, or a string when ``int_ids`` is not set) and line. None for a
    block it does not read as the line-by-line path does (a line that is not an object, a text
    that is not a string, a missing field, a key given twice, bytes that are not UTF-8, an
    escaped lone surrogate): that path reads it, and names what is wrong."""
    import pyarrow as pa
    import pyarrow.json as pj

    if not data:
        return None
    fields = [(text_field, pa.large_string())]
    if id_field is not None:
        fields.append((id_field, pa.int64() if int_ids else pa.large_string()))
    try:
        table = pj.read_json(
            pa.BufferReader(data),
            read_options=pj.ReadOptions(use_threads=False, block_size=len(data) + 1),
            parse_options=pj.ParseOptions(
                explicit_schema=pa.schema(fields), unexpected_field_behavior="ignore"
            ),
        )
    except (pa.ArrowException, ValueError):
        return None
    # Each line's bounds; the blank ones are passed over, as the reader passes them (a line
    # that begins with "{" is not blank; any other is looked at).
    raw = np.frombuffer(data, np.uint8)
    ends = np.flatnonzero(raw == 10) + 1
    if not len(ends) or ends[-1] != len(raw):
        ends = np.append(ends, len(raw))
    starts = np.concatenate([[0], ends[:-1]])
    records = raw[starts] == ord("{")
    for i in np.flatnonzero(~records).tolist():
        records[i] = bool(data[starts[i] : ends[i]].strip())
    if int(records.sum()) != table.num_rows or any(c.null_count for c in table.columns):
        return None
    offsets = np.concatenate([[0], np.cumsum(ends[records] - starts[records])])
    kept = data if records.all() else b"".join(data[a:b] for a, b in _runs(starts, ends, records))
    lines = pa.Array.from_buffers(
        pa.large_string(), len(offsets) - 1, [None, pa.py_buffer(offsets), pa.py_buffer(kept)]
    )
    # The reader takes the bytes of a string as they are, and an escaped lone surrogate as
    # bytes that are not UTF-8 either: the line path reads those.
    try:
        for column in [lines, *table.columns]:
            column.validate(full=True)
    except pa.ArrowInvalid:
        return None
    columns: dict[str, Any] = {text_field: table.column(0).to_pandas()}
    if id_field is not None:
        columns[id_field] = table.column(1).to_pandas()
    columns[LINE] = lines.to_pandas()
    return pd.DataFrame(columns)


def _runs(starts: np.ndarray, ends: np.ndarray, keep: np.ndarray) -> list[tuple[int, int]]:
    """The byte ranges of the runs of kept lines."""
    edges = np.diff(np.concatenate([[0], keep.astype(np.int8), [0]]))
    firsts, lasts = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1) - 1
    return list(zip(starts[firsts].tolist(), ends[lasts].tolist()))


def _json_kind(value: Any) -> str:
    """What a JSON value is, as a message names it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    return "an array" if isinstance(value, list) else "an object"


def _all_ints(values: list[Any]) -> bool:
    return bool(values) and all(type(v) is int and -(2**63) <= v < 2**63 for v in values)


def frame(
    paths: list[str], text_field: str, id_field: str | None, max_record_size: int = MAX_RECORD
) -> tuple[Any, str | None]:
    """The dask DataFrame of JSONL files, and its id field: ``id_field``, or ``"id"`` when the
    first record has one. A line over ``max_record_size`` bytes is refused (``ValueError``
    naming its file and byte) when its partition is read, with at most that much of it read."""
    import dask.dataframe as dd

    ranges = _ranges(paths, BLOCK)
    first = None
    for r in ranges:
        lines = _lines(*r, max_record_size)
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
    ints = id_field is not None and _all_ints([first_id])
    ddf = dd.from_map(
        functools.partial(
            _read_range,
            text_field=text_field,
            id_field=id_field,
            int_ids=ints,
            limit=max_record_size,
        ),
        ranges,
        meta=meta,
        enforce_metadata=False,
    )
    return ddf, id_field


def _read_range(
    r: tuple[str, int, int | None],
    text_field: str,
    id_field: str | None,
    int_ids: bool = False,
    limit: int = MAX_RECORD,
) -> pd.DataFrame:
    return _read(*r, text_field, id_field, int_ids, limit)


def write_part(part: pd.DataFrame, folder: str, partition_info: Any = None) -> pd.Series:
    """Partition i's kept records, written as the lines they were read from to
    ``folder/part-0000i.jsonl``; their number."""
    from neardup.dask.frames import _number

    path = os.path.join(folder, f"part-{_number(partition_info):05d}.jsonl")
    with open(path, "wb") as f:
        f.write(_joined(part[LINE]))
    return pd.Series([len(part)], dtype="int64")


def _joined(lines: pd.Series) -> bytes:
    """The lines end to end, each ended by a line end (the last line of a file may have none):
    as Arrow holds them, one slice of its buffer."""
    import pyarrow as pa

    from neardup.hasher import string_buffers

    column = pa.array(lines, pa.large_string())
    if isinstance(column, pa.ChunkedArray):
        column = (
            pa.concat_arrays(column.chunks)
            if column.num_chunks
            else pa.array([], pa.large_string())
        )
    offsets, data = string_buffers(column)
    if not len(column):
        return b""
    ended = (offsets[1:] > offsets[:-1]) & (data[np.maximum(offsets[1:] - 1, 0)] == 10)
    if ended.all():
        return data[offsets[0] : offsets[-1]].tobytes()
    pieces = []
    for a, b, end in zip(offsets[:-1].tolist(), offsets[1:].tolist(), ended.tolist()):
        pieces.append(data[a:b].tobytes() if end else data[a:b].tobytes() + b"\n")
    return b"".join(pieces)
