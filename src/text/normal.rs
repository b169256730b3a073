//! Texts a Unicode normalization and case folding leave as they are, or change only by what the
//! core does itself, decided on their UTF-8 bytes: such a text needs no normalization in Python.
//!
//! A text is *settled* under a [`Normal`] when each of its characters is ASCII, or in the table of
//! its form (CJK ideographs, kana, Hangul syllables under the composing forms, CJK and general
//! punctuation, Latin-1 symbols and small letters), or a *wide* character (U+FF01..=U+FF5E,
//! U+3000, U+00A0) where the form keeps it or maps it to ASCII ([`Fold::wide`]). Every character
//! of a table is its own normal form and case folding, of canonical combining class 0, and never
//! the second character of a canonical composition: a string of them is normalized as it is, and
//! so is one where a wide character became its ASCII character (ASCII composes with nothing
//! before it). These are properties of assigned characters that the Unicode stability policies
//! freeze (decompositions, combining classes, case folding, and no new compositions of existing
//! characters); the unassigned code points of the tables lie in blocks kept for unified
//! ideographs, which have none of them. The tests check every code point against Python's
//! `unicodedata`.

use crate::error::{Error, Result};

/// A Unicode normalization form, as Python's `unicodedata.normalize` names it, or none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    None,
    Nfc,
    Nfkc,
    Nfd,
    Nfkd,
}

impl Form {
    pub fn parse(name: Option<&str>) -> Result<Form> {
        Ok(match name {
            None => Form::None,
            Some("NFC") => Form::Nfc,
            Some("NFKC") => Form::Nfkc,
            Some("NFD") => Form::Nfd,
            Some("NFKD") => Form::Nfkd,
            Some(other) => {
                return Err(Error::invalid(format!(
                    "unicode_form must be NFKC, NFC, NFKD, NFD or None, got {other:?}"
                )))
            }
        })
    }

    /// Whether the form maps compatibility characters (a wide character to its ASCII one).
    pub fn compatibility(self) -> bool {
        matches!(self, Form::Nfkc | Form::Nfkd)
    }
}

/// A form and case folding: what Python's normalizer does to a text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Normal {
    pub form: Form,
    pub casefold: bool,
}

impl Normal {
    /// Whether the core can normalize `text` itself: every character is kept by this
    /// normalization or changed as [`fold`] changes it (ASCII capitals with `casefold`, wide
    /// characters under the compatibility forms).
    pub fn settled(self, text: &str) -> bool {
        if text.is_ascii() || (self.form == Form::None && !self.casefold) {
            return true;
        }
        text.chars().all(|c| self.takes(c as u32))
    }

    fn takes(self, c: u32) -> bool {
        if c < 0x80 || (0x4E00..=0x9FFF).contains(&c) {
            return true;
        }
        if is_wide(c) {
            // The compatibility forms map it to ASCII; the others keep it, but case folding
            // changes the full-width capitals.
            return self.form.compatibility() || !(self.casefold && (0xFF21..=0xFF3A).contains(&c));
        }
        let table = match self.form {
            Form::Nfd | Form::Nfkd => DECOMPOSED,
            Form::None | Form::Nfc | Form::Nfkc => COMPOSED,
        };
        let at = table.partition_point(|&(_, hi)| hi < c);
        table.get(at).is_some_and(|&(lo, _)| lo <= c)
    }
}

/// The wide characters: full-width ASCII, the ideographic space and the no-break space.
fn is_wide(c: u32) -> bool {
    (0xFF01..=0xFF5E).contains(&c) || c == 0x3000 || c == 0xA0
}

/// Whether UTF-8 `bytes` hold a wide character: U+FF01..=U+FF5E (EF BC 81..=BF, EF BD
/// 80..=9E), U+3000 (E3 80 80) or U+00A0 (C2 A0).
fn has_wide(bytes: &[u8]) -> bool {
    // The lead bytes found by `memchr3` (a vector scan), the bytes after each checked here.
    memchr::memchr3_iter(0xEF, 0xE3, 0xC2, bytes).any(|i| {
        let next = |k: usize| bytes.get(i + k).copied().unwrap_or(0);
        match bytes[i] {
            0xEF => matches!(
                (next(1), next(2)),
                (0xBC, 0x81..=0xBF) | (0xBD, 0x80..=0x9E)
            ),
            0xE3 => next(1) == 0x80 && next(2) == 0x80,
            0xC2 => next(1) == 0xA0,
            _ => false,
        }
    })
}

/// The ASCII character the compatibility forms make of a wide one.
fn narrow(c: char) -> char {
    match c as u32 {
        w @ 0xFF01..=0xFF5E => char::from((w - 0xFEE0) as u8),
        0x3000 | 0xA0 => ' ',
        _ => c,
    }
}

/// What the core changes in a text before hashing it: ASCII capitals to lower case (`ascii`),
/// wide characters to their ASCII ones (`wide`).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Fold {
    pub ascii: bool,
    pub wide: bool,
}

impl Fold {
    /// Whether [`fold`] changes `text`.
    pub fn may_change(self, text: &str) -> bool {
        self.changes_case(text) || self.changes_wide(text)
    }

    fn changes_case(self, text: &str) -> bool {
        self.ascii && text.bytes().any(|b| b.is_ascii_uppercase())
    }

    fn changes_wide(self, text: &str) -> bool {
        self.wide && !text.is_ascii() && has_wide(text.as_bytes())
    }
}

/// `text` folded: itself when there is nothing to change, else its copy in `buf`, never longer
/// than `text` (a wide character takes 2 or 3 bytes, its ASCII one 1).
pub fn fold<'a>(text: &'a str, fold: Fold, buf: &'a mut String) -> &'a str {
    let wide = fold.changes_wide(text);
    if !wide && !fold.changes_case(text) {
        return text;
    }
    buf.clear();
    if !wide {
        buf.push_str(text);
        buf.make_ascii_lowercase();
        return buf;
    }
    for c in text.chars() {
        let c = narrow(c);
        buf.push(if fold.ascii {
            c.to_ascii_lowercase()
        } else {
            c
        });
    }
    buf
}

// The tables, made from Python's unicodedata (Unicode 14.0): the characters of Latin-1,
// U+2010..=U+205E and U+3001..=U+30FF that are assigned, their own normal form under both forms
// (NFC and NFKC; NFD and NFKD) and their own case folding, of combining class 0 and not the
// second character of a composition; Hangul syllables (composing forms); and the blocks of
// unified ideographs whole.
#[rustfmt::skip]
const COMPOSED: &[(u32, u32)] = &[
    (0x00A1, 0x00A7), (0x00A9, 0x00A9), (0x00AB, 0x00AC), (0x00AE, 0x00AE), (0x00B0, 0x00B1),
    (0x00B6, 0x00B7), (0x00BB, 0x00BB), (0x00BF, 0x00BF), (0x00D7, 0x00D7), (0x00E0, 0x00FF),
    (0x2010, 0x2010), (0x2012, 0x2016), (0x2018, 0x2023), (0x2027, 0x2027), (0x2030, 0x2032),
    (0x2035, 0x2035), (0x2038, 0x203B), (0x203D, 0x203D), (0x203F, 0x2046), (0x204A, 0x2056),
    (0x2058, 0x205E), (0x3001, 0x3029), (0x3030, 0x3035), (0x3037, 0x3037), (0x303B, 0x303F),
    (0x3041, 0x3096), (0x309D, 0x309E), (0x30A0, 0x30FE), (0x3400, 0x4DBF), (0x4E00, 0x9FFF),
    (0xAC00, 0xD7A3), (0x20000, 0x2A6DF), (0x2A700, 0x2EE5F), (0x30000, 0x323AF),
];

#[rustfmt::skip]
const DECOMPOSED: &[(u32, u32)] = &[
    (0x00A1, 0x00A7), (0x00A9, 0x00A9), (0x00AB, 0x00AC), (0x00AE, 0x00AE), (0x00B0, 0x00B1),
    (0x00B6, 0x00B7), (0x00BB, 0x00BB), (0x00BF, 0x00BF), (0x00D7, 0x00D7), (0x00E6, 0x00E6),
    (0x00F0, 0x00F0), (0x00F7, 0x00F8), (0x00FE, 0x00FE), (0x2010, 0x2010), (0x2012, 0x2016),
    (0x2018, 0x2023), (0x2027, 0x2027), (0x2030, 0x2032), (0x2035, 0x2035), (0x2038, 0x203B),
    (0x203D, 0x203D), (0x203F, 0x2046), (0x204A, 0x2056), (0x2058, 0x205E), (0x3001, 0x3029),
    (0x3030, 0x3035), (0x3037, 0x3037), (0x303B, 0x303F), (0x3041, 0x304B), (0x304D, 0x304D),
    (0x304F, 0x304F), (0x3051, 0x3051), (0x3053, 0x3053), (0x3055, 0x3055), (0x3057, 0x3057),
    (0x3059, 0x3059), (0x305B, 0x305B), (0x305D, 0x305D), (0x305F, 0x305F), (0x3061, 0x3061),
    (0x3063, 0x3064), (0x3066, 0x3066), (0x3068, 0x3068), (0x306A, 0x306F), (0x3072, 0x3072),
    (0x3075, 0x3075), (0x3078, 0x3078), (0x307B, 0x307B), (0x307E, 0x3093), (0x3095, 0x3096),
    (0x309D, 0x309D), (0x30A0, 0x30AB), (0x30AD, 0x30AD), (0x30AF, 0x30AF), (0x30B1, 0x30B1),
    (0x30B3, 0x30B3), (0x30B5, 0x30B5), (0x30B7, 0x30B7), (0x30B9, 0x30B9), (0x30BB, 0x30BB),
    (0x30BD, 0x30BD), (0x30BF, 0x30BF), (0x30C1, 0x30C1), (0x30C3, 0x30C4), (0x30C6, 0x30C6),
    (0x30C8, 0x30C8), (0x30CA, 0x30CF), (0x30D2, 0x30D2), (0x30D5, 0x30D5), (0x30D8, 0x30D8),
    (0x30DB, 0x30DB), (0x30DE, 0x30F3), (0x30F5, 0x30F6), (0x30FB, 0x30FD), (0x3400, 0x4DBF),
    (0x4E00, 0x9FFF), (0x20000, 0x2A6DF), (0x2A700, 0x2EE5F), (0x30000, 0x323AF),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_are_sorted_and_apart() {
        for table in [COMPOSED, DECOMPOSED] {
            assert!(table.iter().all(|&(lo, hi)| lo <= hi));
            assert!(table.windows(2).all(|w| w[0].1 + 1 < w[1].0));
        }
    }

    #[test]
    fn settled_texts_by_form() {
        let nfkc = Normal {
            form: Form::Nfkc,
            casefold: true,
        };
        let nfd = Normal {
            form: Form::Nfd,
            casefold: true,
        };
        assert!(nfkc.settled("Plain ASCII"));
        assert!(nfkc.settled("用户名：（必填）한국어　ひらがな"));
        // A combining mark, a capital with an accent, a compatibility ideograph, a Hangul jamo.
        for text in ["e\u{301}", "É", "\u{F900}", "\u{1100}\u{1161}", "ｶ"] {
            assert!(!nfkc.settled(text), "{text}");
        }
        // Hangul syllables and voiced kana decompose.
        assert!(!nfd.settled("한"));
        assert!(!nfd.settled("が"));
        assert!(nfd.settled("かな漢字"));
        let nfc = Normal {
            form: Form::Nfc,
            casefold: true,
        };
        assert!(nfc.settled("ａ，"));
        assert!(!nfc.settled("Ａ"));
        let none = Normal {
            form: Form::None,
            casefold: false,
        };
        assert!(none.settled("É\u{301}\u{F900}"));
    }

    #[test]
    fn folding_maps_wide_characters_and_capitals() {
        let mut buf = String::new();
        let both = Fold {
            ascii: true,
            wide: true,
        };
        assert_eq!(
            fold("Ｆｕｌｌ　ＷＩＤＥ，ok\u{A0}X", both, &mut buf),
            "full wide,ok x"
        );
        let wide = Fold {
            ascii: false,
            wide: true,
        };
        assert_eq!(fold("ＡＢ　C", wide, &mut buf), "AB C");
        assert_eq!(fold("漢字", both, &mut buf), "漢字");
        let ascii = Fold {
            ascii: true,
            wide: false,
        };
        assert_eq!(fold("ＡB", ascii, &mut buf), "Ａb");
        assert_eq!(fold("ＡB", Fold::default(), &mut buf), "ＡB");
        for text in ["ＡＢ　C", "a\u{A0}", "xyz"] {
            assert!(fold(text, both, &mut buf).len() <= text.len());
        }
        // The wide characters are found by their bytes, and nothing else is.
        for c in (0x80..=0x10FFFF).filter_map(char::from_u32) {
            let text = format!("a{c}b");
            assert_eq!(wide.may_change(&text), is_wide(c as u32), "{:X}", c as u32);
        }
    }
}
