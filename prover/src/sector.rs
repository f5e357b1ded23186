//! A synthetic sector: pseudo-random replica data, its Merkle tree (MiMC-style compression),
//! and the per-partition challenges a proof opens.
//!
//! Everything is derived from `(seed, sector index)`, so a sector and its proofs are
//! reproducible, and different sectors differ.

use blstrs::Scalar as Fr;
use ff::Field;
use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;

use crate::mimc::compress;

/// Domain tag hashed into every leaf, so a leaf can never be confused with an inner node.
pub fn leaf_tag() -> Fr {
    Fr::from(0x6c65_6166u64) // "leaf"
}

/// Node of the tree above a data leaf.
pub fn leaf_node(data: Fr) -> Fr {
    compress(data, leaf_tag())
}

/// One sector's data and Merkle tree.
#[derive(Debug, Clone)]
pub struct Sector {
    /// Sector number within the run (0, 1, 2 …).
    pub index: u64,
    /// Tree depth (2^depth leaves).
    pub depth: u32,
    /// Leaf data (one field element per leaf).
    pub data: Vec<Fr>,
    /// Tree levels bottom-up: `levels[0]` are the leaf nodes, the last level is `[root]`.
    pub levels: Vec<Vec<Fr>>,
}

fn rng_for(seed: u64, a: u64, b: u64) -> ChaCha20Rng {
    let mut s = [0u8; 32];
    s[..8].copy_from_slice(&seed.to_le_bytes());
    s[8..16].copy_from_slice(&a.to_le_bytes());
    s[16..24].copy_from_slice(&b.to_le_bytes());
    s[24..].copy_from_slice(b"sector!!");
    ChaCha20Rng::from_seed(s)
}

impl Sector {
    /// Generate sector `index` of a run with `seed`: 2^depth random leaves and their tree.
    pub fn generate(seed: u64, index: u64, depth: u32) -> Self {
        let mut rng = rng_for(seed, index, u64::MAX);
        let data: Vec<Fr> = (0..1usize << depth).map(|_| Fr::random(&mut rng)).collect();
        let mut levels = vec![data.iter().map(|d| leaf_node(*d)).collect::<Vec<_>>()];
        while levels.last().map(|l| l.len()).unwrap_or(0) > 1 {
            let next = levels
                .last()
                .expect("non-empty")
                .chunks(2)
                .map(|p| compress(p[0], p[1]))
                .collect();
            levels.push(next);
        }
        Sector {
            index,
            depth,
            data,
            levels,
        }
    }

    /// The tree root (the sector's public commitment).
    pub fn root(&self) -> Fr {
        self.levels.last().expect("tree has a root")[0]
    }

    /// Sibling nodes on the path from leaf `leaf` to the root, bottom-up.
    pub fn path(&self, leaf: u32) -> Vec<Fr> {
        let mut idx = leaf as usize;
        let mut out = Vec::with_capacity(self.depth as usize);
        for level in &self.levels[..self.depth as usize] {
            out.push(level[idx ^ 1]);
            idx >>= 1;
        }
        out
    }

    /// The `count` leaf indices partition `partition` of this sector is challenged on.
    pub fn challenges(&self, seed: u64, partition: u32, count: u32) -> Vec<u32> {
        let mut rng = rng_for(seed, self.index, partition as u64);
        let mask = (1u64 << self.depth) - 1;
        (0..count).map(|_| (rng.next_u64() & mask) as u32).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_reach_the_root() {
        let s = Sector::generate(7, 3, 4);
        assert_eq!(s.data.len(), 16);
        for leaf in 0..16u32 {
            let mut cur = leaf_node(s.data[leaf as usize]);
            for (lvl, sib) in s.path(leaf).into_iter().enumerate() {
                cur = if (leaf >> lvl) & 1 == 1 {
                    compress(sib, cur)
                } else {
                    compress(cur, sib)
                };
            }
            assert_eq!(cur, s.root());
        }
        let other = Sector::generate(7, 4, 4);
        assert_ne!(other.root(), s.root());
        assert_eq!(Sector::generate(7, 3, 4).root(), s.root());
        let c = s.challenges(7, 1, 5);
        assert_eq!(c.len(), 5);
        assert!(c.iter().all(|&i| i < 16));
        assert_ne!(s.challenges(7, 2, 5), c);
    }
}
