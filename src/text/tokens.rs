//! Tokens of normalized text: the built-in tokenizer.
//!
//! Word mode cuts a text into tokens and hashes each one (FNV-1a 64) as its bytes are read; char
//! mode compacts a text so that every run of separators is one space. Both read each byte once:
//! ASCII by table (or, for a text of ASCII only, 64 bytes at a time by
//! [`crate::runtime::simd::word_bits`]), other characters decoded and classified one by one.
//!
//! Character classes:
//! * word characters are letters, numbers and marks (Unicode general categories L, N and M; marks
//!   keep words of scripts such as Devanagari whole). A run of them is one token.
//! * each CJK ideograph, kana and Hangul syllable is a token of its own.
//! * everything else (spaces, punctuation, symbols, emoji) separates tokens.

use unicode_properties::{GeneralCategoryGroup, UnicodeGeneralCategory};

use crate::runtime::simd::{lead_bits, word_bits};
use crate::text::hash::{fnv1a_64, fnv1a_64_update, hash_ranges, OFFSET_BASIS, PRIME};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Class {
    Separator,
    Word,
    Own,
}

/// Classes of the ASCII bytes: letters and digits are word characters, the rest separate.
const ASCII_CLASS: [bool; 128] = {
    let mut t = [false; 128];
    let mut b = 0;
    while b < 128 {
        t[b] = (b as u8).is_ascii_alphanumeric();
        b += 1;
    }
    t
};

/// CJK ideographs, kana and Hangul syllables: each one a token.
fn is_own_token_block(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x30FF        // Hiragana, Katakana
        | 0x31F0..=0x31FF      // Katakana phonetic extensions
        | 0x3400..=0x4DBF      // CJK Extension A
        | 0x4E00..=0x9FFF      // CJK Unified Ideographs
        | 0xAC00..=0xD7AF      // Hangul syllables
        | 0xF900..=0xFAFF      // CJK Compatibility Ideographs
        | 0xFF66..=0xFF9F      // Halfwidth Katakana
        | 0x1B000..=0x1B16F    // Kana Supplement, Kana Extended-A
        | 0x20000..=0x3FFFF    // CJK Extensions B and later, Compatibility Supplement
    )
}

/// Blocks whose every code point is a letter in the pinned character database (checked by a
/// test): their characters are tokens of their own without a look-up.
fn is_letter_block(c: char) -> bool {
    matches!(c as u32,
        0x3400..=0x4DBF        // CJK Extension A
        | 0x4E00..=0x9FFF      // CJK Unified Ideographs
        | 0xAC00..=0xD7A3      // Hangul syllables
    )
}

#[inline]
fn classify(c: char) -> Class {
    if c.is_ascii() {
        return if ASCII_CLASS[c as usize] {
            Class::Word
        } else {
            Class::Separator
        };
    }
    if let Some(&class) = below_cjk().get(c as usize) {
        return class;
    }
    if is_letter_block(c) {
        return Class::Own;
    }
    looked_up(c)
}

/// The code points below this are classified by [`below_cjk`]'s table: the alphabets, their
/// marks, the punctuation and symbols of all scripts, and the CJK symbols and kana (the
/// general category is a binary search of its ranges, a few dozen steps whose branches the CPU
/// cannot predict: 2% of the dedup of manual pages, whose dashes and quotes lie there).
const TABLE_BELOW: usize = 0x3400;

/// [`looked_up`] of every code point from U+0080 below [`TABLE_BELOW`], made at its first use
/// (13 KB; the ASCII slots are never read: [`classify`] answers ASCII before).
fn below_cjk() -> &'static [Class; TABLE_BELOW] {
    static TABLE: std::sync::OnceLock<Box<[Class; TABLE_BELOW]>> = std::sync::OnceLock::new();
    TABLE.get_or_init(|| {
        let mut table = Box::new([Class::Separator; TABLE_BELOW]);
        for (code, class) in table.iter_mut().enumerate().skip(0x80) {
            // None of these is a surrogate (those begin at U+D800).
            if let Some(c) = char::from_u32(code as u32) {
                *class = looked_up(c);
            }
        }
        table
    })
}

/// [`classify`] of a non-ASCII character by its general category.
fn looked_up(c: char) -> Class {
    match c.general_category_group() {
        GeneralCategoryGroup::Letter
        | GeneralCategoryGroup::Number
        | GeneralCategoryGroup::Mark => {
            if is_own_token_block(c) {
                Class::Own
            } else {
                Class::Word
            }
        }
        _ => Class::Separator,
    }
}

/// Byte classes for the scanner: an ASCII separator, an ASCII word character, or the first
/// byte of a multi-byte character (decoded and classified on the slow path).
const SEP: u8 = 0;
const WORD: u8 = 1;
const WIDE: u8 = 2;
const BYTE_CLASS: [u8; 256] = {
    let mut t = [WIDE; 256];
    let mut b = 0;
    while b < 128 {
        t[b] = if ASCII_CLASS[b] { WORD } else { SEP };
        b += 1;
    }
    t
};

/// Writes `text` into `buf` with every run of separators turned into one space and none at either
/// end. The ASCII path has no branch on the data: each byte is written, and kept or overwritten.
pub fn compact(text: &str, buf: &mut Vec<u8>) {
    let bytes = text.as_bytes();
    // At most one space per character, plus the byte in flight.
    buf.clear();
    buf.resize(2 * bytes.len() + 1, 0);
    let mut len = 0;
    let mut pending = 0usize;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        let class = BYTE_CLASS[b as usize];
        if class == WIDE {
            let (class, width) = wide_class(text, i);
            if class == Class::Separator {
                pending = usize::from(len > 0);
            } else {
                if pending == 1 {
                    buf[len] = b' ';
                    len += 1;
                }
                buf[len..len + width].copy_from_slice(&bytes[i..i + width]);
                len += width;
                pending = 0;
            }
            i += width;
            continue;
        }
        let word = usize::from(class == WORD);
        buf[len] = b' ';
        len += pending & word;
        buf[len] = b;
        len += word;
        pending = (1 - word) & usize::from(len > 0);
        i += 1;
    }
    buf.truncate(len);
}

/// The class and byte length of the multi-byte character starting at `i`.
#[inline(never)]
fn wide_class(text: &str, i: usize) -> (Class, usize) {
    // `i` is always a character boundary: the scanner steps by whole characters.
    let c = text[i..].chars().next().unwrap_or('\u{FFFD}');
    (classify(c), c.len_utf8())
}

/// Scans the tokens of `text` in one pass: each maximal run of word characters and each
/// own-token character, as byte spans of `text`, then the FNV-1a 64 of each token. Word bytes
/// are marked 64 at a time ([`crate::runtime::simd::word_bits`]) and each token found from the
/// bit where the marks change; in a text past ASCII, each character past ASCII is found by its
/// first byte ([`crate::runtime::simd::lead_bits`]), decoded and classified, and its bytes
/// marked as its class says. Most texts past ASCII hold a few such characters among their
/// ASCII (a quote, a dash, an accented name): read one by one, the suite's long texts of that
/// kind went at a third of the speed of the ASCII ones.
#[inline]
pub fn scan_tokens(text: &str, spans: &mut Vec<(usize, usize)>, hashes: &mut Vec<u64>) {
    let bytes = text.as_bytes();
    if bytes.is_ascii() {
        scan_blocks::<false>(text, spans, hashes)
    } else if dense(bytes) {
        scan_chars(text, spans, hashes)
    } else {
        scan_blocks::<true>(text, spans, hashes)
    }
}

/// Whether a text is dense in characters past ASCII, judged on its first 64 bytes: more than
/// one in 16 of them begins one. There the blocks decode nearly every character anyway, and
/// the suite's Chinese texts took 1.1 times the CPU read by blocks (and normalized with the
/// runs of ASCII skipped, 1.15 times).
#[inline]
pub fn dense(bytes: &[u8]) -> bool {
    let head = &bytes[..bytes.len().min(64)];
    let mut pad = [0; 64];
    16 * lead_bits(full_block(head, &mut pad)).count_ones() as usize > head.len()
}

/// `chunk` (at most 64 bytes) as a block of 64: itself when whole, else copied into `pad`
/// with spaces after it (no word byte, no first byte of a character).
#[inline]
fn full_block<'a>(chunk: &'a [u8], pad: &'a mut [u8; 64]) -> &'a [u8; 64] {
    match <&[u8; 64]>::try_from(chunk) {
        Ok(full) => full,
        Err(_) => {
            *pad = [b' '; 64];
            pad[..chunk.len()].copy_from_slice(chunk);
            pad
        }
    }
}

/// [`scan_tokens`] of a text dense in characters past ASCII (Chinese, Japanese, Korean): one
/// character at a time, each token hashed as its bytes are read.
fn scan_chars(text: &str, spans: &mut Vec<(usize, usize)>, hashes: &mut Vec<u64>) {
    let bytes = text.as_bytes();
    let n = bytes.len();
    let mut i = 0;
    while i < n {
        let start = i;
        match BYTE_CLASS[bytes[i] as usize] {
            SEP => {
                i += 1;
                continue;
            }
            WORD => {}
            _ => {
                let (class, len) = wide_class(text, i);
                match class {
                    Class::Separator => {
                        i += len;
                        continue;
                    }
                    Class::Own => {
                        spans.push((i, i + len));
                        hashes.push(fnv1a_64(&bytes[i..i + len]));
                        i += len;
                        continue;
                    }
                    Class::Word => {}
                }
            }
        }
        // A word starts at `start`: extend it over word characters, hashing as we go.
        let mut h = OFFSET_BASIS;
        while i < n {
            let b = bytes[i];
            match BYTE_CLASS[b as usize] {
                WORD => {
                    h = (h ^ u64::from(b)).wrapping_mul(PRIME);
                    i += 1;
                }
                SEP => break,
                _ => {
                    let (class, len) = wide_class(text, i);
                    if class != Class::Word {
                        break;
                    }
                    h = fnv1a_64_update(h, &bytes[i..i + len]);
                    i += len;
                }
            }
        }
        spans.push((start, i));
        hashes.push(h);
    }
}

/// The most own-token characters (CJK, kana, Hangul: three or four bytes each) that begin in a
/// block of 64 bytes.
const OWN_MAX: usize = 22;

/// [`scan_tokens`], with characters past ASCII (`WIDE`) or without.
fn scan_blocks<const WIDE: bool>(
    text: &str,
    spans: &mut Vec<(usize, usize)>,
    hashes: &mut Vec<u64>,
) {
    let bytes = text.as_bytes();
    let first = spans.len();
    let (mut start, mut inside, mut carry) = (0, false, 0u64);
    // The word bits of the next block that a word character begun in this one covers.
    let mut spill = 0u64;
    // The block's own-token characters, in order.
    let mut own = [(0usize, 0usize); OWN_MAX];
    let mut pad = [0; 64];
    for (k, block) in bytes.chunks(64).enumerate() {
        let full = full_block(block, &mut pad);
        let mut bits = word_bits(full);
        let mut owns = 0;
        if WIDE {
            bits |= spill;
            spill = 0;
            let mut leads = lead_bits(full);
            while leads != 0 {
                let j = leads.trailing_zeros() as usize;
                leads &= leads - 1;
                let at = 64 * k + j;
                let (class, len) = wide_class(text, at);
                match class {
                    Class::Word => {
                        let run = ((1u128 << len) - 1) << j;
                        bits |= run as u64;
                        spill |= (run >> 64) as u64;
                    }
                    Class::Own => {
                        own[owns] = (at, at + len);
                        owns += 1;
                    }
                    Class::Separator => {}
                }
            }
        }
        // A set bit where a token starts or where the byte after one is.
        let mut edges = bits ^ ((bits << 1) | carry);
        carry = bits >> 63;
        // An own-token character lies outside every run of word bytes: it goes before the
        // first edge past it.
        let mut o = 0;
        while edges != 0 {
            let at = 64 * k + edges.trailing_zeros() as usize;
            edges &= edges - 1;
            while WIDE && o < owns && own[o].0 < at {
                spans.push(own[o]);
                o += 1;
            }
            if inside {
                spans.push((start, at));
            } else {
                start = at;
            }
            inside = !inside;
        }
        if WIDE {
            spans.extend_from_slice(&own[o..owns]);
        }
    }
    if inside {
        spans.push((start, bytes.len()));
    }
    hash_ranges(bytes, &spans[first..], hashes);
}

/// How many tokens [`scan_tokens`] finds in `text`, counted without keeping them: what the
/// buffers of a long text are reserved for before it is scanned (see
/// [`crate::text::features::FeatureConfig::reserve`]).
pub fn count_tokens(text: &str) -> usize {
    let bytes = text.as_bytes();
    if bytes.is_ascii() {
        // A token starts at each word byte that follows a separator (or the start).
        let (mut count, mut carry) = (0usize, 0u64);
        let mut pad = [0; 64];
        for block in bytes.chunks(64) {
            let bits = word_bits(full_block(block, &mut pad));
            count += (bits & !((bits << 1) | carry)).count_ones() as usize;
            carry = bits >> 63;
        }
        return count;
    }
    let (n, mut i, mut count) = (bytes.len(), 0, 0);
    while i < n {
        match BYTE_CLASS[bytes[i] as usize] {
            SEP => {
                i += 1;
                continue;
            }
            WORD => {}
            _ => {
                let (class, len) = wide_class(text, i);
                i += len;
                match class {
                    Class::Separator => continue,
                    Class::Own => {
                        count += 1;
                        continue;
                    }
                    Class::Word => {}
                }
            }
        }
        // A word: over its word characters.
        count += 1;
        while i < n {
            match BYTE_CLASS[bytes[i] as usize] {
                WORD => i += 1,
                SEP => break,
                _ => {
                    let (class, len) = wide_class(text, i);
                    if class != Class::Word {
                        break;
                    }
                    i += len;
                }
            }
        }
    }
    count
}

/// Whether a token from an outside tokenizer holds a word character (a letter, number or mark).
/// Tokens of only spaces, punctuation or symbols are dropped, as the built-in tokenizer drops
/// separators.
pub fn is_word_token(token: &str) -> bool {
    token.chars().any(|c| classify(c) != Class::Separator)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::xorshift64;

    /// The tokens of `text`, checked against the hashes the scan gives them.
    fn tokens(text: &str) -> Vec<&str> {
        let (mut spans, mut hashes) = (Vec::new(), Vec::new());
        scan_tokens(text, &mut spans, &mut hashes);
        let got: Vec<&str> = spans.iter().map(|&(a, b)| &text[a..b]).collect();
        let want: Vec<u64> = got.iter().map(|t| fnv1a_64(t.as_bytes())).collect();
        assert_eq!(hashes, want, "{text:?}");
        got
    }

    #[test]
    fn the_table_below_cjk_classifies_as_the_character_database() {
        for c in (0..TABLE_BELOW as u32).filter_map(char::from_u32) {
            let want = if c.is_ascii() {
                if c.is_ascii_alphanumeric() {
                    Class::Word
                } else {
                    Class::Separator
                }
            } else {
                looked_up(c)
            };
            assert_eq!(classify(c), want, "{:X}", c as u32);
        }
        // Hand-picked: a letter with an accent, a combining mark, Cyrillic, a digit of Arabic,
        // a hyphen, curly quotes, a bullet, an arrow, an ideographic full stop, kana.
        for c in ['é', '\u{301}', 'ж', '\u{663}'] {
            assert_eq!(classify(c), Class::Word, "{c:?}");
        }
        for c in [
            '\u{2010}', '\u{201C}', '\u{2022}', '\u{2192}', '\u{A0}', '\u{3002}',
        ] {
            assert_eq!(classify(c), Class::Separator, "{c:?}");
        }
        for c in ['\u{3042}', '\u{30AB}'] {
            assert_eq!(classify(c), Class::Own, "{c:?}");
        }
    }

    #[test]
    fn letter_blocks_are_letters_of_their_own_blocks() {
        let mut n = 0;
        for c in (0x80..=0x10FFFF).filter_map(char::from_u32) {
            if is_letter_block(c) {
                assert_eq!(looked_up(c), Class::Own, "{:X}", c as u32);
                n += 1;
            }
        }
        assert_eq!(
            n,
            0x4DBF - 0x3400 + 1 + 0x9FFF - 0x4E00 + 1 + 0xD7A3 - 0xAC00 + 1
        );
    }

    #[test]
    fn ascii_scan_finds_the_tokens_of_a_plain_split() {
        // Tokens of every length up to 150 (so across 64-byte blocks), separators of every
        // kind, at either end or not; the ASCII scan against splitting at non-alphanumerics.
        let mut x = crate::GOLDEN_GAMMA;
        let mut next = |m: u64| xorshift64(&mut x) % m;
        let alphabet: Vec<u8> = (0u8..128).collect();
        for case in 0..400 {
            let len = next(if case % 4 == 0 { 400 } else { 70 }) as usize;
            let long = case % 5 == 0;
            let text: String = (0..len)
                .map(|_| {
                    let pick = next(10);
                    if long && pick < 8 {
                        'q'
                    } else if pick < 6 {
                        (b'a' + next(26) as u8) as char
                    } else {
                        alphabet[next(128) as usize] as char
                    }
                })
                .collect();
            let want: Vec<&str> = text
                .split(|c: char| !c.is_ascii_alphanumeric())
                .filter(|t| !t.is_empty())
                .collect();
            let (mut spans, mut hashes) = (Vec::new(), Vec::new());
            scan_tokens(&text, &mut spans, &mut hashes);
            let got: Vec<&str> = spans.iter().map(|&(a, b)| &text[a..b]).collect();
            assert_eq!(got, want, "{text:?}");
            assert_eq!(count_tokens(&text), want.len(), "{text:?}");
            assert_eq!(
                hashes,
                want.iter()
                    .map(|t| fnv1a_64(t.as_bytes()))
                    .collect::<Vec<_>>()
            );
        }
    }

    #[test]
    fn scan_finds_the_tokens_of_a_character_by_character_split() {
        // Texts mixing ASCII, accented letters, a combining mark, Devanagari, CJK, Hangul, kana
        // and symbols, against cutting them one character at a time by class.
        let alphabet: Vec<char> =
            "ab Z9,.-\u{e9}\u{301}\u{915}\u{94d}\u{56de}\u{d55c}\u{30ab}\u{1f642}\u{2014}\n"
                .chars()
                .collect();
        let mut x = crate::GOLDEN_GAMMA;
        let mut next = |m: usize| (xorshift64(&mut x) % m as u64) as usize;
        for case in 0..2000 {
            // Short texts of any mix; long ones (across many blocks of 64 bytes) mostly ASCII
            // letters with a character past ASCII now and then, or mostly past ASCII, read by
            // characters, or by blocks after a head of ASCII.
            let (len, ascii) = match case % 4 {
                0 => (next(90), 0),
                1 => (next(600), 1 + next(30)),
                _ => (next(600), 0),
            };
            let head = if case % 4 == 3 {
                "ab ".repeat(90)
            } else {
                String::new()
            };
            let text: String = head
                .chars()
                .chain((0..len).map(|_| {
                    if next(ascii + 1) > 0 {
                        if next(6) == 0 {
                            ' '
                        } else {
                            (b'a' + next(26) as u8) as char
                        }
                    } else {
                        alphabet[next(alphabet.len())]
                    }
                }))
                .collect();
            // Both ways are taken: by blocks after the head, by characters without one.
            if case % 4 == 3 {
                assert!(!dense(text.as_bytes()));
            } else if case % 4 == 2 && len >= 100 {
                assert!(dense(text.as_bytes()));
            }
            let mut want: Vec<String> = Vec::new();
            let mut in_word = false;
            for c in text.chars() {
                match classify(c) {
                    Class::Separator => in_word = false,
                    Class::Own => {
                        want.push(c.to_string());
                        in_word = false;
                    }
                    Class::Word if in_word => want.last_mut().expect("a word").push(c),
                    Class::Word => {
                        want.push(c.to_string());
                        in_word = true;
                    }
                }
            }
            assert_eq!(tokens(&text), want, "{text:?}");
            assert_eq!(count_tokens(&text), want.len(), "{text:?}");
        }
    }
}
