//! The dialect statements are read in: DuckDB's, as sqlparser reads it, and two infix
//! operators its reading lacks: `text GLOB pattern` (SQLite's and DuckDB's) and PostgreSQL's
//! `text ^@ prefix` (starts with), pgvector's `<->` and `<#>`, and DuckDB's `ROW(name type, ...)` and `MAP(key, value)` types, nested. sqlparser lets a dialect stand in for another; this one
//! answers every question as DuckDB's does, so every DuckDB form reads as before.

use std::any::TypeId;

use sqlparser::ast::{
    ArrayElemTypeDef, BinaryOperator, DataType, Expr, MapBracketKind, StructBracketKind,
    StructField,
};
use sqlparser::dialect::{Dialect, DuckDbDialect};
use sqlparser::keywords::Keyword;
use sqlparser::parser::{Parser, ParserError};
use sqlparser::tokenizer::Token;

#[derive(Debug, Default)]
pub struct PondraDialect(pub DuckDbDialect);

/// Forwards each named question to DuckDB's dialect.
macro_rules! as_duckdb {
    ($($name:ident($($arg:ident: $type:ty),*) -> $out:ty;)*) => {
        $(fn $name(&self, $($arg: $type),*) -> $out {
            self.0.$name($($arg),*)
        })*
    };
}

impl Dialect for PondraDialect {
    fn dialect(&self) -> TypeId {
        TypeId::of::<DuckDbDialect>()
    }

    fn parse_infix(
        &self,
        parser: &mut Parser,
        expr: &Expr,
        precedence: u8,
    ) -> Option<Result<Expr, ParserError>> {
        // Both already have their precedence (LIKE's, and `::`'s) in sqlparser's table.
        let op = if parser.parse_keyword(Keyword::GLOB) {
            BinaryOperator::Glob
        } else if parser.consume_token(&Token::CaretAt) {
            BinaryOperator::PGStartsWith
        } else {
            vector_operator(parser)?
        };
        Some(
            parser
                .parse_subexpr(precedence)
                .map(|right| Expr::BinaryOp {
                    left: Box::new(expr.clone()),
                    op,
                    right: Box::new(right),
                }),
        )
    }

    fn parse_data_type(&self, parser: &mut Parser) -> Option<Result<DataType, ParserError>> {
        // sqlparser reads DuckDB's `ROW(name type, ...)` as a custom type whose modifiers are
        // single words, so a nested `ROW(a ROW(b INT))` or `ROW(a INT[])` cannot be read.
        let named = |name: &str| {
            matches!(&parser.peek_token_ref().token,
                Token::Word(w) if w.value.eq_ignore_ascii_case(name))
                && parser.peek_nth_token_ref(1).token == Token::LParen
        };
        if named("row") {
            return Some(row_type(parser));
        }
        // Likewise `MAP(key type, value type)`, whose types may nest.
        named("map").then(|| map_type(parser))
    }

    // DuckDB takes `* EXCEPT (c)` for `* EXCLUDE (c)`, and `* RENAME (c AS d)`.
    fn supports_select_wildcard_except(&self) -> bool {
        true
    }

    fn supports_select_wildcard_rename(&self) -> bool {
        true
    }

    // PostgreSQL's `CREATE INDEX ... WITH (name = value)`: an HNSW index's settings (ADR 0082).
    fn supports_create_index_with_clause(&self) -> bool {
        true
    }

    as_duckdb! {
        supports_cte_materialization() -> bool;
        supports_string_literal_column_alias(explicit: bool) -> bool;
        supports_string_literal_table_alias(explicit: bool) -> bool;
        supports_trailing_commas() -> bool;
        is_identifier_start(ch: char) -> bool;
        is_identifier_part(ch: char) -> bool;
        identifier_quote_style(identifier: &str) -> Option<char>;
        supports_filter_during_aggregation() -> bool;
        supports_group_by_expr() -> bool;
        supports_bitwise_shift_operators() -> bool;
        supports_tilde_like_match_operator() -> bool;
        supports_aggregate_order_by_with_empty_args() -> bool;
        supports_comparison_in_between_low_bound() -> bool;
        supports_named_fn_args_with_eq_operator() -> bool;
        supports_named_fn_args_with_assignment_operator() -> bool;
        supports_dictionary_syntax() -> bool;
        support_map_literal_syntax() -> bool;
        supports_lambda_functions() -> bool;
        allow_extract_single_quotes() -> bool;
        supports_explain_with_utility_options() -> bool;
        supports_load_extension() -> bool;
        supports_array_typedef_with_brackets() -> bool;
        supports_from_first_select() -> bool;
        supports_order_by_all() -> bool;
        supports_select_wildcard_exclude() -> bool;
        supports_notnull_operator() -> bool;
        supports_install() -> bool;
        supports_detach() -> bool;
        supports_select_wildcard_replace() -> bool;
        supports_comma_separated_trim() -> bool;
        supports_numeric_literal_underscores() -> bool;
        supports_nested_comments() -> bool;
        supports_add_column_if_not_exists() -> bool;
    }
}

/// pgvector's distance operators `<->` and `<#>` (ADR 0082), which DuckDB's tokenizer reads as
/// `<` followed by `->` or `#>` (JSON's arrows); consumed when their tokens touch. (`<=>` is a token of
/// its own.)
fn vector_operator(parser: &mut Parser) -> Option<BinaryOperator> {
    let tokens: Vec<_> = (0..3)
        .map(|n| parser.peek_nth_token_ref(n).clone())
        .collect();
    if tokens[0].token != Token::Lt {
        return None;
    }
    let touch = |a: usize, b: usize| tokens[a].span.end == tokens[b].span.start;
    let (name, length) = match (&tokens[1].token, &tokens[2].token) {
        (Token::Arrow, _) if touch(0, 1) => ("<->", 2),
        (Token::Minus, Token::Gt) if touch(0, 1) && touch(1, 2) => ("<->", 3),
        (Token::Sharp, Token::Gt) if touch(0, 1) && touch(1, 2) => ("<#>", 3),
        (Token::HashArrow, _) if touch(0, 1) => ("<#>", 2),
        _ => return None,
    };
    for _ in 0..length {
        parser.next_token();
    }
    Some(BinaryOperator::Custom(name.into()))
}

/// `MAP(key type, value type)`, then any `[]` after it.
fn map_type(parser: &mut Parser) -> Result<DataType, ParserError> {
    parser.next_token();
    parser.expect_token(&Token::LParen)?;
    let key = parser.parse_data_type()?;
    parser.expect_token(&Token::Comma)?;
    let value = parser.parse_data_type()?;
    parser.expect_token(&Token::RParen)?;
    let map = DataType::Map(Box::new(key), Box::new(value), MapBracketKind::Parentheses);
    array_suffixes(parser, map)
}

/// `ROW(name type, ...)`, then any `[]` or `[n]` after it, as the struct type it is.
fn row_type(parser: &mut Parser) -> Result<DataType, ParserError> {
    parser.next_token();
    parser.expect_token(&Token::LParen)?;
    let fields = parser.parse_comma_separated(|p| {
        Ok(StructField {
            field_name: Some(p.parse_identifier()?),
            field_type: p.parse_data_type()?,
            options: None,
        })
    })?;
    parser.expect_token(&Token::RParen)?;
    array_suffixes(
        parser,
        DataType::Struct(fields, StructBracketKind::Parentheses),
    )
}

/// `data_type` followed by any `[]` or `[n]`: arrays of it.
fn array_suffixes(parser: &mut Parser, mut data_type: DataType) -> Result<DataType, ParserError> {
    while parser.consume_token(&Token::LBracket) {
        let size = match parser.consume_token(&Token::RBracket) {
            true => None,
            false => {
                let size = parser.parse_literal_uint()?;
                parser.expect_token(&Token::RBracket)?;
                Some(size)
            }
        };
        data_type = DataType::Array(ArrayElemTypeDef::SquareBracket(Box::new(data_type), size));
    }
    Ok(data_type)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn infix(sql: &str) -> BinaryOperator {
        let expr = Parser::new(&PondraDialect::default())
            .try_with_sql(sql)
            .and_then(|mut p| p.parse_expr())
            .expect("reads");
        match expr {
            Expr::BinaryOp { op, .. } => op,
            other => panic!("not an infix operator: {other:?}"),
        }
    }

    #[test]
    fn glob_and_starts_with_read_as_operators() {
        assert_eq!(infix("name GLOB 'a*'"), BinaryOperator::Glob);
        assert_eq!(infix("name ^@ 'a'"), BinaryOperator::PGStartsWith);
        // Precedence as LIKE's: the comparison takes the whole concatenation.
        assert_eq!(infix("a || b GLOB 'x*'"), BinaryOperator::Glob);
    }

    #[test]
    fn row_types_nest() {
        let data_type = Parser::new(&PondraDialect::default())
            .try_with_sql("ROW(i ROW(a INTEGER), j INTEGER[])[]")
            .and_then(|mut p| p.parse_data_type())
            .expect("reads");
        assert_eq!(
            data_type.to_string(),
            "STRUCT(i STRUCT(a INTEGER), j INTEGER[])[]"
        );
        let data_type = Parser::new(&PondraDialect::default())
            .try_with_sql("MAP(VARCHAR, MAP(INT, INT[]))")
            .and_then(|mut p| p.parse_data_type())
            .expect("reads");
        assert_eq!(data_type.to_string(), "Map(VARCHAR, Map(INT, INT[]))");
    }

    #[test]
    fn duckdb_forms_read_as_before() {
        let dialect = PondraDialect::default();
        assert!((&dialect as &dyn Dialect).is::<DuckDbDialect>());
        for sql in [
            "SELECT {'a': 1}",
            "SELECT list_transform([1], x -> x + 1)",
            "FROM t",
        ] {
            Parser::parse_sql(&dialect, sql).expect(sql);
        }
    }
}
