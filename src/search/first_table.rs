//! Which table reports a pair: the first of the plan whose prefix the pair shares.
//!
//! A pair within k can share the prefix of several tables, and a batch search reports it only
//! in the first of them. Testing every earlier table's prefix costs time linear in the table
//! count for each pair found (hundreds of tests at k = 13), which dominated searches of densely
//! packed fingerprints. The prefixes are unions of a few *atoms*, the largest sets of bits that
//! every prefix holds whole or not at all (the blocks of a block layout). A pair's XOR is zero
//! on some set Z of atoms, and the tables whose prefix it shares are those whose atoms lie in Z;
//! a table of 2^atoms entries, filled once per plan, maps Z to the first of them. Plans with more
//! than [`MAX_ATOMS`] atoms keep the linear test.

use std::collections::HashMap;

use crate::search::plan::{Plan, TableLayout};

/// The most atoms a lookup table is built for (2^20 entries, 4 MB).
pub const MAX_ATOMS: usize = 20;

/// No table holds the pair (never seen for a pair a table found).
const NONE: u32 = u32::MAX;

/// The first table of a plan whose prefix a pair shares, by the atoms on which the pair agrees.
#[derive(Debug, Clone)]
pub struct FirstTable {
    /// The atoms, as masks over the unpermuted fingerprint (bits in no prefix are in none).
    atoms: Vec<u64>,
    /// By set of atoms (bit i: atom i), the first table whose prefix lies within it.
    first: Vec<u32>,
}

impl FirstTable {
    /// The lookup for `plan`, or None when its prefixes have more than [`MAX_ATOMS`] atoms.
    pub fn new(plan: &Plan) -> Option<Self> {
        let tables = plan.tables();
        // Group the 64 bits by the tables whose prefix holds them.
        let words = tables.len().div_ceil(64);
        let mut by_tables: HashMap<Vec<u64>, u64> = HashMap::new();
        for bit in 0..64 {
            let mut holders = vec![0u64; words];
            for (t, layout) in tables.iter().enumerate() {
                if layout.prefix_mask >> bit & 1 == 1 {
                    holders[t / 64] |= 1 << (t % 64);
                }
            }
            if holders.iter().any(|&w| w != 0) {
                *by_tables.entry(holders).or_default() |= 1 << bit;
            }
        }
        if by_tables.len() > MAX_ATOMS {
            return None;
        }
        let mut atoms: Vec<u64> = by_tables.into_values().collect();
        atoms.sort_unstable();
        let mut first = vec![NONE; 1 << atoms.len()];
        for (t, layout) in tables.iter().enumerate() {
            let set = atom_set(&atoms, !layout.prefix_mask);
            if first[set] == NONE {
                first[set] = t as u32;
            }
        }
        // A set's first table is its own, or the first of a set with one atom fewer.
        for set in 1..first.len() {
            let mut rest = set;
            while rest != 0 {
                let atom = rest & rest.wrapping_neg();
                first[set] = first[set].min(first[set ^ atom]);
                rest ^= atom;
            }
        }
        Some(FirstTable { atoms, first })
    }

    /// The atoms in `layout`'s bit order, for [`FirstTable::first`] on permuted values.
    pub fn atoms_for(&self, layout: &TableLayout) -> Vec<u64> {
        self.atoms
            .iter()
            .map(|&m| layout.permutation.apply(m))
            .collect()
    }

    /// The first table whose prefix is zero in `diff`, the XOR of a pair permuted as `atoms`
    /// are (from [`FirstTable::atoms_for`]); `usize::MAX` if none is.
    #[inline]
    pub fn first(&self, atoms: &[u64], diff: u64) -> usize {
        let set = atom_set(atoms, diff);
        match self.first[set] {
            NONE => usize::MAX,
            t => t as usize,
        }
    }
}

/// For table `t` of a plan: whether a pair it found was found by an earlier table already, by
/// the plan's [`FirstTable`] or, without one, by testing each earlier table's prefix.
pub struct Earlier<'a> {
    t: usize,
    lookup: Option<(&'a FirstTable, Vec<u64>)>,
    prefixes: Vec<u64>,
}

impl<'a> Earlier<'a> {
    /// The test for table `t` of `plan`, whose [`FirstTable`] is `lookup` (None: too many atoms).
    pub fn new(plan: &Plan, lookup: Option<&'a FirstTable>, t: usize) -> Self {
        let layout = &plan.tables()[t];
        match lookup {
            Some(l) => Earlier {
                t,
                lookup: Some((l, l.atoms_for(layout))),
                prefixes: Vec::new(),
            },
            None => Earlier {
                t,
                lookup: None,
                prefixes: plan.tables()[..t]
                    .iter()
                    .map(|e| layout.permutation.apply(e.prefix_mask))
                    .collect(),
            },
        }
    }

    /// Whether an earlier table holds the pair whose XOR, in table `t`'s bit order, is `diff`.
    #[inline]
    pub fn holds(&self, diff: u64) -> bool {
        match &self.lookup {
            Some((l, atoms)) => l.first(atoms, diff) != self.t,
            None => self.prefixes.iter().any(|&m| diff & m == 0),
        }
    }
}

/// The set of `atoms` on which `diff` is zero.
#[inline]
fn atom_set(atoms: &[u64], diff: u64) -> usize {
    atoms
        .iter()
        .enumerate()
        .fold(0, |set, (i, &m)| set | (usize::from(diff & m == 0) << i))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::plan::Workload;
    use crate::testing::xorshift64;

    /// The rule it replaces: the first table whose prefix mask is zero in the XOR.
    fn linear(plan: &Plan, diff: u64) -> usize {
        plan.tables()
            .iter()
            .position(|t| diff & t.prefix_mask == 0)
            .unwrap_or(usize::MAX)
    }

    #[test]
    fn agrees_with_testing_every_table_in_turn() {
        let mut state = 0x0123_4567_89ab_cdef_u64;
        let mut next = move || xorshift64(&mut state);
        let mut plans = vec![
            Plan::blocks(6, 3).unwrap(),
            Plan::nested(&[4, 4], 3).unwrap(),
        ];
        for k in [0, 3, 8, 13, 16] {
            for n in [1_000, 1_000_000] {
                plans.push(Plan::choose(k, n, None, Workload::Batch).unwrap());
            }
        }
        for plan in &plans {
            let Some(lookup) = FirstTable::new(plan) else {
                continue;
            };
            for (t, layout) in plan.tables().iter().enumerate() {
                let atoms = lookup.atoms_for(layout);
                for _ in 0..2_000 {
                    // Sparse XORs, so that many pairs share some prefix.
                    let diff = next() & next() & next();
                    let want = linear(plan, diff);
                    let got = lookup.first(&atoms, layout.permutation.apply(diff));
                    assert_eq!(got, want, "plan {plan}, table {t}, diff {diff:#x}");
                }
            }
        }
    }

    #[test]
    fn every_batch_plan_has_a_lookup() {
        for k in 0..=crate::search::plan::MAX_K as i64 {
            for n in [100, 100_000, 10_000_000] {
                let plan = Plan::choose(k, n, None, Workload::Batch).unwrap();
                assert!(FirstTable::new(&plan).is_some(), "plan {plan}");
            }
        }
    }
}
