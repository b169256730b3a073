//! Fingerprints, one document or many: bit i of a fingerprint is 1 iff tally i of the weighted
//! tallies of its features ([`crate::fingerprint::tally`]) is positive. A feature's hash is
//! [`crate::text::hash::feature_hash`], its FNV-1a 64 through [`fmix64`]; a feature of weight w
//! adds w to tally i where bit i of its hash is 1 and subtracts w where it is 0. Each document is
//! computed alone, so a fingerprint never depends on the thread count.

use std::collections::{HashMap, HashSet};

use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::fingerprint::tally::{add_float, BitCounter};
use crate::text::features::{FeatureConfig, Field, Scratch};
use crate::text::hash::{fmix64, FoldState};
use crate::text::normal::{self, Fold};

/// How the features of one document are weighted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Weighting {
    /// Every occurrence of a feature counts once.
    Tf,
    /// Each distinct feature counts once.
    Binary,
    /// Every occurrence counts its inverse document frequency (tf·idf), learned by a fit.
    Idf,
}

impl Weighting {
    /// Parses `"tf"`, `"binary"` or `"idf"`.
    pub fn parse(name: &str) -> Result<Self> {
        match name {
            "tf" => Ok(Weighting::Tf),
            "binary" => Ok(Weighting::Binary),
            "idf" => Ok(Weighting::Idf),
            other => Err(Error::invalid(format!(
                "weighting must be \"tf\", \"binary\" or \"idf\", got {other:?}"
            ))),
        }
    }
}

/// The fingerprint of unit-weight tallies: bit i is 1 iff count_i > total − count_i.
pub fn fingerprint_of_counts(counts: &[u64; 64], total: u64) -> u64 {
    let mut fp = 0u64;
    for (i, &c) in counts.iter().enumerate() {
        fp |= u64::from(c > total - c) << i;
    }
    fp
}

/// Bit i is 1 iff tally i > 0.
pub fn fingerprint_of_tallies<T: PartialOrd + Default>(tallies: &[T; 64]) -> u64 {
    let zero = T::default();
    let mut fp = 0u64;
    for (i, t) in tallies.iter().enumerate() {
        fp |= u64::from(*t > zero) << i;
    }
    fp
}

/// A map keyed by feature hashes.
pub type HashKeyMap<V> = HashMap<u64, V, FoldState>;
type HashKeySet = HashSet<u64, FoldState>;

/// Inverse document frequencies of feature hashes.
#[derive(Clone, Debug, Default)]
pub struct Idf {
    weights: HashKeyMap<f64>,
    unseen: f64,
    documents: u64,
}

/// Idf weights are multiples of this step: with weights on a binary grid the float tallies are
/// exact sums, so they cannot depend on summation order or on a platform's last-bit rounding.
pub const IDF_STEP: f64 = 1.0 / 1024.0;

/// Smoothed idf, ln((1 + N) / (1 + df)) + 1, rounded to a multiple of [`IDF_STEP`].
pub fn idf_weight(documents: u64, df: u64) -> f64 {
    let raw = ((1.0 + documents as f64) / (1.0 + df as f64)).ln() + 1.0;
    (raw / IDF_STEP).round() * IDF_STEP
}

impl Idf {
    /// From document frequencies over a corpus of `documents` documents.
    pub fn from_frequencies(documents: u64, keys: &[u64], dfs: &[u64]) -> Result<Self> {
        if keys.len() != dfs.len() {
            return Err(Error::invalid(format!(
                "idf needs one document frequency per key: {} keys, {} frequencies",
                keys.len(),
                dfs.len()
            )));
        }
        if let Some(&df) = dfs.iter().find(|&&df| df > documents || df == 0) {
            return Err(Error::invalid(format!(
                "document frequencies must be in 1..={documents}, got {df}"
            )));
        }
        let weights = keys
            .iter()
            .zip(dfs)
            .map(|(&k, &df)| (k, idf_weight(documents, df)))
            .collect();
        Ok(Idf {
            weights,
            unseen: idf_weight(documents, 0),
            documents,
        })
    }

    /// The weight of one feature hash; features never seen in the fit weigh most.
    #[inline]
    pub fn weight(&self, hash: u64) -> f64 {
        self.weights.get(&hash).copied().unwrap_or(self.unseen)
    }

    /// The number of documents of the fit.
    pub fn documents(&self) -> u64 {
        self.documents
    }
}

/// Everything that turns documents into fingerprints.
#[derive(Clone, Debug)]
pub struct Hasher {
    features: FeatureConfig,
    weighting: Weighting,
    idf: Option<Idf>,
    /// One weight per field of a document; `[1.0]` for plain texts.
    field_weights: Vec<f64>,
    /// The field weights as integers, when all of them are (the exact integer path).
    int_field_weights: Option<Vec<i64>>,
}

/// Field weights above this are refused: far past any useful ratio, and it keeps integer tallies
/// far from overflow.
pub const MAX_FIELD_WEIGHT: f64 = 1e9;

/// Batches smaller than this run on the calling thread: below it, waking the pool costs more than
/// it saves (measured with benches/bench_fingerprint.py).
pub const PARALLEL_MIN_DOCS: usize = 64;

impl Hasher {
    /// A hasher; `idf` is required with [`Weighting::Idf`] and refused otherwise.
    pub fn new(
        features: FeatureConfig,
        weighting: Weighting,
        idf: Option<Idf>,
        field_weights: Vec<f64>,
    ) -> Result<Self> {
        if field_weights.is_empty() {
            return Err(Error::invalid("field weights must name at least one field"));
        }
        if let Some(w) = field_weights
            .iter()
            .find(|w| !(w.is_finite() && **w > 0.0 && **w <= MAX_FIELD_WEIGHT))
        {
            return Err(Error::invalid(format!(
                "field weights must be positive numbers up to {MAX_FIELD_WEIGHT:e}, got {w}"
            )));
        }
        match (weighting, &idf) {
            (Weighting::Idf, None) => {
                return Err(Error::invalid(
                    "weighting=\"idf\" needs document frequencies: call fit(corpus) first",
                ))
            }
            (Weighting::Tf | Weighting::Binary, Some(_)) => {
                return Err(Error::invalid(
                    "idf weights are only used with weighting=\"idf\"",
                ))
            }
            _ => {}
        }
        let int_field_weights = field_weights
            .iter()
            .map(|&w| (w.fract() == 0.0).then_some(w as i64))
            .collect::<Option<Vec<i64>>>()
            .filter(|_| weighting != Weighting::Idf);
        Ok(Hasher {
            features,
            weighting,
            idf,
            field_weights,
            int_field_weights,
        })
    }

    /// The feature configuration.
    pub fn features(&self) -> &FeatureConfig {
        &self.features
    }

    /// The number of fields of a document.
    pub fn fields(&self) -> usize {
        self.field_weights.len()
    }

    /// The features of one field of a document with the weight each one adds, in the order they
    /// are summed: exactly what [`Hasher::fingerprint`] hashes.
    pub fn weighted_features(&self, field: usize, text: &str) -> Vec<(String, f64)> {
        self.weighted_features_of(field, text)
    }

    /// [`Hasher::weighted_features`] of one field given as text or as pre-split tokens.
    pub fn weighted_features_of<F: Field + ?Sized>(
        &self,
        field: usize,
        doc: &F,
    ) -> Vec<(String, f64)> {
        let features = doc.features(&self.features);
        let fw = self.field_weights.get(field).copied().unwrap_or(1.0);
        let mut seen = std::collections::HashSet::new();
        features
            .into_iter()
            .filter(|f| self.weighting != Weighting::Binary || seen.insert(f.clone()))
            .map(|f| {
                let w = match &self.idf {
                    Some(idf) => fw * idf.weight(crate::text::hash::feature_hash(f.as_bytes())),
                    None => fw,
                };
                (f, w)
            })
            .collect()
    }

    /// The fingerprint of one document given as one text per field.
    pub fn fingerprint(&self, fields: &[&str], scratch: &mut Scratch) -> u64 {
        self.fingerprint_of(fields, scratch)
    }

    /// The fingerprint of one document given as one text, or one list of tokens, per field.
    pub fn fingerprint_of<F: Field + ?Sized>(&self, fields: &[&F], scratch: &mut Scratch) -> u64 {
        match &self.int_field_weights {
            Some(fws) => self.fingerprint_int(fields, fws, scratch),
            None => self.fingerprint_float(fields, scratch),
        }
    }

    fn fingerprint_int<F: Field + ?Sized>(
        &self,
        fields: &[&F],
        fws: &[i64],
        scratch: &mut Scratch,
    ) -> u64 {
        // Σ_fields w_f · (2·count − total): exact, and the fast path for one field of weight 1.
        let mut tallies = [0i128; 64];
        for (&text, &fw) in fields.iter().zip(fws) {
            text.hash_features(&self.features, scratch);
            if self.weighting == Weighting::Binary {
                let hashes = scratch.feature_hashes_mut();
                hashes.sort_unstable();
                hashes.dedup();
            }
            let mut counter = BitCounter::default();
            counter.add_all_mapped(scratch.feature_hashes(), fmix64);
            let (counts, total) = counter.finish();
            if fields.len() == 1 && fw == 1 {
                return fingerprint_of_counts(&counts, total);
            }
            let (fw, total) = (i128::from(fw), i128::from(total));
            for (t, &c) in tallies.iter_mut().zip(&counts) {
                *t += fw * (2 * i128::from(c) - total);
            }
        }
        fingerprint_of_tallies(&tallies)
    }

    fn fingerprint_float<F: Field + ?Sized>(&self, fields: &[&F], scratch: &mut Scratch) -> u64 {
        let mut tallies = [0f64; 64];
        let mut seen = HashKeySet::default();
        for (&text, &fw) in fields.iter().zip(&self.field_weights) {
            text.hash_features(&self.features, scratch);
            seen.clear();
            for &h in scratch.feature_hashes() {
                if self.weighting == Weighting::Binary && !seen.insert(h) {
                    continue;
                }
                let h = fmix64(h);
                let w = match &self.idf {
                    Some(idf) => fw * idf.weight(h),
                    None => fw,
                };
                add_float(&mut tallies, h, w);
            }
        }
        fingerprint_of_tallies(&tallies)
    }

    /// Fingerprints of many documents: `fields[f][d]` is field f of document d. Parallel over
    /// documents; each document is computed alone, so the result is the same for any number of
    /// threads.
    pub fn fingerprint_many<S: AsRef<str> + Sync>(&self, fields: &[&[S]]) -> Result<Vec<u64>> {
        self.fingerprint_many_of::<str, S>(fields)
    }

    /// [`Hasher::fingerprint_many`] of one-field documents folded first (each text read through
    /// [`normal::fold`]): ASCII capitals to lower case and wide characters to ASCII, what
    /// case folding and the compatibility forms make of them, done here on all cores instead of
    /// in Python.
    pub fn fingerprint_many_folded<S: AsRef<str> + Sync>(
        &self,
        texts: &[S],
        fold: Fold,
    ) -> Result<Vec<u64>> {
        self.check_fields(&[texts])?;
        let one = |(scratch, buf): &mut (Scratch, String), (d, text): (usize, &S)| {
            let text = text.as_ref();
            self.features
                .reserve(text, false, scratch)
                .and_then(|()| crate::error::try_room_text(buf, text, fold))
                .map_err(|e| e.at(d))?;
            let fingerprint = self.fingerprint(&[normal::fold(text, fold, buf)], scratch);
            scratch.release_after(text.len());
            Ok(fingerprint)
        };
        if texts.len() < PARALLEL_MIN_DOCS {
            let mut state = Default::default();
            return texts
                .iter()
                .enumerate()
                .map(|t| one(&mut state, t))
                .collect();
        }
        texts
            .par_iter()
            .enumerate()
            .with_min_len(16)
            .map_init(Default::default, one)
            .collect()
    }

    /// [`Hasher::fingerprint_many`] of documents whose fields are lists of pre-split tokens:
    /// `fields[f][d]` is the tokens of field f of document d.
    pub fn fingerprint_tokens_many<T, D>(&self, fields: &[&[D]]) -> Result<Vec<u64>>
    where
        T: AsRef<str> + Sync,
        D: AsRef<[T]> + Sync,
    {
        self.fingerprint_many_of::<[T], D>(fields)
    }

    fn fingerprint_many_of<F, S>(&self, fields: &[&[S]]) -> Result<Vec<u64>>
    where
        F: Field + Sync + ?Sized,
        S: AsRef<F> + Sync,
    {
        let n = self.check_fields(fields)?;
        if n < PARALLEL_MIN_DOCS {
            let (mut scratch, mut doc) = (Scratch::default(), Vec::new());
            return (0..n)
                .map(|d| self.fingerprint_at(fields, d, &mut scratch, &mut doc))
                .collect();
        }
        (0..n)
            .into_par_iter()
            .with_min_len(16)
            .map_init(
                || (Scratch::default(), Vec::new()),
                |(scratch, doc), d| self.fingerprint_at(fields, d, scratch, doc),
            )
            .collect()
    }

    /// The fingerprint of document `d` of `fields`, with `doc` as room for its field texts:
    /// [`Error::OutOfMemoryAt`] `d` when the buffers of a long field cannot be had.
    fn fingerprint_at<'a, F: Field + ?Sized + 'a, S: AsRef<F>>(
        &self,
        fields: &[&'a [S]],
        d: usize,
        scratch: &mut Scratch,
        doc: &mut Vec<&'a F>,
    ) -> Result<u64> {
        doc.clear();
        doc.extend(fields.iter().map(|f| f[d].as_ref()));
        for field in doc.iter() {
            field
                .reserve(&self.features, scratch)
                .map_err(|e| e.at(d))?;
        }
        let fingerprint = self.fingerprint_of(doc, scratch);
        scratch.release_after(doc.iter().map(|f| f.size()).sum());
        Ok(fingerprint)
    }

    fn check_fields<S>(&self, fields: &[&[S]]) -> Result<usize> {
        if fields.len() != self.fields() {
            return Err(Error::invalid(format!(
                "expected {} fields per document, got {}",
                self.fields(),
                fields.len()
            )));
        }
        let n = fields.first().map_or(0, |f| f.len());
        if fields.iter().any(|f| f.len() != n) {
            return Err(Error::invalid(
                "every field must hold one text per document",
            ));
        }
        Ok(n)
    }

    /// Document frequencies of the feature hashes of a corpus (a feature counts once per
    /// document, whichever fields it is in): sorted keys and their counts.
    pub fn document_frequencies<S: AsRef<str> + Sync>(
        &self,
        fields: &[&[S]],
    ) -> Result<(Vec<u64>, Vec<u64>)> {
        self.document_frequencies_of::<str, S>(fields)
    }

    /// [`Hasher::document_frequencies`] of documents given as pre-split tokens.
    pub fn document_frequencies_tokens<T, D>(&self, fields: &[&[D]]) -> Result<(Vec<u64>, Vec<u64>)>
    where
        T: AsRef<str> + Sync,
        D: AsRef<[T]> + Sync,
    {
        self.document_frequencies_of::<[T], D>(fields)
    }

    fn document_frequencies_of<F, S>(&self, fields: &[&[S]]) -> Result<(Vec<u64>, Vec<u64>)>
    where
        F: Field + Sync + ?Sized,
        S: AsRef<F> + Sync,
    {
        let n = self.check_fields(fields)?;
        let merged = (0..n)
            .into_par_iter()
            .with_min_len(64)
            .fold(
                || (Scratch::default(), Vec::new(), HashKeyMap::<u64>::default()),
                |(mut scratch, mut distinct, mut df), d| {
                    distinct.clear();
                    for f in fields {
                        f[d].as_ref().hash_features(&self.features, &mut scratch);
                        distinct.extend(scratch.feature_hashes().iter().map(|&h| fmix64(h)));
                    }
                    distinct.sort_unstable();
                    distinct.dedup();
                    for &h in &distinct {
                        *df.entry(h).or_insert(0) += 1;
                    }
                    (scratch, distinct, df)
                },
            )
            .map(|(_, _, df)| df)
            .reduce(HashKeyMap::default, |mut a, mut b| {
                if a.len() < b.len() {
                    std::mem::swap(&mut a, &mut b);
                }
                for (k, v) in b {
                    *a.entry(k).or_insert(0) += v;
                }
                a
            });
        let mut pairs: Vec<(u64, u64)> = merged.into_iter().collect();
        pairs.sort_unstable();
        Ok(pairs.into_iter().unzip())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fingerprint::tally::{tallies_float, tallies_int};
    use crate::text::features::TokenKind;
    use crate::text::hash::feature_hash;

    #[test]
    fn bad_weights_are_errors() {
        assert!(tallies_int(&[1, 2], Some(&[1])).is_err());
        assert!(tallies_float(&[1], &[f64::NAN]).is_err());
        let features = FeatureConfig::new(TokenKind::Word, 3, None).unwrap();
        assert!(Hasher::new(features.clone(), Weighting::Idf, None, vec![1.0]).is_err());
        assert!(Hasher::new(features.clone(), Weighting::Tf, None, vec![0.0]).is_err());
        assert!(Hasher::new(features, Weighting::Tf, None, vec![]).is_err());
    }

    #[test]
    fn batch_equals_one_by_one_for_every_weighting() {
        let texts: Vec<String> = (0..300)
            .map(|i| {
                format!(
                    "document {i} shares words with document {} and more {}",
                    i % 17,
                    i % 5
                )
            })
            .collect();
        let titles: Vec<String> = (0..300).map(|i| format!("title {}", i % 11)).collect();
        let features = FeatureConfig::new(TokenKind::Word, 2, None).unwrap();
        let plain = Hasher::new(features.clone(), Weighting::Tf, None, vec![1.0]).unwrap();
        let (keys, dfs) = plain.document_frequencies(&[&texts[..]]).unwrap();
        let idf = Idf::from_frequencies(300, &keys, &dfs).unwrap();
        for (weighting, idf, fw) in [
            (Weighting::Tf, None, vec![2.0, 1.0]),
            (Weighting::Binary, None, vec![2.0, 1.0]),
            (Weighting::Binary, None, vec![1.5, 1.0]),
            (Weighting::Idf, Some(idf), vec![2.0, 1.0]),
        ] {
            let hasher = Hasher::new(features.clone(), weighting, idf, fw).unwrap();
            let many = hasher.fingerprint_many(&[&titles[..], &texts[..]]).unwrap();
            let mut scratch = Scratch::default();
            for d in 0..texts.len() {
                assert_eq!(
                    many[d],
                    hasher.fingerprint(&[&titles[d], &texts[d]], &mut scratch)
                );
                // The weighted features reproduce the fingerprint through the float tallies.
                let (mut hashes, mut weights) = (Vec::new(), Vec::new());
                for (f, text) in [&titles[d], &texts[d]].iter().enumerate() {
                    for (feature, w) in hasher.weighted_features(f, text) {
                        hashes.push(feature_hash(feature.as_bytes()));
                        weights.push(w);
                    }
                }
                let t = tallies_float(&hashes, &weights).unwrap();
                assert_eq!(many[d], fingerprint_of_tallies(&t), "{weighting:?} doc {d}");
            }
        }
    }

    #[test]
    fn pre_split_tokens_give_the_fingerprints_of_the_text() {
        let texts: Vec<String> = (0..200)
            .map(|i| {
                format!(
                    "doc {i} shares words with doc {} and more {} of the same",
                    i % 13,
                    i % 4
                )
            })
            .collect();
        let tokens: Vec<Vec<&str>> = texts.iter().map(|t| t.split(' ').collect()).collect();
        let titles: Vec<String> = (0..200).map(|i| format!("title {}", i % 7)).collect();
        let title_tokens: Vec<Vec<&str>> = titles.iter().map(|t| t.split(' ').collect()).collect();
        let features = FeatureConfig::new(TokenKind::Word, 2, Some(vec!["of".into()])).unwrap();
        let plain = Hasher::new(features.clone(), Weighting::Tf, None, vec![1.0]).unwrap();
        let (keys, dfs) = plain.document_frequencies(&[&texts[..]]).unwrap();
        assert_eq!(
            plain.document_frequencies_tokens(&[&tokens[..]]).unwrap(),
            (keys.clone(), dfs.clone())
        );
        let idf = Idf::from_frequencies(200, &keys, &dfs).unwrap();
        for (weighting, idf, fw) in [
            (Weighting::Tf, None, vec![1.0, 1.0]),
            (Weighting::Binary, None, vec![2.0, 1.0]),
            (Weighting::Tf, None, vec![1.5, 1.0]),
            (Weighting::Idf, Some(idf), vec![2.0, 1.0]),
        ] {
            let hasher = Hasher::new(features.clone(), weighting, idf, fw).unwrap();
            let from_text = hasher.fingerprint_many(&[&titles[..], &texts[..]]).unwrap();
            let from_tokens = hasher
                .fingerprint_tokens_many(&[&title_tokens[..], &tokens[..]])
                .unwrap();
            assert_eq!(from_text, from_tokens, "{weighting:?}");
            assert_eq!(
                hasher.weighted_features_of(1, &tokens[3][..]),
                hasher.weighted_features(1, &texts[3])
            );
        }
    }

    #[test]
    fn folded_batches_equal_the_lowercased_texts() {
        let mut buf = String::new();
        let ascii = Fold {
            ascii: true,
            wide: false,
            map: &[],
        };
        assert_eq!(
            normal::fold("Ünïcode ÉTÉ Mixed", ascii, &mut buf),
            "Ünïcode ÉtÉ mixed"
        );
        let texts: Vec<String> = (0..300)
            .map(|i| match i % 3 {
                0 => format!("Document {i} SHARES words with Document {}", i % 17),
                1 => format!("déjà vu ÀLA {i} Café"),
                _ => format!("already lower {}", i % 5),
            })
            .collect();
        let lower: Vec<String> = texts.iter().map(|t| t.to_ascii_lowercase()).collect();
        for (tokens, stopwords) in [
            (TokenKind::Word, Some(vec!["with".into()])),
            (TokenKind::Char, None),
        ] {
            let features = FeatureConfig::new(tokens, 2, stopwords).unwrap();
            let hasher = Hasher::new(features, Weighting::Tf, None, vec![1.0]).unwrap();
            let want = hasher.fingerprint_many(&[&lower[..]]).unwrap();
            assert_eq!(hasher.fingerprint_many_folded(&texts, ascii).unwrap(), want);
            assert_eq!(
                hasher.fingerprint_many_folded(&texts[..10], ascii).unwrap(),
                want[..10]
            );
            assert_ne!(hasher.fingerprint_many(&[&texts[..]]).unwrap(), want);
        }
        let two = FeatureConfig::new(TokenKind::Word, 1, None).unwrap();
        let two = Hasher::new(two, Weighting::Tf, None, vec![1.0, 1.0]).unwrap();
        assert!(two.fingerprint_many_folded(&texts, ascii).is_err());
    }

    #[test]
    fn document_frequencies_count_documents() {
        let texts = ["a b a", "b c", "c c c"];
        let features = FeatureConfig::new(TokenKind::Word, 1, None).unwrap();
        let hasher = Hasher::new(features, Weighting::Tf, None, vec![1.0]).unwrap();
        let (keys, dfs) = hasher.document_frequencies(&[&texts[..]]).unwrap();
        let mut want: Vec<(u64, u64)> = [("a", 1), ("b", 2), ("c", 2)]
            .iter()
            .map(|&(w, n)| (feature_hash(w.as_bytes()), n))
            .collect();
        want.sort_unstable();
        assert_eq!(keys.into_iter().zip(dfs).collect::<Vec<_>>(), want);
    }
}
