"""One name per concept: the old spellings of renamed arguments and flags still work for one
release, with a DeprecationWarning (a note on stderr for the command), and give the same result."""

import json

import pytest

import neardup
from test_cli import run

DOCS = [
    "the cat sat on the mat today",
    "the cat sat on the mat today!",
    "dogs bark at night in the town",
    "dogs bark at night in the town.",
    "something else entirely here",
]


def test_dedup_takes_column_as_the_old_name_of_text_field():
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"body": DOCS})
    new = neardup.dedup(frame, text_field="body")
    with pytest.warns(
        DeprecationWarning, match=r"dedup\(column=\.\.\.\) is deprecated.*text_field="
    ):
        old = neardup.dedup(frame, column="body")
    assert old.keep.tolist() == new.keep.tolist() and new.n_removed == 2
    with pytest.raises(TypeError, match="column= and text_field="):
        neardup.dedup(frame, column="body", text_field="body")


def test_tune_takes_ngram_ngrams_and_column_as_old_names():
    new = neardup.tune(DOCS, max_k=4, shingle=2, shingles=[1], verify=False)
    with pytest.warns(DeprecationWarning) as caught:
        old = neardup.tune(DOCS, max_k=4, ngram=2, ngrams=[1], verify=False)
    assert sorted(str(w.message).split("(")[1].split("=")[0] for w in caught) == ["ngram", "ngrams"]
    assert old.recommended_k == new.recommended_k and str(old) == str(new)


def test_tune_result_keeps_its_old_attribute_names_for_a_release():
    result = neardup.tune(DOCS, max_k=4, shingle=2, shingles=[1], sample=4)
    assert result.shingle == 2 and sorted(result.recommended_by_shingle) == [1, 2]
    assert sorted(result.recall_within_by_shingle) == [1, 2]
    for old, new in [
        ("ngram", "shingle"),
        ("recommended_by_ngram", "recommended_by_shingle"),
        ("precision_within_by_ngram", "precision_within_by_shingle"),
        ("recall_within_by_ngram", "recall_within_by_shingle"),
    ]:
        with pytest.warns(
            DeprecationWarning, match=rf"TuneResult\.{old} is deprecated.*use \.{new}$"
        ):
            value = getattr(result, old)
        assert value == getattr(result, new) and type(value) is type(getattr(result, new))
    report = result.as_dict()
    assert report["shingle"] == report["ngram"] == 2
    for key in ("recommended_by", "precision_within_by", "recall_within_by"):
        assert report[f"{key}_ngram"] == report[f"{key}_shingle"]
        assert sorted(report[f"{key}_shingle"]) == ["1", "2"]


def test_the_command_takes_the_old_flags_with_a_note(capsys, tmp_path):
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("".join(json.dumps({"text": t}) + "\n" for t in DOCS))
    code, out, err = run(
        capsys,
        "tune",
        "--candidates",
        "fingerprint",
        corpus,
        "--max-k",
        4,
        "--jaccard-ngram",
        2,
        "--json",
    )
    assert code == 0 and "--jaccard-ngram is deprecated" in err and "--shingle" in err
    code, new_out, _ = run(
        capsys,
        "tune",
        "--candidates",
        "fingerprint",
        corpus,
        "--max-k",
        4,
        "--shingle",
        2,
        "--json",
    )
    assert json.loads(out)["recommended_k"] == json.loads(new_out)["recommended_k"]
    code, _, err = run(capsys, "fingerprint", corpus, "-o", tmp_path / "o.jsonl", "--column", "fp")
    assert code == 0 and "--column is deprecated" in err
    assert all("fp" in json.loads(line) for line in (tmp_path / "o.jsonl").read_text().splitlines())
