//! PostgreSQL's catalog functions of an oid (`pg_relation_size`, `obj_description`,
//! `col_description`, `pg_get_viewdef`, `pg_get_indexdef`, `pg_get_constraintdef`), each bound
//! as a CASE over the snapshot's objects.

use arrow::datatypes::DataType;
use pondra_catalog::TableKind;

use super::Binder;
use crate::expr::Expr;
use crate::scalar::ScalarValue;

impl<'a> Binder<'a> {
    /// The bytes of Parquet data of the table whose oid `oid` is (its log tail uncounted), 0
    /// for a view, NULL for an oid that is no table.
    pub(crate) fn relation_sizes(&self, oid: Expr) -> Expr {
        let sizes = self.snapshot.visible_tables().map(|table| {
            let bytes: u64 = self
                .snapshot
                .files(table.id)
                .iter()
                .map(|f| f.size_bytes)
                .sum();
            (
                crate::system_tables::table_oid(table),
                None,
                ScalarValue::Int64(bytes as i64),
            )
        });
        by_oid(oid, sizes, DataType::Int64)
    }

    /// `obj_description(oid)` (no column) or `col_description(oid, column)`: the comment
    /// `COMMENT ON` gave the table or its column numbered from 1; NULL where there is none.
    pub(crate) fn comments(&self, oid: Expr, column: Option<Expr>) -> Expr {
        let column = column.map(|c| c.cast(&DataType::Int32));
        let mut branches = Vec::new();
        for table in self.snapshot.visible_tables().chain(self.temporary) {
            let oid = crate::system_tables::table_oid(table);
            for (name, text) in &table.comments {
                let text = ScalarValue::Utf8(text.clone());
                match (&column, name.is_empty()) {
                    (None, true) => branches.push((oid, None, text)),
                    (Some(column), false) => {
                        if let Some(position) = table.columns.iter().position(|c| &c.name == name) {
                            branches.push((oid, Some((column, position as i32 + 1)), text));
                        }
                    }
                    _ => {}
                }
            }
        }
        by_oid(oid, branches, DataType::Utf8)
    }

    /// `pg_get_viewdef(oid)`: the defining query of the view whose oid `oid` is.
    pub(crate) fn view_definitions(&self, oid: Expr) -> Expr {
        let branches = self.snapshot.visible_tables().filter_map(|table| {
            let sql = match &table.kind {
                TableKind::View { sql, .. } => sql.clone(),
                TableKind::MaterializedView { sql, .. } => sql.clone(),
                TableKind::Table
                | TableKind::ValueCounts { .. }
                | TableKind::JoinState { .. }
                | TableKind::Macro { .. }
                | TableKind::Procedure { .. } => {
                    return None;
                }
            };
            let oid = crate::system_tables::table_oid(table);
            Some((oid, None, ScalarValue::Utf8(sql)))
        });
        by_oid(oid, branches, DataType::Utf8)
    }

    /// `pg_get_indexdef(oid [, column])`: the definition of the index whose oid `oid` is, or
    /// with a column number from 1, the name of that column of it; NULL for any other oid.
    pub(crate) fn index_definitions(&self, oid: Expr, column: Option<Expr>) -> Expr {
        let column = column.map(|c| c.cast(&DataType::Int32));
        let mut branches = Vec::new();
        for table in self.snapshot.visible_tables() {
            for index in crate::system_tables::table_indexes(table) {
                let definition = ScalarValue::Utf8(index.definition(&table.name));
                let Some(column) = &column else {
                    branches.push((index.oid, None, definition));
                    continue;
                };
                branches.push((index.oid, Some((column, 0)), definition));
                for (k, name) in index.column_names.iter().enumerate() {
                    let name = ScalarValue::Utf8(name.clone());
                    branches.push((index.oid, Some((column, k as i32 + 1)), name));
                }
            }
        }
        by_oid(oid, branches, DataType::Utf8)
    }

    /// `pg_get_constraintdef(oid)`: the definition of the constraint whose oid `oid` is, NULL
    /// for any other oid.
    pub(crate) fn constraint_definitions(&self, oid: Expr) -> Expr {
        let mut branches = Vec::new();
        for table in self.snapshot.visible_tables() {
            for index in crate::system_tables::table_indexes(table) {
                if let (Some((oid, _)), Some(definition)) =
                    (index.constraint, index.constraint_definition())
                {
                    branches.push((oid, None, ScalarValue::Utf8(definition)));
                }
            }
        }
        by_oid(oid, branches, DataType::Utf8)
    }
}

/// The value paired with the oid `oid` is (and, where a pair names one, with the value of a
/// second argument), NULL when none is: the catalog's objects are few, so a CASE over them
/// serves the catalog functions clients call per row.
fn by_oid<'e>(
    oid: Expr,
    values: impl IntoIterator<Item = (i32, Option<(&'e Expr, i32)>, ScalarValue)>,
    data_type: DataType,
) -> Expr {
    let oid = oid.cast(&DataType::Int32);
    let equals = |left: &Expr, right: i32| Expr::Binary {
        op: crate::expr::BinaryOp::Eq,
        left: Box::new(left.clone()),
        right: Box::new(Expr::Literal(ScalarValue::Int32(right))),
    };
    let branches = values
        .into_iter()
        .map(|(key, second, value)| {
            let mut matches = equals(&oid, key);
            if let Some((argument, expected)) = second {
                matches = Expr::Binary {
                    op: crate::expr::BinaryOp::And,
                    left: Box::new(matches),
                    right: Box::new(equals(argument, expected)),
                };
            }
            (matches, Expr::Literal(value).cast(&data_type))
        })
        .collect();
    Expr::Case {
        branches,
        otherwise: None,
        data_type,
    }
}
