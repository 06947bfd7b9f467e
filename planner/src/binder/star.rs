//! The columns `*` and `t.*` stand for, with DuckDB's options after the star: `EXCLUDE` (or
//! `EXCEPT`) drops columns, `REPLACE (expr AS c)` computes a column in its place, and
//! `RENAME (c AS new)` gives one a new name. Names match without regard to case, and may be
//! qualified by their table.

use sqlparser::ast;

use super::object_name;
use super::scope::{Scope, ScopeColumn, normalize};
use crate::{Result, bind_err};

/// One column of an expanded star: the scope column it reads (or the expression replacing
/// it) and its output name.
pub(super) struct StarColumn<'a> {
    pub index: usize,
    pub name: String,
    pub replacement: Option<&'a ast::Expr>,
}

/// A column a star option names: `c` or `t.c`, lower-cased.
#[derive(PartialEq)]
struct Named {
    table: Option<String>,
    column: String,
}

impl Named {
    fn from_parts(parts: &[String]) -> Result<Named> {
        match parts {
            [column] => Ok(Named {
                table: None,
                column: column.to_lowercase(),
            }),
            [table, column] => Ok(Named {
                table: Some(table.to_lowercase()),
                column: column.to_lowercase(),
            }),
            _ => Err(bind_err!("a star option names a column or table.column")),
        }
    }

    fn reads(&self, column: &ScopeColumn) -> bool {
        column.name.to_lowercase() == self.column
            && self.table.as_ref().is_none_or(|table| {
                column
                    .qualifier
                    .as_ref()
                    .is_some_and(|q| q.to_lowercase() == *table)
            })
    }

    fn text(&self) -> String {
        match &self.table {
            Some(table) => format!("{table}.{}", self.column),
            None => self.column.clone(),
        }
    }
}

/// The columns `item` (a star) stands for in `scope`, in order.
pub(super) fn star_columns<'a>(
    item: &'a ast::SelectItem,
    scope: &Scope,
) -> Result<Vec<StarColumn<'a>>> {
    let (qualifier, options) = match item {
        ast::SelectItem::Wildcard(options) => (None, options),
        ast::SelectItem::QualifiedWildcard(
            ast::SelectItemQualifiedWildcardKind::ObjectName(name),
            options,
        ) => (Some(object_name(name)?), options),
        other => return Err(bind_err!("{other} is no star")),
    };
    if options.opt_ilike.is_some() || options.opt_alias.is_some() {
        return Err(crate::unsupported!("the star option in {item}"));
    }
    let in_star: Vec<usize> = (0..scope.columns.len())
        .filter(|&i| {
            let column = &scope.columns[i];
            // `t.*` is all of t's columns, its copy of a USING column too.
            match &qualifier {
                None => !column.hidden,
                Some(_) => (!column.hidden || column.merged) && column.qualifier == qualifier,
            }
        })
        .collect();
    if in_star.is_empty() {
        return Err(bind_err!("{item} matches no table in FROM"));
    }
    let excluded = exclusions(options)?;
    let replaced = replacements(options)?;
    let renamed = renames(options)?;
    let replaced_names: Vec<&Named> = replaced.iter().map(|(n, _)| n).collect();
    let renamed_names: Vec<&Named> = renamed.iter().map(|(n, _)| n).collect();
    let excluded_names: Vec<&Named> = excluded.iter().collect();
    refuse_overlap(&excluded_names, "EXCLUDE", &replaced_names, "REPLACE")?;
    refuse_overlap(&excluded_names, "EXCLUDE", &renamed_names, "RENAME")?;
    refuse_overlap(&replaced_names, "REPLACE", &renamed_names, "RENAME")?;

    let from_star = |named: &Named, list: &str| -> Result<Vec<usize>> {
        let matched: Vec<usize> = in_star
            .iter()
            .copied()
            .filter(|&i| named.reads(&scope.columns[i]))
            .collect();
        if !matched.is_empty() {
            return Ok(matched);
        }
        // A column USING merged into its left side's is named by either table.
        let merged = scope.columns.iter().any(|c| c.hidden && named.reads(c));
        let by_name = in_star
            .iter()
            .copied()
            .filter(|&i| scope.columns[i].name.to_lowercase() == named.column)
            .collect::<Vec<_>>();
        match (merged, by_name.is_empty(), &qualifier) {
            (true, false, _) => Ok(by_name),
            (_, _, Some(table)) => Err(bind_err!(
                "column \"{}\" in {list} list not found in {table}",
                named.text()
            )),
            _ => Err(bind_err!(
                "column \"{}\" in {list} list not found in FROM clause",
                named.text()
            )),
        }
    };
    let mut dropped = Vec::new();
    for named in &excluded {
        dropped.extend(from_star(named, "EXCLUDE")?);
    }
    let mut columns = Vec::new();
    for &index in in_star.iter().filter(|i| !dropped.contains(i)) {
        columns.push(StarColumn {
            index,
            name: scope.columns[index].name.clone(),
            replacement: None,
        });
    }
    for (named, expr) in &replaced {
        for index in from_star(named, "REPLACE")? {
            let column = columns.iter_mut().find(|c| c.index == index);
            column
                .expect("an excluded column is refused above")
                .replacement = Some(expr);
        }
    }
    for (named, alias) in &renamed {
        for index in from_star(named, "RENAME")? {
            let column = columns.iter_mut().find(|c| c.index == index);
            column.expect("an excluded column is refused above").name = alias.clone();
        }
    }
    // A star may exclude all its columns while other items remain; the caller refuses an
    // empty SELECT list.
    Ok(columns)
}

fn exclusions(options: &ast::WildcardAdditionalOptions) -> Result<Vec<Named>> {
    let mut names: Vec<Vec<String>> = Vec::new();
    match &options.opt_exclude {
        Some(ast::ExcludeSelectItem::Single(name)) => names.push(parts(name)),
        Some(ast::ExcludeSelectItem::Multiple(list)) => names.extend(list.iter().map(parts)),
        None => {}
    }
    if let Some(except) = &options.opt_except {
        names.push(vec![normalize(&except.first_element)]);
        let more = except.additional_elements.iter();
        names.extend(more.map(|ident| vec![normalize(ident)]));
    }
    let named = names
        .iter()
        .map(|parts| Named::from_parts(parts))
        .collect::<Result<Vec<_>>>()?;
    refuse_duplicates(named.iter(), "EXCLUDE")?;
    Ok(named)
}

fn replacements(options: &ast::WildcardAdditionalOptions) -> Result<Vec<(Named, &ast::Expr)>> {
    let Some(replace) = &options.opt_replace else {
        return Ok(Vec::new());
    };
    let replaced = replace
        .items
        .iter()
        .map(|item| {
            Ok((
                Named::from_parts(&[normalize(&item.column_name)])?,
                &item.expr,
            ))
        })
        .collect::<Result<Vec<_>>>()?;
    refuse_duplicates(replaced.iter().map(|(n, _)| n), "REPLACE")?;
    Ok(replaced)
}

fn renames(options: &ast::WildcardAdditionalOptions) -> Result<Vec<(Named, String)>> {
    let pairs = match &options.opt_rename {
        Some(ast::RenameSelectItem::Single(pair)) => vec![pair],
        Some(ast::RenameSelectItem::Multiple(pairs)) => pairs.iter().collect(),
        None => Vec::new(),
    };
    let renamed = pairs
        .into_iter()
        .map(|pair| {
            let named = Named::from_parts(&[normalize(&pair.ident)])?;
            Ok((named, normalize(&pair.alias)))
        })
        .collect::<Result<Vec<_>>>()?;
    refuse_duplicates(renamed.iter().map(|(n, _)| n), "RENAME")?;
    Ok(renamed)
}

fn parts(name: &ast::ObjectName) -> Vec<String> {
    name.0
        .iter()
        .map(|part| match part.as_ident() {
            Some(ident) => normalize(ident),
            None => part.to_string(),
        })
        .collect()
}

/// Two entries for one column, also `t.c` with `c`, are refused, as DuckDB does; `a.c` and
/// `b.c` name two.
fn refuse_duplicates<'n>(names: impl Iterator<Item = &'n Named>, list: &str) -> Result<()> {
    let names: Vec<&Named> = names.collect();
    for (i, named) in names.iter().enumerate() {
        let same = |seen: &&&Named| {
            seen.column == named.column
                && (seen.table.is_none() || named.table.is_none() || seen.table == named.table)
        };
        if names[..i].iter().any(|seen| same(&seen)) {
            return Err(bind_err!(
                "Duplicate entry \"{}\" in {list} list",
                named.column
            ));
        }
    }
    Ok(())
}

fn refuse_overlap(
    first: &[&Named],
    first_list: &str,
    second: &[&Named],
    second_list: &str,
) -> Result<()> {
    for named in second {
        if first.iter().any(|n| n.column == named.column) {
            return Err(bind_err!(
                "Column \"{}\" cannot occur in both {first_list} and {second_list} list",
                named.column
            ));
        }
    }
    Ok(())
}
