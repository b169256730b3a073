"""A memory-mapped index whose file is changed in place: an error on the next use, never a
crash (SIGBUS), a panic or an answer read from other data (issue 14)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import neardup
from neardup import IndexChangedError, IndexFormatError, SimhashIndex

N = 50_000


@pytest.fixture()
def saved(tmp_path):
    rng = np.random.default_rng(3)
    fps = rng.integers(0, 2**63, N, dtype=np.int64).astype(np.uint64)
    index = SimhashIndex(k=3, expected_size=N)
    index.add(fps)
    path = tmp_path / "index.ndx"
    index.save(path)
    return path, fps


def _calls(index, fps, tmp_path):
    q = int(fps[7])
    return {
        "query": lambda: index.query(q),
        "contains": lambda: 7 in index,
        "query_many": lambda: index.query_many(fps[:100]),
        "remove": lambda: index.remove([7]),
        "add": lambda: index.add([1, 2, 3]),
        "compact": lambda: index.compact(),
        "save": lambda: index.save(tmp_path / "copy.ndx"),
        "check_file": lambda: index.check_file(),
    }


def test_an_untouched_mapped_index_answers_and_says_it_is_mapped(saved, tmp_path):
    path, fps = saved
    index = SimhashIndex.load(path)
    assert index.mapped and not SimhashIndex.load(path, mmap=False).mapped
    assert index.query(int(fps[7])) == [(7, 0)]
    index.check_file()
    assert 7 in index and 10**6 not in index


@pytest.mark.parametrize(
    "call", ["query", "contains", "query_many", "remove", "add", "compact", "save", "check_file"]
)
@pytest.mark.parametrize("change", ["truncate", "garbage", "copy"])
def test_a_file_changed_in_place_is_an_error_on_every_call(saved, tmp_path, call, change):
    path, fps = saved
    other = tmp_path / "other.ndx"
    reversed_index = SimhashIndex(k=3, expected_size=N)
    reversed_index.add(fps[::-1].copy())
    reversed_index.save(other)
    index = SimhashIndex.load(path)
    assert index.query(int(fps[7])) == [(7, 0)]
    if change == "truncate":
        os.truncate(path, 100)  # touching the lost pages would be SIGBUS
    elif change == "garbage":
        with open(path, "r+b") as f:
            f.seek(200)
            f.write(np.random.default_rng(1).bytes(os.path.getsize(path) - 300))
    else:
        shutil.copyfile(other, path)  # same inode, same size, other entries: 7 is N - 8 there
    with pytest.raises(
        IndexChangedError, match=r"index\.ndx: the memory-mapped index file changed in place"
    ):
        _calls(index, fps, tmp_path)[call]()
    # Every later call too: the index never answers from the changed file.
    with pytest.raises(IndexChangedError):
        index.query(int(fps[7]))
    assert issubclass(IndexChangedError, IndexFormatError)
    assert not (tmp_path / "copy.ndx").exists()


def test_a_file_replaced_by_renaming_keeps_answering_from_the_one_loaded(saved, tmp_path):
    path, fps = saved
    index = SimhashIndex.load(path)
    other = SimhashIndex(k=3)
    other.add(fps[:10], ids=np.arange(100, 110))
    other.save(path)  # save renames a new file into place: the mapped one lives on
    assert index.query(int(fps[7])) == [(7, 0)]
    assert len(index) == N
    assert SimhashIndex.load(path).query(int(fps[7])) == [(107, 0)]


def test_changes_merged_into_memory_leave_the_file_free(saved, tmp_path):
    path, fps = saved
    index = SimhashIndex.load(path)
    index.remove([7])
    index.compact()  # the main tables are now in memory
    assert not index.mapped
    os.truncate(path, 100)
    assert index.query(int(fps[7])) == []
    assert index.query(int(fps[8])) == [(8, 0)]


def test_garbage_behind_an_unchanged_modification_time_is_no_panic(saved, tmp_path):
    """A change the checks cannot see (the old time put back) reads other data, but every call
    ends in an answer or an exception, never a Rust panic."""
    path, fps = saved
    st = os.stat(path)
    for seed in range(6):
        shutil.copyfile(path, tmp_path / "work.ndx")
        os.utime(tmp_path / "work.ndx", ns=(st.st_atime_ns, st.st_mtime_ns))
        work_st = os.stat(tmp_path / "work.ndx")
        index = SimhashIndex.load(tmp_path / "work.ndx")
        rng = np.random.default_rng(seed)
        with open(tmp_path / "work.ndx", "r+b") as f:
            f.seek(int(rng.integers(112, st.st_size - 20_000)))
            f.write(rng.bytes(int(rng.integers(1, 20_000))))
        os.utime(tmp_path / "work.ndx", ns=(work_st.st_atime_ns, work_st.st_mtime_ns))
        for name, call in _calls(index, fps, tmp_path).items():
            try:
                call()
            except Exception as err:  # a PanicException is a BaseException and fails the test
                assert isinstance(err, (neardup.NeardupError, KeyError, ValueError)), (name, err)


def test_truncating_a_mapped_file_does_not_kill_the_process(saved):
    path, fps = saved
    script = textwrap.dedent(f"""
        import os, neardup
        index = neardup.SimhashIndex.load({str(path)!r})
        os.truncate({str(path)!r}, 0)
        try:
            index.query({int(fps[7])})
        except neardup.IndexChangedError as err:
            print("refused:", err)
    """)
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert "refused:" in done.stdout and "size went from" in done.stdout


def test_the_command_says_in_one_line_that_the_index_changed(tmp_path, capsys, monkeypatch):
    from neardup.cli import main
    from neardup.dedup_index import DedupIndex

    docs = [
        f"text number {i} with words {' '.join(str(i * j % 101) for j in range(30))}"
        for i in range(200)
    ]
    path = tmp_path / "a.ndx"
    DedupIndex.build(docs, path)
    new = tmp_path / "new.txt"
    new.write_text("\n".join(docs[:20]) + "\n")
    search = DedupIndex.search

    def written_into(self, *args, **kwargs):
        os.truncate(path, 0)  # another process writes into the index file mid-run
        return search(self, *args, **kwargs)

    monkeypatch.setattr(DedupIndex, "search", written_into)
    out = tmp_path / "kept.txt"
    assert main(["dedup", str(new), "--against", str(path), "-o", str(out)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("neardup: ") and "changed in place" in err and "no output written" in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert not out.exists()
