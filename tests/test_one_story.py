"""Every surface tells the story of the default it has: prefix candidates (documents sharing a
rare shingle) whose shingles' Jaccard decides at --threshold; k is the fingerprint radius of
--candidates fingerprint, --no-verify and the indexes only."""

from __future__ import annotations

import json
import random
import re

import neardup
from command import run

WORDS = [f"w{i}" for i in range(400)]


def shingle_set(text: str, n: int = 3) -> set[str]:
    words = text.split()
    return {" ".join(words[i : i + n]) for i in range(len(words) - n + 1)}


def by_hand(a: str, b: str) -> float:
    x, y = shingle_set(a), shingle_set(b)
    return len(x & y) / len(x | y)


def far_pair() -> tuple[str, str, int, float]:
    """A long text and an edit of it at Jaccard >= 0.8 whose fingerprints are more than 8 bits
    apart (beyond the default k of fingerprint candidates)."""
    r = random.Random(7)
    words = [r.choice(WORDS) for _ in range(150)]
    a = " ".join(words)
    for seed in range(5000):
        e = random.Random(seed)
        edited = list(words)
        for _ in range(4):
            i = e.randrange(len(edited))
            edited[i] = "x" + edited[i]
        b = " ".join(edited)
        distance = neardup.hamming(neardup.simhash(a), neardup.simhash(b))
        if distance > 8 and by_hand(a, b) >= 0.8:
            return a, b, distance, by_hand(a, b)
    raise AssertionError("no such edit")


# -- --help ------------------------------------------------------------------------------------


def test_dedup_help_tells_the_default_and_when_k_applies(capsys):
    code, out, _ = run(capsys, "dedup", "--help")
    text = " ".join(out.split())
    assert code == 0
    assert "documents whose fingerprints are within --k bits and whose" not in text
    assert "share one of the rarest shingles" in text and "Default: prefix" in text
    assert "--threshold (0.8)" in text
    assert "Used only with --candidates fingerprint or --no-" in text


def test_explain_help_names_the_candidates_mode_and_threshold(capsys):
    code, out, _ = run(capsys, "explain", "--help")
    text = " ".join(out.split())
    assert code == 0 and "--candidates [prefix|fingerprint]" in text
    assert "Default: prefix" in text and "--threshold J" in text and "[default: 0.8;" in text
    assert "Used only with --candidates fingerprint or --no-" in text


def test_pairs_help_says_it_lists_pairs_within_k_only(capsys):
    code, out, _ = run(capsys, "pairs", "--help")
    text = " ".join(out.split())
    assert code == 0 and "only pairs within it are listed" in text
    assert "Used only with --candidates fingerprint" not in text


def test_index_build_help_gives_the_k_each_kind_of_index_is_built_with(tmp_path, capsys):
    code, out, _ = run(capsys, "index", "build", "--help")
    text = " ".join(out.split())
    found = re.search(r"\[default: (\d+) for INDEX\.ndx; (\d+) for a fingerprint index\]", text)
    assert code == 0 and found, text
    for name, said in (("s.ndx", found[1]), ("s.sidx", found[2])):
        code, out, _ = run(capsys, "index", "build", "--sample", "-o", tmp_path / name, "--json")
        assert code == 0 and json.loads(out)["k"] == int(said)


# -- a --k that does nothing says so -----------------------------------------------------------


def test_a_k_given_to_prefix_candidates_is_noted_and_changes_nothing(capsys):
    code, plain, err = run(capsys, "dedup", "--sample", "--dry-run", "--json")
    assert code == 0 and "--k" not in err
    for k in ("0", "16"):
        code, out, err = run(capsys, "dedup", "--sample", "--dry-run", "--json", "--k", k)
        assert code == 0 and json.loads(out)["removed"] == json.loads(plain)["removed"]
        assert err.count("\n") == 1 and f"--k {k} has no effect: prefix candidates" in err
    # where k is used, no note, and k changes the result
    removed = []
    for k in ("0", "8"):
        code, out, err = run(
            capsys,
            "dedup",
            "--sample",
            "--dry-run",
            "--json",
            "--k",
            k,
            "--candidates",
            "fingerprint",
        )
        assert code == 0 and "has no effect" not in err
        removed.append(json.loads(out)["removed"])
    assert removed[0] < removed[1]
    code, out, err = run(capsys, "dedup", "--sample", "--dry-run", "--no-verify", "--k", "2")
    assert code == 0 and "has no effect" not in err


def test_explain_notes_an_unused_k(capsys):
    code, _, err = run(capsys, "explain", "a b c d", "a b c e", "--k", "5")
    assert code == 0 and "--k 5 has no effect" in err


# -- explain -----------------------------------------------------------------------------------


def test_explain_decides_far_pairs_by_prefix_candidates_and_jaccard(capsys):
    a, b, distance, expected = far_pair()
    code, out, err = run(capsys, "explain", a, b)
    assert code == 0 and err == ""
    first = out.splitlines()[0]
    assert first.startswith(f"Jaccard {expected:.4f}; near-duplicates: dedup removes B")
    assert "prefix candidates, threshold 0.8" in first and "k=" not in out
    assert f"Jaccard {expected:.4f} >= threshold 0.8" in first
    assert f"distance {distance} " in out
    # the shared shingles are those the Jaccard counts
    x, y = shingle_set(a), shingle_set(b)
    assert f"shared 3-word shingles ({len(x & y)} of {len(x | y)})" in out
    assert f"only in B ({len(y - x)}):" in out
    # fingerprint candidates at k = 8 do not compare it (a long text, farther than k)
    code, out, _ = run(capsys, "explain", a, b, "--candidates", "fingerprint")
    assert code == 0 and "not near-duplicates: dedup keeps both" in out
    assert (
        f"fingerprint candidates, threshold 0.8, word 3-shingles: distance {distance} > k=8" in out
    )
    code, out, _ = run(capsys, "explain", a, b, "--candidates", "fingerprint", "--k", distance)
    assert code == 0 and "near-duplicates: dedup removes B" in out.splitlines()[0]
    assert f"distance {distance} <= k={distance}, compared" in out


def test_explain_names_the_threshold_in_use(capsys):
    a, b, _, expected = far_pair()
    code, out, _ = run(capsys, "explain", a, b, "--threshold", "0.9")
    assert code == 0 and "not near-duplicates" in out
    assert (
        "prefix candidates, threshold 0.9" in out
        and f"Jaccard {expected:.4f} < threshold 0.9" in out
    )


def test_a_dedup_against_an_index_names_the_candidates_it_used_on_every_driver(tmp_path, capsys):
    r = random.Random(11)
    base = [" ".join(r.choice(WORDS) for _ in range(40)) for _ in range(30)]
    index_docs = tmp_path / "a.jsonl"
    index_docs.write_text(
        "".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in enumerate(base))
    )
    new = tmp_path / "b.jsonl"
    edited = [t.replace(t.split()[5], "changed", 1) for t in base[:10]]
    new.write_text(
        "".join(json.dumps({"id": 100 + i, "text": t}) + "\n" for i, t in enumerate(edited))
    )
    for kind in ("prefix", "fingerprint"):
        ndx = tmp_path / f"{kind}.ndx"
        assert run(capsys, "index", "build", index_docs, "-o", ndx, "--candidates", kind)[0] == 0
        said = []
        for engine in ([], ["--workers", "1"]):
            args = ("dedup", new, "--against", ndx, *engine, "--dry-run")
            code, out, err = run(capsys, *args, "--json")
            assert code == 0, err
            assert json.loads(out)["candidates"] == kind
            code, out, err = run(capsys, *args)
            assert code == 0, err
            said.append(out + err)
        # One machine names k only for fingerprint candidates; Dask's cluster line likewise.
        assert ("k=8" in said[0]) == (kind == "fingerprint"), said[0]
        assert ("within k=8" in said[1]) == (kind == "fingerprint"), said[1]


def test_a_k_given_against_an_index_of_prefix_postings_is_noted_on_every_driver(tmp_path, capsys):
    r = random.Random(12)
    base = [" ".join(r.choice(WORDS) for _ in range(40)) for _ in range(30)]
    index_docs = tmp_path / "a.jsonl"
    index_docs.write_text("".join(json.dumps({"text": t}) + "\n" for t in base))
    new = tmp_path / "b.jsonl"
    edited = [t.replace(t.split()[5], "changed", 1) for t in base[:10]]
    new.write_text("".join(json.dumps({"text": t}) + "\n" for t in edited + ["other words"]))
    ndx = tmp_path / "a.ndx"
    assert run(capsys, "index", "build", index_docs, "-o", ndx)[0] == 0
    help_text = " ".join(run(capsys, "dedup", "--help")[1].split())
    assert "--k is then the index search's radius" not in help_text
    assert "by prefix candidates (the default, whatever --k)" in help_text
    for engine in ([], ["--workers", "1"]):
        args = ("dedup", new, "--against", ndx, *engine, "--dry-run", "--json")
        for k in ("0", "16"):
            code, out, err = run(capsys, *args, "--k", k)
            assert code == 0 and json.loads(out)["removed"] == 10, (engine, err)
            assert (
                f"note: --k {k} has no effect: {ndx}'s prefix postings find every pair at "
                "Jaccard >= 0.8 whatever k; --k applies with --candidates fingerprint" in err
            ), (engine, err)
        code, out, err = run(capsys, *args, "--k", "0", "--candidates", "fingerprint")
        assert code == 0 and "has no effect" not in err, (engine, err)


def test_fingerprint_options_given_to_prefix_candidates_are_noted_and_change_nothing(capsys):
    code, plain, err = run(capsys, "dedup", "--sample", "--dry-run", "--json")
    assert code == 0 and err == ""
    flags = ("--tokens", "char", "--ngram", "4", "--weighting", "binary")
    code, out, err = run(capsys, "dedup", "--sample", "--dry-run", "--json", *flags)
    assert code == 0 and json.loads(out)["removed"] == json.loads(plain)["removed"]
    assert err == (
        "neardup: note: --tokens char, --ngram 4, --weighting binary only change the "
        "fingerprints, which prefix candidates (the default) do not read: the Jaccard of word "
        "3-shingles decides; the fingerprint options apply with --candidates fingerprint or "
        "--no-verify\n"
    )
    code, _, err = run(capsys, "tune", "--sample", "--json", "--stopwords", "english")
    assert code == 0 and "note: --stopwords english only changes the fingerprints" in err
    # where the fingerprints propose the pairs, no note, and the options change the result
    removed = []
    for extra in ((), flags):
        code, out, err = run(
            capsys,
            "dedup",
            "--sample",
            "--dry-run",
            "--json",
            "--candidates",
            "fingerprint",
            *extra,
        )
        assert code == 0 and err == ""
        removed.append(json.loads(out)["removed"])
    assert removed[0] != removed[1]
    code, _, err = run(capsys, "dedup", "--sample", "--dry-run", "--no-verify", "--ngram", "2")
    assert code == 0 and err == ""


def test_index_build_says_what_proposed_its_pairs_and_k_only_for_fingerprints(tmp_path, capsys):
    code, out, _ = run(capsys, "index", "build", "--sample", "-o", tmp_path / "p.ndx")
    assert code == 0 and "near-duplicates removed; prefix candidates, Jaccard >= 0.8," in out
    assert out.rstrip().endswith("exact sets; k=8 for a search by fingerprints)")
    args = ("index", "build", "--sample", "-o", tmp_path / "f.ndx", "--candidates", "fingerprint")
    code, out, _ = run(capsys, *args)
    assert code == 0
    assert "near-duplicates removed; fingerprint candidates within k=8, Jaccard >= 0.8," in out


def test_no_page_tells_the_fingerprint_story_of_the_default():
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    for page in [root / "README.md", *(root / "docs").glob("*.md")]:
        text = " ".join(page.read_text(encoding="utf-8").split())
        assert "within --k bits and whose" not in text, page.name
        assert "verified (default, k = 8)" not in text, page.name


def test_a_shingle_given_without_verification_is_refused_as_a_threshold_is(capsys):
    for command in (
        ["dedup", "--sample", "--dry-run"],
        ["pairs", "--sample"],
        ["explain", "a", "b"],
    ):
        code, out, err = run(capsys, *command, "--no-verify", "--shingle", "2")
        assert (code, out) == (2, ""), command
        assert "--no-verify takes pairs on fingerprints alone: drop --shingle or --no-verify" in err
        code, _, err = run(capsys, *command, "--no-verify")
        assert code == 0, (command, err)
