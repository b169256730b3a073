"""Writes src/text/normal_tables.rs: the characters the core normalizes itself, from this
Python's ``unicodedata`` (the tables in the repository were made with Python 3.11, Unicode 14.0).

A character is taken under a setting (a Unicode form and case folding) when normalizing it alone
gives what it becomes in any text of taken characters: the first character of its compatibility
decomposition is of combining class 0 and never the second character of a composition (so it
neither reorders nor composes with the character before it), and what it becomes is no longer in
UTF-8 than it is. ``KEEP`` holds the characters every setting of a group (composing forms and no
form; decomposing forms) leaves as they are; ``MAPS`` holds, for each setting, the other taken
characters and what they become (themselves, where the setting leaves them). The core reads texts
that Python has normalized through the same maps: a character any normalization can output is
mapped to itself, which this script checks.

Usage: ``python tools/normal_tables.py`` (from the repository's root). A test checks that the
tables in the repository are what it makes.
"""

from __future__ import annotations

import sys
import unicodedata as ud

#: Blocks searched beyond those of the first tables: Latin, Greek, Cyrillic, punctuation, symbols.
BLOCKS = [
    (0x00A0, 0x024F),
    (0x0370, 0x03FF),
    (0x0400, 0x04FF),
    (0x2000, 0x206F),
    (0x2070, 0x209F),
    (0x20A0, 0x20CF),
    (0x2100, 0x218F),
    (0x2190, 0x23FF),
    (0x2460, 0x27BF),
    (0xFFFD, 0xFFFD),
]
#: CJK punctuation and kana, searched as the blocks above.
KANA = [(0x3001, 0x30FF)]
#: The blocks of unified ideographs and the Hangul syllables, taken whole (their unassigned code
#: points lie in blocks kept for unified ideographs, which compose and fold with nothing) where
#: the forms keep them (Hangul syllables decompose under NFD and NFKD).
IDEOGRAPHS = [
    (0x3400, 0x4DBF),
    (0x4E00, 0x9FFF),
    (0x20000, 0x2A6DF),
    (0x2A700, 0x2EE5F),
    (0x30000, 0x323AF),
]
HANGUL = (0xAC00, 0xD7A3)
#: Categories left out: controls, formats, line and paragraph separators, private use.
LEFT_OUT = {"Cn", "Cc", "Cf", "Cs", "Co", "Zl", "Zp"}
FORMS = [None, "NFC", "NFKC", "NFD", "NFKD"]
WIDE = set(range(0xFF01, 0xFF5F)) | {0x3000, 0xA0}


def seconds() -> set[int]:
    """The characters that compose with one before them."""
    out = set(range(0x1161, 0x1176)) | set(range(0x11A8, 0x11C3))
    for c in range(sys.maxunicode + 1):
        if 0xD800 <= c <= 0xDFFF:
            continue
        d = ud.decomposition(chr(c))
        if d and not d.startswith("<"):
            parts = [int(x, 16) for x in d.split()]
            if len(parts) == 2 and ud.normalize("NFC", chr(parts[0]) + chr(parts[1])) == chr(c):
                out.add(parts[1])
    return out


def becomes(c: str, form: str | None, fold: bool) -> str:
    out = ud.normalize(form, c) if form else c
    return out.casefold() if fold else out


def tables() -> str:
    """The text of src/text/normal_tables.rs."""
    second = seconds()

    def starts_clean(c: str) -> bool:
        first = ud.normalize("NFKD", c)[0]
        return ud.combining(first) == 0 and ord(first) not in second

    points = [c for lo, hi in BLOCKS + KANA for c in range(lo, hi + 1)]
    points = [c for c in points if c not in WIDE and ud.category(chr(c)) not in LEFT_OUT]
    points = [c for c in points if starts_clean(chr(c))]
    whole = [c for lo, hi in IDEOGRAPHS for c in range(lo, hi + 1)]
    assert all(
        ud.category(chr(c)) == "Cn"
        or (starts_clean(chr(c)) and ud.normalize("NFKD", chr(c)) == chr(c))
        for c in whole
    )
    settings = [(form, fold) for form in FORMS for fold in (False, True)]
    groups = {"COMPOSED": (None, "NFC", "NFKC"), "DECOMPOSED": ("NFD", "NFKD")}
    keep = {
        name: sorted(
            c
            for c in points
            if all(becomes(chr(c), f, fold) == chr(c) for f in forms for fold in (False, True))
        )
        for name, forms in groups.items()
    }
    keep["COMPOSED"] = sorted(
        set(keep["COMPOSED"]) | set(whole) | set(range(HANGUL[0], HANGUL[1] + 1))
    )
    keep["DECOMPOSED"] = sorted(set(keep["DECOMPOSED"]) | set(whole))
    maps = {}
    for form, fold in settings:
        group = keep["DECOMPOSED" if form in ("NFD", "NFKD") else "COMPOSED"]
        kept = set(group)
        entries = {}
        for c in points:
            if c in kept:
                continue
            out = becomes(chr(c), form, fold)
            if len(out.encode()) <= len(chr(c).encode()):
                entries[c] = out
        # What normalization outputs must read as itself: drop a character any text's
        # normalization can output that the map would change again.
        outputs = {
            ord(d)
            for x in range(sys.maxunicode + 1)
            if not 0xD800 <= x <= 0xDFFF
            for d in becomes(chr(x), form, fold)
        }
        for c in list(entries):
            if c in outputs and entries[c] != chr(c):
                del entries[c]
        maps[(form, fold)] = sorted(entries.items())

    def ranges(cs: list[int]) -> list[tuple[int, int]]:
        out: list[tuple[int, int]] = []
        for c in cs:
            if out and out[-1][1] + 1 == c:
                out[-1] = (out[-1][0], c)
            else:
                out.append((c, c))
        return out

    def rust_str(s: str) -> str:
        return (
            '"'
            + "".join(
                ch if 0x20 <= ord(ch) < 0x7F and ch not in '"\\' else f"\\u{{{ord(ch):X}}}"
                for ch in s
            )
            + '"'
        )

    lines = [
        "// Made by tools/normal_tables.py from Python's unicodedata (Unicode "
        f"{ud.unidata_version}); do not edit.",
        "",
    ]
    for name, cs in keep.items():
        lines.append("#[rustfmt::skip]")
        lines.append(f"pub(super) const {name}: &[(u32, u32)] = &[")
        rs = [f"(0x{a:04X}, 0x{b:04X})" for a, b in ranges(cs)]
        for i in range(0, len(rs), 5):
            lines.append("    " + ", ".join(rs[i : i + 5]) + ",")
        lines.append("];")
        lines.append("")
    lines.append("/// Each setting's map, at [`super::Normal::index`].")
    lines.append("#[rustfmt::skip]")
    lines.append("pub(super) const MAPS: [&[(u32, &str)]; 10] = [")
    for form, fold in settings:
        lines.append(f"    // {form} casefold={fold}")
        lines.append("    &[")
        es = [f"(0x{c:04X}, {rust_str(s)})" for c, s in maps[(form, fold)]]
        for i in range(0, len(es), 6):
            lines.append("        " + ", ".join(es[i : i + 6]) + ",")
        lines.append("    ],")
    lines.append("];")
    return "\n".join(lines) + "\n"


def main() -> None:
    with open("src/text/normal_tables.rs", "w") as f:
        f.write(tables())


if __name__ == "__main__":
    main()
