//! Spread plans (ADR 0076): one physical plan run by several nodes, each on a slice of one
//! table the plan reads (preferring a cut whose parts aggregate, then the largest table),
//! their rows gathered by the node that got the query. Every node plans the statement itself over the same snapshot and cuts
//! it at the scan the coordinator names (`cut.rs`); a fingerprint of the fragment proves they
//! agree. `cost.rs` decides whether a plan is worth spreading.

mod cost;
mod cut;
mod exchange;
mod partial;

use std::hash::{Hash, Hasher};

use pondra_catalog::Snapshot;

use crate::physical::{PhysicalPlan, Slice};
use crate::tree::TreeNode;

pub use cost::DEFAULT_NETWORK_BYTES_PER_SECOND;

/// Whether a session's queries run on several nodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum SpreadMode {
    /// When the time the other nodes save outweighs moving the rows.
    #[default]
    Auto,
    /// Whenever the plan can be cut and another node is there.
    Always,
    /// Never: every query runs on the node that got it.
    Never,
}

impl SpreadMode {
    pub fn parse(text: &str) -> Option<SpreadMode> {
        match text.to_ascii_lowercase().as_str() {
            "auto" => Some(SpreadMode::Auto),
            "always" | "on" | "true" => Some(SpreadMode::Always),
            "never" | "off" | "false" => Some(SpreadMode::Never),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            SpreadMode::Auto => "auto",
            SpreadMode::Always => "always",
            SpreadMode::Never => "never",
        }
    }
}

/// What the planner knows of the cluster when it decides to spread a plan.
#[derive(Clone, Debug)]
pub struct SpreadContext {
    pub mode: SpreadMode,
    /// The nodes that may take part, this one first.
    pub nodes: Vec<String>,
    /// The cores of the node with the fewest.
    pub cores: usize,
    /// What exchanges between the nodes moved per second, as last measured.
    pub network_bytes_per_second: f64,
    /// Exchange wherever the cut can, whatever it costs: to test exchanges on small tables.
    pub exchange_everywhere: bool,
}

/// A plan cut for several nodes, or why it runs on one.
#[derive(Clone, Debug)]
pub enum Spread {
    /// The plan with its Gather; the fingerprint of the Gather's fragment; the path from the
    /// root to the scan it slices, which the other nodes cut at.
    Spread {
        plan: Box<PhysicalPlan>,
        fingerprint: u64,
        sliced: Vec<usize>,
        /// Whether the cut exchanges rows between the parts, which the others cut alike.
        exchange: bool,
    },
    Local {
        reason: String,
    },
}

/// The plan to run for `plan` given the cluster: cut for its nodes, or left to run here.
pub fn spread(plan: &PhysicalPlan, snapshot: &Snapshot, context: &SpreadContext) -> Spread {
    let parts = context.nodes.len();
    let local = |reason: &str| Spread::Local {
        reason: reason.to_string(),
    };
    if context.mode == SpreadMode::Never {
        return local("spread = 'never'");
    }
    if parts < 2 {
        return local("no other node takes part");
    }
    let candidates = match cut::candidates(plan) {
        Ok(candidates) => candidates,
        Err(reason) => return Spread::Local { reason },
    };
    // Every candidate scan cut plainly, and with exchanges where they divide the work.
    let mut cuts = Vec::new();
    for path in candidates {
        let plain = cut::cut(plan, parts, &path, None);
        let exchanging = cut::cut(plan, parts, &path, Some(snapshot));
        if exchanging.exchanged {
            cuts.push((exchanging, path.clone(), true));
        }
        cuts.push((plain, path, false));
    }
    // `always` spreads even when the planner expects no gain, the way it expects the most.
    let chosen = match context.exchange_everywhere {
        true => Ok(most_divided(cuts, snapshot)),
        false => cost::cheapest(cuts, snapshot, context, context.mode == SpreadMode::Always),
    };
    let (mut cut, sliced, exchange) = match chosen {
        Ok(chosen) => chosen,
        Err(reason) => return Spread::Local { reason },
    };
    let fingerprint = fingerprint(cut.fragment());
    cut.name_nodes(&context.nodes);
    Spread::Spread {
        plan: Box::new(cut.into_plan()),
        fingerprint,
        sliced,
        exchange,
    }
}

/// A cut of a plan, the path to the scan it slices first, and whether it exchanges.
type CutChoice = (cut::Cut, Vec<usize>, bool);

/// The cut that divides the most work: one whose parts aggregate or cut short what they
/// read, then one that exchanges, then the largest sliced table; the first of equals.
fn most_divided(cuts: Vec<CutChoice>, snapshot: &Snapshot) -> CutChoice {
    let mut best: Option<((bool, bool, u64), CutChoice)> = None;
    for choice in cuts {
        let cut = &choice.0;
        let key = (
            cut.split,
            cut.exchanged,
            cost::table_rows(cut.sliced_scan(), snapshot),
        );
        if best.as_ref().is_none_or(|(most, _)| key > *most) {
            best = Some((key, choice));
        }
    }
    best.expect("a candidate").1
}

/// The fragment of `plan` cut for `parts` nodes at the scan `sliced` leads to (with exchanges
/// when `exchange`, sized by `snapshot`), and its fingerprint, as every node taking part cuts
/// it: what a node asked for a part runs.
pub fn fragment_of(
    plan: &PhysicalPlan,
    parts: usize,
    sliced: &[usize],
    exchange: bool,
    snapshot: &Snapshot,
) -> Result<(PhysicalPlan, u64), String> {
    let candidates = cut::candidates(plan)?;
    if parts < 2 || !candidates.iter().any(|c| c == sliced) {
        return Err("the coordinator sliced a scan this node's plan does not have".into());
    }
    let cut = cut::cut(plan, parts, sliced, exchange.then_some(snapshot));
    let fragment = cut.fragment().clone();
    let fingerprint = fingerprint(&fragment);
    Ok((fragment, fingerprint))
}

/// Whether a fragment exchanges rows between its parts: they then run at once, or not at all.
pub fn exchanges(fragment: &PhysicalPlan) -> bool {
    fragment.exists(&mut |node| matches!(node, PhysicalPlan::Exchange { .. }))
}

/// A hash of the fragment as it prints: equal on two nodes when they planned the same
/// fragment. The hasher has fixed keys, so every process computes the same.
pub fn fingerprint(fragment: &PhysicalPlan) -> u64 {
    #[allow(deprecated)]
    let mut hasher = std::hash::SipHasher::new_with_keys(0x7370_7265_6164, 0x0076);
    format!("{fragment:?}").hash(&mut hasher);
    hasher.finish()
}

/// `fragment` with its sliced scans reading part `part`.
pub fn with_slice_part(fragment: &PhysicalPlan, part: usize) -> PhysicalPlan {
    let mut fragment = fragment.clone();
    let mut sliced = 0;
    let Ok(()) = fragment.transform_down(&mut |node| {
        if let PhysicalPlan::TableScan {
            slice: Some(slice), ..
        } = node
        {
            assert!(part < slice.parts, "part {part} of {} parts", slice.parts);
            *slice = Slice {
                part,
                parts: slice.parts,
            };
            sliced += 1;
        }
        Ok::<_, std::convert::Infallible>(())
    });
    assert!(sliced >= 1, "a fragment has a sliced scan");
    fragment
}

#[cfg(test)]
mod tests;
