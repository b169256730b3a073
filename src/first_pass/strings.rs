//! The fast path of a column of strings laid out as Arrow lays them out (one buffer of UTF-8,
//! text i at `data[offsets[i]..offsets[i + 1]]`): a Parquet file's text column, digested here
//! with no Python string made.
//!
//! A text that is ASCII is normalized and digested as the JSONL fast path does it
//! ([`crate::first_pass::jsonl::ascii_text`]); any other (not ASCII, or not UTF-8) is marked
//! [`Kind::Slow`] and left to Python, which normalizes it, or names what is wrong with it.

use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::fingerprint::simhash::Hasher;
use crate::first_pass::digest::KeySet;
use crate::first_pass::jsonl::{ascii_text, Kind, Line, Lines, BUFFERS};
use crate::sketch::verify::ShingleConfig;

/// Checks that `offsets` cut `data` into texts: at least one offset, none negative or
/// decreasing, the last within `data`.
fn check_offsets(offsets: &[i64], data: &[u8]) -> Result<()> {
    let Some(&last) = offsets.last() else {
        return Err(Error::invalid(
            "offsets must hold one more entry than the texts",
        ));
    };
    if offsets[0] < 0 || offsets.windows(2).any(|w| w[1] < w[0]) {
        return Err(Error::invalid("offsets must not be negative or decrease"));
    }
    if last as u64 > data.len() as u64 {
        return Err(Error::invalid(format!(
            "offsets reach byte {last} of a buffer of {}",
            data.len()
        )));
    }
    Ok(())
}

/// Digests the texts of `(offsets, data)` in parallel: per text its kind (done here, or slow:
/// for Python), fingerprint, length (bytes = characters: ASCII) and content key, and with
/// `sketch` the shingle sketch of each text done here. With `seen`, a text whose key it holds
/// takes the fingerprint recorded there and no sketch. `starts` is left empty. The hasher must
/// take documents of one field.
pub fn fingerprint_strings(
    hasher: &Hasher,
    offsets: &[i64],
    data: &[u8],
    casefold: bool,
    sketch: Option<ShingleConfig>,
    seen: Option<&KeySet>,
) -> Result<Lines> {
    if hasher.fields() != 1 {
        return Err(Error::invalid(
            "the strings fast path fingerprints documents of one field",
        ));
    }
    check_offsets(offsets, data)?;
    let n = offsets.len() - 1;
    let each: Vec<Line> = (0..n)
        .into_par_iter()
        .with_min_len(64)
        .map(|i| {
            let text = &data[offsets[i] as usize..offsets[i + 1] as usize];
            if !text.is_ascii() || text.len() > u32::MAX as usize {
                return Ok(Line::not_done(Kind::Slow));
            }
            BUFFERS
                .with_borrow_mut(|b| {
                    crate::error::try_room(&mut b.text, text.len(), "a copy of a text")?;
                    b.text.extend_from_slice(text);
                    let done = ascii_text(
                        hasher,
                        casefold,
                        (sketch, true, seen),
                        &mut b.text,
                        &mut b.scratch,
                    );
                    b.release_after(text.len());
                    done
                })
                .map_err(|e| e.at(i))
        })
        .collect::<Result<_>>()?;
    Ok(Lines::of(each, Vec::new(), sketch.is_some()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fingerprint::simhash::Weighting;
    use crate::first_pass::jsonl::fingerprint_lines;
    use crate::text::features::{FeatureConfig, Scratch, TokenKind};

    fn hasher() -> Hasher {
        let features = FeatureConfig::new(TokenKind::Word, 1, None).unwrap();
        Hasher::new(features, Weighting::parse("tf").unwrap(), None, vec![1.0]).unwrap()
    }

    fn column(texts: &[&[u8]]) -> (Vec<i64>, Vec<u8>) {
        let mut offsets = vec![0i64];
        let mut data = Vec::new();
        for t in texts {
            data.extend_from_slice(t);
            offsets.push(data.len() as i64);
        }
        (offsets, data)
    }

    #[test]
    fn ascii_texts_are_digested_as_their_folded_text_and_others_left_to_python() {
        let texts: [&[u8]; 6] = [
            b"The Quick brown fox",
            b"",
            "caf\u{e9} au lait".as_bytes(),
            b"\xff\xfe not utf-8",
            b"the quick BROWN fox",
            b"jumps over the lazy dog",
        ];
        let (offsets, data) = column(&texts);
        let config = crate::sketch::verify::digest_config(3, 64).unwrap();
        let got =
            fingerprint_strings(&hasher(), &offsets, &data, true, Some(config), None).unwrap();
        assert_eq!(got.kinds, vec![1, 1, 2, 2, 1, 1]);
        let mut scratch = Scratch::default();
        let sketches = got.sketches.unwrap();
        for (i, t) in texts.iter().enumerate() {
            if got.kinds[i] != 1 {
                assert_eq!(got.fingerprints[i], 0);
                assert_eq!(sketches.offsets[i], sketches.offsets[i + 1]);
                continue;
            }
            // The fingerprint, key and sketch of the lowercased text, made directly.
            let folded = String::from_utf8(t.to_ascii_lowercase()).unwrap();
            assert_eq!(
                got.fingerprints[i],
                hasher().fingerprint(&[&folded], &mut scratch)
            );
            assert_eq!(
                got.keys[i],
                crate::sketch::verify::content_key(folded.as_bytes())
            );
            assert_eq!(got.lengths[i] as usize, t.len());
            let mut want = Vec::new();
            crate::first_pass::digest::sketch_after_fingerprint(
                &hasher(),
                config,
                &folded,
                &mut scratch,
                &mut want,
            );
            let (a, b) = (
                sketches.offsets[i] as usize,
                sketches.offsets[i + 1] as usize,
            );
            assert_eq!(sketches.hashes[a..b], want[..]);
        }
        // Two texts equal once folded share their key and fingerprint.
        assert_eq!(got.keys[0], got.keys[4]);
        assert_eq!(got.fingerprints[0], got.fingerprints[4]);
    }

    #[test]
    fn the_strings_path_agrees_with_the_jsonl_path() {
        let texts: [&[u8]; 3] = [b"Alpha beta Gamma delta", b"one two", b"  spaced   out  "];
        let (offsets, data) = column(&texts);
        let block: Vec<u8> = texts
            .iter()
            .map(|t| format!("{{\"text\": \"{}\"}}", std::str::from_utf8(t).unwrap()))
            .collect::<Vec<_>>()
            .join("\n")
            .into_bytes();
        let config = crate::sketch::verify::digest_config(2, 16).ok();
        let a = fingerprint_strings(&hasher(), &offsets, &data, true, config, None).unwrap();
        let b =
            fingerprint_lines(&hasher(), &block, "text", None, true, config, None, None).unwrap();
        assert_eq!(a.kinds, b.kinds);
        assert_eq!(a.fingerprints, b.fingerprints);
        assert_eq!(a.keys, b.keys);
        assert_eq!(a.lengths, b.lengths);
        assert_eq!(a.sketches, b.sketches);
    }

    #[test]
    fn offsets_that_do_not_cut_the_buffer_are_errors() {
        let h = hasher();
        for offsets in [vec![], vec![-1, 2], vec![0, 3, 2], vec![0, 9]] {
            assert!(fingerprint_strings(&h, &offsets, b"abcd", false, None, None).is_err());
        }
        let empty = fingerprint_strings(&h, &[4], b"abcd", false, None, None).unwrap();
        assert!(empty.kinds.is_empty());
    }
}
