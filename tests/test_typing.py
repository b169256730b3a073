"""What a type checker and a JSON encoder see: plain ints from the scalar calls, Literal options
that mypy checks, single fingerprints accepted by the index, missing columns named."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import neardup

ROOT = Path(__file__).resolve().parents[1]
TEXT = "The quick brown fox jumps over the lazy dog"


def test_scalar_fingerprints_are_plain_ints_that_json_encodes():
    hasher = neardup.Simhasher()
    for fp in (
        neardup.simhash(TEXT),
        neardup.simhash(TEXT, ngram=2),
        hasher.fingerprint(TEXT),
        neardup.Simhasher(fields={"title": 2, "body": 1}).fingerprint({"title": "a", "body": TEXT}),
        neardup.Simhasher(tokenizer=str.split).fingerprint(TEXT),
    ):
        assert type(fp) is int
        assert json.loads(json.dumps({"fp": fp})) == {"fp": fp}
    # The same value the batch call gives as numpy.uint64.
    assert hasher.fingerprint(TEXT) == int(hasher.fingerprint_many([TEXT])[0])
    assert type(neardup.simhash_features(["a b", "b c"])) is int
    assert type(neardup.hamming(neardup.simhash("a"), neardup.simhash("b"))) is int


def test_index_add_takes_a_single_fingerprint():
    fps = neardup.Simhasher().fingerprint_many(
        [TEXT, TEXT.replace("lazy", "sleepy"), "something else entirely"]
    )
    index = neardup.SimhashIndex(k=3)
    index.add(fps[0])  # numpy.uint64
    index.add(int(fps[1]), ids=7)  # int, with one id
    index.add(np.int64(5), ids=np.int64(9))  # a signed numpy integer that fits
    index.add(fps[2:])  # and arrays as before
    assert len(index) == 4
    assert sorted(i for i, _ in index.query(int(fps[0]))) == sorted(
        i for i, d in [(0, 0), (7, neardup.hamming(fps[0], fps[1]))] if d <= 3
    )
    assert index.query(5) == [(9, 0)]
    assert 10 in index  # numbered on from the largest id
    with pytest.raises(ValueError, match="0..2"):
        index.add(-1)
    with pytest.raises(TypeError):
        index.add(1.5)
    with pytest.raises(ValueError, match="one id per fingerprint"):
        index.add(fps[0], ids=[1, 2])


@pytest.mark.parametrize("kind", ["pandas", "polars", "pyarrow"])
def test_a_missing_column_is_named_with_the_columns_there_are(kind):
    data = {"url": ["a", "b"], "body": [TEXT, TEXT]}
    if kind == "pandas":
        frame = pytest.importorskip("pandas").DataFrame(data)
    elif kind == "polars":
        frame = pytest.importorskip("polars").DataFrame(data)
    else:
        frame = pytest.importorskip("pyarrow").table(data)
    with pytest.raises(KeyError, match=r"no column 'text' \(text_field=\).*columns: url, body"):
        neardup.dedup(frame)
    with pytest.raises(KeyError, match=r"no column 'id' \(id_field=\).*columns: url, body"):
        neardup.dedup(frame, text_field="body", id_field="id")
    assert neardup.dedup(frame, text_field="body", id_field="url").n_removed == 1


def _mypy(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--no-error-summary", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )


@pytest.fixture(scope="module")
def mypy_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One cache for both runs: the second reads numpy's and neardup's types from the first."""
    return tmp_path_factory.mktemp("mypy-cache")


def test_the_package_passes_mypy(mypy_cache):
    pytest.importorskip("mypy")
    done = _mypy("--cache-dir", str(mypy_cache), "python/neardup")
    assert done.returncode == 0, done.stdout + done.stderr


def test_mypy_rejects_an_option_value_that_does_not_exist(tmp_path, mypy_cache):
    pytest.importorskip("mypy")
    snippet = tmp_path / "snippet.py"
    snippet.write_text(
        "import json\n"
        "import neardup\n"
        "ok = neardup.Simhasher(tokens='char', weighting='binary', unicode_form=None)\n"
        "json.dumps({'fp': ok.fingerprint('text') + neardup.simhash('text', ngram=2)})\n"
        "neardup.Simhasher(tokens='words')\n"
        "neardup.simhash('text', weighting='bm25')\n"
        "neardup.normalize('text', unicode_form='NFX')\n"
    )
    env = {**os.environ, "MYPYPATH": str(ROOT / "python")}
    done = _mypy("--cache-dir", str(mypy_cache), str(snippet), env=env)
    errors = [line for line in done.stdout.splitlines() if ": error:" in line]
    assert [line.split(":")[1] for line in errors] == ["5", "6", "7"], done.stdout + done.stderr
    assert 'Argument "tokens"' in errors[0] and "Literal['word', 'char']" in errors[0]
