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
        if crate::text::tokens::dense(text.as_bytes()) {
            return text.chars().all(|c| self.takes(c as u32));
        }
        // Past an ASCII character the rest of its run is skipped, not decoded: most texts past
        // ASCII hold a few such characters among their ASCII.
        let mut chars = text.chars();
        while let Some(c) = chars.next() {
            if c.is_ascii() {
                let rest = chars.as_str();
                chars = rest[ascii_run(rest.as_bytes())..].chars();
            } else if !self.takes(c as u32) {
                return false;
            }
        }
        true
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
        table.get(at).is_some_and(|&(lo, _)| lo <= c) || mapped(self.map(), c).is_some()
    }

    /// What this normalization makes of the characters of its map (see [`Fold::map`]).
    pub fn map(self) -> &'static [(u32, &'static str)] {
        let form = match self.form {
            Form::None => 0,
            Form::Nfc => 1,
            Form::Nfkc => 2,
            Form::Nfd => 3,
            Form::Nfkd => 4,
        };
        MAPS[2 * form + usize::from(self.casefold)]
    }
}

/// What `map` makes of character `c`, if it holds it.
#[inline]
fn mapped(map: &'static [(u32, &'static str)], c: u32) -> Option<&'static str> {
    // Every map's characters lie between ASCII and U+2800 (Latin, Greek, Cyrillic,
    // punctuation, symbols): the others, most of a text, are never looked up.
    if !(0x80..0x2800).contains(&c) {
        return None;
    }
    map.binary_search_by_key(&c, |e| e.0).ok().map(|i| map[i].1)
}

/// How many of the first bytes of `bytes` are ASCII: sixteen at a time (a compare the compiler
/// makes a vector one), then one by one.
#[inline]
fn ascii_run(bytes: &[u8]) -> usize {
    let mut n = 0;
    for chunk in bytes.chunks_exact(16) {
        if chunk.iter().fold(0, |any, &b| any | b) >= 0x80 {
            break;
        }
        n += 16;
    }
    n + bytes[n..].iter().take_while(|b| b.is_ascii()).count()
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
    /// The characters outside ASCII this normalization changes (or keeps, in a text the core
    /// takes: [`Normal::settled`]) and what each becomes: [`Normal::map`]. A text Python has
    /// normalized holds none that the map would change again (checked when it is made).
    pub map: &'static [(u32, &'static str)],
}

impl Fold {
    /// The folding of texts [`Normal::settled`] under `normal` (ASCII capitals with case
    /// folding, wide characters under the compatibility forms, the characters of its map).
    pub fn of(normal: Normal) -> Fold {
        Fold {
            ascii: normal.casefold,
            wide: normal.form.compatibility(),
            map: normal.map(),
        }
    }

    /// Whether [`fold`] changes `text`.
    pub fn may_change(self, text: &str) -> bool {
        self.changes_case(text) || self.changes_wide(text) || self.changes_mapped(text)
    }

    fn changes_mapped(self, text: &str) -> bool {
        if self.map.is_empty() || text.is_ascii() {
            return false;
        }
        // The characters of the maps (U+0080..U+27FF) begin with bytes C2..=E2: only those are
        // decoded, found 64 bytes at a time by a compare the compiler makes a vector one.
        let lead = |b: &u8| (0xC2..=0xE2).contains(b);
        let bytes = text.as_bytes();
        bytes.chunks(64).enumerate().any(|(k, chunk)| {
            chunk.iter().fold(false, |any, b| any | lead(b))
                && chunk.iter().enumerate().any(|(j, b)| {
                    lead(b)
                        && text[64 * k + j..].chars().next().is_some_and(|c| {
                            mapped(self.map, c as u32).is_some_and(|m| m.chars().ne([c]))
                        })
                })
        })
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
    let map = fold.changes_mapped(text);
    if !wide && !map && !fold.changes_case(text) {
        return text;
    }
    buf.clear();
    if !wide && !map {
        buf.push_str(text);
        buf.make_ascii_lowercase();
        return buf;
    }
    // Runs of ASCII copied whole (and lowered together), the characters past ASCII one by one;
    // in a text dense in characters past ASCII, every character in turn.
    let dense = crate::text::tokens::dense(text.as_bytes());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c.is_ascii() && !dense {
            let rest = chars.as_str();
            let run = ascii_run(rest.as_bytes());
            let from = buf.len();
            buf.push(c);
            buf.push_str(&rest[..run]);
            if fold.ascii {
                buf[from..].make_ascii_lowercase();
            }
            chars = rest[run..].chars();
        } else if let Some(m) = mapped(fold.map, c as u32) {
            buf.push_str(m);
        } else {
            // A wide capital is lowered as its ASCII one is.
            let c = if fold.wide { narrow(c) } else { c };
            buf.push(if fold.ascii {
                c.to_ascii_lowercase()
            } else {
                c
            });
        }
    }
    buf
}

use super::normal_tables::{COMPOSED, DECOMPOSED, MAPS};

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
        // Latin, Greek and Cyrillic letters, capitals among them, and compatibility symbols.
        assert!(nfkc.settled("Élan, ΣΟΦΊΑ, Привет… ™ x²"));
        // A combining mark, a capital and a fraction whose normal forms are longer in UTF-8, a
        // compatibility ideograph, a Hangul jamo, a half-width kana.
        for text in ["e\u{301}", "ǅ", "½", "\u{F900}", "\u{1100}\u{1161}", "ｶ"] {
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
            map: &[],
        };
        assert_eq!(
            fold("Ｆｕｌｌ　ＷＩＤＥ，ok\u{A0}X", both, &mut buf),
            "full wide,ok x"
        );
        let wide = Fold {
            ascii: false,
            wide: true,
            map: &[],
        };
        assert_eq!(fold("ＡＢ　C", wide, &mut buf), "AB C");
        assert_eq!(fold("漢字", both, &mut buf), "漢字");
        let ascii = Fold {
            ascii: true,
            wide: false,
            map: &[],
        };
        assert_eq!(fold("ＡB", ascii, &mut buf), "Ａb");
        assert_eq!(fold("ＡB", Fold::default(), &mut buf), "ＡB");
        for text in ["ＡＢ　C", "a\u{A0}", "xyz"] {
            assert!(fold(text, both, &mut buf).len() <= text.len());
        }
        let nfkc = Fold::of(Normal {
            form: Form::Nfkc,
            casefold: true,
        });
        assert_eq!(
            fold("Élan ΣΟΦΊΑ, ПРИВЕТ… ™ Ｏk", nfkc, &mut buf),
            "élan σοφία, привет... tm ok"
        );
        // Already normalized: nothing to change.
        assert!(!nfkc.may_change("élan σοφία, привет... tm ok"));
        // The wide characters are found by their bytes, and nothing else is.
        for c in (0x80..=0x10FFFF).filter_map(char::from_u32) {
            let text = format!("a{c}b");
            assert_eq!(wide.may_change(&text), is_wide(c as u32), "{:X}", c as u32);
        }
    }

    /// Long texts mostly of ASCII with characters past it here and there (so runs of every
    /// length, across the 16-byte steps of `ascii_run`): [`fold`] and [`Normal::settled`] against
    /// reading every character in turn, under every setting.
    #[test]
    fn runs_of_ascii_fold_and_settle_as_characters_one_by_one() {
        let alphabet: Vec<char> = "aZ 9,\u{C9}\u{E9}\u{FF21}\u{FF41}\u{3000}\u{A0}\u{2019}\u{2014}\u{4E2D}\u{1F642}\u{301}\u{3B1}\u{416}"
            .chars()
            .collect();
        let mut x = crate::GOLDEN_GAMMA;
        let mut next = |m: usize| (crate::testing::xorshift64(&mut x) % m as u64) as usize;
        let forms = [Form::None, Form::Nfc, Form::Nfkc, Form::Nfd, Form::Nfkd];
        let mut buf = String::new();
        for case in 0..600 {
            let ascii = [0, 3, 40][case % 3];
            let text: String = (0..next(300))
                .map(|_| {
                    if next(ascii + 1) > 0 {
                        [b'a', b'Q', b' ', b'7'][next(4)] as char
                    } else {
                        alphabet[next(alphabet.len())]
                    }
                })
                .collect();
            for normal in forms
                .iter()
                .flat_map(|&form| [false, true].map(|casefold| Normal { form, casefold }))
            {
                let want = text.chars().all(|c| normal.takes(c as u32))
                    || normal.form == Form::None && !normal.casefold;
                assert_eq!(normal.settled(&text), want, "{text:?} {normal:?}");
                let f = Fold::of(normal);
                let mut one_by_one = String::new();
                for c in text.chars() {
                    if let Some(m) = mapped(f.map, c as u32) {
                        one_by_one.push_str(m);
                        continue;
                    }
                    let c = if f.wide { narrow(c) } else { c };
                    one_by_one.push(if f.ascii { c.to_ascii_lowercase() } else { c });
                }
                assert_eq!(fold(&text, f, &mut buf), one_by_one, "{text:?} {normal:?}");
            }
        }
    }
}
