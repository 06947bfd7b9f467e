//! A segment tree of aggregate states over one partition's rows: the state of any run of
//! rows is the merge of at most two nodes per level, so a frame that slides costs
//! O(log rows) per row whatever its width, for aggregates no row can be taken out of.

use std::ops::Range;

use crate::Result;

pub(super) struct SegmentTree<S> {
    leaves: usize,
    /// Node `i` holds the merge of nodes `2i` and `2i + 1`; leaf `k` is node `leaves + k`
    /// (node 0 is unused).
    nodes: Vec<S>,
}

impl<S: Clone> SegmentTree<S> {
    /// The tree over `leaves`, one state per row; `merge` folds the state of the rows just
    /// after into the first.
    pub fn new(
        leaves: Vec<S>,
        empty: &S,
        merge: &impl Fn(&mut S, &S) -> Result<()>,
    ) -> Result<SegmentTree<S>> {
        let count = leaves.len();
        let mut nodes = vec![empty.clone(); count];
        nodes.extend(leaves);
        for i in (1..count).rev() {
            let mut node = nodes[2 * i].clone();
            merge(&mut node, &nodes[2 * i + 1])?;
            nodes[i] = node;
        }
        Ok(SegmentTree {
            leaves: count,
            nodes,
        })
    }

    /// Folds the states of the leaves `range` into `into`, in order.
    pub fn fold(
        &self,
        range: Range<usize>,
        into: &mut S,
        merge: &impl Fn(&mut S, &S) -> Result<()>,
    ) -> Result<()> {
        let (mut low, mut high) = (range.start + self.leaves, range.end + self.leaves);
        // Nodes met on the right come in reverse order; a level adds at most one.
        let mut right = [0usize; usize::BITS as usize];
        let mut right_count = 0;
        while low < high {
            if low & 1 == 1 {
                merge(into, &self.nodes[low])?;
                low += 1;
            }
            if high & 1 == 1 {
                high -= 1;
                right[right_count] = high;
                right_count += 1;
            }
            low /= 2;
            high /= 2;
        }
        for &node in right[..right_count].iter().rev() {
            merge(into, &self.nodes[node])?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folds_every_run_in_order() {
        // Concatenation is not commutative: the order of the parts shows.
        let merge = |into: &mut String, other: &String| -> Result<()> {
            into.push_str(other);
            Ok(())
        };
        for count in 1..12 {
            let leaves: Vec<String> = (0..count).map(|i| format!("{i},")).collect();
            let tree = SegmentTree::new(leaves.clone(), &String::new(), &merge).unwrap();
            for start in 0..=count {
                for end in start..=count {
                    let mut folded = String::new();
                    tree.fold(start..end, &mut folded, &merge).unwrap();
                    assert_eq!(
                        folded,
                        leaves[start..end].concat(),
                        "{count} {start}..{end}"
                    );
                }
            }
        }
    }
}
