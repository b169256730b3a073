"""The built-in English stopword list, for the filter that keeps only shingles holding a stopword.

Advertising, navigation and boilerplate text is made of nouns and slogans; running prose is held
together by function words. Keeping only the shingles that contain at least one of these words
weights a page's prose over its chrome. The list is function words only (articles, pronouns,
prepositions, conjunctions, auxiliaries), written in case-folded form.
"""

from __future__ import annotations

from typing import Any

ENGLISH = frozenset(
    [
        "a",
        "about",
        "above",
        "after",
        "again",
        "against",
        "all",
        "am",
        "an",
        "and",
        "any",
        "are",
        "as",
        "at",
        "be",
        "because",
        "been",
        "before",
        "being",
        "below",
        "between",
        "both",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "doing",
        "down",
        "during",
        "each",
        "few",
        "for",
        "from",
        "further",
        "had",
        "has",
        "have",
        "having",
        "he",
        "her",
        "here",
        "hers",
        "herself",
        "him",
        "himself",
        "his",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "itself",
        "just",
        "me",
        "might",
        "more",
        "most",
        "must",
        "my",
        "myself",
        "no",
        "nor",
        "not",
        "now",
        "of",
        "off",
        "on",
        "once",
        "only",
        "or",
        "other",
        "ought",
        "our",
        "ours",
        "ourselves",
        "out",
        "over",
        "own",
        "same",
        "shall",
        "she",
        "should",
        "so",
        "some",
        "such",
        "than",
        "that",
        "the",
        "their",
        "theirs",
        "them",
        "themselves",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "through",
        "to",
        "too",
        "under",
        "until",
        "up",
        "upon",
        "very",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "whom",
        "whose",
        "why",
        "will",
        "with",
        "within",
        "without",
        "would",
        "you",
        "your",
        "yours",
        "yourself",
        "yourselves",
    ]
)


def _stopword_list(stopwords: Any, normalize: Any) -> tuple[str, ...] | None:
    if stopwords is None or stopwords is False:
        return None
    if stopwords is True or (isinstance(stopwords, str) and stopwords == "english"):
        return _sorted_english(normalize)
    if isinstance(stopwords, str):
        raise ValueError(f'stopwords must be "english" or a list of words, got {stopwords!r}')
    words = list(stopwords)
    for w in words:
        if not isinstance(w, str):
            raise TypeError(f"stopwords must be strings, got {type(w).__name__}")
    return tuple(sorted({normalize(w) for w in words}))


def _sorted_english(normalize: Any) -> tuple[str, ...]:
    return tuple(sorted({normalize(w) for w in ENGLISH}))
