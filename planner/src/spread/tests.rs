use std::sync::Arc;

use arrow::datatypes::DataType;
use pondra_catalog::{Column, SqlType, TableDef, TableKind};

use super::*;
use crate::expr::{AggregateCall, AggregateFunction, BinaryOp, Expr, JoinKind};
use crate::scalar::ScalarValue;

fn table(id: u64, name: &str) -> Arc<TableDef> {
    let column = |name: &str, sql_type| Column {
        name: name.into(),
        sql_type,
        not_null: false,
        id: 0,
    };
    let columns = vec![
        column("k", SqlType::BigInt),
        column(
            "price",
            SqlType::Decimal {
                precision: 15,
                scale: 2,
            },
        ),
    ];
    let mut def = TableDef::new(name.into(), columns, TableKind::Table);
    def.id = id;
    Arc::new(def)
}

fn scan(table: Arc<TableDef>) -> PhysicalPlan {
    PhysicalPlan::TableScan {
        schema: table.arrow_schema(),
        table,
        columns: None,
        filter: None,
        repeat: None,
        slice: None,
        nearest: None,
    }
}

fn key() -> Expr {
    Expr::column(0, "k", DataType::Int64)
}

fn price() -> Expr {
    Expr::column(1, "price", DataType::Decimal64(15, 2))
}

fn filtered(input: PhysicalPlan) -> PhysicalPlan {
    PhysicalPlan::Filter {
        input: Box::new(input),
        predicate: Expr::Binary {
            op: BinaryOp::Gt,
            left: Box::new(key()),
            right: Box::new(Expr::Literal(ScalarValue::Int64(3))),
        },
    }
}

fn aggregate(input: PhysicalPlan, calls: Vec<AggregateCall>) -> PhysicalPlan {
    let mut fields = vec![arrow::datatypes::Field::new("k", DataType::Int64, true)];
    for (i, call) in calls.iter().enumerate() {
        fields.push(arrow::datatypes::Field::new(
            format!("a{i}"),
            call.data_type.clone(),
            true,
        ));
    }
    PhysicalPlan::HashAggregate {
        input: Box::new(input),
        group: vec![key()],
        aggregates: calls,
        schema: Arc::new(arrow::datatypes::Schema::new(fields)),
        shared: None,
    }
}

fn call(func: AggregateFunction, arg: Option<Expr>) -> AggregateCall {
    AggregateCall::new(func, arg)
}

fn context(nodes: usize) -> SpreadContext {
    SpreadContext {
        mode: SpreadMode::Always,
        nodes: (0..nodes).map(|i| format!("n{i}")).collect(),
        cores: 1,
        network_bytes_per_second: DEFAULT_NETWORK_BYTES_PER_SECOND,
        exchange_everywhere: false,
    }
}

fn spread_text(plan: &PhysicalPlan, nodes: usize) -> String {
    match spread(plan, &Snapshot::default(), &context(nodes)) {
        Spread::Spread { plan, .. } => plan.to_string(),
        Spread::Local { reason } => format!("local: {reason}"),
    }
}

#[test]
fn a_decomposable_aggregate_is_split_around_the_gather() {
    let plan = aggregate(
        filtered(scan(table(1, "sales"))),
        vec![
            call(AggregateFunction::CountStar, None),
            call(AggregateFunction::Sum, Some(price())),
            call(AggregateFunction::Avg, Some(price())),
            call(AggregateFunction::Max, Some(price())),
        ],
    );
    let text = spread_text(&plan, 3);
    let lines: Vec<&str> = text.lines().map(str::trim).collect();
    assert!(lines[0].starts_with("Projection"), "{text}");
    assert!(lines[1].starts_with("HashAggregate"), "{text}");
    assert_eq!(lines[2], "Gather: 3 parts on n0, n1, n2", "{text}");
    assert!(lines[3].starts_with("HashAggregate"), "{text}");
    assert!(lines[4].starts_with("Filter"), "{text}");
    assert!(lines[5].ends_with("sliced=0/3"), "{text}");
    // The final aggregate and its projection answer with the original columns.
    let Spread::Spread { plan: cut, .. } = spread(&plan, &Snapshot::default(), &context(3)) else {
        panic!("spread");
    };
    assert_eq!(cut.schema(), plan.schema());
}

#[test]
fn an_aggregate_that_does_not_split_gathers_its_input() {
    let plan = aggregate(
        filtered(scan(table(1, "sales"))),
        vec![call(AggregateFunction::CountDistinct, Some(price()))],
    );
    let text = spread_text(&plan, 2);
    let lines: Vec<&str> = text.lines().map(str::trim).collect();
    assert!(lines[0].starts_with("HashAggregate"), "{text}");
    assert!(lines[1].starts_with("Gather: 2 parts"), "{text}");
    assert!(lines[2].starts_with("Filter"), "{text}");
}

#[test]
fn a_join_streams_the_slice_through_a_whole_build_side() {
    let join = |kind| PhysicalPlan::HashJoin {
        schema: Arc::new(arrow::datatypes::Schema::new(
            [table(1, "a").arrow_schema(), table(2, "b").arrow_schema()]
                .iter()
                .flat_map(|s| s.fields().iter().cloned())
                .collect::<Vec<_>>(),
        )),
        left: Box::new(scan(table(1, "facts"))),
        right: Box::new(scan(table(2, "dimension"))),
        kind,
        left_keys: vec![key()],
        right_keys: vec![key()],
        filter: None,
        estimate: None,
    };
    let text = spread_text(&join(JoinKind::Inner), 2);
    assert!(text.starts_with("Gather: 2 parts"), "{text}");
    assert!(text.contains("TableScan: facts sliced=0/2"), "{text}");
    assert!(text.contains("TableScan: dimension\n") || text.ends_with("TableScan: dimension"));
    // A full join emits the build side's unmatched rows: the slice cannot stream through it.
    let text = spread_text(&join(JoinKind::Full), 2);
    let lines: Vec<&str> = text.lines().map(str::trim).collect();
    assert!(lines[0].starts_with("HashJoin"), "{text}");
    assert!(lines[1].starts_with("Gather: 2 parts"), "{text}");
}

#[test]
fn every_node_cuts_the_same_fragment_and_slices_it_by_part() {
    let plan = aggregate(
        scan(table(1, "sales")),
        vec![call(AggregateFunction::Sum, Some(price()))],
    );
    let Spread::Spread {
        fingerprint,
        sliced,
        ..
    } = spread(&plan, &Snapshot::default(), &context(3))
    else {
        panic!("spread");
    };
    let (fragment, theirs) =
        fragment_of(&plan, 3, &sliced, false, &Snapshot::default()).expect("cut");
    assert_eq!(fingerprint, theirs);
    let (_, two_parts) = fragment_of(&plan, 2, &sliced, false, &Snapshot::default()).expect("cut");
    assert_ne!(fingerprint, two_parts, "the parts are part of the fragment");
    assert!(
        fragment_of(&plan, 3, &[7], false, &Snapshot::default()).is_err(),
        "a scan the plan does not have"
    );
    assert!(
        with_slice_part(&fragment, 2)
            .to_string()
            .contains("sliced=2/3")
    );
}

#[test]
fn plans_that_cannot_be_cut_stay_local_with_the_reason() {
    let plan = aggregate(
        scan(table(1, "sales")),
        vec![call(AggregateFunction::Sum, Some(price()))],
    );
    assert_eq!(spread_text(&plan, 1), "local: no other node takes part");
    let never = SpreadContext {
        mode: SpreadMode::Never,
        ..context(3)
    };
    assert!(matches!(
        spread(&plan, &Snapshot::default(), &never),
        Spread::Local { .. }
    ));
    let values = PhysicalPlan::Values {
        schema: Arc::new(arrow::datatypes::Schema::empty()),
        rows: Vec::new(),
    };
    assert_eq!(
        spread_text(&values, 2),
        "local: the plan reads no lake table"
    );
    // Under `auto`, a small table stays on one node.
    let auto = SpreadContext {
        mode: SpreadMode::Auto,
        ..context(3)
    };
    let Spread::Local { reason } = spread(&plan, &Snapshot::default(), &auto) else {
        panic!("an empty table is not worth spreading");
    };
    assert!(reason.starts_with("spreading would save"), "{reason}");
}
