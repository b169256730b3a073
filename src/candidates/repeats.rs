//! Which shingle hashes more than one text holds, counted on every text in two bit tables.
//!
//! The rarity order ([`crate::candidates::rarity`]) counts its hashes on a sample of the texts, one
//! in 16: a hash held by fewer than about 32 texts is seldom seen twice there, so it ranks with the
//! hashes no other text holds. Prefix filtering then lists such hashes as often as truly unique
//! ones, and every text sharing one becomes a candidate: on 1M synthetic short texts 12.5M
//! candidate pairs, against 0.57M in the order counted exactly on every text.
//!
//! [`Repeats`] tells the two apart at the cost of two bits a slot: each hash marks its slot
//! *seen*, and a slot already seen is marked *repeated*. A hash held by two texts or more always
//! lands on a repeated slot; a unique hash does too when another hash shares its slot (a false
//! positive, about `1 - exp(-distinct / slots)` of them), which only costs candidates, never a
//! pair: any order that every text shares keeps prefix filtering exact. Sized at two slots a
//! hash, the same 1M texts give 1.3M candidate pairs. Past [`MOST_BITS`] the tables stop
//! growing, and more hashes fill them: the order then drifts back towards the sample's alone,
//! whose candidates it can only lower.

use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::sketch::verify::{shingles_of, Ranges, SketchHash};
use crate::text::hash::fmix64;

/// The fewest bits of a slot number (a table of 8 KiB).
pub const FEWEST_BITS: u32 = 16;
/// The most bits of a slot number: two tables of 512 MiB, for 2^31 hashes and more.
pub const MOST_BITS: u32 = 32;

/// The bits of a slot number for sketches holding `hashes` hashes in all: two slots a hash,
/// within [`FEWEST_BITS`] and [`MOST_BITS`].
pub fn bits_for(hashes: u64) -> u32 {
    let slots = hashes.saturating_mul(2).max(1);
    let bits = 64 - (slots - 1).leading_zeros();
    bits.clamp(FEWEST_BITS, MOST_BITS)
}

fn check_bits(bits: u32) -> Result<()> {
    if (FEWEST_BITS..=MOST_BITS).contains(&bits) {
        Ok(())
    } else {
        Err(Error::invalid(format!(
            "the bits of a slot must be in {FEWEST_BITS}..={MOST_BITS}, got {bits}"
        )))
    }
}

/// The slots of the shingle hashes of every sketch (checks left out), sorted, each at most
/// twice: what one share of a corpus's texts tells of the slots, a slot given twice being
/// repeated within the share already. Every share's slots of a range of the table, put together
/// ([`repeated_words`]), mark the same slots repeated as [`Repeats::add_sketches`] of every
/// text: a cluster marks its corpus from slots moved by range, four bytes a hash at most.
pub fn slots_of(sketches: &Ranges<'_>, bits: u32) -> Result<Vec<u32>> {
    check_bits(bits)?;
    let held: usize = (0..sketches.len())
        .map(|d| shingles_of(sketches.get(d)).len())
        .sum();
    let mut slots: Vec<u32> = Vec::with_capacity(held);
    for d in 0..sketches.len() {
        // A slot has at most MOST_BITS = 32 bits.
        slots.extend(
            shingles_of(sketches.get(d))
                .iter()
                .map(|&h| slot(h, bits) as u32),
        );
    }
    radix_sort(&mut slots, bits);
    let mut kept = 0;
    for i in 0..slots.len() {
        if kept < 2 || slots[kept - 2] != slots[i] {
            slots[kept] = slots[i];
            kept += 1;
        }
    }
    slots.truncate(kept);
    Ok(slots)
}

/// Sorts `values` by a stable counting sort on 11 bits at a time, lowest first (three passes
/// for 32 bits, fewer for values of `bits` bits): a few times faster than a comparison sort on the millions of slots of a share
/// of the texts, and its 2,048 buckets keep their write positions in cache.
fn radix_sort(values: &mut Vec<u32>, bits: u32) {
    const DIGIT: u32 = 11;
    let mask = (1u32 << DIGIT) - 1;
    let mut other = vec![0u32; values.len()];
    let mut counts = [0usize; 1 << DIGIT];
    let mut shift = 0;
    while shift < bits.min(u32::BITS) {
        counts.fill(0);
        for &v in values.iter() {
            counts[((v >> shift) & mask) as usize] += 1;
        }
        let mut at = 0;
        for c in counts.iter_mut() {
            let n = *c;
            *c = at;
            at += n;
        }
        for &v in values.iter() {
            let digit = ((v >> shift) & mask) as usize;
            other[counts[digit]] = v;
            counts[digit] += 1;
        }
        std::mem::swap(values, &mut other);
        shift += DIGIT;
    }
}

/// The `words` words of the table of repeated slots from word `first_word` on, marked by
/// `slots`: every slot of that range that the shares of the texts gave ([`slots_of`]), in any
/// order. A slot given twice is repeated.
pub fn repeated_words(slots: &[u32], first_word: u64, words: usize) -> Result<Vec<u64>> {
    let low = first_word.saturating_mul(64);
    let high = low.saturating_add(words as u64 * 64);
    let mut seen = vec![0u64; words];
    let mut repeated = vec![0u64; words];
    for &s in slots {
        let s = u64::from(s);
        if !(low..high).contains(&s) {
            return Err(Error::invalid(format!(
                "slot {s} lies outside the words' slots {low}..{high}"
            )));
        }
        mark(&mut seen, &mut repeated, (s - low) as usize);
    }
    Ok(repeated)
}

/// Two bit tables over the slots of shingle hashes: seen once, and seen again.
#[derive(Debug)]
pub struct Repeats {
    seen: Vec<u64>,
    repeated: Vec<u64>,
    bits: u32,
    /// The buffers of the grouped slots, one a core, kept from one piece to the next.
    scratch: Vec<Grouped>,
}

/// Slots of one group fall in a range of 2^BUCKET_BITS: its part of both tables (2 x 128 KiB)
/// stays in the core's cache while its marks are made.
const BUCKET_BITS: u32 = 20;

/// The most hashes grouped at once (but a sketch is never split): 12 bytes each.
const PIECE: usize = 1 << 22;

/// A hash's slot: the top `bits` bits of its mix (sketch hashes may be the smallest of a text's,
/// so their own top bits are not spread).
#[inline]
fn slot(h: SketchHash, bits: u32) -> u64 {
    fmix64(h) >> (64 - bits)
}

impl Repeats {
    /// Empty tables of `2^bits` slots each.
    pub fn new(bits: u32) -> Result<Self> {
        check_bits(bits)?;
        let words = 1usize << (bits - 6);
        Ok(Repeats {
            seen: vec![0; words],
            repeated: vec![0; words],
            bits,
            scratch: Vec::new(),
        })
    }

    pub fn bits(&self) -> u32 {
        self.bits
    }

    /// Marks one text's shingle hashes (each once: a sketch's hashes are distinct).
    pub fn add(&mut self, shingles: &[SketchHash]) {
        for &h in shingles {
            mark(
                &mut self.seen,
                &mut self.repeated,
                slot(h, self.bits) as usize,
            );
        }
    }

    /// Marks the shingle hashes of every sketch (checks left out), each sketch one text.
    ///
    /// Marking hashes in their order would read both tables at random, a miss of the cache for
    /// each hash once they outgrow it (16 MiB at 1M short texts). The slots are first grouped by
    /// range (a counting sort on their top bits, in one buffer), then each range's marks are made
    /// while its part of the tables is in cache, the ranges on all cores.
    pub fn add_sketches(&mut self, sketches: &Ranges<'_>) {
        // A piece of sketches at a time, so that the buffer stays small (16 MiB).
        let mut from = 0;
        while from < sketches.len() {
            let (mut to, mut held) = (from, 0);
            while to < sketches.len() && (held < PIECE || to == from) {
                held += shingles_of(sketches.get(to)).len();
                to += 1;
            }
            self.add_piece(sketches, from..to, held);
            from = to;
        }
    }

    /// [`Repeats::add_sketches`] of the sketches `texts`, holding `held` shingle hashes: each
    /// core groups the slots of a share of the texts, then each range is marked from every
    /// share's group.
    fn add_piece(&mut self, sketches: &Ranges<'_>, texts: std::ops::Range<usize>, held: usize) {
        let groups_bits = self.bits.saturating_sub(BUCKET_BITS);
        let low_bits = self.bits - groups_bits;
        let shares = rayon::current_num_threads().clamp(1, 64);
        let step = texts.len().div_ceil(shares).max(1);
        let bits = self.bits;
        let mut grouped = std::mem::take(&mut self.scratch);
        grouped.resize_with(shares, Grouped::default);
        grouped.par_iter_mut().enumerate().for_each(|(i, share)| {
            let from = (texts.start + i * step).min(texts.end);
            let to = (from + step).min(texts.end);
            share.fill(sketches, from..to, bits, low_bits, held / shares + 1);
        });
        let words = 1usize << (low_bits - 6);
        self.seen
            .par_chunks_mut(words)
            .zip(self.repeated.par_chunks_mut(words))
            .enumerate()
            .for_each(|(g, (seen, repeated))| {
                for share in &grouped {
                    for &s in share.group(g) {
                        mark(seen, repeated, s as usize);
                    }
                }
            });
        self.scratch = grouped;
    }

    /// The table of repeated slots, the seen one let go.
    pub fn into_repeated(self) -> Repeated {
        drop(self.scratch);
        Repeated {
            words: self.repeated,
            bits: self.bits,
        }
    }

    /// The share of slots marked repeated.
    pub fn share(&self) -> f64 {
        marked_share(&self.repeated)
    }

    /// A copy of the table of repeated slots.
    pub fn repeated(&self) -> Repeated {
        Repeated {
            words: self.repeated.clone(),
            bits: self.bits,
        }
    }
}

/// The slots of some texts' hashes grouped by range (a counting sort on their top bits), each
/// slot by its low bits.
#[derive(Debug, Default)]
struct Grouped {
    /// The slots in the texts' order (reused).
    all: Vec<u64>,
    starts: Vec<usize>,
    slots: Vec<u32>,
}

impl Grouped {
    fn fill(
        &mut self,
        sketches: &Ranges<'_>,
        texts: std::ops::Range<usize>,
        bits: u32,
        low_bits: u32,
        capacity: usize,
    ) {
        let all = &mut self.all;
        all.clear();
        all.reserve(capacity);
        for d in texts {
            all.extend(shingles_of(sketches.get(d)).iter().map(|&h| slot(h, bits)));
        }
        let groups = 1usize << (bits - low_bits);
        let starts = &mut self.starts;
        starts.clear();
        starts.resize(groups + 1, 0);
        for &s in all.iter() {
            starts[(s >> low_bits) as usize + 1] += 1;
        }
        for g in 0..groups {
            starts[g + 1] += starts[g];
        }
        self.slots.resize(all.len(), 0);
        let mut at = starts.clone();
        let low_mask = (1u64 << low_bits) - 1;
        for &s in all.iter() {
            let g = (s >> low_bits) as usize;
            self.slots[at[g]] = (s & low_mask) as u32;
            at[g] += 1;
        }
    }

    fn group(&self, g: usize) -> &[u32] {
        &self.slots[self.starts[g]..self.starts[g + 1]]
    }
}

/// The share of the bits of `words` that are set.
fn marked_share(words: &[u64]) -> f64 {
    let marked: u64 = words.iter().map(|w| u64::from(w.count_ones())).sum();
    marked as f64 / (words.len() as f64 * 64.0)
}

/// Marks slot `s` seen, or repeated when it was seen already.
#[inline]
fn mark(seen: &mut [u64], repeated: &mut [u64], s: usize) {
    let (word, bit) = (s >> 6, 1u64 << (s & 63));
    repeated[word] |= seen[word] & bit;
    seen[word] |= bit;
}

/// The slots marked by two hashes or more (see [`Repeats`]).
#[derive(Debug, Clone)]
pub struct Repeated {
    words: Vec<u64>,
    bits: u32,
}

impl Repeated {
    /// The table whose words are `words` (a power of two of them, as [`repeated_words`] gives
    /// in pieces): the slots have as many bits as index its bits.
    pub fn from_words(words: Vec<u64>) -> Result<Self> {
        let bits = if words.len().is_power_of_two() {
            words.len().trailing_zeros() + 6
        } else {
            0
        };
        if !(FEWEST_BITS..=MOST_BITS).contains(&bits) {
            return Err(Error::invalid(format!(
                "a table of repeated slots holds 2^{} to 2^{} words, got {}",
                FEWEST_BITS - 6,
                MOST_BITS - 6,
                words.len()
            )));
        }
        Ok(Repeated { words, bits })
    }

    /// Whether `h` may be held by more than one text (false: it surely is not).
    #[inline]
    pub fn holds(&self, h: SketchHash) -> bool {
        self.holds_slot(self.slot_of(h))
    }

    /// The slot of `h`, for [`Repeated::holds_slot`] and [`Repeated::prefetch_slot`] (its
    /// hash computed once for both).
    #[inline]
    pub fn slot_of(&self, h: SketchHash) -> usize {
        slot(h, self.bits) as usize
    }

    /// Whether slot `s` is marked: [`Repeated::holds`] of the hashes of that slot.
    #[inline]
    pub fn holds_slot(&self, s: usize) -> bool {
        self.words[s >> 6] & (1u64 << (s & 63)) != 0
    }

    /// Asks the cache for slot `s`, ahead of [`Repeated::holds_slot`]: the table outgrows the
    /// cache (64 MiB at 4M short texts), and a text's lookups are independent of each other.
    #[inline]
    pub fn prefetch_slot(&self, s: usize) {
        crate::runtime::simd::prefetch_line(&self.words[s >> 6]);
    }

    /// The share of slots marked.
    pub fn share(&self) -> f64 {
        marked_share(&self.words)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn bits_are_two_slots_a_hash_within_bounds() {
        assert_eq!(bits_for(0), FEWEST_BITS);
        assert_eq!(bits_for(1 << 20), 21);
        assert_eq!(bits_for((1 << 20) + 1), 22);
        assert_eq!(bits_for(u64::MAX), MOST_BITS);
        assert!(Repeats::new(FEWEST_BITS - 1).is_err());
        assert!(Repeats::new(MOST_BITS + 1).is_err());
    }

    #[test]
    fn a_hash_of_two_texts_is_always_repeated_and_few_unique_ones_are() {
        // Texts drawing from a range of values: some held by one text, some by several.
        let texts = random_texts(11, 400, 30, 20_000);
        let mut holders: HashMap<u64, u32> = HashMap::new();
        for t in &texts {
            for &h in t {
                *holders.entry(h).or_default() += 1;
            }
        }
        let (starts, ends, hashes) = flat(&texts);
        let mut repeats = Repeats::new(bits_for(hashes.len() as u64)).unwrap();
        repeats.add_sketches(&Ranges::new(&starts, &ends, &hashes).unwrap());
        let repeated = repeats.into_repeated();
        let unique: Vec<u64> = holders
            .iter()
            .filter(|(_, &c)| c == 1)
            .map(|(&h, _)| h)
            .collect();
        for (&h, &c) in &holders {
            if c >= 2 {
                assert!(repeated.holds(h), "{h} is held by {c} texts");
            }
        }
        // Two slots a hash: a unique hash shares its slot with another hash about
        // 1 - exp(-distinct / slots) of the time (here under 0.3).
        let marked = unique.iter().filter(|&&h| repeated.holds(h)).count();
        assert!(
            (marked as f64) < 0.3 * unique.len() as f64,
            "{marked} of {}",
            unique.len()
        );
        assert!(!unique.is_empty() && repeated.share() > 0.0);
        // A text alone repeats nothing.
        let mut one = Repeats::new(FEWEST_BITS).unwrap();
        one.add(&[1, 2, 3]);
        assert_eq!(one.share(), 0.0);
        one.add(&[3]);
        assert!(one.repeated().holds(3));
    }

    /// `n` texts of up to `draws` distinct values below `range` each (sorted), from `seed`.
    fn random_texts(seed: u64, n: usize, draws: usize, range: u64) -> Vec<Vec<u64>> {
        let mut seed = seed;
        let mut next = || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            seed >> 20
        };
        (0..n)
            .map(|_| {
                let mut t: Vec<u64> = (0..draws).map(|_| next() % range).collect();
                t.sort_unstable();
                t.dedup();
                t
            })
            .collect()
    }

    /// Flat sketches of `texts`: (starts, ends, hashes).
    fn flat(texts: &[Vec<u64>]) -> (Vec<u64>, Vec<u64>, Vec<u64>) {
        let mut starts = Vec::new();
        let mut ends = Vec::new();
        let mut hashes = Vec::new();
        for t in texts {
            starts.push(hashes.len() as u64);
            hashes.extend_from_slice(t);
            ends.push(hashes.len() as u64);
        }
        (starts, ends, hashes)
    }

    #[test]
    fn slots_are_sorted_and_given_at_most_twice() {
        // Three texts holding 7, two holding 9: 7's slot comes twice, 9's twice, 5's once.
        let texts = vec![vec![5, 7], vec![7, 9], vec![7, 9]];
        let (starts, ends, hashes) = flat(&texts);
        let bits = FEWEST_BITS;
        let got = slots_of(&Ranges::new(&starts, &ends, &hashes).unwrap(), bits).unwrap();
        let s = |h: u64| (fmix64(h) >> (64 - bits)) as u32;
        let mut want = vec![s(5), s(7), s(7), s(9), s(9)];
        want.sort_unstable();
        assert_eq!(got, want);
        assert!(slots_of(&Ranges::new(&starts, &ends, &hashes).unwrap(), 15).is_err());
        // Slots outside the words asked for are refused.
        assert!(repeated_words(&[64], 0, 1).is_err());
        assert_eq!(
            repeated_words(&[70, 100, 70], 1, 1).unwrap(),
            vec![1u64 << 6]
        );
        assert!(Repeated::from_words(vec![0; 3 << 10]).is_err());
        assert!(Repeated::from_words(vec![0; 1 << 9]).is_err());
    }

    #[test]
    fn the_radix_sort_sorts() {
        let mut seed = 3u64;
        let mut values: Vec<u32> = (0..10_000)
            .map(|i| {
                seed = seed
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                // Small values, large ones, and repeats.
                if i % 3 == 0 {
                    (seed >> 60) as u32
                } else {
                    (seed >> 32) as u32
                }
            })
            .collect();
        let mut want = values.clone();
        want.sort_unstable();
        radix_sort(&mut values, 32);
        assert_eq!(values, want);
        let mut empty: Vec<u32> = Vec::new();
        radix_sort(&mut empty, 32);
        // Values of 22 bits: two passes.
        let mut small: Vec<u32> = want.iter().map(|v| v >> 10).rev().collect();
        let mut sorted = small.clone();
        sorted.sort_unstable();
        radix_sort(&mut small, 22);
        assert_eq!(small, sorted);
        assert!(empty.is_empty());
    }

    #[test]
    fn shares_marked_by_range_equal_every_text_marked_at_once() {
        let texts = random_texts(5, 3_000, 25, 60_000);
        let (starts, ends, hashes) = flat(&texts);
        let bits = bits_for(hashes.len() as u64);
        let mut all = Repeats::new(bits).unwrap();
        all.add_sketches(&Ranges::new(&starts, &ends, &hashes).unwrap());
        // Four shares of the texts, their slots moved to seven ranges of words.
        let words = 1usize << (bits - 6);
        let ranges = 7usize;
        let bound = |q: usize| (q * words).div_ceil(ranges);
        let mut moved: Vec<Vec<u32>> = vec![Vec::new(); ranges];
        for share in texts.chunks(800) {
            let (starts, ends, hashes) = flat(share);
            let sketches = Ranges::new(&starts, &ends, &hashes).unwrap();
            for s in slots_of(&sketches, bits).unwrap() {
                let q = ((s as usize >> 6) * ranges) >> (bits - 6);
                moved[q].push(s);
            }
        }
        let mut table = Vec::new();
        for (q, slots) in moved.iter().enumerate() {
            let piece = repeated_words(slots, bound(q) as u64, bound(q + 1) - bound(q)).unwrap();
            table.extend(piece);
        }
        let joined = Repeated::from_words(table).unwrap();
        assert_eq!(joined.bits, bits);
        assert_eq!(joined.words, all.repeated);
        assert!(joined.share() > 0.0);
    }
}
