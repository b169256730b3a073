//! Features of normalized text: word shingles or character n-grams.
//!
//! Word mode reads the text once, finding each token and hashing it as its bytes are read; a
//! shingle `"a b c"` continues the hash of `a` over `" b"` and `" c"`, straight from the text.
//! Character mode compacts the text into one buffer (every run of separators one space) and
//! hashes its n-grams in place, four at a time. No string is allocated per feature. The tokens
//! themselves are cut by [`crate::text::tokens`].

use std::collections::HashSet;

use crate::error::{Error, Result};
use crate::text::hash::{fnv1a_64, fnv1a_64_update, hash_ranges, FoldState, OFFSET_BASIS, PRIME};
use crate::text::tokens::{compact, is_word_token, scan_tokens};

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

type ByteSet = HashSet<Box<[u8]>, FoldState>;

/// What turns a normalized text into features.
#[derive(Clone, Debug)]
pub struct FeatureConfig {
    tokens: TokenKind,
    ngram: usize,
    stopwords: Option<ByteSet>,
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
                .collect::<ByteSet>()
        });
        Ok(FeatureConfig {
            tokens,
            ngram: ngram as usize,
            stopwords,
        })
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
    /// Char mode: the compacted text.
    buf: Vec<u8>,
    /// Token spans in the text, or (char mode, non-ASCII text) character starts in `buf`.
    spans: Vec<(usize, usize)>,
    /// Word mode: the FNV-1a 64 of each token.
    token_hashes: Vec<u64>,
    /// Word mode, for sketches: a second hash of each token, independent of the first.
    token_checks: Vec<u64>,
    /// Word mode: whether each token is a stopword.
    stop: Vec<bool>,
    /// Features: token-index ranges (word mode) or byte ranges of `buf` (char mode).
    ranges: Vec<(usize, usize)>,
    /// Feature hashes, in feature order.
    pub hashes: Vec<u64>,
}

/// Appends the FNV-1a 64 of every run of `n` bytes of `buf` (`buf.len()` >= `n`), four
/// consecutive runs in lockstep.
fn hash_ngrams(buf: &[u8], n: usize, out: &mut Vec<u64>) {
    let count = buf.len() + 1 - n;
    out.reserve(count);
    let mut i = 0;
    while i + 4 <= count {
        let window = &buf[i..i + n + 3];
        let mut h = [OFFSET_BASIS; 4];
        for k in 0..n {
            for (l, hl) in h.iter_mut().enumerate() {
                *hl = (*hl ^ u64::from(window[k + l])).wrapping_mul(PRIME);
            }
        }
        out.extend_from_slice(&h);
        i += 4;
    }
    out.extend((i..count).map(|i| fnv1a_64(&buf[i..i + n])));
}

/// The FNV-1a 64 hash of each word token of `text`, in order (kept in `scratch`).
pub fn word_token_hashes<'s>(text: &str, scratch: &'s mut Scratch) -> &'s [u64] {
    scratch.spans.clear();
    scratch.token_hashes.clear();
    scan_tokens(text, &mut scratch.spans, &mut scratch.token_hashes);
    &scratch.token_hashes
}

impl Scratch {
    /// The token hashes of the text last given to a word-mode [`FeatureConfig::hash_features`].
    pub fn token_hashes(&self) -> &[u64] {
        &self.token_hashes
    }

    /// The tokens of `text`, last scanned here (by [`word_token_hashes`] or a word-mode
    /// [`FeatureConfig::hash_features`]), as 128 bits each: their FNV-1a 64 hashes and the
    /// XXH3-64 of their bytes (seeded apart). Two different tokens agree on both with
    /// probability about 2^-128, so no pair of words of a corpus is ever taken for one.
    pub fn token_identities(&mut self, text: &str) -> (&[u64], &[u64]) {
        let bytes = text.as_bytes();
        self.token_checks.clear();
        self.token_checks.extend(
            self.spans.iter().map(|&(a, b)| {
                xxhash_rust::xxh3::xxh3_64_with_seed(&bytes[a..b], TOKEN_CHECK_SEED)
            }),
        );
        (&self.token_hashes, &self.token_checks)
    }
}

/// The seed of the second hash of each token (see [`Scratch::token_identities`]).
const TOKEN_CHECK_SEED: u64 = 0x7E57_ED0F_5EC0_4D11;

impl FeatureConfig {
    /// Hashes the features of `text` into `scratch.hashes`, in feature order.
    pub fn hash_features(&self, text: &str, scratch: &mut Scratch) {
        scratch.hashes.clear();
        match self.tokens {
            TokenKind::Word => {
                if self.ngram == 1 && self.stopwords.is_none() {
                    // Every token is a feature, hashed by the scan.
                    word_token_hashes(text, scratch);
                    scratch.hashes.extend_from_slice(&scratch.token_hashes);
                    return;
                }
                self.shingles(text, scratch);
                let s = &mut *scratch;
                if self.ngram == 1 {
                    // Each feature is one token, hashed by the scan.
                    let token_hashes = &s.token_hashes;
                    s.hashes
                        .extend(s.ranges.iter().map(|&(a, _)| token_hashes[a]));
                    return;
                }
                // A shingle continues the hash of its first token over " " and each next token
                // (measured faster than hashing shingles as text slices four at a time).
                let bytes = text.as_bytes();
                let (spans, token_hashes) = (&s.spans, &s.token_hashes);
                s.hashes.extend(s.ranges.iter().map(|&(a, b)| {
                    let mut h = token_hashes[a];
                    for &(start, end) in &spans[a + 1..b] {
                        h = fnv1a_64_update(
                            (h ^ u64::from(b' ')).wrapping_mul(PRIME),
                            &bytes[start..end],
                        );
                    }
                    h
                }));
            }
            TokenKind::Char => {
                self.char_ngrams(text, scratch);
                if scratch.ranges.is_empty() && !scratch.buf.is_empty() {
                    hash_ngrams(&scratch.buf, self.ngram, &mut scratch.hashes);
                } else {
                    hash_ranges(&scratch.buf, &scratch.ranges, &mut scratch.hashes);
                }
            }
        }
    }

    /// The features of `text` as strings, in order: exactly the bytes that are hashed.
    pub fn features(&self, text: &str) -> Vec<String> {
        let mut s = Scratch::default();
        match self.tokens {
            TokenKind::Word => {
                self.shingles(text, &mut s);
                s.ranges
                    .iter()
                    .map(|&(a, b)| {
                        let words: Vec<&str> =
                            s.spans[a..b].iter().map(|&(x, y)| &text[x..y]).collect();
                        words.join(" ")
                    })
                    .collect()
            }
            TokenKind::Char => {
                self.char_ngrams(text, &mut s);
                if s.ranges.is_empty() && !s.buf.is_empty() {
                    // ASCII: the n-grams are every run of n bytes.
                    let n = self.ngram;
                    return s
                        .buf
                        .windows(n)
                        .map(|w| String::from_utf8_lossy(w).into_owned())
                        .collect();
                }
                s.ranges
                    .iter()
                    // Every range starts and ends at a character boundary of valid UTF-8.
                    .map(|&(a, b)| String::from_utf8_lossy(&s.buf[a..b]).into_owned())
                    .collect()
            }
        }
    }

    /// Word mode: token spans and hashes, then the shingles as token-index ranges in `ranges`.
    fn shingles(&self, text: &str, s: &mut Scratch) {
        s.spans.clear();
        s.token_hashes.clear();
        s.ranges.clear();
        scan_tokens(text, &mut s.spans, &mut s.token_hashes);
        let tokens = s.spans.len();
        if tokens == 0 {
            return;
        }
        // A text with fewer than n tokens is one shingle of all of them.
        let width = self.ngram.min(tokens);
        let windows = tokens - width + 1;
        let shingle = |i: usize| (i, i + width);
        let Some(stopwords) = &self.stopwords else {
            s.ranges.extend((0..windows).map(shingle));
            return;
        };
        let bytes = text.as_bytes();
        s.stop.clear();
        s.stop.extend(
            s.spans
                .iter()
                .map(|&(a, b)| stopwords.contains(&bytes[a..b])),
        );
        Self::stopword_windows(width, windows, s);
    }

    /// The shingles of `width` tokens holding at least one stopword (`s.stop` marks them), or all
    /// of them if none does.
    fn stopword_windows(width: usize, windows: usize, s: &mut Scratch) {
        let shingle = |i: usize| (i, i + width);
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
        // A filter that would leave nothing keeps everything: a document without a single
        // stopword is still a document, not an empty one.
        if s.ranges.is_empty() {
            s.ranges.extend((0..windows).map(shingle));
        }
    }

    /// Char mode: the compacted text in `buf` and its n-grams as byte ranges in `ranges`, except
    /// for an ASCII text of more than n characters, whose n-grams are all its runs of n bytes
    /// (`ranges` is left empty).
    fn char_ngrams(&self, text: &str, s: &mut Scratch) {
        s.buf.clear();
        s.spans.clear();
        s.ranges.clear();
        compact(text, &mut s.buf);
        if s.buf.is_empty() {
            return;
        }
        let n = self.ngram;
        if s.buf.is_ascii() {
            if s.buf.len() <= n {
                s.ranges.push((0, s.buf.len()));
            }
            return;
        }
        // Character starts, then n-grams between them.
        s.spans.clear();
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
            s.ranges
                .extend((0..=chars - n).map(|i| (s.spans[i].0, end_of(i + n))));
        }
    }
}

impl FeatureConfig {
    /// Word shingles of tokens cut by an outside tokenizer (a segmenter such as jieba): the
    /// kept tokens' indices in `spans`, their hashes in `token_hashes`, the shingles as ranges of
    /// kept tokens in `ranges`. Shingles, the short-text rule and the stopword filter are those
    /// of the built-in word tokens; the token kind is not consulted (tokens are words).
    fn token_shingles<T: AsRef<str>>(&self, tokens: &[T], s: &mut Scratch) {
        s.spans.clear();
        s.token_hashes.clear();
        s.ranges.clear();
        for (i, token) in tokens.iter().enumerate() {
            let token = token.as_ref();
            if is_word_token(token) {
                s.spans.push((i, 0));
                s.token_hashes.push(fnv1a_64(token.as_bytes()));
            }
        }
        let kept = s.spans.len();
        if kept == 0 {
            return;
        }
        let width = self.ngram.min(kept);
        let windows = kept - width + 1;
        match &self.stopwords {
            None => s.ranges.extend((0..windows).map(|i| (i, i + width))),
            Some(stopwords) => {
                s.stop.clear();
                s.stop.extend(
                    s.spans
                        .iter()
                        .map(|&(i, _)| stopwords.contains(tokens[i].as_ref().as_bytes())),
                );
                Self::stopword_windows(width, windows, s);
            }
        }
    }

    /// Hashes the features of pre-split `tokens` into `scratch.hashes`, in feature order: a
    /// shingle is its tokens joined by one space, as with the built-in tokenizer.
    pub fn hash_token_features<T: AsRef<str>>(&self, tokens: &[T], scratch: &mut Scratch) {
        scratch.hashes.clear();
        self.token_shingles(tokens, scratch);
        let s = &mut *scratch;
        let (spans, token_hashes) = (&s.spans, &s.token_hashes);
        s.hashes.extend(s.ranges.iter().map(|&(a, b)| {
            let mut h = token_hashes[a];
            for &(i, _) in &spans[a + 1..b] {
                h = fnv1a_64_update(
                    (h ^ u64::from(b' ')).wrapping_mul(PRIME),
                    tokens[i].as_ref().as_bytes(),
                );
            }
            h
        }));
    }

    /// The features of pre-split `tokens` as strings, in order: exactly the bytes that are hashed.
    pub fn token_features<T: AsRef<str>>(&self, tokens: &[T]) -> Vec<String> {
        let mut s = Scratch::default();
        self.token_shingles(tokens, &mut s);
        s.ranges
            .iter()
            .map(|&(a, b)| {
                let words: Vec<&str> = s.spans[a..b]
                    .iter()
                    .map(|&(i, _)| tokens[i].as_ref())
                    .collect();
                words.join(" ")
            })
            .collect()
    }
}

/// One field of a document as the core takes it: a normalized text (cut by the built-in
/// tokenizer), or the tokens an outside tokenizer cut it into.
pub trait Field {
    /// Hashes the features into `scratch.hashes`, in feature order.
    fn hash_features(&self, config: &FeatureConfig, scratch: &mut Scratch);
    /// The features as strings, in order.
    fn features(&self, config: &FeatureConfig) -> Vec<String>;
}

impl Field for str {
    #[inline]
    fn hash_features(&self, config: &FeatureConfig, scratch: &mut Scratch) {
        config.hash_features(self, scratch);
    }
    fn features(&self, config: &FeatureConfig) -> Vec<String> {
        config.features(self)
    }
}

impl<T: AsRef<str>> Field for [T] {
    #[inline]
    fn hash_features(&self, config: &FeatureConfig, scratch: &mut Scratch) {
        config.hash_token_features(self, scratch);
    }
    fn features(&self, config: &FeatureConfig) -> Vec<String> {
        config.token_features(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(n: i64, text: &str) -> Vec<String> {
        FeatureConfig::new(TokenKind::Word, n, None)
            .unwrap()
            .features(text)
    }

    fn chars(n: i64, text: &str) -> Vec<String> {
        FeatureConfig::new(TokenKind::Char, n, None)
            .unwrap()
            .features(text)
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
        assert_eq!(
            words(1, "한국어 カタカナ"),
            ["한", "국", "어", "カ", "タ", "カ", "ナ"]
        );
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
        let config =
            FeatureConfig::new(TokenKind::Word, 2, Some(vec!["the".into(), "of".into()])).unwrap();
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
        let want: Vec<u64> = config
            .features(text)
            .iter()
            .map(|f| fnv1a_64(f.as_bytes()))
            .collect();
        assert_eq!(scratch.hashes, want);
    }

    #[test]
    fn pre_split_tokens_make_the_same_shingles_as_the_text() {
        let text = "the cat sat on the mat, the cat ran";
        for n in 1..5 {
            let config = FeatureConfig::new(TokenKind::Word, n, Some(vec!["on".into()])).unwrap();
            let tokens: Vec<&str> = text.split([' ', ',']).collect();
            assert_eq!(
                config.token_features(&tokens),
                config.features(text),
                "n = {n}"
            );
            let (mut a, mut b) = (Scratch::default(), Scratch::default());
            config.hash_features(text, &mut a);
            config.hash_token_features(&tokens, &mut b);
            assert_eq!(a.hashes, b.hashes);
        }
    }

    #[test]
    fn pre_split_tokens_keep_words_and_drop_separators() {
        let config = FeatureConfig::new(TokenKind::Word, 2, None).unwrap();
        let tokens = ["你", "妈妈", "，", " ", "回家", "!?", "", "a_b"];
        assert_eq!(
            config.token_features(&tokens),
            ["你 妈妈", "妈妈 回家", "回家 a_b"]
        );
        assert!(config.token_features::<&str>(&[]).is_empty());
        assert!(config.token_features(&["  ", "，"]).is_empty());
    }
}
