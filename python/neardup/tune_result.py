"""What tune reports: one TuneRow per distance and the TuneResult with its recommendation,
printed, as JSON or drawn."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from .deprecation import renamed_attribute
from .io import MissingExtraError
from .pair_sample import SampledPairs

#: What the plot extra is called, for messages.
PLOT_EXTRA = "pip install 'neardup[plot]'"


#: The defaults of the two recommendation rules.
TARGET_RECALL = 0.99


TARGET_PRECISION = 0.9


@dataclass
class TuneRow:
    """One distance of the curve (figures for the result's ``shingle``; NaN without pairs).

    Attributes:
        k: the Hamming distance.
        pairs: pairs at distance exactly ``k`` (verified mode: of distinct texts with features;
            fingerprint-only mode: of documents).
        sampled: how many of them were measured.
        mean_jaccard, median_jaccard: of the sampled pairs.
        precision: verified mode: weighted by documents, the mean over the texts with a pair at
            ``k`` of the share of their pairs at ``k`` that are near-duplicates; fingerprint-only
            mode: the share of the sampled pairs that are near-duplicates (Jaccard >= threshold).
        pairs_within: pairs at distance <= ``k`` (the candidates ``k`` proposes).
        precision_within: the same as ``precision``, within ``k`` (fingerprint-only mode: the
            precision of reporting every pair within ``k``).
        duplicates_within: estimated near-duplicate pairs within ``k``.
        pair_precision: the share of the sampled pairs at ``k`` that are near-duplicates.
        duplicates: estimated near-duplicate pairs at ``k``: ``pairs * pair_precision``.
        candidates_per_duplicate: ``pairs_within / duplicates_within``, the cost of ``k``.
        texts, texts_within: verified mode: distinct texts with a pair at ``k``, within ``k``.
        recall_within, recall_se: verified mode: the estimated share of the near-duplicate pairs
            within ``max_k`` that lie within ``k``, and its standard error.
    """

    k: int
    pairs: int
    sampled: int
    mean_jaccard: float
    median_jaccard: float
    precision: float
    pairs_within: int
    precision_within: float
    duplicates_within: float
    pair_precision: float = math.nan
    duplicates: float = math.nan
    candidates_per_duplicate: float = math.nan
    texts: int | None = None
    texts_within: int | None = None
    recall_within: float = math.nan
    recall_se: float = math.nan

    def as_dict(self) -> dict[str, Any]:
        """The row with NaN as None (for JSON)."""
        return {
            name: (None if isinstance(v, float) and math.isnan(v) else v)
            for name, v in self.__dict__.items()
        }


@dataclass
class TuneResult:
    """What :func:`tune` measured: the curve, the recommended k, and k by shingle size.

    Attributes:
        rows: one :class:`TuneRow` per distance 0..max_k.
        recommended_k: verified mode: the smallest k whose recall within k reaches
            ``target_recall``; fingerprint-only mode: the largest k whose precision within k
            reaches ``target_precision`` (word ``shingle``-shingle Jaccard >= ``threshold``); None
            when none does.
        recommended_by_shingle: the same rule for each shingle size measured.
        precision_within_by_shingle: shingle size -> precision within k, for k = 0..max_k.
        sampled: the sampled pairs with their Jaccards (:class:`SampledPairs`).
        documents: documents fingerprinted.
        verify: True for the verified mode, False for the fingerprint-only one.
        target_precision, target_recall: the target of the mode's rule (the other is None).
        texts, copies, featureless: verified mode: the distinct texts with features between
            which pairs are counted, and the rows left out as copies and as featureless.
        recall_within_by_shingle: verified mode: shingle size -> recall within k.
        shingle: words per shingle of the Jaccard that decides a near-duplicate.

    ``ngram``, ``recommended_by_ngram``, ``precision_within_by_ngram`` and
    ``recall_within_by_ngram`` are the old names of ``shingle`` and the ``*_by_shingle``
    attributes: still readable for one release, with a DeprecationWarning.
    """

    rows: list[TuneRow]
    recommended_k: int | None
    recommended_by_shingle: dict[int, int | None]
    precision_within_by_shingle: dict[int, list[float]]
    sampled: SampledPairs
    documents: int
    shingle: int
    threshold: float
    target_precision: float | None
    sample: int
    seed: int
    verify: bool = True
    target_recall: float | None = None
    texts: int | None = None
    copies: int = 0
    featureless: int = 0
    recall_within_by_shingle: dict[int, list[float]] = field(default_factory=dict)
    # Whether the messages name the command's options (`neardup tune` sets it) or tune()'s.
    command: bool = field(default=False, repr=False, compare=False)

    # The old names, readable for one release.
    ngram = renamed_attribute("ngram", "shingle")
    recommended_by_ngram = renamed_attribute("recommended_by_ngram", "recommended_by_shingle")
    precision_within_by_ngram = renamed_attribute(
        "precision_within_by_ngram", "precision_within_by_shingle"
    )
    recall_within_by_ngram = renamed_attribute("recall_within_by_ngram", "recall_within_by_shingle")

    def _option(self, name: str) -> str:
        """How the reader gives the setting ``name`` of :func:`neardup.tune`: ``--max-k`` on the
        command line, ``max_k=`` in Python (the pairs per distance are ``--pairs`` and
        ``sample=``)."""
        if self.command:
            return "--pairs" if name == "sample" else "--" + name.replace("_", "-")
        return name + "="

    @property
    def max_k(self) -> int:
        return len(self.rows) - 1

    def to_pandas(self) -> Any:
        """The curve as a DataFrame, one row per k, with ``precision_within_<n>`` (and in
        verified mode ``recall_within_<n>``) per shingle size."""
        import pandas as pd

        frame = pd.DataFrame([row.__dict__ for row in self.rows])
        for n, values in sorted(self.precision_within_by_shingle.items()):
            frame[f"precision_within_{n}"] = values
        for n, values in sorted(self.recall_within_by_shingle.items()):
            frame[f"recall_within_{n}"] = values
        return frame

    def as_dict(self) -> dict[str, Any]:
        """Everything but the sampled pairs, JSON-ready (NaN as None)."""

        def clean(values: list[float]) -> list[float | None]:
            return [None if math.isnan(v) else v for v in values]

        by_shingle = {
            "recommended_by_shingle": {
                str(n): k for n, k in sorted(self.recommended_by_shingle.items())
            },
            "precision_within_by_shingle": {
                str(n): clean(values)
                for n, values in sorted(self.precision_within_by_shingle.items())
            },
            "recall_within_by_shingle": {
                str(n): clean(values) for n, values in sorted(self.recall_within_by_shingle.items())
            },
        }
        return {
            "verify": self.verify,
            "documents": self.documents,
            "texts": self.texts,
            "copies": self.copies,
            "featureless": self.featureless,
            "shingle": self.shingle,
            "threshold": self.threshold,
            "target_recall": self.target_recall,
            "target_precision": self.target_precision,
            "sample": self.sample,
            "seed": self.seed,
            "max_k": self.max_k,
            "recommended_k": self.recommended_k,
            "rows": [row.as_dict() for row in self.rows],
            **by_shingle,
            # The old keys, for one release.
            "ngram": self.shingle,
            **{key.replace("shingle", "ngram"): value for key, value in by_shingle.items()},
        }

    def _truth(self) -> str:
        return f"word {self.shingle}-shingle Jaccard >= {self.threshold:g}"

    def verdict(self) -> str:
        """The recommendation in one sentence."""
        if not self.verify:
            return self._verdict_fingerprints()
        last = self.rows[-1]
        if not last.pairs_within:
            return f"no recommendation: no two distinct texts with words within k = {self.max_k}"
        if self.recommended_k is None:
            return (
                f"no recommendation: none of the {len(self.sampled.a):,} pairs sampled within k = {self.max_k} is a "
                f"near-duplicate ({self._truth()}): lower {self._option('threshold')}, or raise "
                f"{self._option('max_k')}"
            )
        row = self.rows[self.recommended_k]
        assert self.target_recall is not None
        text = (
            f"recommended k = {row.k}: the smallest k that keeps >= {self.target_recall:g} of the near-duplicate pairs "
            f"({self._truth()}) found within k = {self.max_k} (recall {row.recall_within:.3f} +- {row.recall_se:.3f}); "
            f"it proposes {row.pairs_within:,} candidate pair{'s' if row.pairs_within != 1 else ''}, "
            f"{row.candidates_per_duplicate:.2f} per near-duplicate; precision within k "
            f"{row.precision_within:.3f} (by documents)"
        )
        if row.recall_se > 1 - self.target_recall:
            text += (
                f"; uncertain (standard error {row.recall_se:.3f}): raise {self._option('sample')}"
            )
        if last.duplicates > (1 - self.target_recall) * last.duplicates_within:
            text += (
                f"; near-duplicates still appear at k = {self.max_k} ({last.duplicates:,.0f} pairs): "
                f"raise {self._option('max_k')} to count those farther apart"
            )
        return text

    def _verdict_fingerprints(self) -> str:
        rule = f"precision within k >= {self.target_precision:g} ({self._truth()})"
        if self.recommended_k is not None:
            row = self.rows[self.recommended_k]
            return (
                f"recommended k = {row.k}: the largest k with {rule}; it reports "
                f"{row.pairs_within:,} pair{'s' if row.pairs_within != 1 else ''}, "
                f"precision {row.precision_within:.3f}"
            )
        if not any(row.pairs for row in self.rows):
            return f"no recommendation: no pair of documents within k = {self.max_k}"
        best = max(
            (r for r in self.rows if not math.isnan(r.precision_within)),
            key=lambda r: (r.precision_within, r.k),
        )
        return (
            f"no k in 0..{self.max_k} reaches {rule}; the most precise is k = {best.k} "
            f"({best.precision_within:.3f}): lower {self._option('target_precision')} or "
            f"{self._option('threshold')}, or try other fingerprint settings"
        )

    def __str__(self) -> str:
        def num(v: float, digits: int = 3) -> str:
            return "-" if math.isnan(v) else f"{v:.{digits}f}"

        def whole(v: float) -> str:
            return "-" if math.isnan(v) else f"{v:,.0f}"

        if self.verify:
            header: tuple[str, ...] = (
                "k",
                "pairs at k",
                "sampled",
                "mean J",
                "precision at k",
                "duplicates at k",
                "pairs within k",
                "texts within k",
                "precision within k",
                "recall within k",
                "+-",
                "candidates per duplicate",
            )
            body: list[tuple[str, ...]] = [
                (
                    str(r.k),
                    f"{r.pairs:,}",
                    f"{r.sampled:,}",
                    num(r.mean_jaccard),
                    num(r.precision),
                    whole(r.duplicates),
                    f"{r.pairs_within:,}",
                    f"{r.texts_within or 0:,}",
                    num(r.precision_within),
                    num(r.recall_within),
                    num(r.recall_se),
                    num(r.candidates_per_duplicate, 2),
                )
                for r in self.rows
            ]
            intro = (
                f"{self.documents:,} documents: {self.texts or 0:,} distinct texts with words, {self.copies:,} exact "
                f"cop{'y' if self.copies == 1 else 'ies'} and {self.featureless:,} without "
                "words left out; pairs of distinct "
                f"texts, up to {self.sample:,} sampled at each distance (seed {self.seed}); a "
                "pair is a near-duplicate when "
                f"its {self._truth()}; precision is weighted by documents"
            )
        else:
            header = (
                "k",
                "pairs at k",
                "sampled",
                "mean J",
                "median J",
                "precision at k",
                "pairs within k",
                "precision within k",
                "duplicates within k",
            )
            body = [
                (
                    str(r.k),
                    f"{r.pairs:,}",
                    f"{r.sampled:,}",
                    num(r.mean_jaccard),
                    num(r.median_jaccard),
                    num(r.precision),
                    f"{r.pairs_within:,}",
                    num(r.precision_within),
                    whole(r.duplicates_within),
                )
                for r in self.rows
            ]
            intro = (
                f"{self.documents:,} documents; up to {self.sample:,} pairs sampled at each "
                f"distance (seed {self.seed}); "
                f"a pair is a near-duplicate when its word {self.shingle}-shingle Jaccard J >= {self.threshold:g}"
            )
        widths = [max(len(h), *(len(line[c]) for line in body)) for c, h in enumerate(header)]
        lines = [intro, "  ".join(h.rjust(w) for h, w in zip(header, widths))]
        lines += ["  ".join(cell.rjust(w) for cell, w in zip(line, widths)) for line in body]
        lines.append(self.verdict())
        if len(self.recommended_by_shingle) > 1:
            lines.append(
                "recommended k by shingle size: "
                + ", ".join(
                    f"{n} word{'s' if n > 1 else ''}: {'none' if k is None else k}"
                    for n, k in sorted(self.recommended_by_shingle.items())
                )
            )
        return "\n".join(lines)

    def plot(self) -> Any:
        """A matplotlib ``Figure``: above, recall within k (verified mode) or precision within k
        (fingerprint-only mode) for each shingle size, the precision at k, the target and the
        recommended k; below, the pair counts at k and within k (log scale). Needs matplotlib
        (``pip install 'neardup[plot]'``); save it with ``fig.savefig(path)``."""
        try:
            from matplotlib.figure import Figure
        except ImportError:
            raise MissingExtraError(f"plotting needs matplotlib: {PLOT_EXTRA}") from None
        ks = [r.k for r in self.rows]
        fig = Figure(figsize=(8, 6.5), layout="constrained")
        top, bottom = fig.subplots(2, 1, sharex=True, height_ratios=(3, 2))
        weighting = " (by documents)" if self.verify else ""

        def column(axes: Any, name: str, fmt: str, color: str, label: str) -> None:
            """The rows' field ``name`` against k."""
            values = [getattr(r, name) for r in self.rows]
            axes.plot(ks, values, fmt, color=color, label=label)

        column(top, "precision", "o:", "tab:gray", f"precision at k{weighting}")
        others = iter(["tab:purple", "tab:olive", "tab:cyan", "tab:pink", "tab:brown"] * 4)
        curves, what = (
            (self.recall_within_by_shingle, "recall")
            if self.verify
            else (self.precision_within_by_shingle, "precision")
        )
        if self.verify:
            column(top, "precision_within", "s--", "tab:gray", "precision within k (by documents)")
        for n, values in sorted(curves.items()):
            style = (
                {"linewidth": 2.5, "color": "tab:blue"}
                if n == self.shingle
                else {"linewidth": 1, "color": next(others)}
            )
            top.plot(ks, values, "o-", label=f"{what} within k ({n}-word shingles)", **style)
        target = self.target_recall if self.verify else self.target_precision
        top.axhline(
            target, color="tab:red", linestyle="--", linewidth=1, label=f"target {what} {target:g}"
        )
        if self.recommended_k is not None:
            top.axvline(
                self.recommended_k,
                color="tab:green",
                linewidth=1.5,
                label=f"recommended k = {self.recommended_k}",
            )
        top.set_ylim(-0.02, 1.02)
        top.set_ylabel(f"near-duplicates: Jaccard >= {self.threshold:g}")
        top.set_title(
            f"neardup tune: {self.documents:,} documents, up to {self.sample:,} pairs sampled per distance"
        )
        top.grid(alpha=0.3)
        top.legend(loc="lower left", fontsize="small")
        unit = "text pairs" if self.verify else "document pairs"
        bottom.bar(
            ks, [max(r.pairs, 0) for r in self.rows], color="tab:orange", label=f"{unit} at k"
        )
        column(bottom, "pairs_within", "s-", "tab:brown", f"{unit} within k")
        column(bottom, "duplicates_within", "^-", "tab:green", "near-duplicates within k (est.)")
        if any(r.pairs for r in self.rows):
            bottom.set_yscale("log")
        bottom.set_xlabel("k (Hamming distance)")
        bottom.set_ylabel(unit)
        bottom.set_xticks(ks)
        bottom.grid(alpha=0.3)
        bottom.legend(loc="upper left", fontsize="small")
        return fig
