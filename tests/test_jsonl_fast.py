"""The JSONL fast path (the core reads ASCII lines) against the Python path it stands in for:
same fingerprints, same documents, same errors, whatever the lines hold."""

import json
import math
import random

import pytest

import neardup
from neardup import corpus
from neardup.io import JsonlInput, open_input
from test_cli import run


def python_path(monkeypatch):
    monkeypatch.setattr(JsonlInput, "fingerprint_chunks", lambda self, *a: None)


def first_pass(path, hasher, **options):
    inp = open_input(str(path), **options)
    with inp:
        fps, lengths, nbytes = corpus.fingerprint_pass(
            inp, hasher, None, corpus.Progress(inp, "x", True), lengths=True
        )
    return fps, lengths, nbytes, [str(e) for e in inp.errors]


def mixed_lines(n: int, seed: int, bad: bool) -> list[str]:
    rng = random.Random(seed)
    words = [
        "Alpha",
        "beta",
        "GAMMA",
        "delta",
        "café",
        "Straße",
        "ﬁne",
        "中文",
        "naïve",
        "x\\ty",
        "\\u00e9t\\u00e9",
        '\\"q\\"',
    ]
    lines = []
    for i in range(n):
        text = " ".join(rng.choice(words) for _ in range(rng.randint(0, 12)))
        pick = rng.random()
        if pick < 0.05:
            lines.append("   ")
        elif bad and pick < 0.08:
            lines.append(
                rng.choice(
                    [
                        '{"text": 3}',
                        '{"id": 1}',
                        "[1, 2]",
                        '{"text": "cut',
                        '{"text": "a"} tail',
                        "NaN",
                    ]
                )
            )
        elif pick < 0.12:
            lines.append(f'{{"id": {i}, "text": "{text}", "text": "again {text}"}}')
        else:
            extra = rng.choice(["", ', "meta": {"a": [1, 2.5e3, null, true]}', ', "n": -0.0'])
            lines.append(f'{{"id": {i}, "text": "{text}"{extra}}}')
    return lines


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize(
    "settings",
    [{}, {"casefold": False}, {"unicode_form": None}, {"ngram": 3}, {"tokens": "char", "ngram": 4}],
)
def test_fast_path_gives_the_python_paths_fingerprints(tmp_path, monkeypatch, seed, settings):
    path = tmp_path / "in.jsonl"
    lines = mixed_lines(3000, seed, bad=False)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    hasher = neardup.Simhasher(**settings)
    fast = first_pass(path, hasher, text_field="text", id_field="id")
    # the independent expectation: the API on the texts Python's json reads
    texts = [json.loads(line)["text"] for line in lines if line.strip()]
    assert fast[0].tolist() == hasher.fingerprint_many(texts).tolist()
    assert fast[1].tolist() == [len(t) for t in texts]
    assert fast[2] == sum(len(t.encode()) for t in texts)
    python_path(monkeypatch)
    slow = first_pass(path, hasher, text_field="text", id_field="id")
    assert (
        fast[0].tolist() == slow[0].tolist()
        and fast[1].tolist() == slow[1].tolist()
        and fast[2:] == slow[2:]
    )


def test_bad_lines_are_skipped_and_reported_as_on_the_python_path(tmp_path, monkeypatch):
    path = tmp_path / "in.jsonl"
    path.write_text("\n".join(mixed_lines(2000, 9, bad=True)), encoding="utf-8")  # no final newline
    hasher = neardup.Simhasher()
    fast = first_pass(path, hasher, text_field="text", id_field="id", on_error="skip")
    assert fast[3], "the corpus has bad lines"
    python_path(monkeypatch)
    slow = first_pass(path, hasher, text_field="text", id_field="id", on_error="skip")
    assert fast[0].tolist() == slow[0].tolist()
    assert fast[3] == slow[3]


def test_the_first_bad_line_stops_the_job_with_its_number(tmp_path, capsys):
    path = tmp_path / "in.jsonl"
    path.write_text(
        '{"text": "fine"}\n\n{"text": "also fine"}\n{"text": 7}\n{"text": "x"\n', encoding="utf-8"
    )
    code, _, err = run(capsys, "dedup", path, "--dry-run")
    assert code == 2
    assert f"{path}:4:" in err


@pytest.mark.parametrize("first", ['{"id": "a", "text": "one"}', '{"text": "one"}', "not json"])
def test_auto_id_is_settled_by_the_first_record(tmp_path, monkeypatch, first):
    path = tmp_path / "in.jsonl"
    path.write_text(first + '\n{"text": "two", "id": "b"}\n{"text": "three"}\n', encoding="utf-8")
    results = []
    for _ in range(2):
        results.append(
            first_pass(
                path, neardup.Simhasher(), text_field="text", id_field="auto", on_error="skip"
            )
        )
        python_path(monkeypatch)
    assert results[0][0].tolist() == results[1][0].tolist() and results[0][3] == results[1][3]
    if first.startswith('{"id"'):
        assert len(results[0][0]) == 2 and "no field 'id'" in results[0][3][0]  # line 3 has no id


def test_tables_written_by_orjson_are_the_bytes_json_writes(monkeypatch):
    """JSONL result tables: orjson (the `fast` extra) where it can, the standard library's json
    otherwise, the same bytes either way; NaN and infinities as null, valid JSON."""
    pytest.importorskip("orjson")
    from neardup.io import outputs

    rng = random.Random(3)
    floats = [0.0, 1.0, 0.8, 1e-5, 2.5e-7, 1e16, 3.4e38, -0.5, float("nan"), float("inf")]
    strings = ["a", "é", "中文", 'quote " and \\ back', '},{"id":', "", "\ud800"]
    for case in range(200):
        n = rng.randint(1, 30)
        pick = [rng.choice(floats + strings + [None, True, 7, -(2**63), 2**70]) for _ in range(n)]
        cols = [list(range(n)), pick, [rng.random() for _ in range(n)]]
        names = ["id", "value", "jaccard"]
        fast = outputs.jsonl_rows(names, cols)
        monkeypatch.setattr(outputs, "_orjson", None)
        plain = outputs.jsonl_rows(names, cols)
        monkeypatch.undo()
        assert fast == plain, case
        lines = fast.decode("utf-8", "surrogatepass").splitlines()
        assert len(lines) == n
        for row, line in enumerate(lines):
            value = json.loads(line)  # valid JSON: no NaN, no Infinity
            assert value["id"] == row
            want = pick[row]
            if isinstance(want, float) and not math.isfinite(want):
                want = None
            assert value["value"] == want or (want != want), (case, row)
