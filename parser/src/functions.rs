//! PostgreSQL's `CREATE [OR REPLACE] FUNCTION name(a type, ...) RETURNS type [LANGUAGE sql |
//! python] AS $$ ... $$ | RETURN expr [OPTIONS (vectorized = true)]` (ADR 0081). DuckDB's
//! dialect reads `CREATE FUNCTION` as a macro's and refuses these, so they are parsed in
//! PostgreSQL's; `OPTIONS (...)`, which neither dialect takes after a body, is cut out first and
//! kept in the statement's `options`. `CREATE PROCEDURE` shares the grammar, without RETURNS.

use sqlparser::ast;
use sqlparser::keywords::Keyword;
use sqlparser::parser::Parser;
use sqlparser::tokenizer::{Token, TokenWithSpan};

use crate::{ParseError, Statement, lead, statement_words};

/// The statement, when `tokens` are a typed `CREATE FUNCTION`; none when they are not one.
pub(crate) fn typed_function(tokens: &[TokenWithSpan]) -> Option<Result<Statement, ParseError>> {
    let words = statement_words(tokens);
    let creates = matches!(lead(&words).as_slice(), ["CREATE", "FUNCTION", ..]);
    if !creates || !words.iter().any(|w| w == "RETURNS") {
        return None;
    }
    let (rest, options) = cut_options(tokens);
    let dialect = sqlparser::dialect::PostgreSqlDialect {};
    let mut parsed = Parser::new(&dialect)
        .with_tokens_with_locations(rest)
        .parse_statements()
        .ok()?;
    let [mut statement] = <[ast::Statement; 1]>::try_from(std::mem::take(&mut parsed)).ok()?;
    if let Some(options) = options {
        let options = Parser::new(&dialect)
            .with_tokens_with_locations(options)
            .parse_options(Keyword::OPTIONS);
        match (options, &mut statement) {
            (Ok(options), ast::Statement::CreateFunction(create)) => create.options = Some(options),
            (Err(e), _) => return Some(Err(ParseError::Syntax(e.to_string()))),
            _ => return None,
        }
    }
    Some(Ok(Statement::Sql(Box::new(statement))))
}

/// The statement, when `tokens` are `CREATE [OR REPLACE] PROCEDURE ...`: parsed as the function
/// it would be with `FUNCTION` in place of `PROCEDURE`, which PostgreSQL's grammar shares.
pub(crate) fn procedure(tokens: &[TokenWithSpan]) -> Option<Result<Statement, ParseError>> {
    let words = statement_words(tokens);
    if !matches!(lead(&words).as_slice(), ["CREATE", "PROCEDURE", ..]) {
        return None;
    }
    let mut tokens = tokens.to_vec();
    let procedure = tokens.iter_mut().find(|t| {
        matches!(&t.token, Token::Word(w) if w.quote_style.is_none() && w.value.eq_ignore_ascii_case("PROCEDURE"))
    })?;
    procedure.token = Token::make_keyword("FUNCTION");
    let dialect = sqlparser::dialect::PostgreSqlDialect {};
    let parsed = Parser::new(&dialect)
        .with_tokens_with_locations(tokens)
        .parse_statements();
    let create = match parsed.map(<[ast::Statement; 1]>::try_from) {
        Ok(Ok([ast::Statement::CreateFunction(create)])) => create,
        Ok(_) => {
            return Some(Err(ParseError::Syntax(
                "expected one CREATE PROCEDURE".into(),
            )));
        }
        Err(e) => {
            let message = e.to_string().replace("FUNCTION", "PROCEDURE");
            return Some(Err(ParseError::Syntax(message)));
        }
    };
    if create.return_type.is_some() {
        return Some(Err(ParseError::Syntax(
            "a procedure returns nothing: CREATE PROCEDURE takes no RETURNS".into(),
        )));
    }
    Some(Ok(Statement::CreateProcedure(Box::new(create))))
}

/// `tokens` without an `OPTIONS (...)` outside parentheses, and that clause's tokens.
fn cut_options(tokens: &[TokenWithSpan]) -> (Vec<TokenWithSpan>, Option<Vec<TokenWithSpan>>) {
    let mut depth = 0usize;
    let mut start = None;
    for (at, token) in tokens.iter().enumerate() {
        match &token.token {
            Token::LParen => depth += 1,
            Token::RParen => {
                depth = depth.saturating_sub(1);
                if depth == 0
                    && let Some(start) = start
                {
                    let mut rest = tokens[..start].to_vec();
                    rest.extend_from_slice(&tokens[at + 1..]);
                    return (rest, Some(tokens[start..=at].to_vec()));
                }
            }
            Token::Word(word)
                if depth == 0
                    && start.is_none()
                    && word.quote_style.is_none()
                    && word.value.eq_ignore_ascii_case("OPTIONS") =>
            {
                start = Some(at)
            }
            _ => {}
        }
    }
    (tokens.to_vec(), None)
}
