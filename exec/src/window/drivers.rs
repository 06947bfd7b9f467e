//! The three ways an aggregate is computed over every row's frame, each linear or
//! log-linear in the rows: `running` adds the rows each frame gains to the previous row's
//! state; `sliding` also takes out the rows it loses (and, for a moment, those its exclusion
//! leaves out); `tree` merges a segment tree's states over the frame's runs of rows.

use std::ops::Range;

use arrow::array::ArrayRef;

use super::frames::Frames;
use super::segment_tree::SegmentTree;
use super::states::{FrameAggregate, Mergeable, Removable};
use crate::Result;

fn check_stop(row: usize) -> Result<()> {
    if row % 4096 == 4095 {
        crate::control::check_current()?;
    }
    Ok(())
}

/// For frames that all start at their partition's start and exclude nothing (a frame's end
/// never moves back as the row moves on).
pub(super) fn running<A: FrameAggregate>(agg: &A, frames: &Frames<'_>) -> Result<ArrayRef> {
    let mut out = Vec::with_capacity(frames.rows());
    for partition in &frames.layout.partitions {
        let mut state = agg.empty();
        let mut covered = partition.start..partition.start;
        for row in partition.clone() {
            check_stop(row)?;
            let frame = frames.bounds(row);
            if frame.start != covered.start || frame.end < covered.end {
                // Not a running frame after all: start over rather than answer wrong.
                state = agg.empty();
                covered = frame.start..frame.start;
            }
            for added in covered.end..frame.end {
                agg.add(&mut state, added)?;
            }
            covered.end = frame.end;
            out.push(agg.value(&state)?);
        }
    }
    agg.array(out)
}

/// For aggregates rows can be taken out of, over any frames: the state follows the frame
/// down the partition, each row added once and taken out once.
pub(super) fn sliding<A: Removable>(agg: &A, frames: &Frames<'_>) -> Result<ArrayRef> {
    let mut out = Vec::with_capacity(frames.rows());
    for partition in &frames.layout.partitions {
        let mut state = agg.empty();
        let mut covered = partition.start..partition.start;
        for row in partition.clone() {
            check_stop(row)?;
            move_to(agg, &mut state, &mut covered, frames.bounds(row))?;
            let excluded = frames.excluded(row);
            for left_out in excluded.iter().flat_map(|r| r.clone()) {
                agg.remove(&mut state, left_out)?;
            }
            out.push(agg.value(&state)?);
            for left_out in excluded.into_iter().flatten() {
                agg.add(&mut state, left_out)?;
            }
        }
    }
    agg.array(out)
}

/// Makes `state`, over the rows `covered`, the state over `frame`.
fn move_to<A: Removable>(
    agg: &A,
    state: &mut A::State,
    covered: &mut Range<usize>,
    frame: Range<usize>,
) -> Result<()> {
    while covered.end < frame.end {
        agg.add(state, covered.end)?;
        covered.end += 1;
    }
    while covered.start < frame.start {
        agg.remove(state, covered.start)?;
        covered.start += 1;
    }
    while covered.start > frame.start {
        covered.start -= 1;
        agg.add(state, covered.start)?;
    }
    while covered.end > frame.end {
        covered.end -= 1;
        agg.remove(state, covered.end)?;
    }
    Ok(())
}

/// For aggregates whose states merge, over any frames: a segment tree per partition.
pub(super) fn tree<A: Mergeable>(agg: &A, frames: &Frames<'_>) -> Result<ArrayRef> {
    let merge = |into: &mut A::State, other: &A::State| agg.merge(into, other);
    let empty = agg.empty();
    let mut out = Vec::with_capacity(frames.rows());
    for partition in &frames.layout.partitions {
        crate::control::check_current()?;
        let mut leaves = Vec::with_capacity(partition.len());
        for row in partition.clone() {
            let mut leaf = agg.empty();
            agg.add(&mut leaf, row)?;
            leaves.push(leaf);
        }
        let tree = SegmentTree::new(leaves, &empty, &merge)?;
        for row in partition.clone() {
            check_stop(row)?;
            let mut state = agg.empty();
            for piece in frames.pieces(row).into_iter().filter(|p| !p.is_empty()) {
                let leaves = piece.start - partition.start..piece.end - partition.start;
                tree.fold(leaves, &mut state, &merge)?;
            }
            out.push(agg.value(&state)?);
        }
    }
    agg.array(out)
}
