//! Each sorted row's frame: the rows `from..to` its bounds take in, less the rows its
//! exclusion leaves out. Frames never leave their partition, and as the current row moves
//! down a partition both ends of its frame move down or stay (the drivers rely on it).

use std::ops::Range;

use arrow::array::ArrayRef;
use pondra_planner::{Frame, FrameBound, FrameExclusion, FrameOffset, FrameUnits, SortKey};

use super::Layout;
use super::range_offsets::{Distance, RangeKeys};
use crate::{ExecError, Result};

/// The frames of every sorted row of one window function.
pub(super) struct Frames<'a> {
    pub layout: &'a Layout,
    /// Each row's frame before exclusion, absolute positions.
    bounds: Vec<Range<usize>>,
    exclude: FrameExclusion,
    /// Whether every frame starts at its partition's first row.
    pub starts_at_partition: bool,
}

/// A frame bound made ready to apply to a row: a RANGE offset is a distance in its key's
/// terms.
enum Bound {
    UnboundedPreceding,
    UnboundedFollowing,
    CurrentRow,
    Rows { before: bool, count: u64 },
    Groups { before: bool, count: u64 },
    Range { before: bool, distance: Distance },
}

impl<'a> Frames<'a> {
    pub fn new(
        frame: &Frame,
        layout: &'a Layout,
        order: &[ArrayRef],
        order_by: &[SortKey],
    ) -> Result<Frames<'a>> {
        let range_keys = match (order.first(), order_by.first()) {
            (Some(key), Some(sort)) if has_range_offset(frame) => Some(RangeKeys::new(key, sort)?),
            _ => None,
        };
        let start = prepare(&frame.start, frame.units, range_keys.as_ref())?;
        let end = prepare(&frame.end, frame.units, range_keys.as_ref())?;
        let mut bounds = Vec::with_capacity(layout.rows());
        for partition in &layout.partitions {
            crate::control::check_current()?;
            for row in partition.clone() {
                let place = Place {
                    layout,
                    partition: partition.clone(),
                    row,
                    keys: range_keys.as_ref(),
                    units: frame.units,
                };
                let from = place.start(&start);
                let to = place.end(&end).max(from);
                bounds.push(from..to);
            }
        }
        Ok(Frames {
            layout,
            bounds,
            exclude: frame.exclude,
            starts_at_partition: matches!(start, Bound::UnboundedPreceding),
        })
    }

    pub fn rows(&self) -> usize {
        self.bounds.len()
    }

    pub fn excludes_nothing(&self) -> bool {
        self.exclude == FrameExclusion::NoOthers
    }

    /// Row `row`'s frame before exclusion.
    pub fn bounds(&self, row: usize) -> Range<usize> {
        self.bounds[row].clone()
    }

    /// Row `row`'s frame: up to three runs of rows, in order, some of them empty.
    pub fn pieces(&self, row: usize) -> [Range<usize>; 3] {
        let frame = self.bounds(row);
        if self.excludes_nothing() {
            return [frame, 0..0, 0..0];
        }
        let (gap, kept) = self.gap(row);
        [
            within(&frame, frame.start..gap.start),
            within(&frame, kept),
            within(&frame, gap.end..frame.end),
        ]
    }

    /// The rows of row `row`'s frame its exclusion leaves out: up to two runs.
    pub fn excluded(&self, row: usize) -> [Range<usize>; 2] {
        let frame = self.bounds(row);
        let (gap, kept) = self.gap(row);
        if kept.is_empty() {
            return [within(&frame, gap), 0..0];
        }
        [
            within(&frame, gap.start..kept.start),
            within(&frame, kept.end..gap.end),
        ]
    }

    /// The rows the exclusion of row `row` cuts out of any frame, and the row it puts back
    /// inside that cut (the current row, for EXCLUDE TIES).
    fn gap(&self, row: usize) -> (Range<usize>, Range<usize>) {
        match self.exclude {
            FrameExclusion::NoOthers => (row..row, 0..0),
            FrameExclusion::CurrentRow => (row..row + 1, 0..0),
            FrameExclusion::Group => (self.layout.peers(row), 0..0),
            FrameExclusion::Ties => (self.layout.peers(row), row..row + 1),
        }
    }
}

/// The rows of `rows` inside `frame`, as a run that is empty rather than reversed.
fn within(frame: &Range<usize>, rows: Range<usize>) -> Range<usize> {
    let start = rows.start.max(frame.start);
    start..rows.end.min(frame.end).max(start)
}

fn has_range_offset(frame: &Frame) -> bool {
    frame.units == FrameUnits::Range
        && [&frame.start, &frame.end]
            .iter()
            .any(|b| matches!(b, FrameBound::Preceding(_) | FrameBound::Following(_)))
}

fn prepare(bound: &FrameBound, units: FrameUnits, keys: Option<&RangeKeys>) -> Result<Bound> {
    let (before, offset) = match bound {
        FrameBound::UnboundedPreceding => return Ok(Bound::UnboundedPreceding),
        FrameBound::UnboundedFollowing => return Ok(Bound::UnboundedFollowing),
        FrameBound::CurrentRow => return Ok(Bound::CurrentRow),
        FrameBound::Preceding(offset) => (true, offset),
        FrameBound::Following(offset) => (false, offset),
    };
    Ok(match (units, offset, keys) {
        (FrameUnits::Rows, FrameOffset::Count(count), _) => Bound::Rows {
            before,
            count: *count,
        },
        (FrameUnits::Groups, FrameOffset::Count(count), _) => Bound::Groups {
            before,
            count: *count,
        },
        (FrameUnits::Range, FrameOffset::Distance(value), Some(keys)) => Bound::Range {
            before,
            distance: keys.distance(value)?,
        },
        _ => {
            return Err(ExecError::Execution(format!(
                "a {units:?} frame with the offset {offset:?}"
            )));
        }
    })
}

/// One row, and what its bounds are measured against.
struct Place<'a> {
    layout: &'a Layout,
    partition: Range<usize>,
    row: usize,
    keys: Option<&'a RangeKeys>,
    units: FrameUnits,
}

impl Place<'_> {
    /// The first row of the frame.
    fn start(&self, bound: &Bound) -> usize {
        let peers = self.layout.peers(self.row);
        match bound {
            Bound::UnboundedPreceding => self.partition.start,
            Bound::UnboundedFollowing => self.partition.end,
            Bound::CurrentRow if self.units == FrameUnits::Rows => self.row,
            Bound::CurrentRow => peers.start,
            Bound::Rows {
                before: true,
                count,
            } => self
                .row
                .saturating_sub(clamp(*count))
                .max(self.partition.start),
            Bound::Rows {
                before: false,
                count,
            } => self
                .row
                .saturating_add(clamp(*count))
                .min(self.partition.end),
            Bound::Groups { before, count } => self.group_away(*before, *count).start,
            Bound::Range { before, distance } => self
                .keys
                .and_then(|k| k.start(self.partition.clone(), self.row, distance, *before))
                .unwrap_or(peers.start),
        }
    }

    /// One past the last row of the frame.
    fn end(&self, bound: &Bound) -> usize {
        let peers = self.layout.peers(self.row);
        match bound {
            Bound::UnboundedPreceding => self.partition.start,
            Bound::UnboundedFollowing => self.partition.end,
            Bound::CurrentRow if self.units == FrameUnits::Rows => self.row + 1,
            Bound::CurrentRow => peers.end,
            Bound::Rows {
                before: true,
                count,
            } => (self.row + 1)
                .saturating_sub(clamp(*count))
                .max(self.partition.start),
            Bound::Rows {
                before: false,
                count,
            } => (self.row + 1)
                .saturating_add(clamp(*count))
                .min(self.partition.end),
            Bound::Groups { before, count } => self.group_away(*before, *count).end,
            Bound::Range { before, distance } => self
                .keys
                .and_then(|k| k.end(self.partition.clone(), self.row, distance, *before))
                .unwrap_or(peers.end),
        }
    }

    /// The rows of the peer group `count` groups before or after this row's; an empty run
    /// at the partition's edge when there is none.
    fn group_away(&self, before: bool, count: u64) -> Range<usize> {
        let count = clamp(count);
        let group = self.layout.group(self.row);
        let first = self.layout.group(self.partition.start);
        let last = self.layout.group(self.partition.end - 1);
        match before {
            true => match group.checked_sub(count) {
                Some(g) if g >= first => self.layout.group_rows(g),
                _ => self.partition.start..self.partition.start,
            },
            false => match group.checked_add(count) {
                Some(g) if g <= last => self.layout.group_rows(g),
                _ => self.partition.end..self.partition.end,
            },
        }
    }
}

/// An offset as a count of rows or groups; one past any partition is as far as any other.
fn clamp(count: u64) -> usize {
    usize::try_from(count).unwrap_or(usize::MAX)
}
