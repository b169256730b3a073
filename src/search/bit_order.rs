//! The order of the 64 bits a cross search ([`crate::search::cross_search`]) runs in, chosen from
//! the values searched.
//!
//! A plan cuts the 64 bits into blocks of contiguous bits, and each table compares the values
//! that share the blocks of its prefix. Uniform random values share a prefix of p bits at a rate
//! of 2^-p, but simhash fingerprints of text are not uniform: some bits agree together more often
//! than chance, and a prefix made of such bits is shared by more pairs, each of them a comparison.
//! A Hamming distance does not depend on the order of the bits, so the search may move every
//! value's bits by one permutation, search, and move the pairs' values back: the pairs are the
//! same, only the work differs. A [`BitOrder`] assigns the bits to the plan's blocks so that bits
//! that agree together are spread over different blocks.
//!
//! The choice models a pair the search may compare, a value of the batch and either a value of
//! the index or a later one of the batch (weighted by their numbers), from a sample of each side.
//! Per bit i, `c[i]` is the chance that the pair agrees on bit i; per two bits i and j, `r[i][j]`
//! is the chance that it agrees on both divided by `c[i] c[j]` (1 for independent bits). A table
//! whose prefix holds the bits B is then shared by about `prod c[i] (i in B) * prod r[i][j] (i < j
//! in B)` of the pairs, and an assignment of bits to blocks costs the sum of that over the plan's
//! tables. From the contiguous blocks, a local search swaps bits between blocks while a swap
//! lowers the cost.
//!
//! The order is the identity when the plan is nested, when the sides make fewer than
//! [`MIN_PAIRS`] pairs (the search is short: the choice, 10 to 30 ms, would cost more than it
//! saves), and when the model expects the chosen order to save less than [`MIN_GAIN`] of the
//! comparisons or fewer than [`MIN_SAVED`] and [`SAVED_PER_VALUE`] for each value moved. On
//! 9.0M simhash fingerprints of text against 0.95M at k = 8 (11 blocks), the chosen order makes
//! 28% fewer comparisons and the search 13% shorter; the model, which sees pairs of bits only,
//! expects 21% fewer (it undercounts both, by 1.6x and 2.2x).
//!
//! The choice is a function of the values alone (an evenly spaced sample, counts in integers,
//! arithmetic in a fixed order), the same in every run and for any number of threads. Whatever
//! order is chosen, the pairs found are the same: only the search's work depends on it.

use std::fmt;

use crate::error::{Error, Result};
use crate::search::plan::{block_sizes, Plan};

/// The most values sampled from each side.
pub const SAMPLE: usize = 1 << 16;
/// Below this many pairs the search could compare (a value of the batch and one of the index or
/// a later one of the batch) the order is the identity, without a look at the values. Measured
/// on simhash fingerprints of text at k = 8, alternating: 1M against 100k (1.05e11 pairs) and 9M
/// against 20k (1.8e11) searched no faster in an order chosen anyway, 2M against 200k (4.2e11)
/// 3% faster counting the choice, 3M against 300k (9.5e11) 8%.
pub const MIN_PAIRS: f64 = (1u64 << 37) as f64;
/// The least share of the model's comparisons a chosen order must save.
pub const MIN_GAIN: f64 = 0.1;
/// The fewest comparisons, by the model, a chosen order must save: about what choosing costs,
/// 10 to 30 ms, where a comparison saved saves 0.06 to 0.2 ns of wall time on two cores.
pub const MIN_SAVED: f64 = (1u64 << 28) as f64;
/// And as many more for each value whose bits are moved (and its pairs' moved back): about
/// 4.5 ns of wall time a value on two cores.
pub const SAVED_PER_VALUE: f64 = 32.0;
/// The local search prices at most this many swaps times tables (each table an `exp`): at 11
/// blocks, 25,420 swaps of 165 tables, 13 sweeps over the 1,855 swaps of two bits of different
/// blocks.
const BUDGET: usize = 1 << 22;
/// The least probability the model takes the logarithm of.
const TINY: f64 = 1.0 / (1u64 << 60) as f64;

/// A permutation of the 64 bits, applied and undone with a table per byte.
#[derive(Clone, PartialEq, Eq)]
pub struct BitOrder {
    /// `order[i]` is the source bit that lands on bit `63 - i` (as
    /// [`crate::search::plan::Permutation`]).
    order: [u8; 64],
    /// `forward[b][v]`: where the bits `v` of byte b of a value land.
    forward: Box<[[u64; 256]; 8]>,
    /// `inverse[b][v]`: where the bits `v` of byte b of a moved value came from.
    inverse: Box<[[u64; 256]; 8]>,
}

impl fmt::Debug for BitOrder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("BitOrder").field(&self.order).finish()
    }
}

/// The tables of a permutation that sends source bit `s` to bit `to[s]`.
fn byte_tables(to: &[u32; 64]) -> Box<[[u64; 256]; 8]> {
    let mut out = Box::new([[0u64; 256]; 8]);
    for (b, table) in out.iter_mut().enumerate() {
        for (v, word) in table.iter_mut().enumerate() {
            for bit in 0..8 {
                if v >> bit & 1 == 1 {
                    *word |= 1u64 << to[8 * b + bit];
                }
            }
        }
    }
    out
}

impl BitOrder {
    /// The identity: every bit stays.
    pub fn identity() -> Self {
        let mut order = [0u8; 64];
        for (i, o) in order.iter_mut().enumerate() {
            *o = (63 - i) as u8;
        }
        Self::new(order).expect("the identity is a permutation")
    }

    /// The order that moves source bit `order[i]` to bit `63 - i`: an error unless every bit is
    /// named once.
    pub fn new(order: [u8; 64]) -> Result<Self> {
        let mut to = [64u32; 64];
        for (i, &s) in order.iter().enumerate() {
            match to.get_mut(usize::from(s)) {
                Some(t) if *t == 64 => *t = 63 - i as u32,
                _ => {
                    return Err(Error::invalid(format!(
                        "a bit order names each of the 64 bits once, got {order:?}"
                    )))
                }
            }
        }
        let mut from = [0u32; 64];
        for (s, &t) in to.iter().enumerate() {
            from[t as usize] = s as u32;
        }
        Ok(BitOrder {
            order,
            forward: byte_tables(&to),
            inverse: byte_tables(&from),
        })
    }

    /// The order whose blocks of `sizes` bits (from the high end) hold the bits of `block_of`
    /// (the block of each bit) of each block, each block's bits in descending order.
    fn of_blocks(block_of: &[usize; 64], sizes: &[u32]) -> Self {
        let mut order = [0u8; 64];
        let mut at = 0;
        for b in 0..sizes.len() {
            for bit in (0..64u8)
                .rev()
                .filter(|&bit| block_of[usize::from(bit)] == b)
            {
                order[at] = bit;
                at += 1;
            }
        }
        Self::new(order).expect("every bit is in one block")
    }

    /// Source bit of each bit, from bit 63 down to 0.
    pub fn order(&self) -> &[u8; 64] {
        &self.order
    }

    /// Whether every bit stays.
    pub fn is_identity(&self) -> bool {
        self.order
            .iter()
            .enumerate()
            .all(|(i, &s)| usize::from(s) == 63 - i)
    }

    /// `x` with its bits moved.
    #[inline]
    pub fn apply(&self, x: u64) -> u64 {
        Self::through(&self.forward, x)
    }

    /// Undoes [`BitOrder::apply`].
    #[inline]
    pub fn invert(&self, y: u64) -> u64 {
        Self::through(&self.inverse, y)
    }

    #[inline]
    fn through(tables: &[[u64; 256]; 8], x: u64) -> u64 {
        tables
            .iter()
            .enumerate()
            .fold(0, |out, (b, t)| out | t[(x >> (8 * b)) as usize & 255])
    }

    /// The order [`crate::search::cross_search::cross_pairs`] searches `new` against `old` in with
    /// `plan`. See the module.
    pub fn choose(new: &[u64], old: &[u64], plan: &Plan) -> Self {
        Self::choose_above(new, old, plan, MIN_PAIRS)
    }

    /// [`BitOrder::choose`] with the identity below `min_pairs` pairs.
    pub(crate) fn choose_above(new: &[u64], old: &[u64], plan: &Plan, min_pairs: f64) -> Self {
        let single = matches!(plan.levels(), &[blocks] if blocks > 1);
        let pairs = new.len() as f64 * (old.len() as f64 + new.len() as f64 / 2.0);
        if !single || new.is_empty() || pairs < min_pairs {
            return Self::identity();
        }
        let agreement = Agreement::of(new, old);
        let Some(model) = Model::new(&agreement, plan) else {
            return Self::identity();
        };
        let start = model.contiguous();
        let (block_of, after) = model.improve(start);
        let before = model.cost(&start);
        let least = MIN_SAVED + SAVED_PER_VALUE * (new.len() + old.len()) as f64;
        if after <= before * (1.0 - MIN_GAIN) && (before - after) * pairs >= least {
            Self::of_blocks(&block_of, &model.sizes)
        } else {
            Self::identity()
        }
    }
}

/// Up to [`SAMPLE`] values of `values`, evenly spaced (all of them when fewer).
fn sample(values: &[u64]) -> Vec<u64> {
    let n = values.len();
    if n <= SAMPLE {
        return values.to_vec();
    }
    (0..SAMPLE).map(|i| values[i * n / SAMPLE]).collect()
}

/// How often the bits of a sample are 1, alone and two at a time.
struct Counts {
    len: u64,
    /// `ones[i]`: values with bit i set.
    ones: [u64; 64],
    /// `both[i][j]`: values with bits i and j set.
    both: Box<[[u64; 64]; 64]>,
}

impl Counts {
    fn of(sample: &[u64]) -> Self {
        // Each bit's column: bit v of word w is the bit of value 64 w + v. A chunk of 64 values
        // is turned in a local block (the columns' words of a chunk are a column apart).
        let words = sample.len().div_ceil(64);
        let mut columns = vec![0u64; 64 * words];
        for (w, chunk) in sample.chunks(64).enumerate() {
            let mut block = [0u64; 64];
            for (v, &x) in chunk.iter().enumerate() {
                let mut rest = x;
                while rest != 0 {
                    block[rest.trailing_zeros() as usize] |= 1u64 << v;
                    rest &= rest - 1;
                }
            }
            for (bit, &word) in block.iter().enumerate() {
                columns[bit * words + w] = word;
            }
        }
        let column = |i: usize| &columns[i * words..(i + 1) * words];
        let mut ones = [0u64; 64];
        let mut both = Box::new([[0u64; 64]; 64]);
        for i in 0..64 {
            ones[i] = column(i).iter().map(|w| u64::from(w.count_ones())).sum();
            both[i][i] = ones[i];
            for j in 0..i {
                let n = column(i)
                    .iter()
                    .zip(column(j))
                    .map(|(a, b)| u64::from((a & b).count_ones()))
                    .sum();
                both[i][j] = n;
                both[j][i] = n;
            }
        }
        Counts {
            len: sample.len() as u64,
            ones,
            both,
        }
    }

    /// Values with bit i equal to `bi` and bit j equal to `bj`.
    fn pattern(&self, i: usize, j: usize, bi: bool, bj: bool) -> u64 {
        let n11 = self.both[i][j];
        match (bi, bj) {
            (true, true) => n11,
            (true, false) => self.ones[i] - n11,
            (false, true) => self.ones[j] - n11,
            (false, false) => self.len + n11 - self.ones[i] - self.ones[j],
        }
    }
}

/// The logarithms of how often a random pair (a value of each side) agrees on its bits.
struct Agreement {
    /// `ln c[i]`: the pair agrees on bit i with probability c[i].
    log_one: [f64; 64],
    /// `ln r[i][j]`, 0 on the diagonal: the pair agrees on bits i and j with probability
    /// c[i] c[j] r[i][j].
    log_two: Box<[[f64; 64]; 64]>,
}

impl Agreement {
    /// The agreement of a pair the search compares: a value of `new` and one of `old` (each
    /// value of `new` meets `old.len()` of those) or a later value of `new` (`new.len() / 2` on
    /// average); `new` is not empty.
    fn of(new: &[u64], old: &[u64]) -> Self {
        let (n, o) = rayon::join(|| Counts::of(&sample(new)), || Counts::of(&sample(old)));
        let (weight_old, weight_new) = (old.len() as f64, new.len() as f64 / 2.0);
        let share = |count: u64, c: &Counts| {
            if c.len == 0 {
                0.0
            } else {
                count as f64 / c.len as f64
            }
        };
        // How often a pattern of bits is the first value's, times how often it is the other's.
        let meet = |in_new: u64, in_old: u64| {
            let other = weight_old * share(in_old, &o) + weight_new * share(in_new, &n);
            share(in_new, &n) * other / (weight_old + weight_new)
        };
        let one: Vec<f64> = (0..64)
            .map(|i| {
                let ones = meet(n.ones[i], o.ones[i]);
                let zeros = meet(n.len - n.ones[i], o.len - o.ones[i]);
                (ones + zeros).max(TINY)
            })
            .collect();
        let mut log_one = [0f64; 64];
        for (l, &c) in log_one.iter_mut().zip(&one) {
            *l = c.ln();
        }
        let mut log_two = Box::new([[0f64; 64]; 64]);
        for i in 0..64 {
            for j in 0..i {
                let both: f64 = [(true, true), (true, false), (false, true), (false, false)]
                    .iter()
                    .map(|&(bi, bj)| meet(n.pattern(i, j, bi, bj), o.pattern(i, j, bi, bj)))
                    .sum();
                let ratio = both / (one[i] * one[j]);
                let l = ratio.max(TINY).ln();
                log_two[i][j] = l;
                log_two[j][i] = l;
            }
        }
        Agreement { log_one, log_two }
    }
}

/// The cost of assignments of the bits to the blocks of a single-level plan.
struct Model<'a> {
    agreement: &'a Agreement,
    /// Bits per block, from the high end.
    sizes: Vec<u32>,
    /// The blocks of each table's prefix, ascending.
    tables: Vec<Vec<usize>>,
    /// The tables whose prefix holds each block.
    holding: Vec<Vec<usize>>,
}

/// What the cost of an assignment is made of, kept to price a swap of two bits.
struct State {
    block_of: [usize; 64],
    /// `to_block[i][c]`: the sum of `ln r[i][j]` over the bits j of block c.
    to_block: Vec<[f64; 64]>,
    /// Each table's `ln` of its share of the pairs, and the share.
    log_share: Vec<f64>,
    share: Vec<f64>,
}

impl<'a> Model<'a> {
    /// The model of `plan`'s tables, or `None` when the plan is nested or has one block.
    fn new(agreement: &'a Agreement, plan: &Plan) -> Option<Self> {
        let &[blocks] = plan.levels() else {
            return None;
        };
        if blocks < 2 {
            return None;
        }
        let sizes = block_sizes(64, blocks);
        let mut block_mask = Vec::new();
        let mut high = 64;
        for &s in &sizes {
            let low = high - s;
            block_mask.push((u64::MAX >> (64 - s)) << low);
            high = low;
        }
        let tables: Vec<Vec<usize>> = plan
            .tables()
            .iter()
            .map(|t| {
                (0..sizes.len())
                    .filter(|&b| t.prefix_mask & block_mask[b] != 0)
                    .collect()
            })
            .collect();
        let holding = (0..sizes.len())
            .map(|b| {
                (0..tables.len())
                    .filter(|&t| tables[t].contains(&b))
                    .collect()
            })
            .collect();
        Some(Model {
            agreement,
            sizes,
            tables,
            holding,
        })
    }

    /// The plan's own blocks: contiguous bits, block 0 the high ones.
    fn contiguous(&self) -> [usize; 64] {
        let mut block_of = [0usize; 64];
        let mut high = 64usize;
        for (b, &s) in self.sizes.iter().enumerate() {
            for bit in &mut block_of[high - s as usize..high] {
                *bit = b;
            }
            high -= s as usize;
        }
        block_of
    }

    fn state(&self, block_of: [usize; 64]) -> State {
        let a = self.agreement;
        let blocks = self.sizes.len();
        let to_block: Vec<[f64; 64]> = (0..64)
            .map(|i| {
                let mut sums = [0f64; 64];
                for j in 0..64 {
                    sums[block_of[j]] += a.log_two[i][j];
                }
                sums
            })
            .collect();
        // Per block, the sum of `ln c[i]` over its bits and of `ln r[i][j]` over its pairs;
        // `between[b][c]`, the sum of `ln r[i][j]` over bits i of block b and j of block c.
        let mut inside = vec![0f64; blocks];
        let mut between = vec![vec![0f64; blocks]; blocks];
        for i in 0..64 {
            let b = block_of[i];
            inside[b] += a.log_one[i];
            for (j, &c) in block_of[..i].iter().enumerate() {
                if c == b {
                    inside[b] += a.log_two[i][j];
                }
            }
            for c in 0..blocks {
                if c != b {
                    between[b][c] += to_block[i][c];
                }
            }
        }
        let log_share: Vec<f64> = self
            .tables
            .iter()
            .map(|t| {
                let mut sum = 0.0;
                for (x, &b) in t.iter().enumerate() {
                    sum += inside[b];
                    for &c in &t[..x] {
                        sum += between[b][c];
                    }
                }
                sum
            })
            .collect();
        let share = log_share.iter().map(|&l| l.exp()).collect();
        State {
            block_of,
            to_block,
            log_share,
            share,
        }
    }

    /// The model's comparisons of an assignment, as a share of all pairs.
    fn cost(&self, block_of: &[usize; 64]) -> f64 {
        self.state(*block_of).share.iter().sum()
    }

    /// The change of the cost of `s` when bits `i` and `j` (of different blocks) swap blocks.
    fn swap_gain(&self, s: &State, i: usize, j: usize) -> f64 {
        let a = self.agreement;
        let (bi, bj) = (s.block_of[i], s.block_of[j]);
        let r = a.log_two[i][j];
        let (ti, tj) = (&s.to_block[i], &s.to_block[j]);
        // Block bi loses i and gains j; block bj the other way.
        let inside_i = a.log_one[j] - a.log_one[i] + tj[bi] - r - ti[bi];
        let inside_j = a.log_one[i] - a.log_one[j] + ti[bj] - r - tj[bj];
        // The pairs of a bit of each: i and j leave each other's block, join their own.
        let across = ti[bi] + tj[bj] - ti[bj] - tj[bi] + 2.0 * r;
        let both = inside_i + inside_j + across;
        let mut change = 0.0;
        // The tables holding block bi (and perhaps bj), then those holding bj alone.
        for &t in &self.holding[bi] {
            let blocks = &self.tables[t];
            let delta = if blocks.contains(&bj) {
                both
            } else {
                let others = blocks.iter().filter(|&&c| c != bi);
                inside_i + others.map(|&c| tj[c] - ti[c]).sum::<f64>()
            };
            change += (s.log_share[t] + delta).exp() - s.share[t];
        }
        for &t in &self.holding[bj] {
            let blocks = &self.tables[t];
            if blocks.contains(&bi) {
                continue;
            }
            let others = blocks.iter().filter(|&&c| c != bj);
            let delta = inside_j + others.map(|&c| ti[c] - tj[c]).sum::<f64>();
            change += (s.log_share[t] + delta).exp() - s.share[t];
        }
        change
    }

    /// A local optimum from `block_of`: sweeps over every two bits of different blocks, each
    /// swap made when it lowers the cost, until a sweep makes none (or the budget is spent).
    /// The assignment and its cost.
    fn improve(&self, block_of: [usize; 64]) -> ([usize; 64], f64) {
        let mut s = self.state(block_of);
        let mut cost: f64 = s.share.iter().sum();
        let mut budget = BUDGET / self.tables.len().max(1);
        let mut swapped = true;
        while swapped && budget > 0 {
            swapped = false;
            for i in 0..64 {
                for j in 0..i {
                    if s.block_of[i] == s.block_of[j] || budget == 0 {
                        continue;
                    }
                    budget -= 1;
                    let change = self.swap_gain(&s, i, j);
                    // Only a clear gain: not a rounding error's, nor one of a cost out of range.
                    if change < -1e-9 * cost && change.is_finite() {
                        let mut next = s.block_of;
                        next.swap(i, j);
                        s = self.state(next);
                        cost = s.share.iter().sum();
                        swapped = true;
                    }
                }
            }
        }
        (s.block_of, cost)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fingerprint::hamming::hamming;
    use crate::search::cross_search::cross_plan;
    use crate::testing::correlated;

    fn rng(s: &mut u64) -> u64 {
        crate::testing::xorshift64(s)
    }

    #[test]
    fn an_order_moves_bits_and_back() {
        let mut s = 11u64;
        let order = crate::testing::shuffled_bits(12);
        let o = BitOrder::new(order).unwrap();
        assert!(!o.is_identity());
        assert!(BitOrder::identity().is_identity());
        for (i, &s) in order.iter().enumerate() {
            // Source bit order[i] lands on bit 63 - i.
            assert_eq!(o.apply(1u64 << s), 1u64 << (63 - i));
        }
        for _ in 0..1000 {
            let (x, y) = (rng(&mut s), rng(&mut s));
            assert_eq!(o.invert(o.apply(x)), x);
            assert_eq!(hamming(o.apply(x), o.apply(y)), hamming(x, y));
            assert_eq!(BitOrder::identity().apply(x), x);
        }
        let mut twice = order;
        twice[5] = twice[6];
        assert!(BitOrder::new(twice).is_err());
        twice[5] = 64;
        assert!(BitOrder::new(twice).is_err());
    }

    #[test]
    fn the_identity_for_few_pairs_nested_plans_and_uniform_values() {
        let old = correlated(1, 1 << 17);
        let new = correlated(2, 5000);
        let plan = cross_plan(8, old.len() as u64, new.len() as u64).unwrap();
        assert!(!BitOrder::choose_above(&new, &old, &plan, 0.0).is_identity());
        // Fewer pairs than MIN_PAIRS.
        assert!(BitOrder::choose(&new, &old, &plan).is_identity());
        let pairs = (new.len() * (old.len() + new.len() / 2)) as f64;
        assert!(BitOrder::choose_above(&new, &old, &plan, pairs + 1.0).is_identity());
        assert!(!BitOrder::choose_above(&new, &old, &plan, pairs - 1.0).is_identity());
        // Too few comparisons saved to pay for the choice.
        assert!(BitOrder::choose_above(&new, &old[..2000], &plan, 0.0).is_identity());
        assert!(BitOrder::choose_above(&[], &old, &plan, 0.0).is_identity());
        let nested = Plan::nested(&[4, 4], 3).unwrap();
        assert!(BitOrder::choose_above(&new, &old, &nested, 0.0).is_identity());
        // Uniform values: the model finds no order that saves MIN_GAIN, where it does for
        // values with bits that agree together.
        let mut s = 9u64;
        let mut uniform: Vec<u64> = (0..1 << 17).map(|_| rng(&mut s)).collect();
        uniform.sort_unstable();
        let some: Vec<u64> = uniform.iter().step_by(8).copied().collect();
        let plan = Plan::blocks(11, 8).unwrap();
        for (new, old, saves) in [(&some, &uniform, false), (&new, &old, true)] {
            let agreement = Agreement::of(new, old);
            let model = Model::new(&agreement, &plan).unwrap();
            let before = model.cost(&model.contiguous());
            let (_, after) = model.improve(model.contiguous());
            assert_eq!(
                after <= before * (1.0 - MIN_GAIN),
                saves,
                "{after} {before}"
            );
        }
    }

    #[test]
    fn the_chosen_order_spreads_bits_that_agree_together() {
        let old = correlated(3, 1 << 17);
        let new = correlated(4, 5000);
        let plan = cross_plan(8, old.len() as u64, new.len() as u64).unwrap();
        let order = BitOrder::choose_above(&new, &old, &plan, 0.0);
        // A pure function of the values, whatever the threads.
        let one = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap();
        let again = one.install(|| BitOrder::choose_above(&new, &old, &plan, 0.0));
        assert_eq!(again, order);
        // Each block (7 or 8 bits of 9) holds bits of as many runs of four, where the contiguous
        // blocks hold two runs.
        let sizes = block_sizes(64, plan.levels()[0]);
        assert_eq!(sizes.len(), 9);
        let mut at = 0;
        for &w in &sizes {
            let block = &order.order()[at..at + w as usize];
            assert!(block.windows(2).all(|p| p[0] > p[1]), "{block:?}");
            for run in 0..16 {
                let held = block.iter().filter(|&&b| b / 4 == run).count();
                assert!(held <= 1, "{block:?}");
            }
            at += w as usize;
        }
        // The model's cost falls, and so do the comparisons the search makes.
        let agreement = Agreement::of(&new, &old);
        let model = Model::new(&agreement, &plan).unwrap();
        let mut block_of = [0usize; 64];
        let mut at = 0;
        for (b, &w) in sizes.iter().enumerate() {
            for &bit in &order.order()[at..at + w as usize] {
                block_of[usize::from(bit)] = b;
            }
            at += w as usize;
        }
        let (before, after) = (model.cost(&model.contiguous()), model.cost(&block_of));
        assert!(after <= before * (1.0 - MIN_GAIN), "{after} {before}");
        let moved = |v: &[u64]| v.iter().map(|&x| order.apply(x)).collect::<Vec<u64>>();
        let sample: Vec<u64> = old.iter().step_by(2).copied().collect();
        let count = crate::search::limits::estimate_cross_comparisons;
        let plain = count(&new, &sample, &plan);
        let chosen = count(&moved(&new), &moved(&sample), &plan);
        assert!(chosen * 3 < plain, "{chosen} {plain}");
    }

    #[test]
    fn a_swap_is_priced_as_the_whole_cost_would_change() {
        let old = correlated(5, 20_000);
        let new = correlated(6, 3000);
        let agreement = Agreement::of(&new, &old);
        for plan in [Plan::blocks(11, 8).unwrap(), Plan::blocks(7, 3).unwrap()] {
            let model = Model::new(&agreement, &plan).unwrap();
            let mut s = 13u64;
            let mut block_of = model.contiguous();
            for _ in 0..50 {
                let (i, j) = (rng(&mut s) as usize % 64, rng(&mut s) as usize % 64);
                if block_of[i] == block_of[j] {
                    continue;
                }
                let state = model.state(block_of);
                let change = model.swap_gain(&state, i, j);
                let mut next = block_of;
                next.swap(i, j);
                let want = model.cost(&next) - model.cost(&block_of);
                assert!((change - want).abs() <= 1e-9 * model.cost(&block_of));
                block_of = next;
            }
            // The cost is the sum over the tables of the product over the prefix's bits, done
            // directly with the platform's exp.
            let a = &agreement;
            let direct: f64 = plan
                .tables()
                .iter()
                .map(|t| {
                    let bits: Vec<usize> = (0..64)
                        .filter(|&i| t.prefix_mask >> (63 - i) & 1 == 1)
                        .map(|i| 63 - i)
                        .collect();
                    let mut l = 0.0;
                    for (x, &i) in bits.iter().enumerate() {
                        l += a.log_one[i];
                        for &j in &bits[..x] {
                            l += a.log_two[i][j];
                        }
                    }
                    l.exp()
                })
                .sum();
            let cost = model.cost(&model.contiguous());
            assert!((cost - direct).abs() <= 1e-12 * direct, "{cost} {direct}");
            // A local search never ends above where it began.
            let (_, improved) = model.improve(model.contiguous());
            assert!(improved <= cost);
        }
    }
}
