"""Every benchmark entry point finds its data in a fresh clone (issue 16): without ../shared it falls
back to the 3,000-document sample that ships with neardup, says so in one line on stderr, and
computes the exact truth where it needs one. Only the data-locating functions run here, never a
benchmark."""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent
BENCHES = ROOT / "benches"
sys.path.insert(0, str(BENCHES))
import synth  # noqa: E402

SAMPLE_NOTE = "no Debian corpus in {data}: using the debian-sample.jsonl.gz that ships with neardup (3,000 documents)"


def load(name: str, module_name: str | None = None) -> ModuleType:
    """A benches/ script as a module (its main() does not run)."""
    spec = importlib.util.spec_from_file_location(
        module_name or f"bench_{name}", BENCHES / f"{name}.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def one_line(capsys: pytest.CaptureFixture[str], data: Path) -> str:
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1 and err[0].startswith(SAMPLE_NOTE.format(data=data)), err
    return err[0]


def test_synth_helpers_fall_back_to_the_sample(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    absent = tmp_path / "absent"
    assert synth.debian_source(absent) == synth.DEBIAN_SAMPLE
    assert one_line(capsys, absent).endswith("; --data DIR for the full corpus")
    assert synth.debian_corpus(absent, hint="X=DIR") == (synth.DEBIAN_SAMPLE, None)
    assert one_line(capsys, absent).endswith(
        "its truth computed exactly now; X=DIR for the full corpus"
    )
    # A folder with the corpus but no truth: debian_source takes the corpus, debian_corpus the sample.
    (tmp_path / synth.DEBIAN_JSONL_GZ.name).write_bytes(synth.DEBIAN_SAMPLE.read_bytes())
    assert synth.debian_source(tmp_path) == tmp_path / synth.DEBIAN_JSONL_GZ.name
    assert capsys.readouterr().err == ""
    assert synth.debian_corpus(tmp_path)[0] == synth.DEBIAN_SAMPLE


def test_minhash_quality_computes_the_samples_truth(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    minhash_quality = load("minhash_quality")
    texts, strict, loose, label = minhash_quality.load(tmp_path / "absent")
    one_line(capsys, tmp_path / "absent")
    assert len(texts) == 3000 and "debian-sample.jsonl.gz" in label
    assert len(strict) == 894 and set(strict) <= set(
        loose
    )  # the sample's truth (tests/test_synth.py)
    a, b = strict[0]
    assert synth.jaccard(synth.shingles(texts[a]), synth.shingles(texts[b])) >= 0.8


def test_bench_encoders_falls_back_to_the_sample_and_the_committed_chinese_text(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    bench_encoders = load("bench_encoders")
    docs = bench_encoders.debian_docs(tmp_path / "absent", 100)
    one_line(capsys, tmp_path / "absent")
    assert len(docs) == 100 and all(isinstance(d, str) and d for d in docs)
    name, lines = bench_encoders.chinese_lines(tmp_path / "002.txt")
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        f"no {tmp_path / '002.txt'}: timing the Chinese lines of benches/data/zh-simhash.txt instead"
    ]
    assert name == "zh-simhash.txt" and len(lines) >= 10
    assert bench_encoders.ZH_FALLBACK.is_file()


def test_bench_dask_draws_from_the_sample(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    bench_dask = load("bench_dask")
    drawn_from = []

    def generate(n, folder, *, seed, source, jobs):  # stops the run where the corpus is made
        drawn_from.append(source)
        raise SystemExit(0)

    monkeypatch.setattr(bench_dask.synth, "generate", generate)
    monkeypatch.setattr(
        sys, "argv", ["bench_dask.py", "--n", "10", "--data", str(tmp_path / "absent")]
    )
    with pytest.raises(SystemExit):
        bench_dask.main()
    one_line(capsys, tmp_path / "absent")
    assert drawn_from == [bench_dask.synth.DEBIAN_SAMPLE]


def test_compare_resolves_debian_to_the_sample_with_its_exact_truth(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    compare = load("compare")
    ap = argparse.ArgumentParser()
    args = argparse.Namespace(
        sizes="debian,100k",
        data=tmp_path / "absent",
        benchdata=tmp_path / "benchdata",
        corpus=None,
        truth=None,
    )
    scales, missing = compare.resolve_scales(args, ap)
    one_line(capsys, tmp_path / "absent")
    assert [(s.name, s.corpus, s.truth, s.exact) for s in scales] == [
        ("debian-sample", synth.DEBIAN_SAMPLE, None, True)
    ]
    assert missing == [
        f"100k: {tmp_path / 'benchdata' / 'corpus-100000-s0.jsonl'} does not exist and the Debian corpus "
        f"it is made from is not in {tmp_path / 'absent'} (--data DIR): skipped"
    ]
    assert not (tmp_path / "benchdata").exists()


def test_pytest_benchmark_fixtures_use_the_sample(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("NEARDUP_DATA", str(tmp_path / "absent"))
    conftest = load("conftest", "benches_conftest_under_test")
    path, note = conftest.corpus_path()
    assert path == synth.DEBIAN_SAMPLE
    assert note.startswith(SAMPLE_NOTE.format(data=tmp_path / "absent")) and note.endswith(
        "; NEARDUP_DATA=DIR for the full corpus"
    )
    assert "\n" not in note and capsys.readouterr().err == ""  # said once, by pytest_sessionstart
