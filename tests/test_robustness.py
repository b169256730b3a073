"""Issue 14: nothing lost, nothing crashes. Each test reproduces a reported failure: an output
that overwrote the input, a truncated file read as complete, a lost index update, a hang, a
silently coerced id, a traceback instead of ``FILE:LINE: what is wrong``."""

from __future__ import annotations

import fcntl
import gzip
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import neardup
from command import run
from neardup.cli import main
from reference import checksum


def write_jsonl(path: Path, records) -> Path:
    path.write_bytes("".join(json.dumps(r) + "\n" for r in records).encode())
    return path


TEXTS = [
    f"document number {i} about {word} and other things"
    for i, word in enumerate(["cats", "dogs", "birds", "fish"] * 3)
]


def corpus(tmp_path: Path, name: str = "x.jsonl") -> Path:
    return write_jsonl(tmp_path / name, [{"id": i, "text": t} for i, t in enumerate(TEXTS)])


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if "neardup-tmp" in p.name or ".tmp-" in p.name)


# -- 1. outputs never overwrite the input or each other ------------------------------------------


def output_cases(src: Path, tmp: Path) -> list[list[object]]:
    """Commands whose output names the input, as the report gave them."""
    return [
        ["dedup", src, "--dry-run", "--clusters", src],
        ["dedup", src, "--dry-run", "--report", src],
        ["dedup", src, "-o", src],
        ["pairs", src, "-o", src],
        ["index", "build", src, "-o", src],
        ["fingerprint", src, "-o", src],
    ]


@pytest.mark.parametrize("alias", ["same", "symlink", "hardlink", "dotted"])
@pytest.mark.parametrize("case", range(6))
def test_no_output_may_name_the_input(tmp_path, capsys, alias, case):
    src = corpus(tmp_path)
    before = src.read_bytes()
    if alias == "symlink":
        target = tmp_path / "link.jsonl"
        target.symlink_to(src)
    elif alias == "hardlink":
        target = tmp_path / "hard.jsonl"
        os.link(src, target)
    elif alias == "dotted":
        (tmp_path / "sub").mkdir()
        target = tmp_path / "sub" / ".." / "x.jsonl"
    else:
        target = src
    args = [
        target if a == src and i > 1 else a for i, a in enumerate(output_cases(src, tmp_path)[case])
    ]
    code, _, err = run(capsys, *args)
    assert code == 2, err
    assert "is the input" in err and "never overwrites its input" in err
    assert src.read_bytes() == before
    assert leftovers(tmp_path) == []


def test_index_add_refuses_its_index_as_input(tmp_path, capsys):
    src = corpus(tmp_path)
    idx = tmp_path / "x.idx"
    assert run(capsys, "index", "build", src, "-o", idx, "-q")[0] == 0
    before = idx.read_bytes()
    code, _, err = run(capsys, "index", "add", idx, idx, "--format", "jsonl")
    assert code == 2 and "is the input" in err and idx.read_bytes() == before


@pytest.mark.parametrize("second", ["same", "symlink", "dotted"])
def test_two_outputs_may_not_name_one_file(tmp_path, capsys, second):
    src = corpus(tmp_path)
    out = tmp_path / "out.jsonl"
    other: Path = out
    if second == "symlink":  # a link to a file that does not exist yet
        other = tmp_path / "link.jsonl"
        other.symlink_to(out)
    elif second == "dotted":
        other = tmp_path / "." / "out.jsonl"
    code, _, err = run(capsys, "dedup", src, "-o", out, "--clusters", other)
    assert code == 2 and "--clusters names the same file as -o" in err
    assert not out.exists() and leftovers(tmp_path) == []
    code, _, err = run(
        capsys,
        "dedup",
        src,
        "--dry-run",
        "--clusters",
        tmp_path / "r.csv",
        "--report",
        tmp_path / "r.csv",
    )
    assert code == 2 and "--report names the same file as --clusters" in err


def test_distinct_outputs_are_written(tmp_path, capsys):
    src = corpus(tmp_path)
    code, _, err = run(
        capsys,
        "dedup",
        src,
        "-o",
        tmp_path / "out.jsonl",
        "--clusters",
        tmp_path / "c.csv",
        "--report",
        tmp_path / "r.html",
        "-q",
    )
    assert code == 0, err
    assert (
        (tmp_path / "out.jsonl").exists()
        and (tmp_path / "c.csv").exists()
        and (tmp_path / "r.html").exists()
    )


# -- 3. concurrent writers of one index --------------------------------------------------------


def holds_exactly(path: Path, ids: set[int]) -> bool:
    index = neardup.SimhashIndex.load(path, mmap=False)
    return len(index) == len(ids) and all(i in index for i in ids)


def add_command(idx: Path, src: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "neardup",
        "index",
        "add",
        str(idx),
        str(src),
        "--id-field",
        "id",
        "-q",
    ]


def test_index_add_waits_for_another_writer_and_loses_nothing(tmp_path):
    base = write_jsonl(tmp_path / "base.jsonl", [{"id": i, "text": t} for i, t in enumerate(TEXTS)])
    mine = write_jsonl(
        tmp_path / "mine.jsonl", [{"id": 100 + i, "text": t} for i, t in enumerate(TEXTS)]
    )
    idx = tmp_path / "x.idx"
    assert main(["index", "build", str(base), "--id-field", "id", "-o", str(idx), "-q"]) == 0
    # This process is the first writer: it holds the index (as `index add` does), and the
    # command started meanwhile must wait for it rather than load the old index.
    index = neardup.SimhashIndex.load(idx, mmap=False)
    with open(idx, "rb") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        proc = subprocess.Popen(
            add_command(idx, mine)[:-1],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        time.sleep(2.0)
        index.add(neardup.Simhasher().fingerprint_many(TEXTS), ids=np.arange(200, 200 + len(TEXTS)))
        index.save(idx)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert f"waiting for another neardup writing {idx}" in err
    assert holds_exactly(
        idx,
        set(range(len(TEXTS)))
        | set(range(100, 100 + len(TEXTS)))
        | set(range(200, 200 + len(TEXTS))),
    )


def test_two_concurrent_index_adds_both_land(tmp_path):
    n = 20_000
    words = [f"w{i}" for i in range(500)]
    rng = np.random.default_rng(7)
    texts = [" ".join(rng.choice(words, 12)) for _ in range(2 * n)]
    a = write_jsonl(tmp_path / "a.jsonl", [{"id": i, "text": texts[i]} for i in range(n)])
    b = write_jsonl(tmp_path / "b.jsonl", [{"id": n + i, "text": texts[n + i]} for i in range(n)])
    idx = tmp_path / "x.idx"
    write_jsonl(tmp_path / "empty.jsonl", [])
    assert main(["index", "build", str(tmp_path / "empty.jsonl"), "-o", str(idx), "-q"]) == 0
    procs = [subprocess.Popen(add_command(idx, src), stderr=subprocess.PIPE) for src in (a, b)]
    for proc in procs:
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
    assert holds_exactly(idx, set(range(2 * n)))
    assert leftovers(tmp_path) == []


# -- 2 and 6. truncated, corrupt and foreign compressed input -----------------------------------


def big_jsonl(n: int = 10_000) -> bytes:
    return "".join(
        json.dumps({"id": i, "text": f"text {i} " + "word " * (i % 17)}) + "\n" for i in range(n)
    ).encode()


def zstd_blocks(data: bytes) -> bytes:
    """Several zstd frames, each of several blocks (as zstd -B or a streaming writer makes)."""
    import zstandard

    cctx = zstandard.ZstdCompressor(level=1)
    third = len(data) // 3
    return b"".join(cctx.compress(data[i : i + third]) for i in range(0, len(data), third))


@pytest.mark.parametrize("cut", [0.4, 0.5, 0.999])
def test_a_truncated_zst_input_is_an_error_naming_the_file(tmp_path, capsys, cut):
    pytest.importorskip("zstandard")
    whole = zstd_blocks(big_jsonl())
    path = tmp_path / "x.jsonl.zst"
    path.write_bytes(whole[: int(len(whole) * cut)])
    code, out, err = run(capsys, "dedup", path, "-o", tmp_path / "out.jsonl.zst", "--json")
    assert code == 2, out
    assert f"{path}: truncated or corrupt zstd stream" in err
    assert not (tmp_path / "out.jsonl.zst").exists() and leftovers(tmp_path) == []


def test_a_tiny_truncated_zst_is_an_error_and_a_whole_one_is_read(tmp_path, capsys):
    zstandard = pytest.importorskip("zstandard")
    whole = zstandard.ZstdCompressor().compress(big_jsonl(3))
    path = tmp_path / "x.jsonl.zst"
    path.write_bytes(whole[:-3])
    code, _, err = run(capsys, "dedup", path, "--dry-run")
    assert code == 2 and f"{path}: truncated or corrupt zstd stream" in err
    path.write_bytes(zstd_blocks(big_jsonl(100)))
    code, out, _ = run(capsys, "dedup", path, "--dry-run", "--json")
    assert code == 0 and json.loads(out)["documents"] == 100


@pytest.mark.parametrize(
    "content", [b"this is not zstd at all\n", b"\x28\xb5\x2f\xfd" + b"\xff" * 64]
)
@pytest.mark.parametrize("name", ["x.jsonl.zst", "x.csv.zst"])
def test_a_corrupt_or_foreign_zst_is_an_error_naming_the_file(tmp_path, capsys, content, name):
    pytest.importorskip("zstandard")
    path = tmp_path / name
    path.write_bytes(content)
    code, _, err = run(capsys, "dedup", path, "--dry-run")
    assert (
        code == 2 and f"{path}: truncated or corrupt zstd stream" in err and "Traceback" not in err
    )


def test_a_truncated_zst_csv_and_gz_are_errors(tmp_path, capsys):
    zstandard = pytest.importorskip("zstandard")
    rows = "id,text\n" + "".join(f"{i},text number {i}\n" for i in range(5000))
    whole = zstandard.ZstdCompressor().compress(rows.encode())
    (tmp_path / "x.csv.zst").write_bytes(whole[: len(whole) // 2])
    code, _, err = run(capsys, "dedup", tmp_path / "x.csv.zst", "--dry-run")
    assert code == 2 and "x.csv.zst: truncated or corrupt zstd stream" in err
    gz = gzip.compress(big_jsonl())
    (tmp_path / "x.jsonl.gz").write_bytes(gz[: len(gz) // 2])
    code, _, err = run(capsys, "dedup", tmp_path / "x.jsonl.gz", "--dry-run")
    assert code == 2 and "x.jsonl.gz: truncated or corrupt gzip stream" in err


# -- 4. loading and saving index files ----------------------------------------------------------


def small_index() -> neardup.SimhashIndex:
    index = neardup.SimhashIndex(k=3)
    index.add(neardup.Simhasher().fingerprint_many(TEXTS), ids=np.arange(len(TEXTS)) * 10)
    return index


def in_child(code: str, timeout: float = 20) -> subprocess.CompletedProcess:
    """Runs ``code`` in a child Python (a hang fails the test instead of blocking the run)."""
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout
    )


@pytest.mark.parametrize("mmap", [True, False])
def test_loading_a_fifo_is_refused_at_once(tmp_path, mmap):
    fifo = tmp_path / "index.fifo"
    os.mkfifo(fifo)
    got = in_child(
        f"import neardup\ntry:\n    neardup.SimhashIndex.load({str(fifo)!r}, mmap={mmap})\n"
        "except neardup.IndexFormatError as err:\n    print('refused:', err)\n"
    )
    assert (
        got.returncode == 0
        and "refused: a named pipe (FIFO), not a neardup index file" in got.stdout
    ), got


def test_index_query_on_a_fifo_is_an_error_not_a_hang(tmp_path):
    fifo = tmp_path / "index.fifo"
    os.mkfifo(fifo)
    got = subprocess.run(
        [sys.executable, "-m", "neardup", "index", "query", str(fifo), "--text", "x"],
        capture_output=True,
        text=True,
        timeout=20,
    )
    assert (
        got.returncode == 2
        and f"{fifo}: a named pipe (FIFO), not a neardup index file" in got.stderr
    )


@pytest.mark.parametrize("mmap", [True, False])
def test_loading_a_folder_or_device_says_what_it_is(tmp_path, mmap):
    with pytest.raises(IsADirectoryError) as err:
        neardup.SimhashIndex.load(tmp_path, mmap=mmap)
    assert err.value.filename == str(tmp_path) and "is a folder, not a neardup index file" in str(
        err.value
    )
    assert "os error" not in str(err.value)
    with pytest.raises(neardup.IndexFormatError, match="a device, not a neardup index file"):
        neardup.SimhashIndex.load("/dev/zero", mmap=mmap)
    with pytest.raises(FileNotFoundError) as missing:
        neardup.SimhashIndex.load(tmp_path / "missing.ndx", mmap=mmap)
    assert missing.value.filename == str(tmp_path / "missing.ndx")


def test_a_large_foreign_file_is_refused_before_it_is_read(tmp_path):
    # A sparse 64 GB file: reading it whole (what load(mmap=False) did) takes 64 GB of memory.
    big = tmp_path / "big.bin"
    with open(big, "wb") as f:
        f.truncate(64 << 30)

    def load_in_child() -> subprocess.CompletedProcess:
        return in_child(
            f"import neardup\ntry:\n    neardup.SimhashIndex.load({str(big)!r}, mmap=False)\n"
            "except neardup.IndexFormatError as err:\n    print('refused:', err)\n",
            timeout=30,
        )

    got = load_in_child()
    assert (
        got.returncode == 0
        and "refused: not a neardup index file (wrong magic bytes)" in got.stdout
    ), got
    # The right magic, but a length in the header that is not the file's: refused at once too.
    with open(big, "r+b") as f:
        f.write(small_index_bytes(tmp_path)[:24])
    got = load_in_child()
    assert (
        got.returncode == 0
        and "refused: index file has" in got.stdout
        and "but the header says" in got.stdout
    ), got


def small_index_bytes(tmp_path: Path) -> bytes:
    small_index().save(tmp_path / "small.ndx")
    return (tmp_path / "small.ndx").read_bytes()


def test_save_errors_name_the_path_given(tmp_path):
    locked_dir = tmp_path / "ro"
    locked_dir.mkdir()
    target = locked_dir / "x.ndx"
    if os.geteuid() == 0:  # root writes anywhere: a missing folder fails for everyone
        target = tmp_path / "no" / "such" / "x.ndx"
    else:
        locked_dir.chmod(0o500)
    with pytest.raises(OSError) as err:
        small_index().save(target)
    assert (
        err.value.filename == str(target)
        and ".tmp-" not in str(err.value)
        and str(target) in str(err.value)
    )
    assert isinstance(err.value, (FileNotFoundError, PermissionError))


# -- 5. wrong answers: ids, next_id, CSV headers, invalid UTF-8 -----------------------------------


def test_an_index_whose_next_id_is_not_past_its_ids_is_refused(tmp_path):
    from neardup.index import _core

    data = bytearray(small_index_bytes(tmp_path))
    words = np.frombuffer(bytes(data), dtype="<u8").copy()
    assert words[12] == 111  # ids 0..110: the next default id is 111
    for bad in (110, 50, 0, -5):
        words[12] = np.int64(bad).astype(np.uint64)
        words[-1] = checksum(words[:-1])
        path = tmp_path / "crafted.ndx"
        path.write_bytes(words.tobytes())
        with pytest.raises(
            neardup.IndexFormatError,
            match=f"invalid next id {bad} in the index header: the largest id is 110",
        ):
            neardup.SimhashIndex.load(path)
    words[12] = 111
    words[-1] = checksum(words[:-1])
    path.write_bytes(words.tobytes())
    index = neardup.SimhashIndex.load(path)
    index.add(np.array([1], dtype=np.uint64))
    assert 111 in index and _core is not None


@pytest.mark.parametrize("orjson", [True, False])
def test_invalid_utf8_in_another_field_is_an_error_at_its_line_on_every_path(
    tmp_path, capsys, monkeypatch, orjson
):
    if not orjson:
        monkeypatch.setattr("neardup.io.jsonl._fast_loads", None)
    path = tmp_path / "x.jsonl"
    path.write_bytes(
        b'{"text": "fine text here"}\n{"text": "plain ascii", "source": "caf\xe9"}\n{"text": "more text"}\n'
    )
    for command in (
        ["dedup", path, "-o", tmp_path / "out.jsonl"],
        ["dedup", path, "--dry-run", "--field", "text=1"],
        ["fingerprint", path, "-o", tmp_path / "f.jsonl"],
        ["pairs", path],
    ):
        code, _, err = run(capsys, *command)
        assert code == 2 and f"{path}:2: invalid UTF-8: byte 0xe9" in err, (command, err)
    assert not (tmp_path / "out.jsonl").exists()
    code, out, _ = run(
        capsys, "dedup", path, "-o", tmp_path / "out.jsonl", "--on-error", "skip", "--json"
    )
    assert code == 0 and json.loads(out)["skipped"] == 1
    assert (
        tmp_path / "out.jsonl"
    ).read_bytes() == b'{"text": "fine text here"}\n{"text": "more text"}\n'


@pytest.mark.parametrize(
    "value, shown",
    [
        (1.9, "1.9"),
        (False, "false"),
        (" 42 ", '" 42 "'),
        ("4_2", '"4_2"'),
        ("+42", '"+42"'),
        (None, "null"),
        (1e30, "1e+30"),
        (2**63, str(2**63)),
        ([1], "[1]"),
    ],
)
@pytest.mark.parametrize("command", ["build", "add"])
def test_index_ids_are_kept_exactly_or_refused_at_their_line(
    tmp_path, capsys, value, shown, command
):
    records = [{"id": i, "text": t} for i, t in enumerate(TEXTS)]
    records[4]["id"] = value
    src = write_jsonl(tmp_path / "ids.jsonl", records)
    idx = tmp_path / "x.idx"
    if command == "build":
        args = ["index", "build", src, "--id-field", "id", "-o", idx]
    else:
        assert (
            run(capsys, "index", "build", write_jsonl(tmp_path / "e.jsonl", []), "-o", idx, "-q")[0]
            == 0
        )
        args = ["index", "add", idx, src, "--id-field", "id"]
    before = idx.read_bytes() if idx.exists() else None
    code, _, err = run(capsys, *args)
    assert code == 2 and f"{src}:5: index ids must be integers (64-bit); 'id' is {shown}" in err, (
        err
    )
    assert (idx.read_bytes() if idx.exists() else None) == before and leftovers(tmp_path) == []


@pytest.mark.parametrize(
    "value, shown",
    [
        (1.9, "1.9"),
        (False, "false"),
        (None, "null"),
        (1e30, "1e+30"),
        (2**63, str(2**63)),
        ([1], "[1]"),
    ],
)
def test_dedup_index_ids_are_kept_exactly_or_refused_at_their_line(tmp_path, capsys, value, shown):
    # A dedup index (.ndx) took 1.9 as 1, false as 0 and null as the row number.
    records = [{"id": 100 + i, "text": t} for i, t in enumerate(TEXTS)]
    records[4]["id"] = value
    src = write_jsonl(tmp_path / "ids.jsonl", records)
    idx = tmp_path / "x.ndx"
    code, _, err = run(capsys, "index", "build", src, "--id-field", "id", "-o", idx)
    assert code == 2 and (
        f"{src}:5: dedup index ids must be strings or integers (64-bit); 'id' is {shown}" in err
    ), err
    assert not idx.exists() and leftovers(tmp_path) == []


def test_dedup_index_ids_are_the_integers_or_strings_given(tmp_path, capsys):
    for given, held in (
        ([7, 8.0, 2**63 - 1, -(2**63)], [7, 8, 2**63 - 1, -(2**63)]),
        ([" 42 ", "4_2", "+42", "1.9"], [" 42 ", "4_2", "+42", "1.9"]),
    ):
        src = write_jsonl(
            tmp_path / "ids.jsonl", [{"id": v, "text": t} for v, t in zip(given, TEXTS)]
        )
        idx = tmp_path / "x.ndx"
        assert run(capsys, "index", "build", src, "--id-field", "id", "-o", idx, "-q")[0] == 0
        assert neardup.DedupIndex.open(idx).ids == held


def test_index_ids_given_as_integers_integral_floats_or_digits_are_kept(tmp_path, capsys):
    src = write_jsonl(
        tmp_path / "ids.jsonl",
        [{"id": v, "text": t} for v, t in zip([7, 8.0, "9", "-10", 2**63 - 1, -(2**63)], TEXTS)],
    )
    idx = tmp_path / "x.idx"
    assert run(capsys, "index", "build", src, "--id-field", "id", "-o", idx, "-q")[0] == 0
    assert holds_exactly(idx, {7, 8, 9, -10, 2**63 - 1, -(2**63)})


def test_a_repeated_index_id_is_refused_at_its_line(tmp_path, capsys):
    records = [{"id": i, "text": t} for i, t in enumerate(TEXTS)]
    records[6]["id"] = 2
    src = write_jsonl(tmp_path / "ids.jsonl", records)
    code, _, err = run(capsys, "index", "build", src, "--id-field", "id", "-o", tmp_path / "x.idx")
    assert code == 2 and f"{src}:7: id 2 in 'id' was given before, at line 3" in err, err
    assert not (tmp_path / "x.idx").exists()


def test_csv_ids_are_text_digits_and_a_bom_keeps_the_first_column(tmp_path, capsys):
    src = tmp_path / "bom.csv"
    src.write_bytes(
        b"\xef\xbb\xbfid,text\n" + "".join(f"{100 + i},{t}\n" for i, t in enumerate(TEXTS)).encode()
    )
    idx = tmp_path / "x.idx"
    code, _, err = run(capsys, "index", "build", src, "--id-field", "id", "-o", idx, "-q")
    assert code == 0, err
    assert holds_exactly(idx, set(range(100, 100 + len(TEXTS))))
    code, out, _ = run(capsys, "dedup", src, "--dry-run", "--clusters", tmp_path / "c.csv", "-q")
    assert code == 0 and (tmp_path / "c.csv").read_text().splitlines()[1].startswith("100,")
    src.write_bytes(b"id,text\n1,first text\n 2 ,second text\n")
    code, _, err = run(capsys, "index", "build", src, "--id-field", "id", "-o", idx)
    assert code == 2 and f"{src}:3: index ids must be integers (64-bit); 'id' is \" 2 \"" in err


@pytest.mark.parametrize("header", ["id,text,text", "text,id,id", "a,text,a"])
def test_a_csv_header_naming_a_column_twice_is_refused(tmp_path, capsys, header):
    src = tmp_path / "dup.csv"
    src.write_text(header + "\n1,first text,x\n2,second text,y\n")
    name = [n for n in header.split(",") if header.split(",").count(n) > 1][0]
    for args in (["dedup", src, "--dry-run"], ["fingerprint", src, "-o", tmp_path / "f.csv"]):
        code, _, err = run(capsys, *args)
        assert code == 2 and f"{src}:1: the header names the column {name!r} 2 times" in err, err


# -- 6. tracebacks become FILE:LINE: what is wrong ---------------------------------------------


def nested(depth: int, text: str = "plain ascii text") -> str:
    return json.dumps({"text": text, "id": 1})[:-1] + ', "x": ' + "[" * depth + "]" * depth + "}"


@pytest.mark.parametrize("depth", [5_000, 100_000])
@pytest.mark.parametrize("text", ["plain ascii text", "caf\u00e9 au lait"])
@pytest.mark.parametrize(
    "flags",
    [["--dry-run"], ["--dry-run", "--field", "text=1"], ["-o", "OUT", "--clusters", "CLUSTERS"]],
)
def test_deep_json_nesting_is_an_error_at_its_line_or_skipped(tmp_path, capsys, depth, text, flags):
    path = tmp_path / "deep.jsonl"
    path.write_text(
        json.dumps({"text": "first document", "id": 0})
        + "\n"
        + nested(depth, text)
        + "\n"
        + json.dumps({"text": "last", "id": 2})
        + "\n"
    )
    flags = [
        str(tmp_path / "out.jsonl")
        if f == "OUT"
        else str(tmp_path / "c.csv")
        if f == "CLUSTERS"
        else f
        for f in flags
    ]
    code, _, err = run(capsys, "dedup", path, *flags)
    assert code == 2 and f"{path}:2: nesting too deep" in err, err
    code, out, err = run(capsys, "dedup", path, *flags, "--on-error", "skip", "--json")
    assert code == 0, err
    assert json.loads(out)["skipped"] == 1 and json.loads(out)["documents"] == 2


def test_json_nested_within_what_python_reads_is_read_on_both_passes(tmp_path, capsys):
    path = tmp_path / "deep.jsonl"
    path.write_text(json.dumps({"text": "first document", "id": 0}) + "\n" + nested(700) + "\n")
    code, out, err = run(
        capsys,
        "dedup",
        path,
        "-o",
        tmp_path / "out.jsonl",
        "--clusters",
        tmp_path / "c.csv",
        "--json",
    )
    assert code == 0 and json.loads(out)["documents"] == 2, err
    assert (tmp_path / "out.jsonl").read_bytes() == path.read_bytes()


def test_invalid_utf8_in_a_parquet_string_column_is_an_error_at_its_row(tmp_path, capsys):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    texts = pa.array([b"good text here", b"bad \xff text", b"more good text"], pa.binary()).view(
        pa.string()
    )
    path = tmp_path / "bad.parquet"
    pq.write_table(pa.table({"id": [1, 2, 3], "text": texts, "note": ["a", "b", "c"]}), path)
    for args in (
        ["dedup", path, "--dry-run"],
        ["fingerprint", path, "-o", tmp_path / "f.parquet"],
        ["pairs", path],
    ):
        code, _, err = run(capsys, *args)
        assert (
            code == 2
            and f"{path}: row 2: column 'text' holds invalid UTF-8: byte 0xff at byte 5" in err
        ), (args, err)
    code, out, err = run(
        capsys,
        "dedup",
        path,
        "-o",
        tmp_path / "kept.parquet",
        "--on-error",
        "skip",
        "--json",
        "--report",
        tmp_path / "r.html",
    )
    assert code == 0 and json.loads(out)["skipped"] == 1, err
    assert pq.read_table(tmp_path / "kept.parquet").column("id").to_pylist() == [1, 3]


@pytest.mark.parametrize(
    "args", [["--n", "1e20"], ["--n", str(10**20)], ["--memory", str(10**30)], ["--n", "-1"]]
)
def test_plan_with_a_huge_n_is_a_usage_error(capsys, args):
    code, _, err = run(capsys, "plan", *args)
    assert code == 2 and "Invalid value for" in err and "Traceback" not in err


@pytest.mark.parametrize("option", ["-o", "--clusters", "--report"])
def test_an_output_naming_a_fifo_is_refused_not_replaced(tmp_path, capsys, option):
    src = corpus(tmp_path)
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    args = ["dedup", src, option, fifo] + (["--dry-run"] if option != "-o" else [])
    code, _, err = run(capsys, *args)
    assert code == 2 and f"{fifo}: {option} names a device, FIFO or socket" in err
    assert fifo.is_fifo()
    code, _, err = run(capsys, "index", "build", src, "-o", fifo)
    assert code == 2 and fifo.is_fifo()


@pytest.mark.parametrize(
    "command",
    [
        ["dedup", "SRC", "-o", "OUT.jsonl"],
        ["pairs", "SRC", "-o", "OUT.csv"],
        ["index", "build", "SRC", "-o", "OUT.idx"],
        ["fingerprint", "SRC", "-o", "OUT.jsonl"],
        ["dedup", "SRC", "--dry-run", "--clusters", "OUT.csv"],
    ],
)
def test_output_errors_name_the_users_path_not_a_temporary_file(tmp_path, capsys, command):
    src = corpus(tmp_path)
    out = tmp_path / "no" / "such" / "folder"
    args = [
        src if a == "SRC" else str(out / ("x" + a[3:])) if a.startswith("OUT.") else a
        for a in command
    ]
    code, _, err = run(capsys, *args)
    assert code == 1 and f"{out}/x{command[-1][3:]}" in err and "neardup-tmp" not in err, err


def test_a_failed_index_save_names_the_index(tmp_path, capsys, monkeypatch):
    src = corpus(tmp_path)

    def full(self, path):
        raise OSError(28, "No space left on device", str(path))

    monkeypatch.setattr(neardup.SimhashIndex, "save", full)
    code, _, err = run(capsys, "index", "build", src, "-o", tmp_path / "x.idx")
    assert (
        code == 1
        and f"cannot write {tmp_path / 'x.idx'}: No space left on device" in err
        and "neardup-tmp" not in err
    )
    assert leftovers(tmp_path) == [] and not (tmp_path / "x.idx").exists()


@pytest.mark.parametrize("command", ["dedup", "pairs"])
def test_a_null_id_stays_null_and_never_takes_another_documents_id(tmp_path, capsys, command):
    # Row 1's id is null and row 0's id is 1: a row number in its place would name row 0.
    text = "the quick brown fox jumps over the lazy dog near the river bank today"
    src = write_jsonl(
        tmp_path / "ids.jsonl",
        [{"id": 1, "text": text}, {"id": None, "text": text + "!"}, {"id": 2, "text": "x y z"}],
    )
    table = tmp_path / "table.jsonl"
    args = ["--clusters", table, "--dry-run"] if command == "dedup" else ["-o", table]
    assert run(capsys, command, src, *args, "-q")[0] == 0
    rows = [json.loads(line) for line in table.read_text().splitlines()]
    if command == "dedup":
        assert [(r["id"], r["kept_id"], r["kept"]) for r in rows] == [
            (1, 1, True),
            (None, 1, False),
            (2, 2, True),
        ]
        records = [json.loads(line) for line in src.read_text().splitlines()]
        api = neardup.dedup(records, id_field="id")
        assert list(api.ids) == [1, None, 2] and list(api.kept_id) == [1, 1, 2]
    else:
        assert [(r["id_a"], r["id_b"]) for r in rows] == [(1, None)]


def test_without_an_id_field_documents_are_named_by_their_row(tmp_path, capsys):
    text = "the quick brown fox jumps over the lazy dog near the river bank today"
    src = write_jsonl(tmp_path / "rows.jsonl", [{"text": "x y z"}, {"text": text}, {"text": text}])
    table = tmp_path / "table.jsonl"
    assert run(capsys, "dedup", src, "--clusters", table, "--dry-run", "-q")[0] == 0
    rows = [json.loads(line) for line in table.read_text().splitlines()]
    assert [(r["id"], r["kept_id"]) for r in rows] == [(0, 0), (1, 1), (2, 1)]
