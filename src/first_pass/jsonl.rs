//! The fast path of JSONL input: the lines of a block read, normalized and fingerprinted here.
//!
//! For each line, serde_json checks the whole object and hands over the literal of its one text
//! field as written (no string is built for the other values), which is unescaped into a buffer
//! each worker keeps; when an id field is asked for, it checks that it is there. (Letting serde
//! build the text allocated and grew a buffer per line, and the workers then waited on the
//! allocator's locks: a million-line run spent 1.5x the time.) A text that is ASCII is normalized here: Unicode normalization
//! leaves ASCII as it is (every ASCII character is stable under NFC, NFD, NFKC and NFKD) and case
//! folding of ASCII is lowercasing, so the fingerprint is exactly the one of the Python path.
//! Every other line (not ASCII, not valid JSON, not an object, no text field, a text that is not
//! a string, a field given twice, a missing id) is marked [`Kind::Slow`], and Python reads it as
//! it reads every line without this path: same normalization, same error messages.

use std::borrow::Cow;
use std::fmt;

use rayon::prelude::*;
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;

use crate::error::{Error, Result};
use crate::fingerprint::simhash::Hasher;
use crate::first_pass::digest::KeySet;
use crate::sketch::verify::{self, ContentKey, ShingleConfig, SketchHash, Sketches};
use crate::text::features::Scratch;

/// What became of one line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    /// Blank: no document.
    Blank = 0,
    /// A document fingerprinted here.
    Done = 1,
    /// For Python to read.
    Slow = 2,
}

/// Per line of a block: its kind, fingerprint and text length (characters = bytes: ASCII), and
/// where each line starts (one more entry: the block's length + 1, where a next line would).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Lines {
    pub kinds: Vec<u8>,
    pub fingerprints: Vec<u64>,
    pub lengths: Vec<u32>,
    pub starts: Vec<u64>,
    /// The content key of each line done here ([0, 0] for the others).
    pub keys: Vec<ContentKey>,
    /// When asked for: the shingle sketch of each line done here (empty for the others).
    pub sketches: Option<Sketches>,
}

/// What [`fingerprint_lines`] makes of one line.
pub(crate) struct Line {
    pub(crate) kind: Kind,
    pub(crate) fingerprint: u64,
    pub(crate) length: u32,
    pub(crate) key: ContentKey,
    pub(crate) sketch: Vec<SketchHash>,
}

impl Line {
    pub(crate) fn not_done(kind: Kind) -> Self {
        Line {
            kind,
            fingerprint: 0,
            length: 0,
            key: [0, 0],
            sketch: Vec::new(),
        }
    }
}

/// Thread-local buffers of [`fingerprint_lines`].
#[derive(Default)]
pub(crate) struct Buffers {
    pub(crate) scratch: Scratch,
    /// The text of the line, unescaped (ASCII).
    pub(crate) text: Vec<u8>,
}

impl Buffers {
    /// Frees the buffers after a text of `len` bytes, when it is a long one (see
    /// [`Scratch::release_after`]).
    pub(crate) fn release_after(&mut self, len: usize) {
        if len >= crate::text::features::RELEASE_MIN_BYTES {
            *self = Buffers::default();
        }
    }
}

thread_local! {
    /// Each worker's buffers, kept from one block to the next: buffers made afresh for every
    /// piece of work were grown, freed and trimmed back to the system again and again, and the
    /// page faults of two threads doing so waited on each other (two threads ran slower than one).
    pub(crate) static BUFFERS: std::cell::RefCell<Buffers> = Default::default();
}

/// A JSON string (borrowed when it holds no escape), or the mark of any other value.
enum MaybeStr<'de> {
    Str(Cow<'de, str>),
    Other,
}

struct MaybeStrVisitor;

impl<'de> Visitor<'de> for MaybeStrVisitor {
    type Value = MaybeStr<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> std::result::Result<Self::Value, E> {
        Ok(MaybeStr::Str(Cow::Borrowed(v)))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> std::result::Result<Self::Value, E> {
        Ok(MaybeStr::Str(Cow::Owned(v.to_owned())))
    }

    fn visit_string<E: de::Error>(self, v: String) -> std::result::Result<Self::Value, E> {
        Ok(MaybeStr::Str(Cow::Owned(v)))
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> std::result::Result<Self::Value, E> {
        Ok(MaybeStr::Other)
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> std::result::Result<Self::Value, E> {
        Ok(MaybeStr::Other)
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> std::result::Result<Self::Value, E> {
        Ok(MaybeStr::Other)
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> std::result::Result<Self::Value, E> {
        Ok(MaybeStr::Other)
    }

    fn visit_unit<E: de::Error>(self) -> std::result::Result<Self::Value, E> {
        Ok(MaybeStr::Other)
    }

    fn visit_seq<A: SeqAccess<'de>>(
        self,
        mut seq: A,
    ) -> std::result::Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(MaybeStr::Other)
    }

    fn visit_map<A: MapAccess<'de>>(
        self,
        mut map: A,
    ) -> std::result::Result<Self::Value, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(MaybeStr::Other)
    }
}

impl<'de> de::Deserialize<'de> for MaybeStr<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        d.deserialize_any(MaybeStrVisitor)
    }
}

/// Reads one record: its text, or None when Python must look at it.
struct Record<'f> {
    text_field: &'f str,
    id_field: Option<&'f str>,
}

impl<'de> DeserializeSeed<'de> for Record<'_> {
    type Value = Option<&'de RawValue>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> std::result::Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Record<'_> {
    type Value = Option<&'de RawValue>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(
        self,
        mut map: A,
    ) -> std::result::Result<Self::Value, A::Error> {
        let mut text = None;
        let mut ids = 0;
        let mut plain = true;
        while let Some(key) = map.next_key::<MaybeStr<'de>>()? {
            let MaybeStr::Str(key) = key else {
                unreachable!("JSON keys are strings")
            };
            if key == self.text_field {
                // Checked as JSON, kept as written: `line` unescapes it into a reused buffer.
                let value = map.next_value::<&'de RawValue>()?;
                plain &= text.is_none();
                text = Some(value);
            } else {
                ids += usize::from(Some(&*key) == self.id_field);
                map.next_value::<IgnoredAny>()?;
            }
        }
        let id_ok = self.id_field.is_none() || ids == 1;
        Ok(if plain && id_ok { text } else { None })
    }
}

/// The JSON string literal `raw` (quotes included, already checked by serde_json) unescaped into
/// `out`; None when it is not a string or its text is not ASCII (Python reads those).
fn unescape_ascii(raw: &[u8], out: &mut Vec<u8>) -> Option<()> {
    out.clear();
    let inner = raw.strip_prefix(b"\"")?.strip_suffix(b"\"")?;
    if !inner.is_ascii() {
        return None;
    }
    let mut rest = inner;
    while let Some(at) = rest.iter().position(|&c| c == b'\\') {
        out.extend_from_slice(&rest[..at]);
        let (byte, used) = match rest.get(at + 1)? {
            b'"' => (b'"', 2),
            b'\\' => (b'\\', 2),
            b'/' => (b'/', 2),
            b'b' => (0x08, 2),
            b'f' => (0x0c, 2),
            b'n' => (b'\n', 2),
            b'r' => (b'\r', 2),
            b't' => (b'\t', 2),
            b'u' => {
                let hex = std::str::from_utf8(rest.get(at + 2..at + 6)?).ok()?;
                let code = u32::from_str_radix(hex, 16).ok()?;
                (u8::try_from(code).ok().filter(u8::is_ascii)?, 6)
            }
            _ => return None,
        };
        out.push(byte);
        rest = &rest[at + used..];
    }
    out.extend_from_slice(rest);
    Some(())
}

/// The most `[` and `{` of a line read here (in strings too); a line with more goes to Python.
const MAX_BRACKETS: usize = 128;

/// Python's `bytes.isspace` (an empty line is blank too).
fn is_blank(line: &[u8]) -> bool {
    line.iter()
        .all(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c))
}

/// One line: its kind, and for a document done here its fingerprint (without `fingerprint`:
/// 0, and key 0), length and sketch; [`Error::OutOfMemory`] when a long line's buffers cannot
/// be had.
fn line(
    hasher: &Hasher,
    casefold: bool,
    record: &Record<'_>,
    make: Make<'_>,
    line: &[u8],
    b: &mut Buffers,
) -> Result<Line> {
    if is_blank(line) {
        return Ok(Line::not_done(Kind::Blank));
    }
    // serde_json checks the UTF-8 of the strings it reads but skips over the others unchecked,
    // and skips nested values at any depth, where Python's json stops at about 1,000 levels: a
    // line of invalid UTF-8 anywhere, or with many brackets, goes to Python, which reports what
    // is wrong at its line (so both paths take and refuse the same lines).
    let brackets = line.iter().filter(|&&c| c == b'[' || c == b'{').count();
    if brackets > MAX_BRACKETS || std::str::from_utf8(line).is_err() {
        return Ok(Line::not_done(Kind::Slow));
    }
    let mut de = serde_json::Deserializer::from_slice(line);
    let seed = Record {
        text_field: record.text_field,
        id_field: record.id_field,
    };
    let raw = match seed.deserialize(&mut de) {
        Ok(Some(raw)) if de.end().is_ok() => raw.get().as_bytes(),
        _ => return Ok(Line::not_done(Kind::Slow)),
    };
    crate::error::try_room(&mut b.text, raw.len(), "a copy of a JSON text")?;
    if unescape_ascii(raw, &mut b.text).is_none() || b.text.len() > u32::MAX as usize {
        return Ok(Line::not_done(Kind::Slow));
    }
    let done = ascii_text(hasher, casefold, make, &mut b.text, &mut b.scratch);
    b.release_after(raw.len());
    done
}

/// What to make of a text: `(sketch, fingerprint, seen)` (see [`fingerprint_lines`]).
pub(crate) type Make<'a> = (Option<ShingleConfig>, bool, Option<&'a KeySet>);

/// The digest of an ASCII `text` (folded in place with `casefold`): normalized here, as Python
/// would (every Unicode form leaves ASCII alone; folding ASCII is lowercasing it).
/// [`Error::OutOfMemory`] when the buffers of a long text cannot be had.
pub(crate) fn ascii_text(
    hasher: &Hasher,
    casefold: bool,
    (sketch, fingerprint, seen): Make<'_>,
    text: &mut [u8],
    scratch: &mut Scratch,
) -> Result<Line> {
    if casefold {
        text.make_ascii_lowercase();
    }
    let Ok(normalized) = std::str::from_utf8(text) else {
        return Ok(Line::not_done(Kind::Slow));
    };
    let mut out = Vec::new();
    if !fingerprint {
        // A second read wants the sketch alone.
        if let Some(config) = sketch {
            scratch.reserve_sketch(normalized)?;
            verify::sketch(config, normalized, scratch, &mut out);
            out.shrink_to_fit();
        }
        return Ok(Line {
            kind: Kind::Done,
            fingerprint: 0,
            length: normalized.len() as u32,
            key: [0, 0],
            sketch: out,
        });
    }
    let key = verify::content_key(normalized.as_bytes());
    if let Some(fingerprint) = seen.and_then(|s| s.fingerprint_of(key)) {
        // A copy of a text digested before: its fingerprint, and no sketch.
        return Ok(Line {
            kind: Kind::Done,
            fingerprint,
            length: normalized.len() as u32,
            key,
            sketch: out,
        });
    }
    crate::first_pass::digest::reserve(hasher, sketch.is_some(), normalized, scratch)?;
    let fingerprint = hasher.fingerprint(&[normalized], scratch);
    if let Some(config) = sketch {
        crate::first_pass::digest::sketch_after_fingerprint(
            hasher, config, normalized, scratch, &mut out,
        );
        // Held until the block is done: without the room the sort used.
        out.shrink_to_fit();
    }
    Ok(Line {
        kind: Kind::Done,
        fingerprint,
        length: normalized.len() as u32,
        key,
        sketch: out,
    })
}

/// Reads the lines of `block` (split at `\n`; the block holds whole lines, without the last
/// line's end) in parallel, and sketches the documents done here when `sketch` gives the
/// shingle configuration and size. With `wanted` (one flag a line: a second read, for the
/// sketches), only the lines flagged are read, and only sketched (fingerprint and key 0); the
/// others are left as blank. With `seen` (a first read), a line whose text was seen before takes
/// its recorded fingerprint and no sketch. The hasher must take documents of one field.
#[allow(clippy::too_many_arguments)]
pub fn fingerprint_lines(
    hasher: &Hasher,
    block: &[u8],
    text_field: &str,
    id_field: Option<&str>,
    casefold: bool,
    sketch: Option<ShingleConfig>,
    wanted: Option<&[bool]>,
    seen: Option<&KeySet>,
) -> Result<Lines> {
    if hasher.fields() != 1 {
        return Err(Error::invalid(
            "the JSONL fast path fingerprints documents of one field",
        ));
    }
    let lines: Vec<&[u8]> = block.split(|&b| b == b'\n').collect();
    if let Some(w) = wanted {
        if w.len() != lines.len() {
            return Err(Error::invalid(format!(
                "{} wanted flags for {} lines",
                w.len(),
                lines.len()
            )));
        }
    }
    let record = Record {
        text_field,
        id_field,
    };
    let make = (sketch, wanted.is_none(), seen);
    let each: Vec<Line> = lines
        .par_iter()
        .enumerate()
        .map(|(i, l)| match wanted {
            Some(w) if !w[i] => Ok(Line::not_done(Kind::Blank)),
            _ => BUFFERS
                .with_borrow_mut(|b| line(hasher, casefold, &record, make, l, b))
                .map_err(|e| e.at(i)),
        })
        .collect::<Result<_>>()?;
    let mut starts = Vec::with_capacity(lines.len() + 1);
    let mut start = 0u64;
    for l in &lines {
        starts.push(start);
        start += l.len() as u64 + 1;
    }
    starts.push(start);
    Ok(Lines::of(each, starts, sketch.is_some()))
}

impl Lines {
    /// The lines (or texts) `each` in one set of columns, with `starts`, and their sketches
    /// when `sketched`.
    pub(crate) fn of(each: Vec<Line>, starts: Vec<u64>, sketched: bool) -> Lines {
        let n = each.len();
        let mut out = Lines {
            kinds: Vec::with_capacity(n),
            fingerprints: Vec::with_capacity(n),
            lengths: Vec::with_capacity(n),
            starts,
            keys: Vec::with_capacity(n),
            sketches: None,
        };
        let total = each.iter().map(|l| l.sketch.len()).sum();
        let mut sketches = Sketches {
            offsets: Vec::with_capacity(n + 1),
            hashes: crate::runtime::memory::vec_in_huge_pages(total),
            keys: Vec::new(),
        };
        sketches.offsets.push(0);
        for l in each {
            out.kinds.push(l.kind as u8);
            out.fingerprints.push(l.fingerprint);
            out.lengths.push(l.length);
            out.keys.push(l.key);
            sketches.hashes.extend_from_slice(&l.sketch);
            sketches.offsets.push(sketches.hashes.len() as u64);
        }
        if sketched {
            out.sketches = Some(sketches);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fingerprint::simhash::Weighting;
    use crate::text::features::{FeatureConfig, TokenKind};

    fn hasher() -> Hasher {
        let features = FeatureConfig::new(TokenKind::Word, 1, None).unwrap();
        Hasher::new(features, Weighting::parse("tf").unwrap(), None, vec![1.0]).unwrap()
    }

    fn fp(text: &str) -> u64 {
        hasher().fingerprint(&[text], &mut Scratch::default())
    }

    /// The kind of each line of `block` (0 blank, 1 fingerprinted here, 2 for Python), text in
    /// "text", folding case, without sketches.
    fn kinds(block: &[u8], id_field: Option<&str>) -> Vec<u8> {
        fingerprint_lines(&hasher(), block, "text", id_field, true, None, None, None)
            .unwrap()
            .kinds
    }

    #[test]
    fn string_literals_are_unescaped_as_json_defines() {
        let mut out = Vec::new();
        let mut unescaped = |raw: &str| {
            unescape_ascii(raw.as_bytes(), &mut out)
                .map(|()| String::from_utf8(out.clone()).unwrap())
        };
        let all = r#""a\"b\\c\/d\be\ff\ng\rh\ti\u0041\u007e\u0000z""#;
        assert_eq!(
            unescaped(all).as_deref(),
            Some("a\"b\\c/d\u{8}e\u{c}f\ng\rh\tiA~\u{0}z")
        );
        // The same text as serde_json decodes it.
        assert_eq!(
            unescaped(all).unwrap(),
            serde_json::from_str::<String>(all).unwrap()
        );
        assert_eq!(unescaped(r#""plain text""#).as_deref(), Some("plain text"));
        assert_eq!(unescaped(r#""""#).as_deref(), Some(""));
        // Not ASCII, written or escaped, and values that are not strings: for Python.
        for raw in [
            r#""caf\u00e9""#,
            "\"café\"",
            r#""\ud83d\ude00""#,
            r#""\u0100""#,
            "null",
            "12",
            "[\"a\"]",
        ] {
            assert_eq!(unescaped(raw), None, "{raw}");
        }
    }

    #[test]
    fn ascii_texts_are_lowercased_and_fingerprinted() {
        let block = b"{\"id\": 1, \"text\": \"Hello World\", \"n\": [1, {\"a\": null}]}\n  \n{\"text\": \"tab\\tescape \\u0041\", \"id\": \"x\"}";
        let got = fingerprint_lines(&hasher(), block, "text", Some("id"), true, None, None, None)
            .unwrap();
        assert_eq!(got.kinds, vec![1, 0, 1]);
        assert_eq!(got.fingerprints[0], fp("hello world"));
        assert_eq!(got.fingerprints[2], fp("tab\tescape a"));
        assert_eq!(got.lengths, vec![11, 0, 12]);
        let at = |i: usize| &block[got.starts[i] as usize..got.starts[i + 1] as usize - 1];
        assert_eq!(at(1), b"  ");
        assert!(at(2).starts_with(b"{\"text\": \"tab") && at(2).ends_with(b"\"x\"}"));
        assert_eq!(got.starts.last(), Some(&(block.len() as u64 + 1)));
        let kept =
            fingerprint_lines(&hasher(), block, "text", None, false, None, None, None).unwrap();
        assert_eq!(kept.fingerprints[0], fp("Hello World"));
    }

    #[test]
    fn everything_else_goes_to_python() {
        let lines = [
            r#"{"text": "café"}"#,           // not ASCII
            r#"{"text": "\u00e9t\u00e9"}"#,  // not ASCII once unescaped
            r#"{"text": 3}"#,                // not a string
            r#"{"body": "x"}"#,              // no text field
            r#"["text", "x"]"#,              // not an object
            r#"{"text": "x""#,               // truncated
            r#"{"text": "x"} trailing"#,     // more after the object
            r#"{"text": "x", "text": "y"}"#, // given twice
            r#"{"text": "\ud800"}"#,         // a lone surrogate
            r#"{"text": "x", "n": NaN}"#,    // not JSON (Python's json reads it)
        ];
        let mut block: Vec<u8> = lines.join("\n").into_bytes();
        block.extend_from_slice(b"\n{\"text\": \"\xff\"}"); // not UTF-8
        block.extend_from_slice(b"\n{\"text\": \"x\", \"other\": \"\xff\"}"); // not UTF-8 in another field
        block.extend_from_slice(b"\n{\"text\": \"x\", \"n\": [\"\xc3\x28\"]}"); // nor deeper in it
        let deep = format!(
            "\n{{\"text\": \"x\", \"n\": {}{}}}",
            "[".repeat(129),
            "]".repeat(129)
        ); // nested deep
        block.extend_from_slice(deep.as_bytes());
        assert_eq!(kinds(&block, None), vec![2; 14]);
        let shallow = format!(
            "{{\"text\": \"x\", \"n\": {}{}}}",
            "[".repeat(127),
            "]".repeat(127)
        );
        assert_eq!(kinds(shallow.as_bytes(), None), vec![1]);
        // An id field asked for and missing, or given twice.
        let block = br#"{"text": "x"}
{"text": "x", "id": 1, "id": 2}
{"text": "x", "id": null}"#;
        assert_eq!(kinds(block, Some("id")), vec![2, 2, 1]);
    }

    #[test]
    fn sketches_are_those_of_the_normalized_texts() {
        let block = b"{\"text\": \"The Quick brown fox\"}\n{\"text\": \"caf\\u00e9 au lait\"}\n\n{\"text\": \"\"}";
        let config = verify::shingle_config(3, 8).unwrap();
        let got = fingerprint_lines(
            &hasher(),
            block,
            "text",
            None,
            true,
            Some(config),
            None,
            None,
        )
        .unwrap();
        assert_eq!(got.kinds, vec![1, 2, 0, 1]);
        let want = verify::sketches(config, &["the quick brown fox", "", "", ""]);
        let s = got.sketches.unwrap();
        assert_eq!(s.get(0), want.get(0));
        // Two shingles, with their checks.
        assert_eq!(verify::shingles_of(s.get(0)).len(), 2);
        assert_eq!(s.get(0).len(), 4);
        assert!(s.get(1).is_empty() && s.get(2).is_empty() && s.get(3).is_empty());
    }

    #[test]
    fn a_second_read_sketches_the_wanted_lines_alone() {
        let texts = [
            "The Quick brown fox jumps",
            "over the lazy dog",
            "a b a b a b",
            "one",
        ];
        let block: Vec<u8> = texts
            .iter()
            .map(|t| format!("{{\"text\": \"{t}\"}}"))
            .collect::<Vec<_>>()
            .join("\n")
            .into_bytes();
        let config = verify::shingle_config(3, 8).unwrap();
        let first = fingerprint_lines(
            &hasher(),
            &block,
            "text",
            None,
            true,
            Some(config),
            None,
            None,
        )
        .unwrap();
        let wanted = [true, false, true, true];
        let again = fingerprint_lines(
            &hasher(),
            &block,
            "text",
            None,
            true,
            Some(config),
            Some(&wanted),
            None,
        )
        .unwrap();
        assert_eq!(again.kinds, vec![1, 0, 1, 1]);
        let (a, b) = (first.sketches.unwrap(), again.sketches.unwrap());
        for (i, text) in texts.iter().enumerate() {
            let folded = text.to_lowercase();
            // The same sketch as the first read's, which is that of the text on its own.
            assert_eq!(
                a.get(i),
                verify::sketches(config, &[folded.as_str()]).get(0)
            );
            if wanted[i] {
                assert_eq!(b.get(i), a.get(i), "{text}");
                assert!(!b.get(i).is_empty());
            } else {
                assert!(b.get(i).is_empty());
            }
        }
        // Only sketched: no fingerprint or key is made again.
        assert!(again.fingerprints.iter().all(|&f| f == 0));
        assert!(again.keys.iter().all(|&k| k == [0, 0]));
        assert_ne!(first.fingerprints[0], 0);
    }

    #[test]
    fn blank_lines_are_pythons_isspace() {
        assert_eq!(kinds(b"\n \t\r\x0b\x0c\n", None), vec![0, 0, 0]);
    }
}
