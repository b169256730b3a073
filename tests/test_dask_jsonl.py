"""JSONL on Dask: each partition (a byte range of a file) read into its records' texts, ids and
lines, by Arrow's JSON reader or line by line where it does not read a block the same way;
against each line parsed on its own by the json module, for ranges cut anywhere."""

from __future__ import annotations

import json

import pytest

from neardup.dask import jsonl

LINES = [
    b'{"id": 1, "text": "plain words"}\n',
    b"\n",
    b"   \t \n",
    b'{"text": "caf\\u00e9 \\"quoted\\" \\ud83d\\ude00", "other": {"deep": [1, "x"]}, "id": 2}\n',
    b'{"id": 3, "text": "r\xc3\xa9sum\xc3\xa9 with CRLF"}\r\n',
    b'{"id": 4, "text": ""}\n',
    b'{"id": 5, "other": 1.5, "text": "another, last, unended"}',
]


def _expected(data: bytes, start: int, end: int) -> list[tuple[str, int, bytes]]:
    """(text, id, line) of the records whose line starts in [start, end), by json.loads."""
    out, at = [], 0
    for line in data.splitlines(keepends=True):
        if start <= at < end and line.strip():
            record = json.loads(line)
            out.append((record["text"], record["id"], line))
        at += len(line)
    return out


def _read(path, start, end, id_field="id", int_ids=True):
    frame = jsonl._read(str(path), start, end, "text", id_field, int_ids)
    return list(
        zip(
            frame["text"].tolist(),
            frame[id_field].tolist() if id_field else [None] * len(frame),
            [line.encode("utf-8") for line in frame[jsonl.LINE].tolist()],
        )
    )


@pytest.mark.parametrize("arrow", [True, False])
def test_every_cut_of_a_file_reads_each_record_once_as_its_line(tmp_path, monkeypatch, arrow):
    if not arrow:
        monkeypatch.setattr(jsonl, "_parsed", lambda *args: None)
    data = b"".join(LINES)
    path = tmp_path / "a.jsonl"
    path.write_bytes(data)
    whole = _expected(data, 0, len(data))
    assert len(whole) == 5
    assert _read(path, 0, len(data)) == whole
    # Two ranges cut at every byte: each record in exactly one, as its own line.
    for cut in range(1, len(data)):
        first, second = _read(path, 0, cut), _read(path, cut, len(data))
        assert first == _expected(data, 0, cut)
        assert first + second == whole


def test_arrow_reads_the_blocks_the_line_path_reads(tmp_path, monkeypatch):
    """The Arrow reader's frame equals the line-by-line one, and a block it does not read alike
    (a text that is a number, a missing field, a key twice, bytes that are not UTF-8, a line that
    is not an object, ids of mixed types) goes to the line path, which names what is wrong."""
    data = b"".join(LINES)
    path = tmp_path / "a.jsonl"
    path.write_bytes(data)
    fast = jsonl._parsed(data, "text", "id", True)
    assert fast is not None  # Arrow reads this block
    monkeypatch.setattr(jsonl, "_parsed", lambda *args: None)
    slow = jsonl._read(str(path), 0, len(data), "text", "id", True)
    assert fast[jsonl.LINE].tolist() == slow[jsonl.LINE].tolist()
    assert fast["text"].tolist() == slow["text"].tolist()
    assert fast["id"].tolist() == slow["id"].tolist() and str(fast["id"].dtype) == "int64"
    monkeypatch.undo()
    for body in [
        b'{"id": 1, "text": 7}\n',
        b'{"id": 1, "text": "a", "text": "b"}\n',
        b'{"id": 1, "text": "a\xff"}\n',
        b'{"id": 1, "text": "a\\ud800"}\n',
    ]:
        assert jsonl._parsed(body, "text", "id", True) is None

    def frame_of(body: bytes, int_ids: bool = True):
        path.write_bytes(body)
        return jsonl._read(str(path), 0, len(body), "text", "id", int_ids)

    # Read by the line path, as before: a key given twice takes its last value.
    assert frame_of(b'{"id": 1, "text": "a", "text": "b"}\n')["text"].tolist() == ["b"]
    assert frame_of(b'{"id": 1, "text": "a\\ud800"}\n')["text"].tolist() == ["a\ud800"]
    assert frame_of(b'{"id": "x1", "text": "a"}\n{"id": 2, "text": "b"}\n', False)[
        "id"
    ].tolist() == ["x1", 2]
    for body, message in [
        (b'{"id": 1}\n', "at byte 0 is not a JSON object with a 'text' field"),
        (b'{"id": 1, "text": 7}\n', "at byte 0: field 'text' is a number, expected a string"),
        (b'{"id": 1, "text": null}\n', "at byte 0: field 'text' is null, expected a string"),
        (b'{"id": 1, "text": "a"}\n{"text": "b"}\n', "at byte 23 has no 'id' field"),
        (b'{"id": 1, "text": "a\xff"}\n', "at byte 0 is not JSON"),
        (b'{"id": 1, "text": "a"}\n[1, 2]\n', "at byte 23 is not a JSON object"),
        (b'{"id": 1, "text": "a"}\n{"id": 2, "text": "b"} {}\n', "at byte 23 is not JSON"),
    ]:
        with pytest.raises(ValueError, match=message):
            frame_of(body)


def test_kept_lines_are_written_as_read(tmp_path):
    data = b"".join(LINES)
    path = tmp_path / "a.jsonl"
    path.write_bytes(data)
    frame = jsonl._read(str(path), 0, len(data), "text", "id", True)
    jsonl.write_part(frame.iloc[[0, 2, 4]], str(tmp_path), partition_info={"number": 3})
    written = (tmp_path / "part-00003.jsonl").read_bytes()
    # The last line, unended in the input, gets its line end.
    assert written == LINES[0] + LINES[4] + LINES[6] + b"\n"


def test_a_text_that_is_a_number_is_refused_on_dask_as_on_one_machine(tmp_path, capsys):
    # Not read as the string "5" (dask's conversion of object columns to strings): refused,
    # naming the line's byte, status 2, as one machine refuses it naming its line.
    from command import run

    path = tmp_path / "a.jsonl"
    path.write_bytes(LINES[0] + b'{"id": 9, "text": 5}\n' + LINES[4])
    for engine in ([], ["--workers", 1]):
        code, _, err = run(capsys, "dedup", path, "-o", tmp_path / "kept.jsonl", *engine)
        assert code == 2, err
        field = f"the line at byte {len(LINES[0])}: field 'text' is a number, expected a string"
        want = f"neardup: {path}:2:" if not engine else f"neardup: {path}: {field}\n"
        assert want in err, err
        assert not (tmp_path / "kept.jsonl").exists()


def test_a_line_over_the_record_size_limit_is_refused_on_dask_as_on_one_machine(tmp_path, capsys):
    # --max-record-size reaches the Dask reader: a line of 3,000 bytes over a limit of 1K is
    # refused, naming its byte, status 2 (it was read and deduplicated).
    from command import run

    long = json.dumps({"id": 9, "text": "word " * 600}).encode() + b"\n"
    path = tmp_path / "a.jsonl"
    path.write_bytes(LINES[0] + long + LINES[4])
    for engine in ([], ["--workers", 1]):
        code, _, err = run(
            capsys, "dedup", path, "-o", tmp_path / "kept.jsonl", "--max-record-size", "1K", *engine
        )
        assert code == 2, err
        reason = "record of more than 1,024 bytes, over the record size limit (--max-record-size)"
        where = f"{path}:2:" if not engine else f"{path}: the line at byte {len(LINES[0])}:"
        assert f"neardup: {where} {reason}" in err, err
        assert not (tmp_path / "kept.jsonl").exists()


@pytest.mark.parametrize("at", [0, 1, 2])
def test_a_range_refuses_a_long_line_having_read_at_most_the_limit_of_it(tmp_path, at):
    # A line of 64 MB as the first, the middle or the last line of a range of 1 MB (its tail):
    # refused with a limit of 1 MB, naming its byte, after reading about the limit of it (a
    # range read the whole line before, whatever its length).
    import tracemalloc

    limit = 1 << 20
    lines = [LINES[0], LINES[3], LINES[5]]
    lines[at] = b'{"text": "' + b"x" * (64 << 20) + b'"}\n'
    path = tmp_path / "long.jsonl"
    path.write_bytes(b"".join(lines))
    start = sum(map(len, lines[:at]))
    tracemalloc.start()
    try:
        with pytest.raises(ValueError) as err:
            jsonl._read(str(path), 0, min(limit, path.stat().st_size), "text", None, limit=limit)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert str(err.value) == (
        f"{path}: the line at byte {start}: record of more than 1,048,576 bytes, over the "
        "record size limit (--max-record-size)"
    )
    assert peak < 4 * limit, peak
    # The range after it passes over the long line a megabyte at a time, and reads the rest.
    tracemalloc.start()
    part = jsonl._read(str(path), limit, path.stat().st_size, "text", None)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert part["text"].tolist() == [json.loads(x)["text"] for x in lines[at + 1 :]]
    assert peak < 8 * limit, peak
