//! Features of normalized text: word shingles or character n-grams.
//!
//! A document is first compacted into one buffer: in word mode its tokens joined by one space, in
//! character mode its text with every run of separators turned into one space. Every feature is
//! then a contiguous slice of that buffer (a word shingle `"a b c"` is the bytes from the start of
//! `a` to the end of `c`), so features are hashed in place and no string is allocated per feature.
//!
//! Character classes:
//! * word characters are letters, numbers and marks (Unicode general categories L, N and M; marks
//!   keep words of scripts such as Devanagari whole). A run of them is one token.
//! * each CJK ideograph, kana and Hangul syllable is a token of its own.
//! * everything else (spaces, punctuation, symbols, emoji) separates tokens.

use std::collections::HashSet;
use std::hash::BuildHasherDefault;

use unicode_properties::{GeneralCategoryGroup, UnicodeGeneralCategory};

use crate::error::{Error, Result};
use crate::hash::hash_ranges;

/// The kind of token features are built from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TokenKind {
    /// Shingles of `ngram` consecutive word tokens, joined by one space.
    Word,
    /// Runs of `ngram` consecutive characters of the compacted text.
    Char,
}

impl TokenKind {
    /// Parses `"word"` or `"char"`.
    pub fn parse(name: &str) -> Result<Self> {
        match name {
            "word" => Ok(TokenKind::Word),
            "char" => Ok(TokenKind::Char),
            other => Err(Error::invalid(format!(
                "tokens must be \"word\" or \"char\", got {other:?}"
            ))),
        }
    }
}

/// A hasher for sets keyed by our own byte strings: FNV-1a, deterministic and fast on short keys.
#[derive(Default)]
pub struct FnvHasher(u64);

impl std::hash::Hasher for FnvHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        self.0 = crate::hash::fnv1a_64_update(self.0 ^ crate::hash::OFFSET_BASIS, bytes);
    }
}

type FnvSet<T> = HashSet<T, BuildHasherDefault<FnvHasher>>;

/// What turns a normalized text into features.
#[derive(Clone, Debug)]
pub struct FeatureConfig {
    tokens: TokenKind,
    ngram: usize,
    stopwords: Option<FnvSet<Box<[u8]>>>,
}

/// The largest n-gram size accepted: far past any useful value, small enough to catch mistakes.
pub const MAX_NGRAM: i64 = 64;

impl FeatureConfig {
    /// `ngram` in 1..=64; `stopwords`, if given, keeps only word shingles holding at least one of
    /// them (only with word tokens).
    pub fn new(tokens: TokenKind, ngram: i64, stopwords: Option<Vec<String>>) -> Result<Self> {
        if !(1..=MAX_NGRAM).contains(&ngram) {
            return Err(Error::invalid(format!(
                "ngram must be in 1..={MAX_NGRAM}, got {ngram}"
            )));
        }
        if stopwords.is_some() && tokens != TokenKind::Word {
            return Err(Error::invalid(
                "stopwords filter word shingles: it needs tokens=\"word\"",
            ));
        }
        let stopwords = stopwords.map(|words| {
            words
                .into_iter()
                .map(|w| w.into_bytes().into_boxed_slice())
                .collect::<FnvSet<_>>()
        });
        Ok(FeatureConfig { tokens, ngram: ngram as usize, stopwords })
    }

    /// The token kind.
    pub fn tokens(&self) -> TokenKind {
        self.tokens
    }

    /// The n-gram size.
    pub fn ngram(&self) -> usize {
        self.ngram
    }
}

/// Reusable buffers for one thread: building features allocates nothing once these have grown.
#[derive(Default)]
pub struct Scratch {
    /// The compacted text.
    pub buf: Vec<u8>,
    /// Token spans in `buf` (word mode) or character starts (char mode, non-ASCII text).
    spans: Vec<(usize, usize)>,
    /// Whether each token is a stopword.
    stop: Vec<bool>,
    /// Feature spans in `buf`.
    pub ranges: Vec<(usize, usize)>,
    /// Feature hashes.
    pub hashes: Vec<u64>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
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

#[inline]
fn classify(c: char) -> Class {
    if c.is_ascii() {
        return if ASCII_CLASS[c as usize] { Class::Word } else { Class::Separator };
    }
    match c.general_category_group() {
        GeneralCategoryGroup::Letter | GeneralCategoryGroup::Number | GeneralCategoryGroup::Mark => {
            if is_own_token_block(c) {
                Class::Own
            } else {
                Class::Word
            }
        }
        _ => Class::Separator,
    }
}

/// Calls `f(class, start, end)` for each character of `text` (byte offsets), ASCII fast.
#[inline]
fn for_each_class(text: &str, mut f: impl FnMut(Class, usize, usize)) {
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if b < 0x80 {
            let class = if ASCII_CLASS[b as usize] { Class::Word } else { Class::Separator };
            f(class, i, i + 1);
            i += 1;
        } else {
            // `i` is always at a character boundary: we only step by whole characters.
            let c = text[i..].chars().next().unwrap_or('\u{FFFD}');
            let end = i + c.len_utf8();
            f(classify(c), i, end);
            i = end;
        }
    }
}

impl FeatureConfig {
    /// Builds the features of `text` into `scratch.ranges` (spans of `scratch.buf`).
    pub fn build(&self, text: &str, scratch: &mut Scratch) {
        scratch.buf.clear();
        scratch.spans.clear();
        scratch.ranges.clear();
        match self.tokens {
            TokenKind::Word => self.build_words(text, scratch),
            TokenKind::Char => self.build_chars(text, scratch),
        }
    }

    fn build_words(&self, text: &str, s: &mut Scratch) {
        // Compact the tokens into `buf`, one space between two tokens.
        let mut in_word = false;
        for_each_class(text, |class, start, end| match class {
            Class::Word => {
                if !in_word {
                    if !s.buf.is_empty() {
                        s.buf.push(b' ');
                    }
                    s.spans.push((s.buf.len(), s.buf.len()));
                    in_word = true;
                }
                s.buf.extend_from_slice(&text.as_bytes()[start..end]);
                if let Some(last) = s.spans.last_mut() {
                    last.1 = s.buf.len();
                }
            }
            Class::Own => {
                if !s.buf.is_empty() {
                    s.buf.push(b' ');
                }
                let at = s.buf.len();
                s.buf.extend_from_slice(&text.as_bytes()[start..end]);
                s.spans.push((at, s.buf.len()));
                in_word = false;
            }
            Class::Separator => in_word = false,
        });
        let tokens = &s.spans;
        if tokens.is_empty() {
            return;
        }
        let n = self.ngram;
        // A text with fewer than n tokens is one shingle of all of them.
        let windows = if tokens.len() < n { 1 } else { tokens.len() - n + 1 };
        let width = n.min(tokens.len());
        let shingle = |i: usize| (tokens[i].0, tokens[i + width - 1].1);
        match &self.stopwords {
            None => s.ranges.extend((0..windows).map(shingle)),
            Some(stopwords) => {
                s.stop.clear();
                s.stop.extend(tokens.iter().map(|&(a, b)| stopwords.contains(&s.buf[a..b])));
                // Sliding count of stopwords in the window of `width` tokens.
                let mut count = s.stop[..width].iter().filter(|&&x| x).count();
                for i in 0..windows {
                    if i > 0 {
                        count += usize::from(s.stop[i + width - 1]);
                        count -= usize::from(s.stop[i - 1]);
                    }
                    if count > 0 {
                        s.ranges.push(shingle(i));
                    }
                }
                // A filter that would leave nothing keeps everything: a document without a
                // single stopword is still a document, not an empty one.
                if s.ranges.is_empty() {
                    s.ranges.extend((0..windows).map(shingle));
                }
            }
        }
    }

    fn build_chars(&self, text: &str, s: &mut Scratch) {
        // Compact the text: each run of separators becomes one space, none at either end.
        let mut pending_space = false;
        let mut ascii = true;
        for_each_class(text, |class, start, end| {
            if class == Class::Separator {
                pending_space = !s.buf.is_empty();
            } else {
                if pending_space {
                    s.buf.push(b' ');
                    pending_space = false;
                }
                ascii &= end - start == 1;
                s.buf.extend_from_slice(&text.as_bytes()[start..end]);
            }
        });
        if s.buf.is_empty() {
            return;
        }
        let n = self.ngram;
        if ascii {
            if s.buf.len() <= n {
                s.ranges.push((0, s.buf.len()));
            } else {
                s.ranges.extend((0..=s.buf.len() - n).map(|i| (i, i + n)));
            }
            return;
        }
        // Character starts, then n-grams between them.
        let buf = &s.buf;
        s.spans.extend(
            (0..buf.len())
                .filter(|&i| (buf[i] & 0xC0) != 0x80)
                .map(|i| (i, i)),
        );
        let chars = s.spans.len();
        if chars <= n {
            s.ranges.push((0, buf.len()));
        } else {
            let end_of = |j: usize| if j < chars { s.spans[j].0 } else { buf.len() };
            s.ranges.extend((0..=chars - n).map(|i| (s.spans[i].0, end_of(i + n))));
        }
    }

    /// Builds and hashes the features of `text` into `scratch.hashes`.
    pub fn hash_features(&self, text: &str, scratch: &mut Scratch) {
        self.build(text, scratch);
        scratch.hashes.clear();
        hash_ranges(&scratch.buf, &scratch.ranges, &mut scratch.hashes);
    }

    /// The features of `text` as strings, in order: exactly the bytes that are hashed.
    pub fn features(&self, text: &str) -> Vec<String> {
        let mut scratch = Scratch::default();
        self.build(text, &mut scratch);
        scratch
            .ranges
            .iter()
            // Every range starts and ends at a character boundary of valid UTF-8.
            .map(|&(a, b)| String::from_utf8_lossy(&scratch.buf[a..b]).into_owned())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hash::fnv1a_64;

    fn words(n: i64, text: &str) -> Vec<String> {
        FeatureConfig::new(TokenKind::Word, n, None).unwrap().features(text)
    }

    fn chars(n: i64, text: &str) -> Vec<String> {
        FeatureConfig::new(TokenKind::Char, n, None).unwrap().features(text)
    }

    #[test]
    fn word_shingles_join_tokens_with_one_space() {
        assert_eq!(words(2, "the  cat, sat!"), ["the cat", "cat sat"]);
        assert_eq!(words(1, "a-b_c"), ["a", "b", "c"]);
        assert_eq!(words(3, "one two"), ["one two"]);
        assert!(words(3, " ,;! ").is_empty());
        assert!(words(1, "").is_empty());
    }

    #[test]
    fn cjk_characters_are_tokens_of_their_own() {
        assert_eq!(words(1, "回家吃饭"), ["回", "家", "吃", "饭"]);
        assert_eq!(words(2, "abc回家"), ["abc 回", "回 家"]);
        assert_eq!(words(1, "한국어 カタカナ"), ["한", "국", "어", "カ", "タ", "カ", "ナ"]);
    }

    #[test]
    fn marks_stay_inside_words() {
        // Devanagari: consonant + virama + consonant is one word.
        assert_eq!(words(1, "क्ष त्र"), ["क्ष", "त्र"]);
        assert_eq!(words(1, "naïve café"), ["naïve", "café"]);
    }

    #[test]
    fn char_ngrams_over_compacted_text() {
        assert_eq!(chars(3, "ab, cd"), ["ab ", "b c", " cd"]);
        assert_eq!(chars(5, "abc"), ["abc"]);
        assert_eq!(chars(2, "回家 吃"), ["回家", "家 ", " 吃"]);
        assert!(chars(4, "  !! ").is_empty());
    }

    #[test]
    fn stopword_filter_keeps_shingles_with_a_stopword() {
        let config = FeatureConfig::new(
            TokenKind::Word,
            2,
            Some(vec!["the".into(), "of".into()]),
        )
        .unwrap();
        assert_eq!(
            config.features("buy now cheap pills the best of all"),
            ["pills the", "the best", "best of", "of all"]
        );
        // Nothing holds a stopword: everything is kept.
        assert_eq!(config.features("buy now cheap"), ["buy now", "now cheap"]);
    }

    #[test]
    fn invalid_arguments_are_errors() {
        assert!(FeatureConfig::new(TokenKind::Word, 0, None).is_err());
        assert!(FeatureConfig::new(TokenKind::Word, 65, None).is_err());
        assert!(FeatureConfig::new(TokenKind::Char, 3, Some(vec![])).is_err());
        assert!(TokenKind::parse("line").is_err());
    }

    #[test]
    fn hashes_are_fnv_of_the_features() {
        let config = FeatureConfig::new(TokenKind::Word, 3, None).unwrap();
        let text = "a quick brown fox jumps over the lazy dog near the bank";
        let mut scratch = Scratch::default();
        config.hash_features(text, &mut scratch);
        let want: Vec<u64> = config.features(text).iter().map(|f| fnv1a_64(f.as_bytes())).collect();
        assert_eq!(scratch.hashes, want);
    }
}
