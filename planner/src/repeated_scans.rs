//! Scans a query repeats (ADR 0034, 0040). A decorrelated subquery often reads a table that
//! the outer query reads too, with the same filter (TPC-H q2, q17, q20), or a query reads a
//! table unfiltered and again filtered (q21). Physical planning numbers the groups of scans
//! that read one table with one filter, in the query and in its subqueries: the first scan
//! of a group read more than once reads the columns all of them read and keeps its rows for
//! the others (exec decides at run time whether the kept rows cover a later scan's joins). A
//! filtered scan may also take the rows its table's unfiltered scans kept and filter them
//! again.

use crate::expr::Expr;
use crate::physical::PhysicalPlan;

/// What a scan shares with the other scans of its table in the query.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RepeatedScan {
    /// The number of the scan's group: the scans of its table with its filter.
    pub group: usize,
    /// When the group is read more than once (counting the filtered scans that may take an
    /// unfiltered group's rows): the columns its scans read together (`None`: all), which
    /// the first to run reads and keeps.
    pub keep: Option<Option<Vec<usize>>>,
    /// For a filtered scan, its table's unfiltered group, when that group keeps rows.
    pub unfiltered: Option<usize>,
}

/// A scan's group: its table and its filter.
#[derive(PartialEq)]
enum Table {
    /// A lake table by id, the width of the scan's rows (a scan that adds the row address,
    /// ADR 0048, reads other rows than one that does not), and the slice it reads, in a spread
    /// plan (ADR 0076): a slice shares nothing with the whole table. A scan with a nearest
    /// clause (ADR 0082) reads rows of its own, and is known by its clause.
    Lake(u64, usize, Option<crate::physical::Slice>, Option<usize>),
    Files(Vec<String>),
}

struct Group {
    table: Table,
    filter: Option<Expr>,
    scans: usize,
    /// The columns the group's scans read together (`None`: all).
    columns: Option<Vec<usize>>,
}

/// Sets `repeat` on every scan of `plan` (and of the plans of its scalar subqueries) whose
/// group is read more than once, or that may take the rows of an unfiltered group that is.
pub fn mark_repeated_scans(plan: &mut PhysicalPlan) {
    let mut groups: Vec<Group> = Vec::new();
    let mut numbers = Vec::new();
    plan.for_each_with_subqueries(&mut |scan| {
        if !is_scan(scan) {
            return;
        }
        let (table, columns, filter) = scan_parts(scan);
        let number = group_of(&mut groups, table, filter);
        add_columns(&mut groups[number], columns);
        numbers.push(number);
    });
    // An unfiltered group is read by the filtered scans of its table too.
    let unfiltered: Vec<Option<usize>> = groups
        .iter()
        .map(|group| {
            group.filter.as_ref()?;
            groups
                .iter()
                .position(|other| other.filter.is_none() && other.table == group.table)
        })
        .collect();
    for (g, u) in unfiltered.iter().enumerate() {
        if let Some(u) = *u {
            let (scans, columns) = (groups[g].scans, groups[g].columns.clone());
            groups[u].scans += scans;
            add_columns(&mut groups[u], columns.as_deref());
        }
    }
    let mut numbers = numbers.into_iter();
    plan.for_each_with_subqueries(&mut |scan| {
        if !is_scan(scan) {
            return;
        }
        let group = numbers.next().expect("the same scans");
        let keep = (groups[group].scans > 1).then(|| groups[group].columns.clone());
        let unfiltered = unfiltered[group].filter(|u| groups[*u].scans > 1);
        if keep.is_some() || unfiltered.is_some() {
            *scan_repeat(scan) = Some(RepeatedScan {
                group,
                keep,
                unfiltered,
            });
        }
    });
}

/// The number of the group of `table` and `filter`, added when new.
fn group_of(groups: &mut Vec<Group>, table: Table, filter: Option<&Expr>) -> usize {
    let found = groups
        .iter()
        .position(|g| g.table == table && g.filter.as_ref() == filter);
    let number = found.unwrap_or_else(|| {
        groups.push(Group {
            table,
            filter: filter.cloned(),
            scans: 0,
            columns: Some(Vec::new()),
        });
        groups.len() - 1
    });
    groups[number].scans += 1;
    number
}

/// Adds `columns` (all when `None`) to the columns a group's scans read together.
fn add_columns(group: &mut Group, columns: Option<&[usize]>) {
    match (&mut group.columns, columns) {
        (Some(read), Some(columns)) => {
            for c in columns {
                if !read.contains(c) {
                    read.push(*c);
                }
            }
            read.sort_unstable();
        }
        (read, _) => *read = None,
    }
}

fn is_scan(node: &PhysicalPlan) -> bool {
    matches!(
        node,
        PhysicalPlan::TableScan { .. } | PhysicalPlan::ParquetScan { .. }
    )
}

fn scan_parts(scan: &PhysicalPlan) -> (Table, Option<&[usize]>, Option<&Expr>) {
    match scan {
        PhysicalPlan::TableScan {
            table,
            schema,
            columns,
            filter,
            slice,
            nearest,
            ..
        } => {
            let nearest = nearest.as_ref().map(|n| std::sync::Arc::as_ptr(n) as usize);
            let table = Table::Lake(table.id, schema.fields().len(), *slice, nearest);
            (table, columns.as_deref(), filter.as_ref())
        }
        PhysicalPlan::ParquetScan {
            table,
            columns,
            filter,
            ..
        } => {
            let files = table.files.iter().map(|f| f.source.name()).collect();
            (Table::Files(files), columns.as_deref(), filter.as_ref())
        }
        _ => unreachable!("only scans are grouped"),
    }
}

fn scan_repeat(scan: &mut PhysicalPlan) -> &mut Option<RepeatedScan> {
    match scan {
        PhysicalPlan::TableScan { repeat, .. } | PhysicalPlan::ParquetScan { repeat, .. } => repeat,
        _ => unreachable!("only scans are grouped"),
    }
}
