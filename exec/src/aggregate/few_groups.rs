//! A batch's rows sorted by group, for aggregations with few groups (ADR 0036). Adding each
//! row's value to its group's sum in memory chains every add to the last one of the same
//! group: with a handful of groups, the adds wait on each other. Sorted by group once per
//! batch, each group's rows are totalled in a register, and stored once; counts are the
//! lengths of the groups' rows.

/// Aggregations with at most this many groups sort a batch's rows by group.
pub(super) const FEW_GROUPS: usize = 64;

/// Batches with fewer rows than this are not sorted: the adds are too few to pay for it.
pub(super) const FEW_GROUPS_MIN_ROWS: usize = 1024;

/// The rows of one batch, in order of their group (each group's in row order).
pub(super) struct RowsByGroup {
    rows: Vec<u32>,
    /// Where each group's rows start in `rows`, and where the last ends.
    starts: Vec<usize>,
}

impl RowsByGroup {
    /// Sorts the rows by `groups[row]`, which are all below `group_count` (a counting sort).
    pub(super) fn new(groups: &[usize], group_count: usize) -> RowsByGroup {
        let mut starts = vec![0usize; group_count + 1];
        for &group in groups {
            starts[group + 1] += 1;
        }
        for group in 0..group_count {
            starts[group + 1] += starts[group];
        }
        let mut next = starts.clone();
        let mut rows = vec![0u32; groups.len()];
        for (row, &group) in groups.iter().enumerate() {
            rows[next[group]] = row as u32;
            next[group] += 1;
        }
        RowsByGroup { rows, starts }
    }

    /// Each group that has rows in the batch, with those rows.
    pub(super) fn groups(&self) -> impl Iterator<Item = (usize, &[u32])> {
        self.starts
            .windows(2)
            .enumerate()
            .filter(|(_, bounds)| bounds[0] < bounds[1])
            .map(|(group, bounds)| (group, &self.rows[bounds[0]..bounds[1]]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_come_by_group_in_row_order_and_empty_groups_are_skipped() {
        let sorted = RowsByGroup::new(&[2, 0, 2, 2, 0], 4);
        let groups: Vec<(usize, Vec<u32>)> = sorted
            .groups()
            .map(|(g, rows)| (g, rows.to_vec()))
            .collect();
        assert_eq!(groups, vec![(0, vec![1, 4]), (2, vec![0, 2, 3])]);
    }
}
