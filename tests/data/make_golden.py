"""Writes tests/data/golden.json once: texts and their fingerprints, frozen forever after.

It refuses to overwrite the file: a golden fingerprint that changes is a breaking change, to be
made by hand, on purpose, and listed in CHANGELOG.md under "Breaking".
"""

import json
import random
import sys
from pathlib import Path

import neardup

OUT = Path(__file__).with_name("golden.json")

CONFIGS = {
    "default": {},
    "word3": {"ngram": 3},
    "char5": {"tokens": "char", "ngram": 5},
    "binary2": {"ngram": 2, "weighting": "binary"},
    "stopwords3": {"ngram": 3, "stopwords": "english"},
    "raw": {"unicode_form": None, "casefold": False},
}


def texts() -> list[str]:
    rng = random.Random(20261121)
    words = [
        "the",
        "quick",
        "brown",
        "fox",
        "jumps",
        "over",
        "lazy",
        "dog",
        "while",
        "seven",
        "wizards",
        "quietly",
        "hex",
        "jolly",
        "bankers",
    ]
    long_text = " ".join(rng.choice(words) for _ in range(20000))
    return [
        "",
        " ",
        "\n\t  \u3000 \n",
        "a",
        "A",
        "hello",
        "Hello, World!",
        "hello world",
        "HELLO   WORLD",
        "The quick brown fox jumps over the lazy dog.",
        "The quick brown fox jumped over the lazy dog.",
        "the cat sat on the mat",
        "the cat sat on a mat",
        "we all scream for ice cream",
        "Simhash is a technique for quickly estimating how similar two sets are.",
        "Near-duplicate detection finds documents that are almost, but not exactly, the same.",
        "Debian is a free operating system, developed and maintained by the Debian project.",
        "libfoo-dev: development files for the foo library\nThis package contains the headers.",
        "libfoo-doc: documentation for the foo library\nThis package contains the manual.",
        "Ｆｕｌｌ ｗｉｄｔｈ ＡＳＣＩＩ ｔｅｘｔ",
        "ﬁne ligatures ﬂow",
        "Straße STRASSE strasse",
        "naïve café résumé",
        "nai\u0308ve cafe\u0301 re\u0301sume\u0301",
        "Ωμέγα ΑΛΦΑ βήτα",
        "Москва — столица России.",
        "مرحبا بالعالم",
        "שלום עולם",
        "नमस्ते दुनिया क्षत्रिय",
        "สวัสดีชาวโลก",
        "你妈妈喊你回家吃饭哦，回家罗回家罗",
        "你妈妈叫你回家吃饭啦，回家罗回家罗",
        "美国“51区”雇员称内部有9架飞碟，曾看见灰色外星人",
        "CSDN博客结构之法算法之道的作者July",
        "我喜欢看电视，不喜欢看电影。",
        "我不喜欢看电视，也不喜欢看电影。",
        "我是中国人",
        "我是中国人啊",
        "日本語のテキスト、ひらがなとカタカナ。",
        "ｶﾀｶﾅ ﾊﾝｶｸ",
        "한국어 텍스트입니다",
        "mixed 中文 and English 和 한국어 text",
        "emoji 😀 in 🎉 text 👍🏽",
        "😀😀😀",
        "🇫🇷 flags 🏳️‍🌈 and zwj 👨‍👩‍👧",
        "numbers 1234 5678 ٣٤٥ ²³",
        "under_score snake_case CamelCase kebab-case",
        "e-mail: someone@example.com, url: https://example.com/a?b=c",
        "tab\tseparated\tvalues\nand\r\nline endings",
        "x " * 500,
        "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor.",
        long_text,
    ]


def main() -> None:
    if OUT.exists():
        sys.exit(f"{OUT} exists: golden fingerprints never change (see this file's docstring)")
    hashers = {name: neardup.Simhasher(**opts) for name, opts in CONFIGS.items()}
    cases = [
        {
            "text": t,
            "fingerprints": {name: f"{h.fingerprint(t):016x}" for name, h in hashers.items()},
        }
        for t in texts()
    ]
    OUT.write_text(
        json.dumps(
            {"neardup": neardup.__version__, "configs": CONFIGS, "cases": cases},
            ensure_ascii=False,
            indent=1,
        )
        + "\n",
        encoding="utf-8",
    )
    print(f"{len(cases)} cases -> {OUT}")


if __name__ == "__main__":
    main()
