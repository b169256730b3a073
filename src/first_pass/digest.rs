//! What the first pass of a dedup keeps of each document: its fingerprint, the content key of
//! its normalized text and, when pairs are to be verified, its shingle sketch, made in one go
//! (a fingerprint of word features leaves the word hashes the sketch needs).

use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::fingerprint::simhash::{Hasher, PARALLEL_MIN_DOCS};
use crate::sketch::verify::{self, content_key, ContentKey, ShingleConfig, SketchHash, Sketches};
use crate::text::features::{Scratch, TokenKind, RELEASE_MIN_BYTES, RESERVE_MIN_BYTES};
use crate::text::normal::{self, Fold};

/// Fingerprints, with the content keys (and sketches, when asked for) in `sketches`.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Digests {
    pub fingerprints: Vec<u64>,
    pub sketches: Sketches,
}

/// The content keys seen so far in a pass, each with its text's fingerprint: only a text's first
/// occurrence needs a sketch (its copies are recognised by their key and never compared), and a
/// later copy of a single-field text takes the fingerprint already made instead of making it again.
#[derive(Debug, Default)]
pub struct KeySet {
    // Content keys are hashes already: one multiply mixes them (SipHash took 0.27 s a 1M first pass).
    seen: std::collections::HashMap<ContentKey, u64, crate::text::hash::FoldState>,
}

impl KeySet {
    /// For each key in order, whether it is seen here for the first time (it is then recorded,
    /// with the fingerprint beside it).
    pub fn first_seen(&mut self, keys: &[ContentKey], fingerprints: &[u64]) -> Result<Vec<bool>> {
        if keys.len() != fingerprints.len() {
            return Err(Error::invalid(format!(
                "{} keys but {} fingerprints",
                keys.len(),
                fingerprints.len()
            )));
        }
        Ok(keys
            .iter()
            .zip(fingerprints)
            .map(|(&k, &fp)| match self.seen.entry(k) {
                std::collections::hash_map::Entry::Vacant(e) => {
                    e.insert(fp);
                    true
                }
                std::collections::hash_map::Entry::Occupied(_) => false,
            })
            .collect())
    }

    /// The fingerprint of the text of content key `key`, if it was seen.
    #[inline]
    pub fn fingerprint_of(&self, key: ContentKey) -> Option<u64> {
        self.seen.get(&key).copied()
    }

    pub fn len(&self) -> usize {
        self.seen.len()
    }

    pub fn is_empty(&self) -> bool {
        self.seen.is_empty()
    }
}

/// Reserves in `scratch` what fingerprinting `text` with `hasher` (and with `sketch`, sketching
/// it after: [`sketch_after_fingerprint`]) grows, for a long text
/// ([`crate::text::features::FeatureConfig::reserve`]): [`Error::OutOfMemory`] when it cannot
/// be had.
pub fn reserve(hasher: &Hasher, sketch: bool, text: &str, scratch: &mut Scratch) -> Result<()> {
    let word = hasher.features().tokens() == TokenKind::Word;
    hasher.features().reserve(text, sketch && word, scratch)?;
    if sketch && !word {
        scratch.reserve_sketch(text)?;
    }
    Ok(())
}

/// Room for a copy of `len` bytes of text in `buf` (emptied), for a long text: fallible.
fn text_room(buf: &mut String, len: usize) -> Result<()> {
    buf.clear();
    if len >= RESERVE_MIN_BYTES && buf.try_reserve(len).is_err() {
        *buf = String::new();
        return Err(Error::OutOfMemory(format!(
            "a copy of a text of {} bytes",
            crate::error::thousands(len as u64)
        )));
    }
    Ok(())
}

/// The sketch of a document of one field whose fingerprint `hasher` has just made in `scratch`.
pub fn sketch_after_fingerprint(
    hasher: &Hasher,
    config: ShingleConfig,
    normalized: &str,
    scratch: &mut Scratch,
    out: &mut Vec<SketchHash>,
) {
    if hasher.features().tokens() == TokenKind::Word {
        // The fingerprint's features were built from the same word tokens: reuse their hashes.
        let (words, checks) = scratch.token_identities(normalized);
        verify::sketch_of_words(config, words, checks, out);
    } else {
        verify::sketch(config, normalized, scratch, out);
    }
}

/// One document: its fingerprint and key, with its sketch written to `out` (emptied first). A
/// text of one field whose key is in `seen` is a copy of one digested before: its fingerprint
/// is that one's, and it has no sketch (only a text's first occurrence keeps one).
/// [`Error::OutOfMemory`] when a long text's buffers cannot be had.
fn digest_one(
    hasher: &Hasher,
    fields: &[&str],
    sketch: Option<ShingleConfig>,
    seen: Option<&KeySet>,
    (scratch, joined): (&mut Scratch, &mut String),
    out: &mut Vec<SketchHash>,
) -> Result<(u64, ContentKey)> {
    out.clear();
    if let [text] = fields {
        let key = content_key(text.as_bytes());
        if let Some(fingerprint) = seen.and_then(|s| s.fingerprint_of(key)) {
            return Ok((fingerprint, key));
        }
        reserve(hasher, sketch.is_some(), text, scratch)?;
        let fingerprint = hasher.fingerprint(fields, scratch);
        if let Some(config) = sketch {
            sketch_after_fingerprint(hasher, config, text, scratch, out);
        }
        return Ok((fingerprint, key));
    }
    let longest = fields.iter().map(|t| t.len()).max().unwrap_or(0);
    let total = fields.iter().map(|t| t.len() + 1).sum::<usize>();
    for text in fields {
        if text.len() == longest {
            reserve(hasher, false, text, scratch)?;
            break;
        }
    }
    let fingerprint = hasher.fingerprint(fields, scratch);
    // Several fields: their texts joined by line ends make the text that is compared.
    text_room(joined, total)?;
    for (f, text) in fields.iter().enumerate() {
        if f > 0 {
            joined.push('\n');
        }
        joined.push_str(text);
    }
    if let Some(config) = sketch {
        scratch.reserve_sketch(joined)?;
        verify::sketch(config, joined, scratch, out);
    }
    Ok((fingerprint, content_key(joined.as_bytes())))
}

/// Documents digested in one go: so many that a part's vectors, made once for all of them,
/// cost little beside their work, and so few that the parts still share the threads evenly.
const PART_DOCS: usize = 32;

/// The digests of a run of documents, their sketches end to end (`ends[i]`: where document i's
/// ends in `hashes`).
#[derive(Default)]
struct Part {
    fingerprints: Vec<u64>,
    keys: Vec<ContentKey>,
    ends: Vec<usize>,
    hashes: Vec<SketchHash>,
}

/// What one thread reuses from document to document: the buffers of [`digest_one`], the
/// folded copy of a text, and its sketch.
#[derive(Default)]
struct State {
    scratch: Scratch,
    folded: String,
    joined: String,
    sketch: Vec<SketchHash>,
}

/// The digests of documents given field by field (`fields[f][d]`), in parallel. With a `fold`
/// (one field only), each text is folded first ([`normal::fold`]), as
/// [`Hasher::fingerprint_many_folded`] does. With `seen`, the texts (of one field) seen before
/// take their recorded fingerprints and no sketch (see [`digest_one`]).
pub fn digest_many<S: AsRef<str> + Sync>(
    hasher: &Hasher,
    fields: &[&[S]],
    fold: Fold,
    sketch: Option<ShingleConfig>,
    seen: Option<&KeySet>,
) -> Result<Digests> {
    let n = check_fields(hasher, fields, fold)?;
    let mut parts = Vec::new();
    let count = digest_parts(hasher, fields, fold, sketch, seen, 0..n, &mut parts)?;
    let parts = &parts[..count];
    let total = parts.iter().map(|p| p.hashes.len()).sum();
    let mut out = Digests {
        fingerprints: Vec::with_capacity(n),
        sketches: Sketches {
            offsets: Vec::with_capacity(n + 1),
            hashes: crate::runtime::memory::vec_in_huge_pages(total),
            keys: Vec::with_capacity(n),
        },
    };
    out.sketches.offsets.push(0);
    for part in parts {
        let base = out.sketches.hashes.len();
        out.fingerprints.extend_from_slice(&part.fingerprints);
        out.sketches.keys.extend_from_slice(&part.keys);
        out.sketches.hashes.extend_from_slice(&part.hashes);
        let ends = part.ends.iter().map(|&e| (base + e) as u64);
        out.sketches.offsets.extend(ends);
    }
    Ok(out)
}

/// Parts of [`PART_DOCS`] documents that [`digest_into`] digests at once, in parallel, before
/// it appends their sketches: their vectors, reused from one such wave to the next, hold a
/// wave's sketches, not the whole call's, and are written into memory already in use.
const WAVE_PARTS: usize = 64;

/// [`digest_many`] with a sketch for each text's first occurrence only (a text of a content key
/// in `seen`, or of one earlier in these documents, has an empty one: as
/// [`KeySet::first_seen`] would mark them), appended to `into` where the sketches are kept
/// rather than gathered into a vector of their own and copied there after. The digests' hashes
/// are left empty; their offsets are from where `into` ended at the call.
/// [`Error::OutOfMemory`] when `into` cannot grow by the sketches.
pub fn digest_into<S: AsRef<str> + Sync>(
    hasher: &Hasher,
    fields: &[&[S]],
    fold: Fold,
    sketch: ShingleConfig,
    seen: Option<&KeySet>,
    into: &mut Vec<SketchHash>,
) -> Result<Digests> {
    let n = check_fields(hasher, fields, fold)?;
    let room = |into: &mut Vec<SketchHash>, more: usize| {
        crate::runtime::memory::reserve_in_huge_pages(into, more).map_err(|_| {
            Error::OutOfMemory(format!(
                "{} sketch hashes",
                crate::error::thousands((into.len() + more) as u64)
            ))
        })
    };
    // Room for the most hashes the texts' sketches may hold (a sketch holds at most a hash a
    // byte of its text and four checks, and at most its size), reserved once: only what is
    // written takes memory.
    let most_each = sketch.size.max(4);
    let most: usize = (0..n)
        .map(|d| {
            let len: usize = fields.iter().map(|f| f[d].as_ref().len()).sum();
            len.saturating_add(4).min(most_each)
        })
        .sum();
    room(into, most)?;
    let mut out = Digests {
        fingerprints: Vec::with_capacity(n),
        sketches: Sketches {
            offsets: Vec::with_capacity(n + 1),
            hashes: Vec::new(),
            keys: Vec::with_capacity(n),
        },
    };
    let base = into.len();
    out.sketches.offsets.push(0);
    let mut keys: std::collections::HashSet<ContentKey, crate::text::hash::FoldState> =
        std::collections::HashSet::with_capacity_and_hasher(n, Default::default());
    let mut parts = Vec::new();
    let mut wave = |into: &mut Vec<SketchHash>, docs: std::ops::Range<usize>| -> Result<()> {
        let count = digest_parts(hasher, fields, fold, Some(sketch), seen, docs, &mut parts)?;
        room(into, parts[..count].iter().map(|p| p.hashes.len()).sum())?;
        for part in &parts[..count] {
            out.fingerprints.extend_from_slice(&part.fingerprints);
            out.sketches.keys.extend_from_slice(&part.keys);
            let mut start = 0;
            for (&key, &end) in part.keys.iter().zip(&part.ends) {
                // A copy of a text earlier in the run keeps no sketch.
                if keys.insert(key) {
                    into.extend_from_slice(&part.hashes[start..end]);
                }
                start = end;
                out.sketches.offsets.push((into.len() - base) as u64);
            }
        }
        Ok(())
    };
    for from in (0..n).step_by(WAVE_PARTS * PART_DOCS) {
        if let Err(e) = wave(into, from..n.min(from + WAVE_PARTS * PART_DOCS)) {
            // A failed call leaves the buffer as it found it.
            into.truncate(base);
            return Err(e);
        }
    }
    Ok(out)
}

/// The number of documents of `fields`, checked against `hasher` and `fold`.
fn check_fields<S: AsRef<str>>(hasher: &Hasher, fields: &[&[S]], fold: Fold) -> Result<usize> {
    if fields.len() != hasher.fields() {
        return Err(Error::invalid(format!(
            "expected {} fields per document, got {}",
            hasher.fields(),
            fields.len()
        )));
    }
    if fold != Fold::default() && fields.len() != 1 {
        return Err(Error::invalid("folding takes documents of one field"));
    }
    let n = fields.first().map_or(0, |f| f.len());
    if fields.iter().any(|f| f.len() != n) {
        return Err(Error::invalid(
            "every field must hold one text per document",
        ));
    }
    Ok(n)
}

/// The digests of the documents `docs` (of fields checked by [`check_fields`]), in parts of
/// [`PART_DOCS`] documents written in order into the first parts of `parts` (reusing their
/// vectors; more are made as needed): the number of parts written.
fn digest_parts<S: AsRef<str> + Sync>(
    hasher: &Hasher,
    fields: &[&[S]],
    fold: Fold,
    sketch: Option<ShingleConfig>,
    seen: Option<&KeySet>,
    docs: std::ops::Range<usize>,
    parts: &mut Vec<Part>,
) -> Result<usize> {
    let folding = fold != Fold::default();
    let one = |state: &mut State, part: &mut Part, d: usize| -> Result<()> {
        let len = fields.iter().map(|f| f[d].as_ref().len()).sum::<usize>();
        let buffers = (&mut state.scratch, &mut state.joined);
        let got = if folding {
            let text = fields[0][d].as_ref();
            crate::error::try_room_text(&mut state.folded, text, fold).map_err(|e| e.at(d))?;
            let text = normal::fold(text, fold, &mut state.folded);
            digest_one(hasher, &[text], sketch, seen, buffers, &mut state.sketch)
        } else {
            let texts: Vec<&str> = fields.iter().map(|f| f[d].as_ref()).collect();
            digest_one(hasher, &texts, sketch, seen, buffers, &mut state.sketch)
        };
        let (fingerprint, key) = got.map_err(|e| e.at(d))?;
        part.fingerprints.push(fingerprint);
        part.keys.push(key);
        part.hashes.extend_from_slice(&state.sketch);
        part.ends.push(part.hashes.len());
        if len >= RELEASE_MIN_BYTES {
            *state = State::default();
        }
        Ok(())
    };
    let run = |state: &mut State, part: &mut Part, docs: std::ops::Range<usize>| -> Result<()> {
        part.fingerprints.clear();
        part.keys.clear();
        part.ends.clear();
        part.hashes.clear();
        for d in docs {
            one(state, part, d)?;
        }
        Ok(())
    };
    let fields_n = fields.first().map_or(0, |f| f.len());
    let (start, n) = (docs.start, docs.len());
    let count = if fields_n < PARALLEL_MIN_DOCS {
        1
    } else {
        n.div_ceil(PART_DOCS)
    };
    if parts.len() < count {
        parts.resize_with(count, Part::default);
    }
    if count == 1 {
        run(&mut State::default(), &mut parts[0], docs)?;
        return Ok(1);
    }
    parts[..count]
        .par_iter_mut()
        .enumerate()
        .try_for_each_init(State::default, |state, (p, part)| {
            let from = start + p * PART_DOCS;
            run(state, part, from..(start + n).min(from + PART_DOCS))
        })?;
    Ok(count)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fingerprint::simhash::Weighting;
    use crate::text::features::FeatureConfig;

    const ASCII: Fold = Fold {
        ascii: true,
        wide: false,
        map: &[],
    };

    fn hasher(tokens: TokenKind, ngram: i64, fields: usize) -> Hasher {
        let features = FeatureConfig::new(tokens, ngram, None).unwrap();
        Hasher::new(features, Weighting::Tf, None, vec![1.0; fields]).unwrap()
    }

    #[test]
    fn digests_are_the_fingerprints_keys_and_sketches_made_apart() {
        let texts = [
            "the quick brown fox",
            "",
            "Some CAPITALS here",
            "x y z w v u t s",
        ];
        let config = verify::shingle_config(3, 256).unwrap();
        for (tokens, ngram) in [
            (TokenKind::Word, 1),
            (TokenKind::Word, 3),
            (TokenKind::Char, 4),
        ] {
            let h = hasher(tokens, ngram, 1);
            let got = digest_many(&h, &[&texts[..]], ASCII, Some(config), None).unwrap();
            let folded: Vec<String> = texts.iter().map(|t| t.to_ascii_lowercase()).collect();
            assert_eq!(
                got.fingerprints,
                h.fingerprint_many(&[&folded[..]]).unwrap()
            );
            assert_eq!(got.sketches, verify::sketches(config, &folded));
            let plain = digest_many(&h, &[&texts[..]], Fold::default(), None, None).unwrap();
            assert_eq!(
                plain.fingerprints,
                h.fingerprint_many(&[&texts[..]]).unwrap()
            );
            assert!(plain.sketches.hashes.is_empty());
            assert_eq!(
                plain.sketches.keys,
                texts
                    .iter()
                    .map(|t| content_key(t.as_bytes()))
                    .collect::<Vec<_>>()
            );
        }
    }

    /// Many documents run in parallel, 32 at a time: each one's digest is still its own, in
    /// order (short and long texts, some past the sketch's running bound), and a text whose key
    /// was seen takes the fingerprint recorded for it and no sketch.
    #[test]
    fn many_documents_digest_as_each_one_alone() {
        let mut s = 7u64;
        let words = [
            "alpha", "Beta", "gamma", "delta", "x", "y", "z9", "omega", "pi", "rho",
        ];
        let texts: Vec<String> = (0..300)
            .map(|d| {
                let n = [0, 1, 2, 5, 40, 700, 3000][d % 7];
                let picked: Vec<&str> = (0..n)
                    .map(|_| words[(crate::testing::xorshift64(&mut s) % 10) as usize])
                    .collect();
                picked.join(" ")
            })
            .collect();
        let h = hasher(TokenKind::Word, 1, 1);
        let config = verify::shingle_config(3, 64).unwrap();
        let folded: Vec<String> = texts.iter().map(|t| t.to_ascii_lowercase()).collect();
        let mut seen = KeySet::default();
        let (key, fp) = (content_key(folded[5].as_bytes()), 12345);
        seen.first_seen(&[key], &[fp]).unwrap();
        let got = digest_many(&h, &[&texts[..]], ASCII, Some(config), Some(&seen)).unwrap();
        let mut want_fps = h.fingerprint_many(&[&folded[..]]).unwrap();
        let want = verify::sketches(config, &folded);
        for (f, k) in want_fps.iter_mut().zip(&want.keys) {
            if *k == key {
                *f = fp;
            }
        }
        assert_eq!(got.fingerprints, want_fps);
        assert_eq!(got.sketches.keys, want.keys);
        for d in 0..texts.len() {
            let empty: &[SketchHash] = &[];
            let sketch = if want.keys[d] == key {
                empty
            } else {
                want.get(d)
            };
            assert_eq!(got.sketches.get(d), sketch, "document {d}");
        }
    }

    /// Digested into a buffer, each text's sketch is appended after what the buffer held at its
    /// first occurrence only: a copy of a text of `seen`, or of one earlier in the run, has an
    /// empty one; fingerprints and keys are those of `digest_many`.
    #[test]
    fn digests_into_a_buffer_keep_first_occurrences_only() {
        let base = [
            "one two three four",
            "five six seven",
            "eight nine ten eleven",
        ];
        // Enough documents for several waves of parts digested in parallel.
        let texts: Vec<String> = (0..(2 * WAVE_PARTS * PART_DOCS + 5))
            .map(|d| match d % 9 {
                0 => base[0].to_string(),
                4 => base[(d / 9) % 3].to_string(),
                _ => format!("text {d} of words {} and {}", d * 7, d % 13),
            })
            .collect();
        let h = hasher(TokenKind::Word, 1, 1);
        let config = verify::shingle_config(3, 64).unwrap();
        let mut seen = KeySet::default();
        let recorded = content_key(base[1].as_bytes());
        seen.first_seen(&[recorded], &[99]).unwrap();
        let want = digest_many(
            &h,
            &[&texts[..]],
            Fold::default(),
            Some(config),
            Some(&seen),
        )
        .unwrap();
        let mut into = vec![1, 2, 3];
        let got = digest_into(
            &h,
            &[&texts[..]],
            Fold::default(),
            config,
            Some(&seen),
            &mut into,
        )
        .unwrap();
        assert_eq!(got.fingerprints, want.fingerprints);
        assert_eq!(got.sketches.keys, want.sketches.keys);
        assert!(got.sketches.hashes.is_empty());
        let mut expected = vec![1, 2, 3];
        for d in 0..texts.len() {
            let first = want.sketches.keys[..d]
                .iter()
                .all(|k| *k != want.sketches.keys[d]);
            let (a, b) = (
                got.sketches.offsets[d] as usize,
                got.sketches.offsets[d + 1] as usize,
            );
            let sketch = &into[3 + a..3 + b];
            if first && want.sketches.keys[d] != recorded {
                assert_eq!(sketch, want.sketches.get(d), "document {d}");
                assert!(!sketch.is_empty());
                expected.extend_from_slice(sketch);
            } else {
                assert!(sketch.is_empty(), "document {d}");
            }
        }
        assert_eq!(into, expected);
    }

    #[test]
    fn key_sets_mark_first_occurrences_across_calls() {
        let mut seen = KeySet::default();
        let k = |x: u64| [x, 3 * x + 1];
        let first = seen
            .first_seen(&[k(5), k(7), k(5), k(9)], &[50, 70, 51, 90])
            .unwrap();
        assert_eq!(first, [true, true, false, true]);
        let first = seen.first_seen(&[k(9), k(1), k(1)], &[91, 10, 11]).unwrap();
        assert_eq!(first, [false, true, false]);
        assert_eq!(seen.len(), 4);
        // Each key keeps the fingerprint of its first occurrence; both halves count.
        let got: Vec<Option<u64>> = [5, 7, 9, 1, 2].map(|x| seen.fingerprint_of(k(x))).into();
        assert_eq!(got, [Some(50), Some(70), Some(90), Some(10), None]);
        assert_eq!(seen.fingerprint_of([5, 3]), None);
        assert!(seen.first_seen(&[k(3)], &[]).is_err());
    }

    #[test]
    fn several_fields_are_compared_as_one_text() {
        let h = hasher(TokenKind::Word, 1, 2);
        let (a, b) = (["title one", "t"], ["body text here", "u"]);
        let config = verify::shingle_config(2, 256).unwrap();
        let got = digest_many(&h, &[&a[..], &b[..]], Fold::default(), Some(config), None).unwrap();
        let joined = ["title one\nbody text here", "t\nu"];
        assert_eq!(got.sketches, verify::sketches(config, &joined));
        assert!(digest_many(&h, &[&a[..]], Fold::default(), None, None).is_err());
        assert!(digest_many(&h, &[&a[..], &b[..]], ASCII, None, None).is_err());
    }
}
