"""`neardup tune` for dedup's default, prefix candidates: the documents each threshold removes,
against dedup itself and brute force, with sample pairs on each side of each threshold."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

import neardup
import reference
from brute import exact_jaccard, family_corpus, star_oracle, verified_near
from command import run


def test_the_advice_applied_removes_what_the_table_says(capsys):
    code, out, err = run(capsys, "tune", "--sample", "--json")
    assert code == 0, err
    report = json.loads(out)
    assert report["candidates"] == "prefix" and report["threshold"] == 0.8
    thresholds = [row["threshold"] for row in report["rows"]]
    assert thresholds == sorted(thresholds) and 0.8 in thresholds and len(thresholds) >= 5
    removed = [row["removed"] for row in report["rows"]]
    assert removed == sorted(removed, reverse=True) and removed[0] > removed[-1]
    for row in report["rows"]:
        code, out, _ = run(
            capsys, "dedup", "--sample", "--dry-run", "--json", "--threshold", row["threshold"]
        )
        summary = json.loads(out)
        assert code == 0 and (summary["removed"], summary["clusters"]) == (
            row["removed"],
            row["clusters"],
        ), row["threshold"]


def test_the_table_is_brute_forces_greedy_stars_at_each_threshold(tmp_path, capsys):
    docs = family_corpus(families=12, seed=3)
    corpus = tmp_path / "c.jsonl"
    corpus.write_text(
        "".join(json.dumps({"id": f"d{i}", "text": t}) + "\n" for i, t in enumerate(docs))
    )
    thresholds = [0.5, 0.7, 0.8, 0.9, 1.0]
    code, out, err = run(
        capsys, "tune", corpus, "--json", "--thresholds", ",".join(map(str, thresholds))
    )
    assert code == 0, err
    rows = json.loads(out)["rows"]
    assert [row["threshold"] for row in rows] == thresholds
    fps = np.array([reference.fingerprint(reference.normalize(t)) for t in docs], np.uint64)
    for row, t in zip(rows, thresholds):
        # prefix candidates find every pair at the threshold, whatever the fingerprints: k = 64
        kept, _ = star_oracle(list(range(len(docs))), verified_near(docs, fps, 64, t))
        gone = [r for r in range(len(docs)) if kept[r] != r]
        assert row["removed"] == len(gone) and row["clusters"] == len({kept[r] for r in gone})
        ids = {f"d{i}": i for i in range(len(docs))}
        for pair in row["above"]:
            a, b = ids[pair["id"]], ids[pair["kept_id"]]
            assert kept[a] == b and pair["jaccard"] >= t
            assert abs(pair["jaccard"] - exact_jaccard(docs[a], docs[b])) < 1e-4
            assert pair["text"] == docs[a] and pair["kept_text"] == docs[b]
        for pair in row["below"]:
            a, b = ids[pair["id"]], ids[pair["kept_id"]]
            assert kept[a] == a and pair["jaccard"] < t
            assert abs(pair["jaccard"] - exact_jaccard(docs[a], docs[b])) < 1e-4
        if row["above"]:  # the lowest Jaccards of the threshold's removals
            lowest = min(exact_jaccard(docs[r], docs[kept[r]]) for r in gone)
            assert abs(row["above"][0]["jaccard"] - lowest) < 1e-4
    assert rows[0]["below"] == [] and any(row["below"] for row in rows)


def test_the_text_names_prefix_candidates_and_the_threshold_in_use(capsys):
    code, out, _ = run(capsys, "tune", "--sample", "--threshold", "0.85")
    assert code == 0
    assert "prefix candidates (dedup's default)" in out
    line = next(line for line in out.splitlines() if line.lstrip().startswith("0.85 "))
    assert line.endswith("<- in use (--threshold)")
    assert "dedup at --threshold 0.85 removes" in out and "--threshold T" in out
    assert "pairs just above each threshold (removed) and just below it (kept)" in out


def test_k_options_in_prefix_mode_are_refused_naming_the_mode_that_takes_them(capsys):
    for flag, value in (("--max-k", "4"), ("--pairs", "9"), ("--plot", "x.png")):
        code, out, err = run(capsys, "tune", "--sample", flag, value)
        assert code == 2 and out == ""
        assert f"{flag} tunes k, which prefix candidates (the default) do not use" in err
        assert "--candidates fingerprint" in err
    code, out, _ = run(capsys, "tune", "--sample", "--candidates", "fingerprint", "--max-k", "3")
    assert code == 0 and "recommended k" in out
    code, out, _ = run(capsys, "tune", "--sample", "--candidates", "fingerprint", "--json")
    assert code == 0 and json.loads(out)["candidates"] == "fingerprint"
    code, _, err = run(capsys, "tune", "--sample", "--no-verify", "--candidates", "prefix")
    assert code == 2 and "drop --candidates prefix or --no-verify" in err
    code, _, err = run(capsys, "tune", "--sample", "--no-verify", "--thresholds", "0.7,0.8")
    assert code == 2 and "--thresholds goes with prefix candidates" in err


def test_the_docs_table_is_the_commands_output_on_the_sample(capsys):
    page = (Path(__file__).resolve().parent.parent / "docs" / "choose-threshold.md").read_text()
    code, out, _ = run(capsys, "tune", "--sample")
    assert code == 0
    table = out.splitlines()[:9]
    assert table[1].startswith("threshold  removed")
    for line in table:
        assert line in page
    advice = next(line for line in out.splitlines() if line.startswith("dedup at --threshold"))
    assert advice in page


def test_the_python_table_is_dedups_at_each_threshold_and_the_commands(capsys):
    import gzip

    import neardup
    from conftest import SAMPLE

    with gzip.open(SAMPLE, "rt", encoding="utf-8") as f:
        docs = [json.loads(line) for line in f]
    rows = neardup.threshold_table(docs, [0.65, 0.9], threshold=0.75)
    assert [row.threshold for row in rows] == [0.65, 0.75, 0.9]
    for row in rows:
        result = neardup.dedup(docs, threshold=row.threshold)
        assert (row.removed, row.clusters) == (result.n_removed, result.n_clusters)
        for pair in row.above:
            assert not result.keep[pair.row] and result.kept_row[pair.row] == pair.kept_row
            assert pair.jaccard == float(result.jaccard[pair.row])
            assert np.float32(pair.jaccard) >= np.float32(row.threshold)  # the rule's float32
        for pair in row.below:
            assert result.keep[pair.row] and np.float32(pair.jaccard) < np.float32(row.threshold)
    code, out, _ = run(
        capsys, "tune", "--sample", "--json", "--thresholds", "0.65,0.9", "--threshold", "0.75"
    )
    assert code == 0
    assert [r["removed"] for r in json.loads(out)["rows"]] == [row.removed for row in rows]


def test_tune_json_counts_the_skipped_files_and_records_as_dedup_json_does(tmp_path, capsys):
    from test_folders import mixed_folder

    folder, _, _ = mixed_folder(tmp_path)
    with open(folder / "a.jsonl", "a") as f:
        f.write("not json\n")
    args = (folder, "--format", "jsonl", "--on-error", "skip", "--json")
    code, out, err = run(capsys, "dedup", *args, "--dry-run")
    assert code == 0, err
    dedup = json.loads(out)
    # by hand: the folder's four files of other formats, and the bad line of a.jsonl
    assert (dedup["skipped_files"], dedup["skipped"], len(dedup["errors"])) == (4, 5, 5)
    for mode in ([], ["--candidates", "fingerprint"]):
        code, out, err = run(capsys, "tune", *args, *mode)
        assert code == 0, err
        tune = json.loads(out)
        for key in ("skipped_files", "skipped", "errors"):
            assert tune[key] == dedup[key], (mode, key)


def test_tune_counts_the_candidate_pairs_it_did_not_compare_as_dedup_does(tmp_path, capsys):
    # At t = 0.5 a text of two shingles meets its overlap with the first: 1,100 texts sharing
    # it cannot be split, are not one set, and are over the cap: they are compared in pieces of
    # 1,024 and 76, and the pairs across the pieces are counted.
    texts = [f"alpha beta gamma w{i}x" for i in range(1100)]
    path = tmp_path / "skip.jsonl"
    path.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts))
    code, out, _ = run(capsys, "dedup", path, "--threshold", 0.5, "--dry-run", "--json")
    skipped = json.loads(out)["evidence"]["short_pairs_skipped"]
    assert code == 0 and skipped == 1024 * 76
    args = (path, "--threshold", 0.5, "--thresholds", "0.6")
    code, out, err = run(capsys, "tune", *args, "--json")
    assert code == 0, err
    tune = json.loads(out)
    assert tune["evidence"] == {"short_pairs_skipped": skipped}
    by_row = [(row["threshold"], row["short_pairs_skipped"]) for row in tune["rows"]]
    rows = neardup.threshold_table(texts, [0.6], threshold=0.5)
    assert by_row == [(row.threshold, row.short_pairs_skipped) for row in rows]
    assert by_row[0] == (0.5, skipped)
    assert (
        rows[1].short_pairs_skipped
        == neardup.dedup(texts, threshold=0.6).stats["short_pairs_skipped"]
    )
    code, out, _ = run(capsys, "tune", *args)
    assert code == 0 and f"note: {skipped:,} candidate pairs of short texts not compared" in out
