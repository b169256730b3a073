"""benches/synth_long.py: its truth (the pairs inside families) is the exact truth of the whole
corpus, found independently by prefix filtering over every pair (synth.exact_truth)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benches"))
import synth  # noqa: E402
import synth_long  # noqa: E402


def _sources(tmp_path: Path) -> Path:
    """A tiny suite: forty of the standard library's larger modules (real text of hundreds of
    words), half as ``code``, half as ``long``."""
    lib = Path(os.__file__).parent
    files = sorted(p for p in lib.glob("*.py") if p.stat().st_size > 8_000)[:40]
    texts = [p.read_text(encoding="utf-8", errors="replace") for p in files]
    for name, docs in (("code", texts[:20]), ("long", texts[20:])):
        with open(tmp_path / f"{name}.jsonl", "w", encoding="utf-8") as f:
            for i, t in enumerate(docs):
                f.write(json.dumps({"id": f"{name}-{i}", "text": t}) + "\n")
    return tmp_path


def test_family_truth_is_the_exact_truth(tmp_path: Path) -> None:
    sources = synth_long.load_sources(_sources(tmp_path))
    texts, pairs = synth_long.generate(400, sources, seed=3)
    assert len(texts) == 400
    assert sum(1 for *_, j in pairs if j >= 0.8) > 0  # families with near-duplicates
    exact = synth.exact_truth(texts, synth.LOOSE, synth.neardup_shingles)
    mine = synth.Truth.from_pairs(len(texts), pairs)
    assert exact.keys.tolist() == mine.keys.tolist()
    assert exact.jaccard.round(6).tolist() == mine.jaccard.round(6).tolist()
    # Long: every base has at least MIN_WORDS words, and the same seed gives the same corpus.
    assert min(len(t.split()) for t in texts) > synth_long.MIN_WORDS * 0.6
    assert synth_long.generate(400, sources, seed=3) == (texts, pairs)
