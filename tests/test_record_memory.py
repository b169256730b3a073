"""Issue 48: a record too long for the memory left is refused, never an abort. The core reserves
what a long text needs before reading it (its tokens counted first), fallibly and against the
memory left, so a run under an address-space limit either gives its result or stops with one
line that names the record: no status 134, no backtrace, no temporary file.

Each child sets its limit once it has run a small job (imports made, thread pools started), at
what it has mapped then plus a fixed room: twice the record (the reader's block and the line
it is joined from) and 100 MB, where reading the record's words needs more than four times it.
The margins are tens of megabytes either way, so the outcome does not hang on the machine."""

from __future__ import annotations

import json
import random
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from command import run
from neardup.io.jsonl import JsonlInput

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_AS and /proc")

#: The record's text: 40 MB of words, as long as the room left for it below is tight.
RECORD_BYTES = 40 << 20
#: The room a child keeps beyond twice the record.
SPARE = 100 << 20


def long_text(size: int, seed: int = 0) -> str:
    """About ``size`` bytes of ASCII words (some capitalized), sentence by sentence."""
    rng = random.Random(seed)
    vocabulary = [
        "".join(rng.choice("etaoinshrdlucmfwyp") for _ in range(rng.randint(2, 10)))
        for _ in range(20_000)
    ]
    sentences = []
    total = 0
    while total < size:
        words = rng.choices(vocabulary, k=rng.randint(5, 25))
        sentence = " ".join(words).capitalize() + "."
        sentences.append(sentence)
        total += len(sentence) + 1
    return " ".join(sentences)


@pytest.fixture(scope="module")
def record(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("record")
    path = folder / "long.jsonl"
    path.write_text(json.dumps({"id": 1, "text": long_text(RECORD_BYTES)}) + "\n")
    return path


def limited(code: str, room: int, *args: str) -> subprocess.CompletedProcess[str]:
    """Runs ``code`` in a child after ``warm`` (a small job), under an address-space limit of
    what the child has mapped then plus ``room`` bytes; ``args`` are its ``sys.argv[1:]``."""
    child = textwrap.dedent(
        f"""
        import resource, sys
        import neardup
        neardup.dedup(["a small job", "a small job", "another one"], threads=1)
        with open("/proc/self/status") as status:
            mapped = next(int(l.split()[1]) * 1024 for l in status if l.startswith("VmSize"))
        resource.setrlimit(resource.RLIMIT_AS, (mapped + {room}, mapped + {room}))
        """
    ) + textwrap.dedent(code)
    return subprocess.run(
        [sys.executable, "-c", child, *args], capture_output=True, text=True, timeout=120
    )


RUN_COMMAND = """
from neardup.cli import main
sys.exit(main(["dedup", sys.argv[1], "-o", sys.argv[2], "--threads", "1"]))
"""


def test_a_record_past_the_memory_left_is_one_line_naming_it_and_nothing_written(record):
    out = record.parent / "kept.jsonl"
    done = limited(RUN_COMMAND, 2 * RECORD_BYTES + SPARE, str(record), str(out))
    # Before: status 134, "memory allocation of N bytes failed", a backtrace, a temporary file.
    assert done.returncode == 1, (done.returncode, done.stderr[-2000:])
    pattern = (
        rf"neardup: {re.escape(str(record))}:1: out of memory: a text of [\d,]+ bytes "
        r"\([\d,]+ tokens\) needs about \d+ MB to be read; no output written\n"
    )
    assert re.fullmatch(pattern, done.stderr), done.stderr
    assert sorted(p.name for p in record.parent.iterdir()) == ["long.jsonl"]


def test_the_same_record_with_room_for_it_is_read(record):
    out = record.parent / "kept.jsonl"
    try:
        done = limited(RUN_COMMAND, 12 * RECORD_BYTES + SPARE, str(record), str(out))
        assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
        assert out.read_bytes() == record.read_bytes()
        assert sorted(p.name for p in record.parent.iterdir()) == ["kept.jsonl", "long.jsonl"]
    finally:
        out.unlink(missing_ok=True)


def test_the_library_raises_memory_error_and_goes_on(record):
    # neardup.dedup aborted the interpreter; now a MemoryError names the text, the buffers are
    # freed, and the next call works.
    code = """
    import json
    text = json.loads(open(sys.argv[1]).read())["text"]
    try:
        neardup.dedup([text, "a short one"], threads=1)
    except MemoryError as err:
        print("MemoryError", err, "item", err.item)
    del text
    result = neardup.dedup(["one two three four", "one two three four", "five six"], threads=1)
    print("then kept", result.keep.tolist())
    """
    # The text is held once as read and once as decoded (both released before the dedup).
    done = limited(code, 2 * RECORD_BYTES + SPARE, str(record))
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
    lines = done.stdout.splitlines()
    assert re.fullmatch(
        r"MemoryError out of memory: a text of [\d,]+ bytes \([\d,]+ tokens\) needs about "
        r"\d+ MB to be read item 0",
        lines[0],
    ), done.stdout
    assert lines[1] == "then kept [True, False, True]", done.stdout


def test_running_out_of_memory_reading_a_record_names_it(tmp_path, capsys, monkeypatch):
    # Python's own MemoryError, parsing the record that goes to Python (not ASCII): its line.
    path = tmp_path / "x.jsonl"
    path.write_text('{"text": "plain"}\n{"text": "caf\\u00e9 au lait"}\n{"text": "more"}\n')
    parse = JsonlInput._parse

    def short_of_memory(self, lineno, line):
        if lineno == 2:
            raise MemoryError
        return parse(self, lineno, line)

    monkeypatch.setattr(JsonlInput, "_parse", short_of_memory)
    code, _, err = run(capsys, "dedup", path, "-o", tmp_path / "kept.jsonl")
    assert code == 1
    assert err == f"neardup: {path}:2: out of memory; no output written\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.jsonl"]
