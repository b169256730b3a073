//! The dedup index: a corpus kept on disk so that new documents can be deduplicated against it
//! without its texts.
//!
//! Per document the file holds its id (a 64-bit integer or a string of bytes, kept exactly),
//! its fingerprint, the content key of its normalized text and a compact sketch of its word
//! shingles ([`crate::sketch::compact_sketch`]: `W` 32-bit words holding the shingle hashes of a
//! small document, whole at 64 bits up to `W / 2` values, cut above, else a b-bit similarity
//! sketch; Python's default is 16 words of 1-bit bins), so
//! 36 + 4 W bytes a document with an integer id (100 at W = 16). The permuted tables are not
//! stored: at k = 8 a plan has 45 to 495 tables, 8 bytes per document each. Batch mode builds
//! them for the call instead ([`crate::search::cross_search`]: per table, both sides sorted by
//! prefix in cache-sized parts and their runs compared, the batch's own pairs found on the way).
//!
//! File layout, little-endian 8-byte words, every section padded to whole words:
//! a header of [`HEADER_WORDS`] words (magic, version, file length, documents, sketch words,
//! shingle, k, threshold as f64 bits, id kind, id bytes, settings bytes, sketch bits),
//! fingerprints (u64), content keys (2 u64: XXH3-128), sketch lengths (u32: values held, or
//! [`SKETCHED`]), sketches (`W` u32 words per document), ids (i64, or
//! n + 1 u64 offsets then the bytes), the settings (opaque bytes: the caller's fingerprint
//! settings), from version 4 the prefix postings when the index has them
//! ([`crate::store::index_prefixes`]: the sketch size their lists are made from, the frozen rarity
//! table's hashes (u64) and counts (u32), the postings' hashes (u64), from version 6 their places
//! (u32: the document's size and the hashes after this one in its list) and their rows (u32); header words
//! 12 to 15 hold the table's length, the postings', and the prefixes' threshold and band as f64
//! bits, the threshold 0 when there are none), and a checksum of every word before it. A file is replaced only by renaming a new
//! one over it, so a reader keeps the version it opened and a crash leaves the old file.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rayon::prelude::*;

use crate::candidates::short_texts::{prefix_len, Cut, ShortTexts, SHORT, UNPLACED};
use crate::cluster::star::{sweep, sweep_ahead};
use crate::error::{try_with_capacity, Error, Result};
use crate::runtime::interrupt;
use crate::search::cross_search::{cross_pairs_bounded, cross_plan};
use crate::search::limits::{
    check_cross_work, check_work, default_work_limit, Bounded, WORK_REMEDY,
};
use crate::search::pairs::Groups;
use crate::sketch::compact_sketch::{Compact, Sketches, SKETCHED};
use crate::sketch::exact_sets::{self, ExactSets};
use crate::sketch::verify::ContentKey;
use crate::store::index_file::{
    format_error, open_checked, view, Backing, Checksum, Plain, Source, Words,
};
use crate::store::index_prefixes::{
    meeting_parts, postings, Lists, Needs, PrefixSettings, Prefixes,
};
use crate::text::hash::FoldState;

pub const MAGIC: [u8; 8] = *b"\x93NDUPDDX";
/// Version 6 adds the places of the prefix postings, which the length and positional filters
/// read; version 5 adds the exact sets (a flag in the id kind's word); version 4 adds the prefix
/// postings. The prefix postings of versions 4 and 5 are read with no place (every one passes
/// the filters), and written on as version 6 when documents are added. Version 3 (short
/// documents' shingle hashes at 64 bits, with checks, [`crate::sketch::compact_sketch`]) is read
/// as an index without them. Version 2's 32-bit hashes and version 1's bottom-k sketches are
/// refused (rebuild the index).
pub const VERSION: u64 = 6;
/// The version written for an index with exact sets and without prefix postings (version 6
/// adds the postings' places), so that an index a neardup reading version 5 could read stays
/// readable by it.
pub const VERSION_WITHOUT_PLACES: u64 = 5;
/// The version written for an index without exact sets and without prefix postings (version 5
/// adds the sets).
pub const VERSION_WITHOUT_SETS: u64 = 4;
pub const HEADER_WORDS: usize = 16;

/// The ids of the documents: integers, or strings of bytes.
pub enum Ids {
    Int(Words<i64>),
    /// Document d's id is `bytes[offsets[d]..offsets[d + 1]]` (the bytes packed in words).
    Str {
        offsets: Words<u64>,
        bytes: Words<u64>,
        len: usize,
    },
}

/// The sections of the new documents of [`DedupIndex::save_streamed`], in file order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Section {
    /// Fingerprints (`u64`).
    Fps,
    /// Content keys, two `u64` words a key.
    Keys,
    /// Sketch lengths (`u32`).
    Lens,
    /// Sketch words (`u32`, the sketch's words a document).
    Words,
    /// Integer ids (`i64`), or the length in bytes of each string id (`u64`).
    Ids,
    /// The string ids' bytes, one after the other (none with integer ids).
    IdBytes,
    /// The length of each exact set (`u32`; none in an index without them).
    SetLens,
    /// The exact sets' values (`u32`), one set after the other.
    SetValues,
}

impl Section {
    pub const ALL: [Section; 8] = [
        Section::Fps,
        Section::Keys,
        Section::Lens,
        Section::Words,
        Section::Ids,
        Section::IdBytes,
        Section::SetLens,
        Section::SetValues,
    ];
}

/// Values of a section of new documents, handed to a [`Sink`].
#[derive(Clone, Copy)]
pub enum Chunk<'a> {
    U64(&'a [u64]),
    U32(&'a [u32]),
    I64(&'a [i64]),
    Bytes(&'a [u8]),
}

/// What takes a section's values, chunk by chunk, in [`DedupIndex::save_streamed`].
pub type Sink<'a> = dyn FnMut(Chunk<'_>) -> Result<()> + Send + 'a;

/// New ids to store.
#[derive(Clone, Copy)]
pub enum NewIds<'a> {
    Int(&'a [i64]),
    Str(&'a [&'a [u8]]),
}

impl NewIds<'_> {
    fn len(&self) -> usize {
        match self {
            NewIds::Int(v) => v.len(),
            NewIds::Str(v) => v.len(),
        }
    }
}

/// Documents to add to an index: fingerprints, content keys, compact sketches of the index's
/// shape, ids and, for an index with exact sets, theirs.
#[derive(Clone, Copy)]
pub struct Rows<'a> {
    pub fps: &'a [u64],
    pub keys: &'a [ContentKey],
    pub sketches: Sketches<'a>,
    pub ids: NewIds<'a>,
    pub sets: Option<NewSets<'a>>,
}

/// The exact sets of documents to add: rows `rows` of `sets`, in that order (every row when
/// None), so that a caller saving some of the documents it digested hands their sets over
/// without gathering them.
#[derive(Clone, Copy)]
pub struct NewSets<'a> {
    pub sets: ExactSets<'a>,
    pub rows: Option<&'a [u32]>,
}

impl<'a> NewSets<'a> {
    fn len(&self) -> usize {
        self.rows
            .map_or(self.sets.offsets.len().saturating_sub(1), <[u32]>::len)
    }

    /// The i-th new document's set.
    fn get(&self, i: usize) -> &'a [u32] {
        self.sets.get(self.rows.map_or(i, |r| r[i] as usize))
    }

    /// Checks the rows against the sets: every one of them.
    fn check(&self) -> Result<()> {
        let n = self.sets.offsets.len().saturating_sub(1);
        match self.rows.and_then(|r| r.iter().find(|&&r| r as usize >= n)) {
            Some(r) => Err(Error::invalid(format!(
                "exact set row {r} out of range for {n} sets"
            ))),
            None => Ok(()),
        }
    }
}

impl Rows<'_> {
    fn check(&self, shape: Compact) -> Result<usize> {
        let n = self.fps.len();
        if self.keys.len() != n || self.ids.len() != n {
            return Err(Error::invalid(format!(
                "{n} fingerprints but {} keys and {} ids",
                self.keys.len(),
                self.ids.len()
            )));
        }
        self.sketches.check(n, shape)?;
        if let Some(sets) = &self.sets {
            sets.check()?;
            if sets.len() != n {
                return Err(Error::invalid(format!(
                    "{n} documents but {} exact sets",
                    sets.len()
                )));
            }
        }
        Ok(n)
    }
}

/// The settings of an index, fixed when it is made.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// The shape of the stored sketches.
    pub sketch: Compact,
    /// Words per shingle.
    pub shingle: u32,
    /// The candidate radius.
    pub k: u32,
    /// The least Jaccard of a near-duplicate pair.
    pub threshold: f64,
    /// Whether ids are strings (else integers).
    pub string_ids: bool,
    /// Whether each document's exact set is kept ([`crate::sketch::exact_sets`]), so that
    /// pairs are decided on their exact Jaccards.
    pub exact: bool,
    /// The caller's fingerprint settings, stored as given.
    pub meta: Vec<u8>,
}

impl Settings {
    pub fn check(&self) -> Result<()> {
        if !(1..=64).contains(&self.shingle) {
            return Err(Error::invalid(format!(
                "shingle must be in 1..=64, got {}",
                self.shingle
            )));
        }
        crate::search::plan::check_k(i64::from(self.k))?;
        if !(self.threshold > 0.0 && self.threshold <= 1.0) {
            return Err(Error::invalid(format!(
                "threshold must be in (0, 1], got {}",
                self.threshold
            )));
        }
        Ok(())
    }
}

/// A dedup index, empty or opened from a file (mapped or read into memory).
pub struct DedupIndex {
    settings: Settings,
    fps: Words<u64>,
    keys: Words<u64>,
    lens: Words<u32>,
    words: Words<u32>,
    ids: Ids,
    prefixes: Prefixes,
    /// The exact sets' offsets (`n + 1`, from 0) and values, with [`Settings::exact`].
    set_offsets: Words<u64>,
    set_values: Words<u32>,
    source: Option<Source>,
}

/// The bytes of words, little-endian.
fn word_bytes(words: &[u64], len: usize) -> Vec<u8> {
    let mut out: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    out.truncate(len);
    out
}

/// Writes bytes while summing them as little-endian words.
struct Out<W: Write> {
    out: W,
    sum: Checksum,
    carry: [u8; 8],
    fill: usize,
}

impl<W: Write> Out<W> {
    fn bytes(&mut self, mut b: &[u8]) -> std::io::Result<()> {
        self.out.write_all(b)?;
        while self.fill != 0 && !b.is_empty() {
            self.carry[self.fill] = b[0];
            self.fill = (self.fill + 1) % 8;
            b = &b[1..];
            if self.fill == 0 {
                self.sum.add(u64::from_le_bytes(self.carry));
            }
        }
        let whole = b.len() / 8 * 8;
        for c in b[..whole].chunks_exact(8) {
            self.sum
                .add(u64::from_le_bytes(c.try_into().expect("8 bytes")));
        }
        for &x in &b[whole..] {
            self.carry[self.fill] = x;
            self.fill += 1;
        }
        Ok(())
    }

    /// Values as little-endian bytes, a block at a time.
    fn values<T: Copy>(&mut self, v: &[T], le: impl FnMut(T, &mut Vec<u8>)) -> std::io::Result<()> {
        self.stream(v.iter().copied(), le)
    }

    /// [`Out::values`] of values as they come (say, a merge of two runs).
    fn stream<T>(
        &mut self,
        v: impl Iterator<Item = T>,
        mut le: impl FnMut(T, &mut Vec<u8>),
    ) -> std::io::Result<()> {
        let mut buf = Vec::with_capacity(1 << 16);
        for x in v {
            le(x, &mut buf);
            if buf.len() >= 1 << 16 {
                self.bytes(&buf)?;
                buf.clear();
            }
        }
        self.bytes(&buf)
    }

    fn pad(&mut self) -> std::io::Result<()> {
        while self.fill != 0 {
            self.bytes(&[0])?;
        }
        Ok(())
    }
}

fn u64s(x: u64, b: &mut Vec<u8>) {
    b.extend_from_slice(&x.to_le_bytes());
}
fn u32s(x: u32, b: &mut Vec<u8>) {
    b.extend_from_slice(&x.to_le_bytes());
}

fn words_of(bytes: u64) -> u64 {
    bytes.div_ceil(8)
}

/// Words of the prefix block: the sketch size, a table of `t` hashes and `p` postings (with
/// their places when `placed`, from version 6).
fn prefix_words(present: bool, placed: bool, t: u64, p: u64) -> Option<u64> {
    if !present {
        return Some(0);
    }
    let places = if placed { p.div_ceil(2) } else { 0 };
    1u64.checked_add(t)?
        .checked_add(t.div_ceil(2))?
        .checked_add(p)?
        .checked_add(places)?
        .checked_add(p.div_ceil(2))
}

/// The file's length in bytes for `n` documents (without the prefix block), with `set_values`
/// values of exact sets.
fn file_len(s: &Settings, n: u64, id_bytes: u64, set_values: u64) -> Option<u64> {
    let sketch = n.checked_mul(s.sketch.words() as u64)?;
    let ids = if s.string_ids {
        (n + 1).checked_add(words_of(id_bytes))?
    } else {
        n
    };
    let sets = if s.exact {
        (n + 1).checked_add(set_values.div_ceil(2))?
    } else {
        0
    };
    let words = (HEADER_WORDS as u64)
        .checked_add(n.checked_mul(3)?)?
        .checked_add(n.div_ceil(2))?
        .checked_add(sketch.div_ceil(2))?
        .checked_add(ids)?
        .checked_add(sets)?
        .checked_add(words_of(s.meta.len() as u64))?
        .checked_add(1)?;
    words.checked_mul(8)
}

impl DedupIndex {
    /// An empty index with these settings.
    pub fn new(settings: Settings) -> Result<Self> {
        settings.check()?;
        let ids = if settings.string_ids {
            Ids::Str {
                offsets: Words::Owned(vec![0]),
                bytes: Words::default(),
                len: 0,
            }
        } else {
            Ids::Int(Words::default())
        };
        Ok(DedupIndex {
            fps: Words::default(),
            keys: Words::default(),
            lens: Words::default(),
            words: Words::default(),
            ids,
            prefixes: Prefixes::default(),
            set_offsets: Words::Owned(if settings.exact { vec![0] } else { Vec::new() }),
            set_values: Words::default(),
            settings,
            source: None,
        })
    }

    /// Gives an empty index prefix postings: documents saved into it are listed at `settings`
    /// in the order of the rarity table `(hashes, counts)`, which stays with the index.
    pub fn set_prefixes(
        &mut self,
        settings: PrefixSettings,
        hashes: Vec<u64>,
        counts: Vec<u32>,
    ) -> Result<()> {
        settings.check()?;
        if !self.is_empty() {
            return Err(Error::invalid(
                "prefixes are set on an empty index, before its documents",
            ));
        }
        if hashes.len() != counts.len() {
            return Err(Error::invalid(format!(
                "{} table hashes but {} counts",
                hashes.len(),
                counts.len()
            )));
        }
        // Sorted by hash, one count each, so that the file reads back the same order.
        let mut table: Vec<(u64, u32)> = hashes.into_iter().zip(counts).collect();
        table.sort_unstable();
        table.dedup_by(|a, b| {
            let same = a.0 == b.0;
            if same {
                b.1 = b.1.saturating_add(a.1);
            }
            same
        });
        self.prefixes = Prefixes {
            settings: Some(settings),
            table_hashes: table.iter().map(|t| t.0).collect::<Vec<_>>().into(),
            table_counts: table.iter().map(|t| t.1).collect::<Vec<_>>().into(),
            ..Prefixes::default()
        };
        Ok(())
    }

    /// The prefix postings (none when [`Prefixes::present`] is false).
    pub fn prefixes(&self) -> &Prefixes {
        &self.prefixes
    }

    /// The postings of new documents at this index's cut, their rows numbered from 0 (a
    /// [`PostingRun`] whose base places them after the index's); none when the index has no
    /// prefixes (then `lists` must be None).
    pub fn new_postings(
        &self,
        lists: Option<&Lists<'_>>,
        keys: &[ContentKey],
    ) -> Result<Vec<(u64, u32, u32)>> {
        match (&self.prefixes.settings, lists) {
            (Some(p), Some(lists)) => postings(lists, keys, p.cut(), 0),
            (None, None) => Ok(Vec::new()),
            (Some(_), None) => Err(Error::invalid(
                "this index has prefix postings: new documents need their prefix lists",
            )),
            (None, Some(_)) => Err(Error::invalid(
                "this index has no prefix postings: new documents' lists have nowhere to go",
            )),
        }
    }

    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    pub fn len(&self) -> usize {
        self.fps.len()
    }

    pub fn is_empty(&self) -> bool {
        self.fps.is_empty()
    }

    pub fn fingerprints(&self) -> &[u64] {
        &self.fps
    }

    /// The content keys, as 64-bit words (two a key).
    pub fn key_words(&self) -> &[u64] {
        &self.keys
    }

    /// Document d's content key.
    #[inline]
    pub fn key(&self, d: usize) -> ContentKey {
        [self.keys[2 * d], self.keys[2 * d + 1]]
    }

    /// Document d's stored compact sketch: (its shingles or [`SKETCHED`], its words).
    pub fn sketch(&self, d: usize) -> (u32, &[u32]) {
        let w = self.settings.sketch.words();
        (self.lens[d], &self.words[d * w..(d + 1) * w])
    }

    /// Document d's exact set, with [`Settings::exact`].
    #[inline]
    pub fn exact_set(&self, d: usize) -> Option<&[u32]> {
        self.settings.exact.then(|| {
            let (a, b) = (
                self.set_offsets[d] as usize,
                self.set_offsets[d + 1] as usize,
            );
            &self.set_values[a..b]
        })
    }

    /// Document d as [`near`] compares it.
    #[inline]
    fn doc(&self, d: usize) -> Doc<'_> {
        (self.fps[d], self.key(d), self.sketch(d), self.exact_set(d))
    }

    /// Document d's integer id, or None with string ids.
    pub fn int_id(&self, d: usize) -> Option<i64> {
        match &self.ids {
            Ids::Int(v) => Some(v[d]),
            Ids::Str { .. } => None,
        }
    }

    /// Document d's string id, or None with integer ids.
    pub fn str_id(&self, d: usize) -> Option<&[u8]> {
        match &self.ids {
            Ids::Int(_) => None,
            Ids::Str {
                offsets,
                bytes,
                len,
            } => {
                // The u64 words viewed as their bytes; `len` is within them (checked on load).
                let all = &bytemuck::cast_slice::<u64, u8>(bytes)[..*len];
                let (a, b) = (offsets[d] as usize, offsets[d + 1] as usize);
                Some(&all[a.min(b).min(*len)..b.min(*len)])
            }
        }
    }

    /// Whether any array views a mapped file.
    pub fn is_mapped(&self) -> bool {
        self.source.is_some()
    }

    /// [`Error::Changed`] if the mapped file was changed in place since it was opened.
    pub fn check_file(&self) -> Result<()> {
        self.source.as_ref().map_or(Ok(()), Source::check)
    }

    /// Writes the index, followed by `extra` documents, to `path` atomically: a temporary file
    /// in the same folder, synced, then renamed over `path`. Until the rename, `path` is untouched.
    pub fn save(
        &self,
        path: &Path,
        extra: Option<&Rows<'_>>,
        lists: Option<&Lists<'_>>,
    ) -> Result<()> {
        let Some(rows) = extra else {
            return self.save_streamed(path, 0, 0, 0, &[], |_, _| Ok(()));
        };
        rows.check(self.settings.sketch)?;
        if self.settings.exact != rows.sets.is_some() {
            return Err(Error::invalid(if self.settings.exact {
                "this index keeps exact sets: new documents need theirs"
            } else {
                "this index keeps no exact sets: new sets have nowhere to go"
            }));
        }
        if let Some(l) = lists {
            if l.len() != rows.fps.len() {
                return Err(Error::invalid(format!(
                    "{} documents but {} prefix lists",
                    rows.fps.len(),
                    l.len()
                )));
            }
        }
        let made = self.new_postings(lists, rows.keys)?;
        let hashes: Vec<u64> = made.iter().map(|p| p.0).collect();
        let places: Vec<u32> = made.iter().map(|p| p.1).collect();
        let new_rows: Vec<u32> = made.iter().map(|p| p.2).collect();
        drop(made);
        let runs = [PostingRun {
            hashes: &hashes,
            places: &places,
            rows: &new_rows,
            base: self.len() as u64,
        }];
        let new_postings: &[PostingRun<'_>] = if lists.is_some() { &runs } else { &[] };
        let lengths: Vec<u64> = match rows.ids {
            NewIds::Str(v) => v.iter().map(|b| b.len() as u64).collect(),
            NewIds::Int(_) => Vec::new(),
        };
        let id_bytes = lengths.iter().sum();
        let set_lens: Vec<u32> = match &rows.sets {
            Some(sets) => (0..sets.len())
                .map(|i| {
                    u32::try_from(sets.get(i).len())
                        .map_err(|_| Error::invalid("an exact set over 2^32 values"))
                })
                .collect::<Result<_>>()?,
            None => Vec::new(),
        };
        let set_values: u64 = set_lens.iter().map(|&l| u64::from(l)).sum();
        self.save_streamed(
            path,
            rows.fps.len(),
            id_bytes,
            set_values,
            new_postings,
            |section, sink| match section {
                Section::Fps => sink(Chunk::U64(rows.fps)),
                Section::Keys => sink(Chunk::U64(rows.keys.as_flattened())),
                Section::Lens => sink(Chunk::U32(rows.sketches.lens)),
                Section::Words => sink(Chunk::U32(rows.sketches.words)),
                Section::Ids => match rows.ids {
                    NewIds::Int(v) => sink(Chunk::I64(v)),
                    NewIds::Str(_) => sink(Chunk::U64(&lengths)),
                },
                Section::IdBytes => match rows.ids {
                    NewIds::Str(v) => v.iter().try_for_each(|b| sink(Chunk::Bytes(b))),
                    NewIds::Int(_) => Ok(()),
                },
                Section::SetLens if rows.sets.is_some() => sink(Chunk::U32(&set_lens)),
                Section::SetLens => Ok(()),
                Section::SetValues => match &rows.sets {
                    Some(NewSets {
                        sets: whole,
                        rows: None,
                    }) => sink(Chunk::U32(whole.values)),
                    Some(sets) => {
                        // The picked rows' sets, a block of values at a time.
                        let mut block: Vec<u32> = Vec::with_capacity(1 << 16);
                        for i in 0..sets.len() {
                            block.extend_from_slice(sets.get(i));
                            if block.len() >= 1 << 16 {
                                sink(Chunk::U32(&block))?;
                                block.clear();
                            }
                        }
                        sink(Chunk::U32(&block))
                    }
                    None => Ok(()),
                },
            },
        )
    }

    /// Writes the index, followed by `n_new` documents handed section by section, to `path`
    /// atomically (as [`DedupIndex::save`]), holding one chunk of them at a time: for each
    /// [`Section`] in file order, `fill(section, sink)` passes the new documents' values to
    /// `sink` in chunks, in document order (with string ids, [`Section::Ids`] takes each id's
    /// length in bytes and [`Section::IdBytes`] their `new_id_bytes` bytes). A section given
    /// more or fewer values than `n_new` documents have, or chunks of the wrong kind, is an
    /// error and leaves `path` untouched. `new_postings` are the new documents' prefix postings
    /// (see [`DedupIndex::new_postings`]) in sorted runs, each run's rows counted on from its
    /// `base`, merged in `(hash, place, row)` order as they are written; an index with prefixes needs at least one a new
    /// document. An index with exact sets takes each new document's set's length
    /// ([`Section::SetLens`]) and their `new_set_values` values ([`Section::SetValues`]).
    #[allow(clippy::too_many_arguments)]
    pub fn save_streamed<F>(
        &self,
        path: &Path,
        n_new: usize,
        new_id_bytes: u64,
        new_set_values: u64,
        new_postings: &[PostingRun<'_>],
        fill: F,
    ) -> Result<()>
    where
        F: FnMut(Section, &mut Sink<'_>) -> Result<()>,
    {
        self.check_file()?;
        let dir = path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let name = path.file_name().ok_or_else(|| {
            Error::invalid(format!("path must name a file, got {}", path.display()))
        })?;
        static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let unique = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut tmp_name = name.to_os_string();
        tmp_name.push(format!(".tmp-{}-{unique}", std::process::id()));
        let tmp: PathBuf = dir.join(tmp_name);
        // The old documents are read from the map while they are copied: a file changed under
        // them (zeros read) leaves `path` untouched.
        let result = self
            .guarded(|ix| {
                ix.write(
                    &tmp,
                    n_new,
                    new_id_bytes,
                    new_set_values,
                    new_postings,
                    fill,
                )
            })
            .and_then(|r| r)
            .and_then(|()| std::fs::rename(&tmp, path).map_err(Error::from));
        if result.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        result?;
        // The rename is durable once the folder is synced.
        if let Ok(d) = File::open(dir) {
            let _ = d.sync_all();
        }
        Ok(())
    }

    fn write<F>(
        &self,
        tmp: &Path,
        n_new: usize,
        new_id_bytes: u64,
        new_set_values: u64,
        new_postings: &[PostingRun<'_>],
        mut fill: F,
    ) -> Result<()>
    where
        F: FnMut(Section, &mut Sink<'_>) -> Result<()>,
    {
        let s = &self.settings;
        let p = &self.prefixes;
        let (old_len, n_all) = (self.len(), self.len() + n_new);
        if p.present() {
            // Every new document is listed (a document without shingles by its key), rows in
            // range, postings sorted.
            let mut listed = vec![false; n_new];
            for run in new_postings {
                if run.hashes.len() != run.rows.len() || run.places.len() != run.rows.len() {
                    return Err(Error::invalid(format!(
                        "{} posting hashes, {} places and {} rows",
                        run.hashes.len(),
                        run.places.len(),
                        run.rows.len()
                    )));
                }
                for &r in run.rows {
                    let r = r as u64 + run.base;
                    if r < old_len as u64 || r >= n_all as u64 {
                        return Err(Error::invalid(format!(
                            "a posting of row {r}, not one of the new documents"
                        )));
                    }
                    listed[r as usize - old_len] = true;
                }
                if !sorted_postings(run.hashes, run.places, run.rows) {
                    return Err(Error::invalid("new postings must be sorted and distinct"));
                }
            }
            if let Some(d) = listed.iter().position(|&l| !l) {
                return Err(Error::invalid(format!(
                    "new document {d} has no prefix posting"
                )));
            }
        } else if new_postings.iter().any(|r| !r.hashes.is_empty()) {
            return Err(Error::invalid(
                "this index has no prefix postings: new postings have nowhere to go",
            ));
        }
        let n_postings =
            (p.hashes.len() + new_postings.iter().map(|r| r.hashes.len()).sum::<usize>()) as u64;
        let n_table = p.table_hashes.len() as u64;
        let n = (self.len() + n_new) as u64;
        let old_id_bytes = match &self.ids {
            Ids::Str { len, .. } => *len as u64,
            Ids::Int(_) => 0,
        };
        if !s.string_ids && new_id_bytes != 0 {
            return Err(Error::invalid(
                "this index holds integer ids: new ids must be integers",
            ));
        }
        let id_bytes = old_id_bytes + new_id_bytes;
        if !s.exact && new_set_values != 0 {
            return Err(Error::invalid(
                "this index keeps no exact sets: new sets have nowhere to go",
            ));
        }
        let old_set_values = self.set_values.len() as u64;
        let set_values = old_set_values + new_set_values;
        let len = file_len(s, n, id_bytes, set_values)
            .and_then(|l| l.checked_add(prefix_words(p.present(), true, n_table, n_postings)? * 8))
            .ok_or_else(|| Error::invalid("index too large to save"))?;
        let file = File::create(tmp)?;
        let mut w = Out {
            out: BufWriter::with_capacity(1 << 20, file),
            sum: Checksum::default(),
            carry: [0; 8],
            fill: 0,
        };
        let mut header = [0u64; HEADER_WORDS];
        header[0] = u64::from_le_bytes(MAGIC);
        header[1] = if p.present() {
            VERSION
        } else if s.exact {
            VERSION_WITHOUT_PLACES
        } else {
            VERSION_WITHOUT_SETS
        };
        header[2] = len;
        header[3] = n;
        header[4] = s.sketch.words() as u64;
        header[5] = u64::from(s.shingle);
        header[6] = u64::from(s.k);
        header[7] = s.threshold.to_bits();
        header[8] = u64::from(s.string_ids) | u64::from(s.exact) << 1;
        header[9] = id_bytes;
        header[10] = s.meta.len() as u64;
        header[11] = u64::from(s.sketch.bits());
        if let Some(ps) = &p.settings {
            header[12] = n_table;
            header[13] = n_postings;
            header[14] = ps.threshold.to_bits();
            header[15] = ps.band.to_bits();
        }
        w.values(&header, u64s)?;
        let words = s.sketch.words();
        // The ends of the string ids, and of the exact sets, counted on from the old ones'.
        let mut at = old_id_bytes;
        let mut set_at = old_set_values;
        for section in Section::ALL {
            let want = match section {
                Section::Fps | Section::Lens | Section::Ids => n_new as u64,
                Section::Keys => 2 * n_new as u64,
                Section::Words => (n_new * words) as u64,
                Section::IdBytes => new_id_bytes,
                Section::SetLens if s.exact => n_new as u64,
                Section::SetValues => new_set_values,
                Section::SetLens => 0,
            };
            match (section, &self.ids) {
                (Section::Fps, _) => w.values(&self.fps, u64s)?,
                (Section::Keys, _) => w.values(&self.keys, u64s)?,
                (Section::Lens, _) => w.values(&self.lens, u32s)?,
                (Section::Words, _) => w.values(&self.words, u32s)?,
                (Section::Ids, Ids::Int(v)) => w.values(v, |x, b| u64s(x as u64, b))?,
                (Section::Ids, Ids::Str { offsets, .. }) => w.values(offsets, u64s)?,
                (Section::IdBytes, Ids::Str { bytes, len, .. }) => {
                    w.bytes(&word_bytes(bytes, *len))?
                }
                (Section::IdBytes, Ids::Int(_)) => {}
                (Section::SetLens, _) => w.values(&self.set_offsets, u64s)?,
                (Section::SetValues, _) => w.values(&self.set_values, u32s)?,
            }
            let mut given = 0u64;
            let mut sink = |chunk: Chunk<'_>| -> Result<()> {
                let wrong = || {
                    Error::invalid(format!(
                        "the new documents' {section:?} got values of another kind"
                    ))
                };
                let written = match (section, chunk, s.string_ids) {
                    (Section::Fps | Section::Keys, Chunk::U64(v), _) => {
                        w.values(v, u64s).map(|()| v.len())
                    }
                    (Section::Lens, Chunk::U32(v), _) => {
                        let most = s.sketch.max_kept();
                        if let Some(&bad) = v.iter().find(|&&l| l != SKETCHED && l as usize > most)
                        {
                            return Err(Error::invalid(format!(
                                "sketch length {bad} over the {most} shingles {words} words keep"
                            )));
                        }
                        w.values(v, u32s).map(|()| v.len())
                    }
                    (Section::Words, Chunk::U32(v), _) => w.values(v, u32s).map(|()| v.len()),
                    (Section::Ids, Chunk::I64(v), false) => {
                        w.values(v, |x, b| u64s(x as u64, b)).map(|()| v.len())
                    }
                    (Section::Ids, Chunk::U64(v), true) => w
                        .values(v, |x, b| {
                            at += x;
                            u64s(at, b)
                        })
                        .map(|()| v.len()),
                    (Section::IdBytes, Chunk::Bytes(v), true) => w.bytes(v).map(|()| v.len()),
                    (Section::SetLens, Chunk::U32(v), _) if s.exact => w
                        .values(v, |x, b| {
                            set_at += u64::from(x);
                            u64s(set_at, b)
                        })
                        .map(|()| v.len()),
                    (Section::SetValues, Chunk::U32(v), _) if s.exact => {
                        w.values(v, u32s).map(|()| v.len())
                    }
                    (Section::SetLens | Section::SetValues, _, _) if !s.exact => {
                        return Err(Error::invalid(
                            "this index keeps no exact sets: new sets have nowhere to go",
                        ))
                    }
                    (Section::Ids, _, false) => {
                        return Err(Error::invalid(
                            "this index holds integer ids: new ids must be integers",
                        ))
                    }
                    (Section::Ids, _, true) => {
                        return Err(Error::invalid(
                            "this index holds string ids: new ids must be strings",
                        ))
                    }
                    _ => return Err(wrong()),
                };
                given += written? as u64;
                Ok(())
            };
            fill(section, &mut sink)?;
            if given != want {
                return Err(Error::invalid(format!(
                    "the new documents' {section:?} has {given} values, not {want}"
                )));
            }
            if matches!(
                section,
                Section::Lens | Section::Words | Section::IdBytes | Section::SetValues
            ) {
                w.pad()?;
            }
        }
        if set_at != set_values {
            return Err(Error::invalid(format!(
                "the new exact sets' lengths add up to {} values, not {new_set_values}",
                set_at - old_set_values
            )));
        }
        if s.string_ids && at != id_bytes {
            return Err(Error::invalid(format!(
                "the new ids' lengths add up to {} bytes, not {new_id_bytes}",
                at - old_id_bytes
            )));
        }
        w.bytes(&s.meta)?;
        w.pad()?;
        if let Some(ps) = &p.settings {
            w.values(&[u64::from(ps.size)], u64s)?;
            w.values(&p.table_hashes, u64s)?;
            w.values(&p.table_counts, u32s)?;
            w.pad()?;
            // The old postings and the new, merged by (hash, place, row): hashes, then places,
            // then rows.
            let old = PostingRun {
                hashes: &p.hashes,
                places: &p.places,
                rows: &p.rows,
                base: 0,
            };
            let merged = || MergedPostings::new(old, new_postings);
            w.stream(merged().map(|(h, _, _)| h), u64s)?;
            w.stream(merged().map(|(_, at, _)| at), u32s)?;
            w.pad()?;
            w.stream(merged().map(|(_, _, r)| r), u32s)?;
            w.pad()?;
        }
        let sum = w.sum.value();
        w.out.write_all(&sum.to_le_bytes())?;
        let file = w.out.into_inner().map_err(|e| Error::Io(e.into_error()))?;
        file.sync_all()?;
        Ok(())
    }

    /// Opens an index file, mapped (`mmap`) or read into memory, and checks it whole: magic,
    /// version, length, checksum, and every offset and length inside its bounds.
    pub fn load(path: &Path, mmap: bool) -> Result<Self> {
        let (backing, source, _) = open_checked(path, mmap, &MAGIC, "dedup index")?;
        // A file truncated while it is checked reads zeros: refused as changed, whatever the
        // check made of them.
        let parsed =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| parse(Arc::new(backing))));
        if let Some(source) = &source {
            source.check()?;
        }
        let mut index = parsed.unwrap_or_else(|p| std::panic::resume_unwind(p))?;
        index.source = source;
        Ok(index)
    }

    /// Runs `f` with the mapped file checked before and after: a file changed in place while
    /// `f` read it is [`Error::Changed`], whatever `f` made of what it read (a truncated map
    /// reads zeros, [`crate::runtime::map_guard`], which may even make it panic).
    pub fn guarded<R>(&self, f: impl FnOnce(&DedupIndex) -> R) -> Result<R> {
        self.check_file()?;
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(self)));
        self.check_file()?;
        Ok(r.unwrap_or_else(|p| std::panic::resume_unwind(p)))
    }
}

/// A sorted run of prefix postings of new documents: `(hashes[i], places[i], base + rows[i])`.
#[derive(Clone, Copy)]
pub struct PostingRun<'a> {
    pub hashes: &'a [u64],
    pub places: &'a [u32],
    pub rows: &'a [u32],
    pub base: u64,
}

/// Whether postings are sorted by `(hash, place, row)` and distinct.
fn sorted_postings(hashes: &[u64], places: &[u32], rows: &[u32]) -> bool {
    (1..hashes.len())
        .all(|i| (hashes[i - 1], places[i - 1], rows[i - 1]) < (hashes[i], places[i], rows[i]))
}

/// The postings of an index and sorted runs of new ones, merged in `(hash, place, row)` order
/// (a heap of the runs' next postings: memory for the runs' count, whatever their lengths).
struct MergedPostings<'a> {
    runs: Vec<PostingRun<'a>>,
    at: Vec<usize>,
    heap: std::collections::BinaryHeap<std::cmp::Reverse<(u64, u32, u64, usize)>>,
}

impl<'a> MergedPostings<'a> {
    fn new(old: PostingRun<'a>, new: &[PostingRun<'a>]) -> Self {
        let runs: Vec<PostingRun<'a>> = std::iter::once(old).chain(new.iter().copied()).collect();
        let mut merged = MergedPostings {
            at: vec![0; runs.len()],
            heap: std::collections::BinaryHeap::with_capacity(runs.len()),
            runs,
        };
        for r in 0..merged.runs.len() {
            merged.push(r);
        }
        merged
    }

    fn push(&mut self, r: usize) {
        let (run, i) = (&self.runs[r], self.at[r]);
        if i < run.hashes.len() {
            let row = run.base + u64::from(run.rows[i]);
            self.heap
                .push(std::cmp::Reverse((run.hashes[i], run.places[i], row, r)));
        }
    }
}

impl Iterator for MergedPostings<'_> {
    type Item = (u64, u32, u32);

    fn next(&mut self) -> Option<(u64, u32, u32)> {
        let std::cmp::Reverse((h, at, row, r)) = self.heap.pop()?;
        self.at[r] += 1;
        self.push(r);
        Some((h, at, row as u32))
    }
}

fn parse(backing: Arc<Backing>) -> Result<DedupIndex> {
    let bytes = backing.bytes();
    let size = bytes.len() as u64;
    if bytes.len() < (HEADER_WORDS + 1) * 8 {
        return Err(format_error(
            size,
            format!("truncated dedup index file: {size} bytes is shorter than the header"),
        ));
    }
    if !size.is_multiple_of(8) {
        return Err(format_error(
            size,
            "truncated or foreign file: not a whole number of 8-byte words",
        ));
    }
    let word = |i: usize| <u64 as Plain>::from_le(&bytes[i * 8..i * 8 + 8]);
    if bytes[..8] != MAGIC {
        return Err(format_error(
            0,
            "not a neardup dedup index file (wrong magic bytes)",
        ));
    }
    let version = word(1);
    if version == 1 || version == 2 {
        let what = if version == 1 {
            "bottom-k sketches"
        } else {
            "32-bit shingle hashes"
        };
        return Err(format_error(8, format!("dedup index format version {version} ({what}) is no longer read: build the index again with this neardup (neardup index build CORPUS -o FILE)")));
    }
    if version > VERSION {
        return Err(format_error(8, format!("dedup index format version {version} is newer than this neardup reads (version {VERSION}); upgrade neardup")));
    }
    if version == 0 {
        return Err(format_error(8, "invalid dedup index format version 0"));
    }
    if word(2) != size {
        return Err(format_error(
            16,
            format!(
                "dedup index file has {size} bytes but the header says {}",
                word(2)
            ),
        ));
    }
    let words = bytes.len() / 8;
    let mut sum = Checksum::default();
    for i in 0..words - 1 {
        sum.add(word(i));
    }
    if sum.value() != word(words - 1) {
        return Err(format_error(
            size - 8,
            "checksum mismatch: the dedup index file is corrupted",
        ));
    }
    let n = word(3);
    let sketch = Compact::new(
        i64::try_from(word(4)).unwrap_or(-1),
        i64::try_from(word(11)).unwrap_or(-1),
    )
    .map_err(|e| format_error(32, format!("bad sketch shape in the header: {e}")))?;
    let settings = Settings {
        sketch,
        shingle: u32::try_from(word(5)).unwrap_or(0),
        k: u32::try_from(word(6)).unwrap_or(u32::MAX),
        threshold: f64::from_bits(word(7)),
        string_ids: match word(8) {
            0 | 2 => false,
            1 | 3 => true,
            other => return Err(format_error(64, format!("unknown id kind {other}"))),
        },
        exact: word(8) & 2 != 0,
        meta: Vec::new(),
    };
    settings
        .check()
        .map_err(|e| format_error(32, format!("bad settings in the header: {e}")))?;
    if settings.exact && version < 5 {
        return Err(format_error(
            64,
            format!("exact sets in a version {version} dedup index"),
        ));
    }
    let (id_bytes, meta_bytes) = (word(9), word(10));
    // The prefix block (version 4): the table's and the postings' lengths, threshold and band.
    let (n_table, n_postings) = (word(12), word(13));
    let prefix_settings = (version >= 4 && word(14) != 0).then(|| PrefixSettings {
        threshold: f64::from_bits(word(14)),
        band: f64::from_bits(word(15)),
        size: 1,
    });
    if prefix_settings.is_none() && (n_table | n_postings | word(14) | word(15)) != 0 {
        return Err(format_error(
            96,
            "prefix sizes in the header of an index without prefixes",
        ));
    }
    if let Some(ps) = &prefix_settings {
        ps.check()
            .map_err(|e| format_error(112, format!("bad prefix settings in the header: {e}")))?;
    }
    // The exact sets' values: the last of their offsets, the word before the values (the
    // file is long enough to hold it when the sizes before it agree with the file's length).
    let set_values = if settings.exact {
        let at = file_len(
            &Settings {
                meta: vec![0; 0],
                exact: false,
                ..settings.clone()
            },
            n,
            id_bytes,
            0,
        )
        .and_then(|l| l.checked_add(n.checked_mul(8)?)?.checked_sub(8))
        .filter(|&at| at.checked_add(8).is_some_and(|end| end <= size - 8))
        .ok_or_else(|| format_error(24, "the header's sizes pass the file's end"))?;
        word(at as usize / 8)
    } else {
        0
    };
    let expected = file_len(
        &Settings {
            meta: vec![0; 0],
            ..settings.clone()
        },
        n,
        id_bytes,
        set_values,
    )
    .and_then(|l| l.checked_add(words_of(meta_bytes).checked_mul(8)?))
    .and_then(|l| {
        let words = prefix_words(prefix_settings.is_some(), version >= 6, n_table, n_postings)?;
        l.checked_add(words.checked_mul(8)?)
    })
    .ok_or_else(|| format_error(24, "sizes in the header overflow"))?;
    if expected != size {
        return Err(format_error(
            24,
            format!("the header's sizes make {expected} bytes, the file has {size}"),
        ));
    }
    let n = n as usize;
    let s = settings.sketch.words();
    let mut at = HEADER_WORDS * 8;
    let fps: Words<u64> = view(&backing, at, n)?;
    at += n * 8;
    let keys: Words<u64> = view(&backing, at, 2 * n)?;
    at += n * 16;
    let lens: Words<u32> = view(&backing, at, n)?;
    at += n.div_ceil(2) * 8;
    let words: Words<u32> = view(&backing, at, n * s)?;
    at += (n * s).div_ceil(2) * 8;
    let most = settings.sketch.max_kept();
    if let Some(d) = lens
        .iter()
        .position(|&l| l != SKETCHED && l as usize > most)
    {
        return Err(format_error(
            (HEADER_WORDS * 8 + 16 * n + 4 * d) as u64,
            format!(
                "sketch length {} over the {most} shingles a sketch keeps",
                lens[d]
            ),
        ));
    }
    let shape = settings.sketch;
    if let Some(d) = (0..n)
        .into_par_iter()
        .with_min_len(4096)
        .find_first(|&d| !shape.kept_in_order((lens[d], &words[d * s..(d + 1) * s])))
    {
        return Err(format_error(
            (HEADER_WORDS * 8 + 16 * n + 4 * d) as u64,
            format!("the compact sketch of document {d} keeps hashes out of order"),
        ));
    }
    let ids = if settings.string_ids {
        let offsets: Words<u64> = view(&backing, at, n + 1)?;
        at += (n + 1) * 8;
        if offsets[0] != 0 || offsets[n] != id_bytes || offsets.windows(2).any(|w| w[0] > w[1]) {
            return Err(format_error(
                at as u64,
                "string id offsets out of order or out of range",
            ));
        }
        let packed: Words<u64> = view(&backing, at, words_of(id_bytes) as usize)?;
        let all = &bytemuck::cast_slice::<u64, u8>(&packed)[..id_bytes as usize];
        if let Some(d) = (0..n).find(|&d| {
            let (a, b) = (offsets[d] as usize, offsets[d + 1] as usize);
            !python_utf8(&all[a..b])
        }) {
            return Err(format_error(
                at as u64,
                format!("the id of document {d} is not UTF-8"),
            ));
        }
        at += packed.len() * 8;
        Ids::Str {
            offsets,
            bytes: packed,
            len: id_bytes as usize,
        }
    } else {
        let v: Words<i64> = view(&backing, at, n)?;
        at += n * 8;
        Ids::Int(v)
    };
    let (set_offsets, set_values) = if settings.exact {
        let offsets: Words<u64> = view(&backing, at, n + 1)?;
        at += (n + 1) * 8;
        let values: Words<u32> = view(&backing, at, set_values as usize)?;
        at += (set_values as usize).div_ceil(2) * 8;
        if let Err(e) = ExactSets::new(n, &offsets, &values) {
            return Err(format_error(at as u64, format!("bad exact sets: {e}")));
        }
        (offsets, values)
    } else {
        (Words::default(), Words::default())
    };
    let meta_words: Words<u64> = view(&backing, at, words_of(meta_bytes) as usize)?;
    let meta = word_bytes(&meta_words, meta_bytes as usize);
    at += meta_words.len() * 8;
    let prefixes = if prefix_settings.is_some() {
        let block: Words<u64> = view(&backing, at, 1)?;
        at += 8;
        let ps = PrefixSettings {
            size: u32::try_from(block[0]).unwrap_or(0),
            ..prefix_settings.clone().expect("present")
        };
        ps.check()
            .map_err(|e| format_error(at as u64 - 8, format!("bad prefix settings: {e}")))?;
        let (t, p) = (n_table as usize, n_postings as usize);
        let table_hashes: Words<u64> = view(&backing, at, t)?;
        at += t * 8;
        let table_counts: Words<u32> = view(&backing, at, t)?;
        at += t.div_ceil(2) * 8;
        let hashes: Words<u64> = view(&backing, at, p)?;
        at += p * 8;
        // Before version 6 no place was kept: every posting passes the filters.
        let places: Words<u32> = if version >= 6 {
            let places = view(&backing, at, p)?;
            at += p.div_ceil(2) * 8;
            places
        } else {
            let mut places = try_with_capacity(p, "prefix places")?;
            places.resize(p, UNPLACED);
            Words::Owned(places)
        };
        let rows: Words<u32> = view(&backing, at, p)?;
        if table_hashes.windows(2).any(|w| w[0] >= w[1]) {
            return Err(format_error(at as u64, "the rarity table is out of order"));
        }
        if !sorted_postings(&hashes, &places, &rows) {
            return Err(format_error(
                at as u64,
                "the prefix postings are out of order",
            ));
        }
        if let Some(&r) = rows.iter().find(|&&r| r as usize >= n) {
            return Err(format_error(
                at as u64,
                format!("a prefix posting of row {r}, past the {n} documents"),
            ));
        }
        Prefixes {
            settings: Some(ps),
            table_hashes,
            table_counts,
            hashes,
            places,
            rows,
        }
    } else {
        Prefixes::default()
    };
    Ok(DedupIndex {
        settings: Settings { meta, ..settings },
        fps,
        keys,
        lens,
        words,
        ids,
        prefixes,
        set_offsets,
        set_values,
        source: None,
    })
}

/// Whether bytes are UTF-8 as Python writes a string with "surrogatepass" (an id of the index):
/// UTF-8, where the three-byte forms of lone surrogates are allowed too.
fn python_utf8(mut bytes: &[u8]) -> bool {
    loop {
        match std::str::from_utf8(bytes) {
            Ok(_) => return true,
            Err(e) => {
                let rest = &bytes[e.valid_up_to()..];
                let surrogate = rest.len() >= 3
                    && rest[0] == 0xED
                    && (0xA0..=0xBF).contains(&rest[1])
                    && (0x80..=0xBF).contains(&rest[2]);
                if !surrogate {
                    return false;
                }
                bytes = &rest[3..];
            }
        }
    }
}

/// New documents to deduplicate: fingerprints, content keys, and compact sketches of the
/// index's shape (only the first row of each text's is read).
#[derive(Clone, Copy)]
pub struct Batch<'a> {
    pub fps: &'a [u64],
    pub keys: &'a [ContentKey],
    pub sketches: Sketches<'a>,
    /// Their exact sets, when the index keeps them.
    pub sets: Option<ExactSets<'a>>,
}

/// What [`dedup_against`] found, per new row.
#[derive(Debug, Clone, PartialEq)]
pub struct Against {
    /// The new row kept in this row's place (itself when kept), or -1 when removed for a
    /// document of the index.
    pub kept: Vec<i64>,
    /// The document of the index this row duplicates, or -1.
    pub index_row: Vec<i64>,
    /// Their Jaccard (1 for a kept row and for copies).
    pub jaccard: Vec<f32>,
    /// Candidate pairs among the batch's texts that were not compared: a prefix hash shared by
    /// more than `RUN_CAP` texts that could not be split further (see
    /// [`crate::candidates::short_texts`]).
    pub skipped_pairs: u64,
}

#[derive(Clone, Copy, PartialEq)]
enum Fate {
    Free,
    Kept,
    Index(u32, f32),
    New(u32, f32),
}

/// A document as [`near`] compares it: fingerprint, content key, compact sketch, and its exact
/// set when the index keeps them.
type Doc<'a> = (u64, ContentKey, (u32, &'a [u32]), Option<&'a [u32]>);

/// A short document's shingle hashes (see [`crate::candidates::short_texts`]), cut to 32 bits:
/// those of a document with features of at most `SHORT` shingles whose compact sketch keeps them at
/// 32 bits or more, written to `out`; whether it is one.
fn short_set(shape: Compact, d: Doc<'_>, out: &mut Vec<u64>) -> bool {
    out.clear();
    let short = d.0 != 0 && shape.short_shingles(d.2, SHORT, out);
    // Two shingle hashes may agree on their top 32 bits (about 3e-8 of the texts of 16
    // shingles: some thirty at 10^9 texts): one value for both, as the set of cut hashes.
    out.dedup();
    short
}

/// The short texts of compact sketches as [`dedup_against`] takes a batch's: per document, its
/// shingle hashes cut to 32 bits when its fingerprint is not 0 and it keeps 1 to [`SHORT`]
/// shingles at 32 bits or more, else none. Returns (lengths, the sets one after the other).
pub fn short_sets(
    shape: Compact,
    fps: &[u64],
    sketches: &Sketches<'_>,
) -> Result<(Vec<u32>, Vec<u64>)> {
    sketches.check(fps.len(), shape)?;
    let w = shape.words();
    let (mut lens, mut values, mut buf) = (Vec::with_capacity(fps.len()), Vec::new(), Vec::new());
    for (d, &fp) in fps.iter().enumerate() {
        let short = short_set(shape, (fp, [0, 0], sketches.get(d, w), None), &mut buf);
        lens.push(if short { buf.len() as u32 } else { 0 });
        if short {
            values.extend_from_slice(&buf);
        }
    }
    Ok((lens, values))
}

/// For each new text, the index documents that are short and share a prefix hash with it
/// (`texts` of them; `set(t)` its short set), as `(text, index row)` sorted. The new texts and
/// the index documents that share a first prefix hash with one are taken as one set of short
/// texts ([`ShortTexts`]), so that a prefix shared by more than `RUN_CAP` of them is split
/// further, as in memory.
fn short_index_candidates<'a>(
    index: &DedupIndex,
    texts: usize,
    set: impl Fn(usize) -> Option<&'a [u64]>,
    threshold: f64,
) -> Result<Vec<(u32, u32)>> {
    let shape = index.settings.sketch;
    let mut prefixes: Vec<u64> = Vec::new();
    for t in 0..texts {
        if let Some(s) = set(t) {
            prefixes.extend_from_slice(&s[..prefix_len(s.len(), threshold)]);
        }
    }
    if prefixes.is_empty() {
        return Ok(Vec::new());
    }
    prefixes.sort_unstable();
    prefixes.dedup();
    // The index's short documents with a prefix hash of a new text, and their sets.
    let olds: Vec<u32> = (0..index.len())
        .into_par_iter()
        .with_min_len(4096)
        .map_init(Vec::new, |buf: &mut Vec<u64>, c| {
            let shares = short_set(shape, index.doc(c), buf)
                && buf[..prefix_len(buf.len(), threshold)]
                    .iter()
                    .any(|h| prefixes.binary_search(h).is_ok());
            shares.then_some(c as u32)
        })
        .flatten()
        .collect();
    if olds.is_empty() {
        return Ok(Vec::new());
    }
    let (mut values, mut bounds, mut buf) = (Vec::new(), vec![0usize], Vec::new());
    for &c in &olds {
        let c = c as usize;
        short_set(shape, index.doc(c), &mut buf);
        values.extend_from_slice(&buf);
        bounds.push(values.len());
    }
    let all = ShortTexts::new(
        texts + olds.len(),
        (0..texts)
            .filter_map(|t| set(t).map(|s| (t as u32, s)))
            .chain(
                (0..olds.len()).map(|i| ((texts + i) as u32, &values[bounds[i]..bounds[i + 1]])),
            ),
        threshold,
    )?;
    let mut out: Vec<(u32, u32)> = Vec::new();
    for r in 0..all.run_count() {
        let (a, b) = all.run_bounds(r);
        let run = &all.members()[a..b];
        for &t in run.iter().filter(|&&t| (t as usize) < texts) {
            out.extend(
                run.iter()
                    .filter(|&&c| c as usize >= texts)
                    .map(|&c| (t, olds[c as usize - texts])),
            );
        }
    }
    out.par_sort_unstable();
    out.dedup();
    Ok(out)
}

/// Whether two documents are near-duplicates, and their Jaccard: copies (equal content key and
/// fingerprint) always; otherwise two documents with features whose Jaccard is >= `threshold`,
/// as [`exact_sets::near`] decides it (their exact sets in an exact index, else their compact
/// sketches).
#[inline]
fn near(a: Doc<'_>, b: Doc<'_>, shape: Compact, threshold: f64) -> Option<f32> {
    if a.0 == b.0 && a.1 == b.1 {
        return Some(1.0);
    }
    if a.0 == 0 || b.0 == 0 {
        return None;
    }
    exact_sets::near(shape, (a.2, a.3), (b.2, b.3), threshold).map(|j| j as f32)
}

/// The runs of texts sharing a prefix hash as a star sweep walks them: each run's texts still
/// free, at its front.
struct RunSweep<'a> {
    runs: &'a ShortTexts,
    members: Vec<u32>,
    alive: Vec<usize>,
}

impl<'a> RunSweep<'a> {
    fn new(runs: &'a ShortTexts) -> Self {
        RunSweep {
            runs,
            members: runs.members().to_vec(),
            alive: (0..runs.run_count())
                .map(|r| {
                    let (a, b) = runs.run_bounds(r);
                    b - a
                })
                .collect(),
        }
    }

    /// Sweeps text t's runs with `settle`; the texts looked at.
    fn sweep(&mut self, t: usize, settle: &mut impl FnMut(usize) -> bool) -> usize {
        let mut swept = 0;
        for &r in self.runs.runs_of(t) {
            let r = r as usize;
            let (start, _) = self.runs.run_bounds(r);
            let list = &mut self.members[start..start + self.alive[r]];
            swept += list.len() + 1;
            self.alive[r] = sweep(list, &mut *settle) as usize;
        }
        swept
    }
}

/// The runs of the batch's texts sharing a prefix hash as a star sweep walks them when each
/// member's place in its run is known: each run's texts still free at its front, sorted by
/// place (size, then hashes left after the run's hash), so that a text reads only the window
/// of sizes it may meet ([`Cut::window`]), from the first member with enough hashes left, and
/// compares only those that pass [`Cut::may_meet`], as the stars of one machine do.
struct WindowSweep<'a> {
    runs: &'a ShortTexts,
    /// The filters of the runs' cut.
    needs: &'a Needs,
    /// Whether every place is known; else every member of a run is read.
    windows: bool,
    /// Each run's members, `place << 32 | text`.
    members: Vec<u64>,
    alive: Vec<usize>,
}

impl<'a> WindowSweep<'a> {
    fn new(runs: &'a ShortTexts, needs: &'a Needs) -> Self {
        let windows = runs.placed();
        let mut members: Vec<u64> = runs
            .members()
            .iter()
            .zip(runs.places())
            .map(|(&t, &p)| u64::from(p) << 32 | u64::from(t))
            .collect();
        for r in 0..runs.run_count() {
            let (a, b) = runs.run_bounds(r);
            members[a..b].sort_unstable();
        }
        WindowSweep {
            runs,
            needs,
            windows,
            members,
            alive: (0..runs.run_count())
                .map(|r| {
                    let (a, b) = runs.run_bounds(r);
                    b - a
                })
                .collect(),
        }
    }

    /// The parts of a run's `list` (sorted) that a text placed at `mine` in it may meet
    /// ([`meeting_parts`]), as ranges `part(a, b)`; the whole list when a place is unknown.
    fn parts(&self, list: &[u64], mine: u32, part: impl FnMut(usize, usize)) {
        if self.windows {
            meeting_parts(
                list.len(),
                |i| (list[i] >> 32) as u32,
                mine,
                self.needs,
                part,
            );
        } else {
            let mut part = part;
            if !list.is_empty() {
                part(0, list.len());
            }
        }
    }

    /// The pairs of `texts` texts in a run whose places pass the filters, counted from both
    /// sides and halved (a pair is counted in each run it may meet in).
    fn pairs(&self, texts: usize) -> u64 {
        if !self.windows {
            return self.runs.run_pairs();
        }
        let twice: u64 = (0..texts)
            .into_par_iter()
            .with_min_len(256)
            .map(|t| {
                let mut count = 0u64;
                let places = self.runs.run_places_of(t);
                for (&r, &mine) in self.runs.runs_of(t).iter().zip(places) {
                    let (start, end) = self.runs.run_bounds(r as usize);
                    let list = &self.members[start..end];
                    let me = u64::from(mine) << 32 | t as u64;
                    self.parts(list, mine, |a, b| {
                        count += (b - a) as u64;
                        // The text itself, when it may meet its own place.
                        if (list[a]..=list[b - 1]).contains(&me) {
                            count -= 1;
                        }
                    });
                }
                count
            })
            .sum();
        twice / 2
    }

    /// Sweeps text t's runs with `settle`: only the members it may meet (the others stay for
    /// the texts that may take them); the texts looked at.
    fn sweep(&mut self, t: usize, settle: &mut impl FnMut(usize) -> bool) -> usize {
        let mut swept = 0;
        let places = self.runs.run_places_of(t);
        let mut parts: Vec<(usize, usize)> = Vec::new();
        for (&r, &mine) in self.runs.runs_of(t).iter().zip(places) {
            let r = r as usize;
            let (start, _) = self.runs.run_bounds(r);
            let alive = self.alive[r];
            parts.clear();
            self.parts(&self.members[start..start + alive], mine, |a, b| {
                parts.push((a, b))
            });
            let list = &mut self.members[start..start + alive];
            // Each part swept, what stays moved down over what left.
            let (mut kept, mut from) = (0, 0);
            for &(a, b) in &parts {
                list.copy_within(from..a, kept);
                kept += a - from;
                swept += b - a + 1;
                let stay = sweep_ahead(&mut list[a..b], |m: u64, _, _| settle(m as u32 as usize));
                list.copy_within(a..a + stay as usize, kept);
                kept += stay as usize;
                from = b;
            }
            list.copy_within(from.., kept);
            kept += alive - from;
            self.alive[r] = kept;
        }
        swept
    }
}

/// What the star of the kept text t (`me`) does to text s: a free later text near t is taken
/// by it (true); a decided one leaves the lists for good (true); any other stays (false).
#[allow(clippy::too_many_arguments)]
#[inline]
fn settle<'a>(
    fate: &mut [Fate],
    t: usize,
    me: Doc<'a>,
    s: usize,
    doc: &dyn Fn(usize) -> Doc<'a>,
    shape: Compact,
    threshold: f64,
) -> bool {
    if fate[s] != Fate::Free {
        return true;
    }
    let near = if s > t {
        near(me, doc(s), shape, threshold)
    } else {
        None
    };
    if let Some(j) = near {
        fate[s] = Fate::New(t as u32, j);
    }
    near.is_some()
}

/// Stars in row order: each text still free is kept, and `sweep_from(t, fate)` settles the
/// texts its star takes, returning the texts it looked at. Ctrl-C is looked at by that work,
/// not by texts: on near-identical texts one text's sweep can compare it with most of the batch.
fn stars(fate: &mut [Fate], mut sweep_from: impl FnMut(usize, &mut [Fate]) -> usize) -> Result<()> {
    let mut swept = 0usize;
    for t in 0..fate.len() {
        if swept >= SWEPT_PER_CHECK {
            interrupt::check()?;
            swept = 0;
        }
        if fate[t] != Fate::Free {
            continue;
        }
        fate[t] = Fate::Kept;
        swept += sweep_from(t, fate);
    }
    Ok(())
}

/// Texts the star sweep of [`dedup_against`] compares between two looks at Ctrl-C (a few
/// milliseconds of work).
const SWEPT_PER_CHECK: usize = 1 << 16;

/// Deduplicates `batch` against `index` and itself (keep order: the index's documents, all kept,
/// in their order, then the batch's rows in row order): a row is removed for the first document
/// before it that is kept and is a near-duplicate of it (within `k`, and copies or sketches of
/// Jaccard >= `threshold` cut to the index's sketch size), as stars over the index and the batch
/// would remove it. One search ([`cross_pairs`](crate::search::cross_search::cross_pairs), with
/// the plan [`cross_plan`] chooses for the sizes) finds the pairs against the index and the
/// batch's own pairs.
/// With `max_pairs`, a search estimated to make more candidate comparisons than
/// [`default_work_limit`] of the distinct fingerprints on both sides (or, inside the batch, of
/// the batch's) is refused ([`Error::TooManyPairs`]) before it starts, as `find_all` refuses one,
/// and a search that finds more than `max_pairs` candidate pairs of distinct fingerprints (with
/// the index and inside the batch) stops there and is refused, naming a lower bound of their
/// number: memory and time stay bounded on a corpus of near-identical documents.
///
/// With `prefixes` (the batch's lists, one a row, and the cut to read them at), the candidates
/// are those of prefix filtering instead ([`crate::store::index_prefixes`]): every index
/// document sharing a prefix hash with a text, and the texts of the batch sharing one; the
/// fingerprints propose nothing and `k` is not read. `max_pairs` then bounds the candidate
/// pairs with the index, counted before any is compared.
pub fn dedup_against(
    index: &DedupIndex,
    batch: &Batch<'_>,
    k: u32,
    threshold: f64,
    max_pairs: Option<u64>,
    prefixes: Option<(&Lists<'_>, Cut)>,
) -> Result<Against> {
    let limit = max_pairs.is_some();
    let n = batch.fps.len();
    if batch.keys.len() != n {
        return Err(Error::invalid(format!(
            "{n} fingerprints but {} keys",
            batch.keys.len()
        )));
    }
    let shape = index.settings.sketch;
    batch.sketches.check(n, shape)?;
    match &batch.sets {
        Some(sets) if sets.offsets.len() != n + 1 => {
            return Err(Error::invalid(format!(
                "{n} documents but {} exact sets",
                sets.offsets.len().saturating_sub(1)
            )))
        }
        None if index.settings.exact => {
            return Err(Error::invalid(
                "this index keeps exact sets: the new documents need theirs",
            ))
        }
        Some(_) if !index.settings.exact => {
            return Err(Error::invalid(
                "this index keeps no exact sets: the new documents' are not compared",
            ))
        }
        _ => {}
    }
    if !(threshold > 0.0 && threshold <= 1.0) {
        return Err(Error::invalid(format!(
            "threshold must be in (0, 1], got {threshold}"
        )));
    }
    if n >= u32::MAX as usize || index.len() >= u32::MAX as usize {
        return Err(Error::invalid("at most 2^32 - 2 documents on each side"));
    }
    let w = shape.words();
    // The batch's texts: equal content key and fingerprint.
    let mut texts: HashMap<(ContentKey, u64), u32, FoldState> =
        HashMap::with_capacity_and_hasher(n.min(1 << 20), FoldState::default());
    let mut text_of = Vec::with_capacity(n);
    let mut first_row: Vec<u32> = Vec::new();
    for r in 0..n {
        let next = first_row.len() as u32;
        let t = *texts.entry((batch.keys[r], batch.fps[r])).or_insert(next);
        if t == next {
            first_row.push(r as u32);
        }
        text_of.push(t);
    }
    drop(texts);
    let doc = |t: usize| {
        let r = first_row[t] as usize;
        (
            batch.fps[r],
            batch.keys[r],
            batch.sketches.get(r, w),
            batch.sets.map(|s| s.get(r)),
        )
    };
    if let Some((lists, cut)) = prefixes {
        if lists.len() != n {
            return Err(Error::invalid(format!(
                "{n} documents but {} prefix lists",
                lists.len()
            )));
        }
        let (fate, skipped) =
            by_prefixes(index, threshold, max_pairs, lists, cut, &first_row, &doc)?;
        return Ok(rows_of(&fate, &text_of, &first_row, skipped));
    }
    let text_fps: Vec<u64> = (0..first_row.len()).map(|t| doc(t).0).collect();
    let new_groups = Groups::new(&text_fps);
    let group_of = new_groups.of_rows();
    interrupt::check()?;
    // The index's documents grouped by fingerprint.
    let old = index.fingerprints();
    let mut order: Vec<u32> = (0..old.len() as u32).collect();
    order.par_sort_unstable_by_key(|&r| (old[r as usize], r));
    let mut old_distinct: Vec<u64> = Vec::new();
    let mut old_starts: Vec<u32> = Vec::new();
    for (i, &r) in order.iter().enumerate() {
        let fp = old[r as usize];
        if old_distinct.last() != Some(&fp) {
            old_distinct.push(fp);
            old_starts.push(i as u32);
        }
    }
    old_starts.push(order.len() as u32);
    interrupt::check()?;
    let plan = cross_plan(
        k,
        old_distinct.len() as u64,
        new_groups.distinct.len() as u64,
    )?;
    let work = limit.then(|| default_work_limit(old_distinct.len() + new_groups.distinct.len()));
    check_cross_work(
        &new_groups.distinct,
        &old_distinct,
        k,
        &plan,
        work,
        WORK_REMEDY,
    )?;
    check_work(
        &new_groups.distinct,
        k,
        &plan,
        limit.then(|| default_work_limit(new_groups.distinct.len())),
        WORK_REMEDY,
    )?;
    let found = match cross_pairs_bounded(&new_groups.distinct, &old_distinct, k, &plan, max_pairs)?
    {
        Bounded::Within(found) => found,
        Bounded::Over(count) | Bounded::AtLeast(count) => {
            return Err(Error::TooManyPairs {
                count,
                at_least: true,
                limit: max_pairs.unwrap_or(u64::MAX),
                what: format!("candidate pairs of distinct fingerprints within k={k}"),
                remedy: "lower k (in Python, max_pairs raises or, with None, lifts the limit)"
                    .into(),
            })
        }
    };
    let (mut pairs, within) = (found.cross, found.within);
    pairs.par_sort_unstable();
    interrupt::check()?;
    // Per new value, its run of pairs.
    let mut pair_start = vec![0usize; new_groups.distinct.len() + 1];
    for &(a, _) in &pairs {
        pair_start[a as usize + 1] += 1;
    }
    for g in 0..new_groups.distinct.len() {
        pair_start[g + 1] += pair_start[g];
    }
    // Short texts against the index's short documents, whatever their fingerprints.
    let (mut short_values, mut short_at, mut buf) =
        (Vec::new(), vec![(0, 0); first_row.len()], Vec::new());
    for (t, at) in short_at.iter_mut().enumerate() {
        if short_set(shape, doc(t), &mut buf) {
            let start = short_values.len();
            short_values.extend_from_slice(&buf);
            *at = (start, short_values.len());
        }
    }
    let short_of = |t: usize| {
        let (a, b) = short_at[t];
        (b > a).then(|| &short_values[a..b])
    };
    let short_cands = short_index_candidates(index, first_row.len(), short_of, threshold)?;
    let mut short_start = vec![0usize; first_row.len() + 1];
    for &(t, _) in &short_cands {
        short_start[t as usize + 1] += 1;
    }
    for t in 0..first_row.len() {
        short_start[t + 1] += short_start[t];
    }
    interrupt::check()?;
    // Each text against the index: the first document (in index order) that is a near-duplicate.
    let mut fate: Vec<Fate> = (0..first_row.len())
        .into_par_iter()
        .with_min_len(64)
        .map_init(Vec::new, |cands: &mut Vec<u32>, t| {
            let me = doc(t);
            let g = group_of[t] as usize;
            cands.clear();
            for &(_, b) in &pairs[pair_start[g]..pair_start[g + 1]] {
                let b = b as usize;
                cands.extend_from_slice(&order[old_starts[b] as usize..old_starts[b + 1] as usize]);
            }
            cands.extend(
                short_cands[short_start[t]..short_start[t + 1]]
                    .iter()
                    .map(|p| p.1),
            );
            cands.sort_unstable();
            cands.dedup();
            for &c in cands.iter() {
                let c = c as usize;
                if let Some(j) = near(index.doc(c), me, shape, threshold) {
                    return Fate::Index(c as u32, j);
                }
            }
            Fate::Free
        })
        .collect();
    drop(pairs);
    drop(pair_start);
    drop(short_cands);
    interrupt::check()?;
    let short = ShortTexts::new(
        first_row.len(),
        (0..first_row.len()).filter_map(|t| short_of(t).map(|s| (t as u32, s))),
        threshold,
    )?;
    let mut short_runs = RunSweep::new(&short);
    // Stars among the batch's texts, in row order of their first rows.
    let groups = new_groups.distinct.len();
    let mut adj_start = vec![0usize; groups + 1];
    for &(a, b) in &within {
        adj_start[a as usize + 1] += 1;
        adj_start[b as usize + 1] += 1;
    }
    for g in 0..groups {
        adj_start[g + 1] += adj_start[g];
    }
    let mut adj: Vec<u32> = try_with_capacity(adj_start[groups], "neighbours of new texts")?;
    adj.resize(adj_start[groups], 0);
    let mut fill = adj_start.clone();
    for &(a, b) in &within {
        adj[fill[a as usize]] = b;
        fill[a as usize] += 1;
        adj[fill[b as usize]] = a;
        fill[b as usize] += 1;
    }
    drop(within);
    drop(fill);
    // Members (texts) of each group, ascending; Groups lists rows of `text_fps`, i.e. texts.
    let mut members: Vec<u32> = new_groups.rows.iter().map(|&t| t as u32).collect();
    let mut alive: Vec<usize> = new_groups.starts.windows(2).map(|w| w[1] - w[0]).collect();
    stars(&mut fate, |t, fate| {
        let me = doc(t);
        if me.0 == 0 {
            return 0;
        }
        let g = group_of[t] as usize;
        let mut settle = |s: usize| settle(fate, t, me, s, &doc, shape, threshold);
        let mut swept = 0;
        for h in std::iter::once(g).chain(
            adj[adj_start[g]..adj_start[g + 1]]
                .iter()
                .map(|&h| h as usize),
        ) {
            let start = new_groups.starts[h];
            swept += alive[h] + 1;
            alive[h] = sweep(&mut members[start..start + alive[h]], &mut settle) as usize;
        }
        // Short texts, whatever their fingerprints.
        swept + short_runs.sweep(t, &mut settle)
    })?;
    Ok(rows_of(&fate, &text_of, &first_row, short.skipped_pairs()))
}

/// Texts the prefix search of [`dedup_against`] compares with the index between two looks at
/// Ctrl-C.
const TEXTS_PER_CHECK: usize = 1 << 12;
/// Candidate pairs with the index compared between two looks at Ctrl-C (tens of milliseconds).
const PAIRS_PER_CHECK: u64 = 1 << 18;

/// The fates of a batch's texts (first rows `first_row`, `doc(t)` text t) when the candidates
/// come from prefix filtering, and the batch's pairs not compared.
fn by_prefixes<'a>(
    index: &DedupIndex,
    threshold: f64,
    max_pairs: Option<u64>,
    lists: &Lists<'_>,
    cut: Cut,
    first_row: &[u32],
    doc: &(dyn Fn(usize) -> Doc<'a> + Sync),
) -> Result<(Vec<Fate>, u64)> {
    let p = &index.prefixes;
    let Some(stored) = &p.settings else {
        return Err(Error::invalid(
            "this dedup index has no prefix postings (built with candidates=\"fingerprint\", or \
             by a neardup that made none): search it with candidates=\"fingerprint\", or build \
             it again",
        ));
    };
    if !stored.covers(cut) {
        return Err(Error::invalid(format!(
            "the index's prefixes were cut at Jaccard {}: a search at {} would miss pairs; use \
             candidates=\"fingerprint\" or a threshold of at least {}",
            stored.threshold, cut.threshold, stored.threshold
        )));
    }
    let shape = index.settings.sketch;
    let texts = first_row.len();
    // Each text's prefix at the search's cut, each hash with its place in the text's list.
    let (mut pre, mut pre_at, mut buf) = (Vec::new(), vec![0usize], Vec::new());
    for (t, &r) in first_row.iter().enumerate() {
        lists.prefix(r as usize, doc(t).1, cut, &mut buf)?;
        pre.extend(lists.placed(r as usize, &buf));
        pre_at.push(pre.len());
    }
    let prefix_of = |t: usize| &pre[pre_at[t]..pre_at[t + 1]];
    // The filters, from tables for the sizes the lists are made from.
    let needs = Needs::new(cut, stored.size as usize);
    // The index documents a text meets in its prefix's hashes, by the length and positional
    // filters (with repeats: a document meeting it in two hashes is listed twice).
    let meets = |t: usize, out: &mut Vec<u32>| {
        out.clear();
        for &(h, at) in prefix_of(t) {
            p.meeting(h, at, &needs, out);
        }
    };
    // The candidate pairs with the index, counted before any is compared: those sharing a
    // prefix hash, and when they are over the limit, those the filters leave (the work of
    // that count is spent only where it may spare a refusal).
    let count_with = |filtered: bool| -> Vec<u64> {
        (0..texts)
            .into_par_iter()
            .with_min_len(1024)
            .map(|t| {
                prefix_of(t)
                    .iter()
                    .map(|&(h, at)| {
                        if filtered {
                            p.meeting_count(h, at, &needs)
                        } else {
                            p.rows_of(h).len() as u64
                        }
                    })
                    .sum::<u64>()
            })
            .collect()
    };
    let mut counts = count_with(false);
    let mut total: u64 = counts.iter().sum();
    if max_pairs.is_some_and(|limit| total > limit) {
        counts = count_with(true);
        total = counts.iter().sum();
    }
    if let Some(limit) = max_pairs {
        if total > limit {
            return Err(Error::TooManyPairs {
                count: total,
                at_least: false,
                limit,
                what: "candidate pairs with the index's documents (sharing a prefix hash, within \
                       the length and positional filters)"
                    .into(),
                remedy: "deduplicate the batch in smaller parts (in Python, max_pairs=None lifts \
                         the limit)"
                    .into(),
            });
        }
    }
    interrupt::check()?;
    // Each text against the index: the first document (in index order) that is a near-duplicate.
    let mut fate: Vec<Fate> = Vec::with_capacity(texts);
    // Blocks of texts of bounded work between two looks at Ctrl-C; inside a text, a look every
    // PAIRS_PER_CHECK candidates (a text may have millions).
    let mut block = 0;
    while block < texts {
        interrupt::check()?;
        let (mut end, mut work) = (block, 0u64);
        while end < texts
            && (end == block || (end - block < TEXTS_PER_CHECK && work < PAIRS_PER_CHECK))
        {
            work += counts[end];
            end += 1;
        }
        fate.par_extend((block..end).into_par_iter().with_min_len(1).map_init(
            Vec::new,
            |cands: &mut Vec<u32>, t| {
                meets(t, cands);
                cands.sort_unstable();
                cands.dedup();
                let me = doc(t);
                for (i, &c) in cands.iter().enumerate() {
                    if i % PAIRS_PER_CHECK as usize == PAIRS_PER_CHECK as usize - 1
                        && interrupt::requested()
                    {
                        return Fate::Free; // the search stops at the next look
                    }
                    let c = c as usize;
                    if let Some(j) = near(index.doc(c), me, shape, threshold) {
                        return Fate::Index(c as u32, j);
                    }
                }
                Fate::Free
            },
        ));
        block = end;
    }
    interrupt::check()?;
    // The batch's texts that share a prefix hash, in runs (split while over the cap).
    let runs = ShortTexts::runs_of_lists(
        texts,
        (0..texts).filter_map(|t| {
            let (list, n) = lists.get(first_row[t] as usize);
            (n > 0).then_some((t as u32, list, n, 0))
        }),
        cut,
    )?;
    let mut swept_runs = WindowSweep::new(&runs, &needs);
    // The batch's own candidate pairs, bounded with those with the index.
    if let Some(limit) = max_pairs {
        let count = total.saturating_add(swept_runs.pairs(texts));
        if count > limit {
            return Err(Error::TooManyPairs {
                count,
                at_least: false,
                limit,
                what: "candidate pairs sharing a prefix hash, within the length and positional \
                       filters (with the index's documents and among the new ones)"
                    .into(),
                remedy: "deduplicate the batch in smaller parts (in Python, max_pairs=None lifts \
                         the limit)"
                    .into(),
            });
        }
    }
    stars(&mut fate, |t, fate| {
        let me = doc(t);
        swept_runs.sweep(t, &mut |s| settle(fate, t, me, s, doc, shape, threshold))
    })?;
    Ok((fate, runs.skipped_pairs()))
}

/// The answer per row, from the fates of the texts (rows follow their texts).
fn rows_of(fate: &[Fate], text_of: &[u32], first_row: &[u32], skipped_pairs: u64) -> Against {
    let n = text_of.len();
    let mut out = Against {
        kept: Vec::with_capacity(n),
        index_row: Vec::with_capacity(n),
        jaccard: Vec::with_capacity(n),
        skipped_pairs,
    };
    for (r, &t) in text_of.iter().enumerate() {
        let t = t as usize;
        let (kept, index_row, j) = match fate[t] {
            Fate::Kept if first_row[t] as usize == r => (r as i64, -1, 1.0),
            Fate::Kept => (i64::from(first_row[t]), -1, 1.0),
            Fate::Index(c, j) => (-1, i64::from(c), j),
            Fate::New(c, j) => (i64::from(first_row[c as usize]), -1, j),
            Fate::Free => unreachable!("every text is decided"),
        };
        out.kept.push(kept);
        out.index_row.push(index_row);
        out.jaccard.push(j);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sketch::compact_sketch::encode_many;
    use crate::sketch::verify::{shingle_config, sketches, Ranges};

    fn settings(string_ids: bool) -> Settings {
        Settings {
            sketch: Compact::new(8, 1).unwrap(),
            shingle: 1,
            k: 4,
            threshold: 0.5,
            string_ids,
            exact: false,
            meta: b"{\"x\": 1}".to_vec(),
        }
    }

    #[test]
    fn short_sets_whose_hashes_agree_on_32_bits_hold_the_value_once() {
        // Four 63-bit shingle hashes, kept whole; the first two share their top 32 bits.
        let set = [
            0x2000_0000_0000_0010u64,
            0x2000_0000_0000_0020,
            0x3000_0000_0000_0000,
            0x4000_0000_0000_0000,
        ];
        let shape = settings(false).sketch;
        let mut words = vec![0u32; shape.words()];
        let len = shape.encode(&set, &mut Default::default(), &mut words);
        assert_eq!(len, 4);
        let sketches = Sketches {
            lens: &[len],
            words: &words,
        };
        let (lens, values) = short_sets(shape, &[1], &sketches).unwrap();
        let cut: Vec<u64> = set.iter().map(|v| (v << 1) >> 32).collect();
        assert_eq!(cut[0], cut[1]);
        assert_eq!((lens, values.clone()), (vec![3], cut[1..].to_vec()));
        // Short texts take them (sorted and distinct): a copy of the text is its candidate.
        let short = ShortTexts::new(
            2,
            [(0u32, &values[..]), (1u32, &values[..])].into_iter(),
            0.8,
        )
        .unwrap();
        assert!(short.run_count() >= 1);
    }

    #[test]
    fn postings_keep_their_places_and_an_index_of_version_5_is_read_without_them() {
        use crate::candidates::short_texts::place;
        let dir = std::env::temp_dir().join(format!("neardup-ddx-places-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut ix = DedupIndex::new(settings(false)).unwrap();
        let ps = PrefixSettings {
            threshold: 0.8,
            band: 0.0,
            size: 128,
        };
        ix.set_prefixes(ps.clone(), vec![], vec![]).unwrap();
        // Lists of 5 shingles at 0.8 need 4: prefixes of 2, the first two hashes.
        let (lengths, hashes, sizes) = ([5u32, 5], [1u64, 2, 3, 4, 5, 2, 1, 3, 4, 6], [5u32, 5]);
        let lists = Lists::new(&lengths, &hashes, &sizes).unwrap();
        let rows = Rows {
            fps: &[1, 2],
            keys: &[[1, 1], [2, 2]],
            sketches: Sketches {
                lens: &[0, 0],
                words: &[0; 16],
            },
            ids: NewIds::Int(&[10, 20]),
            sets: None,
        };
        let path = dir.join("placed.ndx");
        ix.save(&path, Some(&rows), Some(&lists)).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        let word = |b: &[u8], i: usize| u64::from_le_bytes(b[i * 8..i * 8 + 8].try_into().unwrap());
        assert_eq!(word(&bytes, 1), VERSION);
        let placed = DedupIndex::load(&path, false).unwrap();
        let p = placed.prefixes();
        assert_eq!(&p.hashes[..], &[1, 1, 2, 2]);
        // Each hash's postings sorted by size, then by the hashes left after it.
        assert_eq!(&p.rows[..], &[1, 0, 0, 1]);
        assert_eq!(
            &p.places[..],
            &[place(5, 1), place(5, 0), place(5, 1), place(5, 0)]
        );
        // Hash 1 is second in row 1's list: 3 hashes after it, which cannot make 4 shared
        // with a list of 5 that holds it first (4 after it) unless both read it first.
        let cut = Needs::new(ps.cut(), 128);
        let mut out = Vec::new();
        p.meeting(1, place(5, 0), &cut, &mut out);
        assert_eq!(out, vec![0]);
        // The same file in version 5: no places, the rows after the hashes, the checksum made
        // again. Read, every posting passes; written on, it is version 6 with places unknown.
        let words = bytes.len() / 8;
        // 4 places (2 words), 4 rows (2 words), then the checksum; version 5 sorts the rows
        // by hash and row.
        let places_at = words - 1 - 2 - 2;
        let mut old: Vec<u8> = bytes[..places_at * 8].to_vec();
        for r in [0u32, 1, 0, 1] {
            old.extend_from_slice(&r.to_le_bytes());
        }
        old[8..16].copy_from_slice(&5u64.to_le_bytes());
        let len = old.len() as u64 + 8;
        old[16..24].copy_from_slice(&len.to_le_bytes());
        let mut sum = Checksum::default();
        for i in 0..old.len() / 8 {
            sum.add(word(&old, i));
        }
        old.extend_from_slice(&sum.value().to_le_bytes());
        let old_path = dir.join("old.ndx");
        std::fs::write(&old_path, &old).unwrap();
        for mmap in [true, false] {
            let read = DedupIndex::load(&old_path, mmap).unwrap();
            let p = read.prefixes();
            assert_eq!(&p.rows[..], &[0, 1, 0, 1]);
            assert_eq!(&p.places[..], &[UNPLACED; 4]);
            out.clear();
            p.meeting(1, place(5, 0), &cut, &mut out);
            assert_eq!(out, vec![0, 1]);
        }
        let read = DedupIndex::load(&old_path, false).unwrap();
        let more = Rows {
            fps: &[3],
            keys: &[[3, 3]],
            sketches: Sketches {
                lens: &[0],
                words: &[0; 8],
            },
            ids: NewIds::Int(&[30]),
            sets: None,
        };
        let new_lists = Lists::new(&[5], &[1, 7, 8, 9, 10], &[5]).unwrap();
        let grown = dir.join("grown.ndx");
        read.save(&grown, Some(&more), Some(&new_lists)).unwrap();
        assert_eq!(word(&std::fs::read(&grown).unwrap(), 1), VERSION);
        let grown = DedupIndex::load(&grown, true).unwrap();
        let p = grown.prefixes();
        assert_eq!(&p.hashes[..], &[1, 1, 1, 2, 2, 7]);
        assert_eq!(&p.rows[..], &[2, 0, 1, 0, 1, 2]);
        assert_eq!(p.places[0], place(5, 0));
        assert_eq!(&p.places[1..3], &[UNPLACED; 2]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn exact_sets_are_saved_streamed_and_appended_whole() {
        let dir = std::env::temp_dir().join(format!("neardup-ddx-exact-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let exact = Settings {
            exact: true,
            ..settings(false)
        };
        let sketches = Sketches {
            lens: &[0, 0, 0],
            words: &[0; 24],
        };
        let (set_offsets, set_values) = ([0u64, 3, 3, 5], [1u32, 5, 9, 2, 7]);
        let rows = Rows {
            fps: &[1, 2, 3],
            keys: &[[1, 1], [2, 2], [3, 3]],
            sketches,
            ids: NewIds::Int(&[10, 20, 30]),
            sets: Some(NewSets {
                sets: ExactSets::new(3, &set_offsets, &set_values).unwrap(),
                rows: None,
            }),
        };
        let whole = dir.join("whole.ndx");
        let empty = DedupIndex::new(exact.clone()).unwrap();
        empty.save(&whole, Some(&rows), None).unwrap();
        let bytes = std::fs::read(&whole).unwrap();
        // Without prefix postings, the version a neardup reading exact sets reads.
        assert_eq!(
            u64::from_le_bytes(bytes[8..16].try_into().unwrap()),
            VERSION_WITHOUT_PLACES
        );
        // The same documents handed a chunk at a time give the same file.
        let streamed = dir.join("streamed.ndx");
        empty
            .save_streamed(&streamed, 3, 0, 5, &[], |section, sink| match section {
                Section::Fps => sink(Chunk::U64(rows.fps)),
                Section::Keys => sink(Chunk::U64(rows.keys.as_flattened())),
                Section::Lens => sink(Chunk::U32(sketches.lens)),
                Section::Words => sink(Chunk::U32(sketches.words)),
                Section::Ids => sink(Chunk::I64(&[10, 20, 30])),
                Section::IdBytes => Ok(()),
                Section::SetLens => {
                    sink(Chunk::U32(&[3]))?;
                    sink(Chunk::U32(&[0, 2]))
                }
                Section::SetValues => {
                    sink(Chunk::U32(&[1, 5]))?;
                    sink(Chunk::U32(&[9, 2, 7]))
                }
            })
            .unwrap();
        assert_eq!(std::fs::read(&streamed).unwrap(), bytes);
        for mmap in [true, false] {
            let idx = DedupIndex::load(&whole, mmap).unwrap();
            assert!(idx.settings().exact);
            assert_eq!(idx.exact_set(0), Some(&[1, 5, 9][..]));
            assert_eq!(idx.exact_set(1), Some(&[][..]));
            assert_eq!(idx.exact_set(2), Some(&[2, 7][..]));
            // An append keeps the old sets before the new.
            let more = Rows {
                fps: &[4],
                keys: &[[4, 4]],
                sketches: Sketches {
                    lens: &[0],
                    words: &[0; 8],
                },
                ids: NewIds::Int(&[40]),
                sets: Some(NewSets {
                    sets: ExactSets::new(1, &[0, 1], &[8]).unwrap(),
                    rows: None,
                }),
            };
            let grown = dir.join(format!("grown{mmap}.ndx"));
            idx.save(&grown, Some(&more), None).unwrap();
            let again = DedupIndex::load(&grown, mmap).unwrap();
            assert_eq!(again.exact_set(2), Some(&[2, 7][..]));
            assert_eq!(again.exact_set(3), Some(&[8][..]));
            // Sets are needed by an exact index, and refused by one without them.
            assert!(idx
                .save(&grown, Some(&Rows { sets: None, ..more }), None)
                .is_err());
        }
        let plain = DedupIndex::new(settings(false)).unwrap();
        assert!(plain.save(&dir.join("p.ndx"), Some(&rows), None).is_err());
        let without = Rows { sets: None, ..rows };
        plain
            .save(&dir.join("p.ndx"), Some(&without), None)
            .unwrap();
        let bytes = std::fs::read(dir.join("p.ndx")).unwrap();
        // An index without exact sets stays readable by a neardup of version 4 files.
        assert_eq!(
            u64::from_le_bytes(bytes[8..16].try_into().unwrap()),
            VERSION_WITHOUT_SETS
        );
        assert_eq!(
            DedupIndex::load(&dir.join("p.ndx"), true)
                .unwrap()
                .exact_set(0),
            None
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_mapped_file_truncated_while_it_is_read_is_changed_not_a_crash() {
        let dir = std::env::temp_dir().join(format!("neardup-ddx-cut-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let n = 100_000;
        let fps: Vec<u64> = (1..=n as u64).collect();
        let keys: Vec<ContentKey> = (0..n as u64).map(|i| [i, i]).collect();
        let ids: Vec<i64> = (0..n as i64).collect();
        let rows = Rows {
            fps: &fps,
            keys: &keys,
            sketches: Sketches {
                lens: &vec![0; n],
                words: &vec![0; 8 * n],
            },
            ids: NewIds::Int(&ids),
            sets: None,
        };
        let path = dir.join("a.ndx");
        DedupIndex::new(settings(false))
            .unwrap()
            .save(&path, Some(&rows), None)
            .unwrap();
        let idx = DedupIndex::load(&path, true).unwrap();
        let got = idx.guarded(|ix| {
            // Another process's `truncate` or `cp` into the file, mid-read: the pages past the
            // new end are gone, and reading them would be a SIGBUS.
            std::fs::OpenOptions::new()
                .write(true)
                .open(&path)
                .unwrap()
                .set_len(0)
                .unwrap();
            ix.fingerprints().iter().sum::<u64>()
        });
        assert!(matches!(got, Err(Error::Changed(_))), "{got:?}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn saved_files_open_with_the_same_contents_and_appends_keep_the_old() {
        let dir = std::env::temp_dir().join(format!("neardup-ddx-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let texts = ["a b c d e f g h i j k", "a b c", "", "x y"];
        let sk = sketches(shingle_config(1, 64).unwrap(), &texts);
        let starts: Vec<u64> = sk.offsets[..4].to_vec();
        let ends: Vec<u64> = sk.offsets[1..].to_vec();
        let ranges = Ranges::new(&starts, &ends, &sk.hashes).unwrap();
        let shape = settings(true).sketch;
        let (lens, words) = encode_many(shape, &ranges);
        // "x y": two shingles and their checks, kept whole.
        assert_eq!(lens, vec![11, 3, 0, 4]);
        let ids: Vec<&[u8]> = vec![b"one", b"", "caf\u{e9}".as_bytes(), b"4"];
        let rows = Rows {
            fps: &[1, 2, 0, 9],
            keys: &sk.keys,
            sketches: Sketches {
                lens: &lens,
                words: &words,
            },
            ids: NewIds::Str(&ids),
            sets: None,
        };
        let path = dir.join("a.ndx");
        DedupIndex::new(settings(true))
            .unwrap()
            .save(&path, Some(&rows), None)
            .unwrap();
        for mmap in [true, false] {
            let idx = DedupIndex::load(&path, mmap).unwrap();
            assert_eq!(idx.len(), 4);
            assert_eq!(idx.settings(), &settings(true));
            assert_eq!(idx.fingerprints(), &[1, 2, 0, 9]);
            assert_eq!(idx.sketch(0), (11, &words[..8]));
            assert_eq!(idx.sketch(1).0, 3);
            let whole: Vec<u64> = idx.sketch(1).1[..6]
                .chunks(2)
                .map(|c| u64::from(c[0]) | u64::from(c[1]) << 32)
                .collect();
            assert_eq!(&whole[..], sk.get(1));
            assert_eq!(idx.sketch(2).0, 0);
            assert_eq!(idx.str_id(2).unwrap(), "caf\u{e9}".as_bytes());
            assert_eq!(idx.str_id(1).unwrap(), b"");
            // Appending writes a new file with the old documents first.
            let more: Vec<&[u8]> = vec![b"five"];
            let one = Sketches {
                lens: &[1],
                words: &[3, 0, 0, 0, 0, 0, 0, 0],
            };
            let extra = Rows {
                fps: &[5],
                keys: &[[77, 78]],
                sketches: one,
                ids: NewIds::Str(&more),
                sets: None,
            };
            let other = dir.join(format!("b{mmap}.ndx"));
            idx.save(&other, Some(&extra), None).unwrap();
            let again = DedupIndex::load(&other, mmap).unwrap();
            assert_eq!(again.fingerprints(), &[1, 2, 0, 9, 5]);
            assert_eq!(again.str_id(4).unwrap(), b"five");
            assert_eq!(again.str_id(0).unwrap(), b"one");
            assert_eq!(again.sketch(4), (1, &[3, 0, 0, 0, 0, 0, 0, 0][..]));
            let ints = Rows {
                ids: NewIds::Int(&[3]),
                sets: None,
                ..extra
            };
            assert!(idx.save(&other, Some(&ints), None).is_err());
            // Lengths past the words, and words of another shape, are refused.
            for bad in [
                Sketches {
                    lens: &[33],
                    words: &[0; 8],
                },
                Sketches {
                    lens: &[1],
                    words: &[0; 7],
                },
            ] {
                let rows = Rows {
                    sketches: bad,
                    ..extra
                };
                assert!(idx.save(&other, Some(&rows), None).is_err());
            }
        }
        // A file of format version 1 is refused with a message that says what to do.
        let mut old = std::fs::read(&path).unwrap();
        old[8] = 1;
        std::fs::write(dir.join("v1.ndx"), &old).unwrap();
        match DedupIndex::load(&dir.join("v1.ndx"), false) {
            Err(Error::Format { reason, .. }) => assert!(reason.contains("version 1"), "{reason}"),
            _ => panic!("a version 1 file was read"),
        }
        // Every flipped word is refused.
        let good = std::fs::read(&path).unwrap();
        for at in (0..good.len()).step_by(8) {
            let mut bad = good.clone();
            bad[at] ^= 1;
            std::fs::write(dir.join("bad.ndx"), &bad).unwrap();
            assert!(
                matches!(
                    DedupIndex::load(&dir.join("bad.ndx"), false),
                    Err(Error::Format { .. })
                ),
                "byte {at}"
            );
        }
        // A save streamed in chunks writes the same file; a section short of values or of the
        // wrong kind leaves the path untouched.
        let idx = DedupIndex::load(&path, false).unwrap();
        let more: Vec<&[u8]> = vec![b"five", b"", b"seven"];
        let extra = Rows {
            fps: &[5, 6, 7],
            keys: &[[77, 78], [1, 2], [3, 4]],
            sketches: Sketches {
                lens: &[1, 0, SKETCHED],
                words: &[7; 24],
            },
            ids: NewIds::Str(&more),
            sets: None,
        };
        let whole = dir.join("whole.ndx");
        idx.save(&whole, Some(&extra), None).unwrap();
        let streamed = dir.join("streamed.ndx");
        let fill = |cut: usize| {
            move |section: Section, sink: &mut Sink<'_>| -> Result<()> {
                let (a, b) = (&extra, cut);
                match section {
                    Section::Fps => {
                        sink(Chunk::U64(&a.fps[..b]))?;
                        sink(Chunk::U64(&a.fps[b..]))
                    }
                    Section::Keys => sink(Chunk::U64(a.keys.as_flattened())),
                    Section::Lens => {
                        sink(Chunk::U32(&a.sketches.lens[..b]))?;
                        sink(Chunk::U32(&a.sketches.lens[b..]))
                    }
                    Section::Words => sink(Chunk::U32(a.sketches.words)),
                    Section::Ids => {
                        sink(Chunk::U64(&[4]))?;
                        sink(Chunk::U64(&[0, 5]))
                    }
                    Section::IdBytes => {
                        sink(Chunk::Bytes(b"fiv"))?;
                        sink(Chunk::Bytes(b"eseven"))
                    }
                    Section::SetLens | Section::SetValues => Ok(()),
                }
            }
        };
        idx.save_streamed(&streamed, 3, 9, 0, &[], fill(1)).unwrap();
        assert_eq!(
            std::fs::read(&streamed).unwrap(),
            std::fs::read(&whole).unwrap()
        );
        std::fs::remove_file(&streamed).unwrap();
        assert!(idx.save_streamed(&streamed, 4, 9, 0, &[], fill(1)).is_err());
        assert!(idx
            .save_streamed(&streamed, 3, 10, 0, &[], fill(2))
            .is_err());
        let ints = |section: Section, sink: &mut Sink<'_>| match section {
            Section::Ids => sink(Chunk::I64(&[1, 2, 3])),
            _ => fill(0)(section, sink),
        };
        assert!(idx.save_streamed(&streamed, 3, 9, 0, &[], ints).is_err());
        assert!(!streamed.exists());
        assert!(std::fs::read_dir(&dir).unwrap().all(|e| !e
            .unwrap()
            .file_name()
            .to_string_lossy()
            .contains(".tmp-")));
        std::fs::write(dir.join("bad.ndx"), &good[..good.len() - 8]).unwrap();
        assert!(matches!(
            DedupIndex::load(&dir.join("bad.ndx"), true),
            Err(Error::Format { .. })
        ));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
