//! Features of normalized text: word shingles or character n-grams.
//!
//! Word mode reads the text once, finding each token and hashing it as its bytes are read; a
//! shingle `"a b c"` continues the hash of `a` over `" b"` and `" c"`, straight from the text.
//! Character mode compacts the text into one buffer (every run of separators one space) and
//! hashes its n-grams in place, four at a time. No string is allocated per feature. The tokens
//! themselves are cut by [`crate::text::tokens`].

use std::collections::HashSet;

use crate::error::{Error, Result};
use crate::runtime::simd;
use crate::text::hash::{fnv1a_64, fnv1a_64_update, hash_ranges, FoldState, OFFSET_BASIS, PRIME};
use crate::text::tokens::{compact, count_tokens, is_word_token, scan_tokens};

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
    /// Feature hashes, in feature order (see [`Scratch::feature_hashes`]).
    hashes: Vec<u64>,
    /// Whether the features are the tokens themselves (one word a feature, no stopwords): their
    /// hashes are then `token_hashes`, not copied into `hashes`.
    tokens_are_features: bool,
}

/// Texts of at least this many bytes have the buffers their features need reserved before they
/// are read, exactly and fallibly ([`FeatureConfig::reserve`]); shorter ones grow them as they go.
pub const RESERVE_MIN_BYTES: usize = 1 << 20;

/// After a text of at least this many bytes, a thread's buffers are freed
/// ([`Scratch::release_after`]) rather than kept, with the hundreds of megabytes a long text
/// grows them to, for the short texts that follow.
pub const RELEASE_MIN_BYTES: usize = 16 << 20;

/// Makes room for `n` elements in `v` (emptied), freeing its old buffer first; fallible.
fn room<T>(v: &mut Vec<T>, n: usize) -> std::result::Result<(), std::collections::TryReserveError> {
    if v.capacity() < n {
        *v = Vec::new();
        v.try_reserve_exact(n)?;
    }
    Ok(())
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
    /// The feature hashes of the text last given to [`FeatureConfig::hash_features`] (or
    /// [`FeatureConfig::hash_token_features`]), in feature order.
    #[inline]
    pub fn feature_hashes(&self) -> &[u64] {
        if self.tokens_are_features {
            &self.token_hashes
        } else {
            &self.hashes
        }
    }

    /// [`Scratch::feature_hashes`] to change in place (a copy of the token hashes, when they
    /// are the features, so that those stay as the scan left them).
    pub fn feature_hashes_mut(&mut self) -> &mut Vec<u64> {
        if self.tokens_are_features {
            self.hashes.clear();
            self.hashes.extend_from_slice(&self.token_hashes);
            self.tokens_are_features = false;
        }
        &mut self.hashes
    }

    /// Frees the buffers after a text of `len` bytes, when it is a long one
    /// ([`RELEASE_MIN_BYTES`]).
    pub fn release_after(&mut self, len: usize) {
        if len >= RELEASE_MIN_BYTES {
            *self = Scratch::default();
        }
    }

    /// Reserves the buffers of word tokens: their spans and hashes, and with `identities` their
    /// second hashes (a sketch's), for `tokens` tokens; with `features`, room for as many
    /// features (shingles), and with `stop` their stopword marks.
    fn reserve_words(
        &mut self,
        tokens: usize,
        identities: bool,
        features: bool,
        stop: bool,
    ) -> std::result::Result<(), std::collections::TryReserveError> {
        room(&mut self.spans, tokens)?;
        room(&mut self.token_hashes, tokens)?;
        if identities {
            room(&mut self.token_checks, tokens)?;
        }
        if features {
            room(&mut self.ranges, tokens)?;
            room(&mut self.hashes, tokens)?;
        }
        if stop {
            room(&mut self.stop, tokens)?;
        }
        Ok(())
    }

    /// Reserves, for a text of at least [`RESERVE_MIN_BYTES`], what a sketch of its words
    /// needs ([`crate::sketch::verify::sketch`]): [`Error::OutOfMemory`] when it cannot be had.
    pub fn reserve_sketch(&mut self, text: &str) -> Result<()> {
        if text.len() < RESERVE_MIN_BYTES {
            return Ok(());
        }
        let tokens = count_tokens(text);
        self.granted(text.len(), (tokens, "tokens"), 32, |s| {
            s.reserve_words(tokens, true, false, false)
        })
    }

    /// Runs `reserve` when the `per_unit` bytes of each of `units` (tokens or characters) of a
    /// text of `len` bytes fit in the memory left ([`crate::runtime::memory::available`]):
    /// `Ok` when they fit and `reserve` got them, else the buffers freed and
    /// [`Error::OutOfMemory`] naming the text's size, its units and the bytes it needs.
    fn granted(
        &mut self,
        len: usize,
        (units, unit): (usize, &str),
        per_unit: usize,
        reserve: impl FnOnce(&mut Self) -> std::result::Result<(), std::collections::TryReserveError>,
    ) -> Result<()> {
        let need = units.saturating_mul(per_unit) as u64;
        let fits = crate::runtime::memory::available().is_none_or(|left| need <= left);
        if fits && reserve(self).is_ok() {
            return Ok(());
        }
        *self = Scratch::default();
        Err(Error::OutOfMemory(format!(
            "a text of {} bytes ({} {unit}) needs about {} to be read",
            crate::error::thousands(len as u64),
            crate::error::thousands(units as u64),
            crate::runtime::memory::readable(need)
        )))
    }

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
        simd::xxh3_spans(bytes, &self.spans, TOKEN_CHECK_SEED, &mut self.token_checks);
        (&self.token_hashes, &self.token_checks)
    }
}

/// The seed of the second hash of each token (see [`Scratch::token_identities`]).
const TOKEN_CHECK_SEED: u64 = 0x7E57_ED0F_5EC0_4D11;

impl FeatureConfig {
    /// Reserves in `scratch`, for a text of at least [`RESERVE_MIN_BYTES`], every buffer that
    /// [`FeatureConfig::hash_features`] (and with `identities`, the sketch of its words:
    /// [`Scratch::token_identities`]) grows on `text`, exactly (its tokens are counted first), so
    /// that reading it allocates nothing more: a long text whose buffers cannot be had is
    /// [`Error::OutOfMemory`], with the buffers freed, never an abort.
    pub fn reserve(&self, text: &str, identities: bool, scratch: &mut Scratch) -> Result<()> {
        if text.len() < RESERVE_MIN_BYTES {
            return Ok(());
        }
        match self.tokens {
            TokenKind::Word => {
                let tokens = count_tokens(text);
                let shingles = self.ngram > 1 || self.stopwords.is_some();
                let stop = self.stopwords.is_some();
                let per_token = 24 + 8 * usize::from(identities) + 25 * usize::from(shingles);
                scratch.granted(text.len(), (tokens, "tokens"), per_token, |s| {
                    s.reserve_words(tokens, identities, shingles, stop)
                })
            }
            TokenKind::Char => {
                // The compacted text (at most one space a character), and per character a
                // start, an n-gram and its hash.
                let chars = if text.is_ascii() {
                    0
                } else {
                    text.chars().count()
                };
                let per_byte = 10 + 32 * usize::from(chars > 0);
                scratch.granted(text.len(), (text.len(), "bytes"), per_byte, |s| {
                    room(&mut s.buf, 2 * text.len() + 1)?;
                    room(&mut s.spans, chars)?;
                    room(&mut s.ranges, chars)?;
                    room(&mut s.hashes, text.len())
                })
            }
        }
    }

    /// Hashes the features of `text` into `scratch`, in feature order
    /// ([`Scratch::feature_hashes`]).
    pub fn hash_features(&self, text: &str, scratch: &mut Scratch) {
        scratch.hashes.clear();
        scratch.tokens_are_features = false;
        match self.tokens {
            TokenKind::Word => {
                if self.ngram == 1 && self.stopwords.is_none() {
                    // Every token is a feature, hashed by the scan.
                    word_token_hashes(text, scratch);
                    scratch.tokens_are_features = true;
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
        scratch.tokens_are_features = false;
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
    /// Hashes the features into `scratch`, in feature order ([`Scratch::feature_hashes`]).
    fn hash_features(&self, config: &FeatureConfig, scratch: &mut Scratch);
    /// Reserves what [`Field::hash_features`] grows in `scratch` for a long field
    /// ([`FeatureConfig::reserve`]): [`Error::OutOfMemory`] when it cannot be had.
    fn reserve(&self, config: &FeatureConfig, scratch: &mut Scratch) -> Result<()>;
    /// The field's size in bytes (of text, or of its tokens).
    fn size(&self) -> usize;
    /// The features as strings, in order.
    fn features(&self, config: &FeatureConfig) -> Vec<String>;
}

impl Field for str {
    #[inline]
    fn hash_features(&self, config: &FeatureConfig, scratch: &mut Scratch) {
        config.hash_features(self, scratch);
    }
    fn reserve(&self, config: &FeatureConfig, scratch: &mut Scratch) -> Result<()> {
        config.reserve(self, false, scratch)
    }
    fn size(&self) -> usize {
        self.len()
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
    fn reserve(&self, config: &FeatureConfig, scratch: &mut Scratch) -> Result<()> {
        // A token a span, a hash, a shingle and its hash.
        let tokens = self.len();
        if tokens.saturating_mul(8) < RESERVE_MIN_BYTES {
            return Ok(());
        }
        let stop = config.stopwords.is_some();
        scratch.granted(self.size(), (tokens, "tokens"), 49, |s| {
            s.reserve_words(tokens, false, true, stop)
        })
    }
    fn size(&self) -> usize {
        self.iter().map(|t| t.as_ref().len() + 1).sum()
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
        assert_eq!(scratch.feature_hashes(), want);
    }

    #[test]
    fn a_long_text_is_read_in_the_room_reserved_for_it() {
        // Over RESERVE_MIN_BYTES, of ASCII and not, in each mode: the features are those of
        // an unreserved scratch, and no buffer grew past what was reserved.
        let words = [
            "alpha",
            "beta",
            "gamma",
            "d\u{e9}lta",
            "\u{56de}\u{5bb6}",
            "x",
            "9",
        ];
        let mut text = String::new();
        let mut i = 0usize;
        while text.len() < RESERVE_MIN_BYTES + 1000 {
            text.push_str(words[(i * 7 + i / 3) % words.len()]);
            text.push_str(if i.is_multiple_of(5) { ", " } else { " " });
            i += 1;
        }
        let ascii: String = text.chars().filter(char::is_ascii).collect();
        let ascii = ascii.repeat(2);
        let stop = Some(vec!["beta".to_string()]);
        for text in [&text, &ascii] {
            for (tokens, ngram, stopwords) in [
                (TokenKind::Word, 1, None),
                (TokenKind::Word, 3, None),
                (TokenKind::Word, 2, stop.clone()),
                (TokenKind::Char, 4, None),
            ] {
                let config = FeatureConfig::new(tokens, ngram, stopwords).unwrap();
                let (mut plain, mut reserved) = (Scratch::default(), Scratch::default());
                config.hash_features(text, &mut plain);
                config.reserve(text, true, &mut reserved).unwrap();
                let capacities = |s: &Scratch| {
                    [
                        s.buf.capacity(),
                        s.spans.capacity(),
                        s.token_hashes.capacity(),
                        s.token_checks.capacity(),
                        s.stop.capacity(),
                        s.ranges.capacity(),
                        s.hashes.capacity(),
                    ]
                };
                assert!(text.len() >= RESERVE_MIN_BYTES);
                let before = capacities(&reserved);
                config.hash_features(text, &mut reserved);
                if tokens == TokenKind::Word {
                    reserved.token_identities(text);
                }
                assert_eq!(reserved.feature_hashes(), plain.feature_hashes());
                assert_eq!(capacities(&reserved), before, "{tokens:?} {ngram}");
                if tokens == TokenKind::Word {
                    assert_eq!(reserved.spans.len(), count_tokens(text));
                    assert_eq!(reserved.spans.capacity(), reserved.spans.len());
                }
            }
        }
        // A short text reserves nothing; a long one's buffers are freed after it.
        let config = FeatureConfig::new(TokenKind::Word, 1, None).unwrap();
        let mut scratch = Scratch::default();
        config.reserve("a few words", true, &mut scratch).unwrap();
        assert_eq!(scratch.spans.capacity(), 0);
        config.hash_features(&text, &mut scratch);
        scratch.release_after(text.len());
        assert!(scratch.spans.capacity() > 0);
        scratch.release_after(RELEASE_MIN_BYTES);
        assert_eq!(scratch.spans.capacity(), 0);
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
            assert_eq!(a.feature_hashes(), b.feature_hashes());
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
