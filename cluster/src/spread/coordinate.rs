//! The node that got a query decides whether it spreads (ADR 0076): what the planner needs of
//! the cluster (the nodes, their cores, the measured network), and the Gather that asks the
//! other nodes for their parts.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use pondra_catalog::Snapshot;
use pondra_parser::ParsedStatement;
use pondra_planner::{PhysicalPlan, Spread, SpreadContext, SpreadMode, spread};

use super::{ClusterGatherer, PartRequest};
use crate::node::Node;
use crate::sessions::session::Session;

/// A plan as it will run: spread, with the Gather's source of rows, or local and why.
pub(crate) struct Decided {
    pub(crate) plan: PhysicalPlan,
    pub(crate) gatherer: Option<Arc<ClusterGatherer>>,
    /// Why the plan runs on this node alone, when it does.
    pub(crate) local_reason: Option<String>,
}

impl Decided {
    /// `plan` as it is, run here.
    pub(crate) fn alone(plan: PhysicalPlan) -> Decided {
        Decided {
            plan,
            gatherer: None,
            local_reason: None,
        }
    }

    fn local(plan: PhysicalPlan, reason: &str) -> Decided {
        Decided {
            plan,
            gatherer: None,
            local_reason: Some(reason.to_string()),
        }
    }
}

impl Node {
    /// Spreads `plan`, the physical plan of `statement` over `snapshot`, when the session and
    /// the cluster let it and the planner finds it worth it.
    pub(crate) fn decide_spread(
        &self,
        plan: PhysicalPlan,
        snapshot: &Snapshot,
        session: Option<&Session>,
        statement: &ParsedStatement,
        micros: i64,
    ) -> Decided {
        let Some(session) = session else {
            return Decided::local(plan, "the statement has no session");
        };
        let setting = session.spread_setting();
        let mode = setting.mode.unwrap_or_else(|| self.spread.default_mode());
        if mode == SpreadMode::Never && setting.debug_parts < 2 {
            return Decided::local(plan, "spread = 'never'");
        }
        if session.transaction_view().is_some() {
            return Decided::local(plan, "a transaction's changes are this node's alone");
        }
        if !session.variables().is_empty() || session.with_temporary(|t| !t.is_empty()) {
            return Decided::local(
                plan,
                "the session's variables and temporary tables are this node's alone",
            );
        }
        let pondra_parser::Statement::Sql(sql) = &statement.statement else {
            return Decided::local(plan, "the statement is not a query");
        };
        if pondra_planner::calls_models(&plan) {
            return Decided::local(plan, "its model calls keep their answers through this node");
        }
        let peers = self.spread.peers();
        let (taking_part, names, cores, mode) = match (setting.debug_parts, &peers) {
            (parts, _) if parts >= 2 => {
                let names = (0..parts).map(|p| format!("part {p} here")).collect();
                (
                    Vec::new(),
                    names,
                    pondra_exec::process_threads(),
                    SpreadMode::Always,
                )
            }
            (_, None) => return Decided::local(plan, "this node is not in a cluster"),
            (_, Some(peers)) => {
                let taking_part = peers.peers();
                let mut names = vec![peers.own_name()];
                names.extend(taking_part.iter().map(|p| p.name.clone()));
                let cores = taking_part
                    .iter()
                    .map(|p| p.cores)
                    .fold(pondra_exec::process_threads(), usize::min);
                (taking_part, names, cores, mode)
            }
        };
        let counters = &self.spread.counters;
        let context = SpreadContext {
            mode,
            nodes: names,
            cores,
            network_bytes_per_second: counters.network_bytes_per_second.load(Ordering::Relaxed)
                as f64,
            exchange_everywhere: setting.debug_parts >= 2,
        };
        let (plan, fingerprint, sliced, exchange) = match spread(&plan, snapshot, &context) {
            Spread::Local { reason } => return Decided::local(plan, &reason),
            Spread::Spread {
                plan,
                fingerprint,
                sliced,
                exchange,
            } => (*plan, fingerprint, sliced, exchange),
        };
        let parts = context.nodes.len();
        let request = PartRequest {
            statement: sql.to_string(),
            commit: snapshot.commit,
            part: 0,
            parts,
            fingerprint,
            time_zone: session.time_zone(),
            disabled_optimizers: session.optimizer_settings().text(),
            statement_micros: micros,
            sliced,
            exchange,
            round: 0,
            part_nodes: Vec::new(),
        };
        let gatherer = ClusterGatherer {
            peers: (setting.debug_parts < 2).then_some(peers).flatten(),
            taking_part,
            request,
            counters: counters.clone(),
            mailboxes: self.spread_mailboxes(),
            reports: Default::default(),
        };
        Decided {
            plan,
            gatherer: Some(Arc::new(gatherer)),
            local_reason: None,
        }
    }
}

impl Node {
    /// What `EXPLAIN` adds of spreading for `statement` (an EXPLAIN of a query) when this node
    /// has others to spread to: the plan cut, with its Gather and the nodes taking part, or
    /// why the query stays here.
    pub(crate) fn explain_spread(
        &self,
        snapshot: &Snapshot,
        session: Option<&Session>,
        statement: &ParsedStatement,
        micros: i64,
    ) -> crate::Result<String> {
        let debugging = session.is_some_and(|s| s.spread_setting().debug_parts >= 2);
        let clustered = self
            .spread
            .peers()
            .is_some_and(|peers| !peers.peers().is_empty());
        let Some(query) = inner_query(statement).filter(|_| debugging || clustered) else {
            return Ok(String::new());
        };
        let pondra_planner::Plan::Query(plan) = self.bind_in(snapshot, session, &query, micros)?
        else {
            return Ok(String::new());
        };
        let physical = pondra_planner::create_physical_plan(&plan);
        let decided = self.decide_spread(physical, snapshot, session, &query, micros);
        Ok(match decided.local_reason {
            Some(reason) => format!("\n\nRuns on this node: {reason}"),
            None => format!("\n\nSpread:\n{}", decided.plan),
        })
    }
}

/// The query an `EXPLAIN [ANALYZE]` statement explains, as a statement of its own.
pub(crate) fn inner_query(statement: &ParsedStatement) -> Option<ParsedStatement> {
    let pondra_parser::Statement::Sql(sql) = &statement.statement else {
        return None;
    };
    let pondra_parser::ast::Statement::Explain {
        statement: inner, ..
    } = sql.as_ref()
    else {
        return None;
    };
    matches!(inner.as_ref(), pondra_parser::ast::Statement::Query(_)).then(|| ParsedStatement {
        text: inner.to_string(),
        statement: pondra_parser::Statement::Sql(inner.clone()),
    })
}
