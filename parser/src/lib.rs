//! SQL text to statements: sqlparser's AST for standard SQL, plus Pondra's own statements.

mod asof;
mod comprehensions;
mod depth;
mod describe_subqueries;
mod dialect;
mod equals_arguments;
mod frame_exclusion;
mod from_values;
mod functions;
mod in_lists;
mod messages;
mod null_order;
mod null_treatment;
mod positional;
mod prefix_aliases;
mod split;
mod tasks;
mod tokens;
mod using_key;
mod variables;
mod watermarks;
mod windows;

pub use asof::{DUCKDB_ASOF, DUCKDB_ASOF_LEFT};
pub use depth::{MAX_DEPTH, too_deep_message};
pub use describe_subqueries::DESCRIBE_QUERY;
pub use frame_exclusion::{
    EXCLUDE_CURRENT_ROW, EXCLUDE_GROUP, EXCLUDE_TIES, with_exclusions_written,
};
pub use messages::{MESSAGE_CHARS, bounded_message, quoted_excerpt};

/// A table's name (`table` or `schema.table`) as SQL text that names it exactly: each part
/// quoted, so that case and any character survive.
pub fn quoted_name(name: &str) -> String {
    name.split('.')
        .map(|part| format!("\"{}\"", part.replace('"', "\"\"")))
        .collect::<Vec<_>>()
        .join(".")
}
pub use null_order::{NullOrder, apply_null_order};
pub use positional::positional_name;

pub use split::{SplitResult, split_statements};
pub use sqlparser::ast;
pub use tasks::TaskStatement;
pub use using_key::{KEY_AGGREGATE, USING_KEY};

use sqlparser::dialect::DuckDbDialect;
use sqlparser::parser::{Parser, ParserError};
use sqlparser::tokenizer::{Token, TokenWithSpan, Tokenizer};

/// One statement, as Pondra will run it.
#[derive(Debug, Clone, PartialEq)]
pub enum Statement {
    /// A statement sqlparser understands.
    Sql(Box<ast::Statement>),
    /// `CHECKPOINT`: move every waiting row of the log tail into Parquet now.
    Checkpoint,
    /// `SUBSCRIBE [TO] name` (Materialize's form), or `COPY (SUBSCRIBE [TO] name) TO STDOUT`
    /// with `copy`: stream the changes of a view or table (ADR 0054).
    Subscribe { relation: String, copy: bool },
    /// DuckDB's `SET VARIABLE name = expr` (the value as the query `SELECT expr`), or with no
    /// value `RESET VARIABLE name`.
    SetVariable {
        name: String,
        value: Option<Box<ast::Query>>,
    },
    /// `CREATE [OR REPLACE] PROCEDURE name(a type, ...) [LANGUAGE sql | python] AS $$ ... $$`
    /// (ADR 0081), read as PostgreSQL reads a function without RETURNS.
    CreateProcedure(Box<ast::CreateFunction>),
    /// A statement that creates, changes, runs or drops a task (ADR 0081).
    Task(tasks::TaskStatement),
}

/// What a statement does, for deciding who may run it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StatementKind {
    /// Reads only: queries, EXPLAIN, SHOW, DESCRIBE, and what clients set and ask at connect
    /// time (SET, SHOW, transaction control).
    Read,
    /// Changes rows: INSERT, UPDATE, DELETE, COPY FROM, CHECKPOINT, VACUUM.
    Write,
    /// Changes the schema or touches the server's files: CREATE, DROP, COPY TO, and anything
    /// else.
    Schema,
}

impl Statement {
    pub fn kind(&self) -> StatementKind {
        let statement = match self {
            Statement::Sql(statement) => statement,
            Statement::Checkpoint => return StatementKind::Write,
            Statement::CreateProcedure(_) => return StatementKind::Schema,
            Statement::Task(tasks::TaskStatement::Execute { .. }) => return StatementKind::Write,
            Statement::Task(_) => return StatementKind::Schema,
            Statement::Subscribe { .. } | Statement::SetVariable { .. } => {
                return StatementKind::Read;
            }
        };
        match statement.as_ref() {
            // The memory limit is the whole process's: an administrator's to change.
            ast::Statement::Set(ast::Set::SingleAssignment { variable, .. })
                if variable.to_string().eq_ignore_ascii_case("memory_limit") =>
            {
                StatementKind::Schema
            }
            // A query with an INSERT, UPDATE or DELETE in its WITH, or over one, writes.
            ast::Statement::Query(query) if writes(query) => StatementKind::Write,
            ast::Statement::Query(_)
            | ast::Statement::Explain { .. }
            | ast::Statement::ExplainTable { .. }
            | ast::Statement::ShowTables { .. }
            | ast::Statement::ShowVariable { .. }
            | ast::Statement::ShowColumns { .. }
            | ast::Statement::Set(_)
            | ast::Statement::StartTransaction { .. }
            | ast::Statement::Commit { .. }
            | ast::Statement::Rollback { .. } => StatementKind::Read,
            ast::Statement::Insert(_) | ast::Statement::Update(_) | ast::Statement::Delete(_) => {
                StatementKind::Write
            }
            ast::Statement::Copy { to: false, .. } | ast::Statement::Vacuum(_) => {
                StatementKind::Write
            }
            _ => StatementKind::Schema,
        }
    }
}

/// Whether a query's body is an INSERT, UPDATE, DELETE or MERGE.
pub fn is_write(body: &ast::SetExpr) -> bool {
    matches!(
        body,
        ast::SetExpr::Insert(_)
            | ast::SetExpr::Update(_)
            | ast::SetExpr::Delete(_)
            | ast::SetExpr::Merge(_)
    )
}

/// Whether a query is a write: its body or a CTE of its WITH is an INSERT, UPDATE, DELETE or
/// MERGE.
pub fn writes(query: &ast::Query) -> bool {
    is_write(&query.body)
        || query
            .with
            .iter()
            .flat_map(|with| &with.cte_tables)
            .any(|cte| is_write(&cte.query.body))
}

/// A statement with the text it came from (materialized views keep their defining text).
#[derive(Debug, Clone, PartialEq)]
pub struct ParsedStatement {
    pub text: String,
    pub statement: Statement,
}

/// A statement that could not be parsed, with the reason.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    #[error("syntax error: {0}")]
    Syntax(String),
    /// Nested deeper than [`MAX_DEPTH`]: refused before anything recursed over it.
    #[error("{}", too_deep_message())]
    TooDeep,
    /// A statement of a feature not built yet, named.
    #[error("not supported yet: {0}")]
    NotBuilt(String),
}

/// Parses `;`-separated SQL text into statements.
pub fn parse_sql(sql: &str) -> Result<Vec<ParsedStatement>, ParseError> {
    let split = split_statements(sql);
    let mut pieces = split.complete;
    if !split.rest.trim().is_empty() {
        pieces.push(split.rest);
    }
    pieces
        .into_iter()
        .filter(|text| !is_blank(text))
        .map(|text| text.trim().to_string())
        .map(|text| {
            let statement = parse_one(&text)?;
            Ok(ParsedStatement { text, statement })
        })
        .collect()
}

fn parse_one(text: &str) -> Result<Statement, ParseError> {
    if text
        .trim()
        .trim_end_matches(';')
        .trim()
        .eq_ignore_ascii_case("checkpoint")
    {
        return Ok(Statement::Checkpoint);
    }
    let tokens = table_as_query(drop_macro_as_function(tokenize(text)?));
    if let Some(subscribe) = subscribe(&tokens) {
        return Ok(subscribe);
    }
    if let Some(task) = tasks::task_statement(&tokens) {
        return task;
    }
    let (variable, tokens) = match variables::assignment(tokens)? {
        variables::Assignment::Other(tokens) => (None, tokens),
        variables::Assignment::Reset(name) => {
            return Ok(Statement::SetVariable { name, value: None });
        }
        variables::Assignment::Set(name, select) => (Some(name), select),
    };
    let statement = match parse_bounded(tokens.clone()) {
        Ok(statement) => statement,
        Err(ParseError::Syntax(reason)) => {
            if let Some(function) = functions::typed_function(&tokens) {
                return function;
            }
            if let Some(procedure) = functions::procedure(&tokens) {
                return procedure;
            }
            return Err(not_built(&tokens).map_or(ParseError::Syntax(reason), ParseError::NotBuilt));
        }
        Err(e) => return Err(e),
    };
    match variable {
        Some(name) => variables::set_variable(name, statement),
        None => Ok(statement),
    }
}

/// A statement's tokens other than whitespace: unquoted words in upper case, anything else as
/// an empty word.
fn statement_words(tokens: &[TokenWithSpan]) -> Vec<String> {
    tokens
        .iter()
        .filter_map(|t| match &t.token {
            Token::Word(w) if w.quote_style.is_none() => Some(w.value.to_ascii_uppercase()),
            Token::Whitespace(_) => None,
            _ => Some(String::new()),
        })
        .collect()
}

/// A statement's first words, `OR REPLACE` after `CREATE` left out.
fn lead(words: &[String]) -> Vec<&str> {
    let mut lead: Vec<&str> = words.iter().take(4).map(String::as_str).collect();
    if lead.get(1..3) == Some(&["OR", "REPLACE"]) {
        lead.drain(1..3);
    }
    lead
}

/// The feature a statement that did not parse belongs to, when it is one not built yet (ADR
/// 0081): procedures, tasks and typed functions. Their statements would otherwise fail with
/// a syntax error that names none of them.
fn not_built(tokens: &[TokenWithSpan]) -> Option<String> {
    let words = statement_words(tokens);
    let feature = match lead(&words).as_slice() {
        ["CREATE", "FUNCTION", ..] if words.iter().any(|w| w == "RETURNS" || w == "LANGUAGE") => {
            "this form of CREATE FUNCTION (a SQL function is `CREATE FUNCTION name(a type) RETURNS type AS $$ SELECT ... $$` or `RETURN expr`; DuckDB's CREATE FUNCTION name(a, b) AS expr makes a macro)"
        }
        _ => return None,
    };
    Some(format!("{feature} (ADR 0081)"))
}

/// Parses `tokens`, refusing a statement nested too deep.
fn parse_bounded(tokens: Vec<TokenWithSpan>) -> Result<Statement, ParseError> {
    let bound = depth::depth_bound(tokens.iter().map(|t| &t.token));
    if bound > depth::HARD_BOUND {
        return Err(ParseError::TooDeep);
    }
    if bound <= depth::INLINE_BOUND {
        return parse_tokens(tokens);
    }
    // The tree may be deep: build, measure and drop it where the stack has room for it.
    std::thread::scope(|scope| {
        std::thread::Builder::new()
            .name("pondra-parse".into())
            .stack_size(depth::parse_stack_bytes(bound))
            .spawn_scoped(scope, move || parse_tokens(tokens))
            .map_err(|e| ParseError::Syntax(format!("cannot start a thread to parse: {e}")))?
            .join()
            .unwrap_or_else(|_| Err(ParseError::Syntax("the parser failed".into())))
    })
}

/// DuckDB's `DROP MACRO [TABLE] name` read as `DROP FUNCTION name`, which names the same
/// thing (ADR 0068) and which sqlparser knows.
fn drop_macro_as_function(mut tokens: Vec<TokenWithSpan>) -> Vec<TokenWithSpan> {
    let solid: Vec<usize> = (0..tokens.len())
        .filter(|&i| !matches!(tokens[i].token, Token::Whitespace(_)))
        .take(3)
        .collect();
    let keyword = |i: usize, word: &str| matches!(&tokens[i].token, Token::Word(w) if w.quote_style.is_none() && w.value.eq_ignore_ascii_case(word));
    let [drop, object, next, ..] = solid[..] else {
        return tokens;
    };
    if !(keyword(drop, "drop") && keyword(object, "macro")) {
        return tokens;
    }
    let table_macro = keyword(next, "table");
    tokens[object].token = Token::make_keyword("FUNCTION");
    if table_macro {
        tokens.remove(next);
    }
    tokens
}

/// A statement `TABLE name` read as the query `SELECT * FROM name` it stands for: sqlparser
/// reads `TABLE name` only as a query's body, after a WITH.
fn table_as_query(mut tokens: Vec<TokenWithSpan>) -> Vec<TokenWithSpan> {
    let Some(first) = tokens
        .iter()
        .position(|t| !matches!(t.token, Token::Whitespace(_)))
    else {
        return tokens;
    };
    if !matches!(&tokens[first].token, Token::Word(w) if w.quote_style.is_none() && w.value.eq_ignore_ascii_case("table"))
    {
        return tokens;
    }
    let space = || TokenWithSpan::wrap(Token::Whitespace(sqlparser::tokenizer::Whitespace::Space));
    let select = [
        TokenWithSpan::wrap(Token::make_keyword("SELECT")),
        space(),
        TokenWithSpan::wrap(Token::Mul),
        space(),
        TokenWithSpan::wrap(Token::make_keyword("FROM")),
    ];
    tokens.splice(first..=first, select);
    tokens
}

/// `SUBSCRIBE [TO] name` or `COPY (SUBSCRIBE [TO] name) TO STDOUT`, as a statement.
fn subscribe(tokens: &[TokenWithSpan]) -> Option<Statement> {
    let solid: Vec<&Token> = tokens
        .iter()
        .map(|t| &t.token)
        .filter(|t| !matches!(t, Token::Whitespace(_) | Token::SemiColon))
        .collect();
    let word = |t: &Token, w: &str| matches!(t, Token::Word(x) if x.quote_style.is_none() && x.value.eq_ignore_ascii_case(w));
    let (copy, inner) = match solid.as_slice() {
        [first, Token::LParen, inner @ .., Token::RParen, to, stdout]
            if word(first, "COPY") && word(to, "TO") && word(stdout, "STDOUT") =>
        {
            (true, inner)
        }
        all => (false, all),
    };
    let rest = match inner {
        [first, rest @ ..] if word(first, "SUBSCRIBE") => rest,
        _ => return None,
    };
    let rest = match rest {
        [to, rest @ ..] if word(to, "TO") => rest,
        rest => rest,
    };
    let mut relation = String::new();
    for (i, token) in rest.iter().enumerate() {
        match (i % 2, token) {
            (0, Token::Word(w)) if w.quote_style.is_some() => relation.push_str(&w.value),
            (0, Token::Word(w)) => relation.push_str(&w.value.to_lowercase()),
            (1, Token::Period) => relation.push('.'),
            _ => return None,
        }
    }
    if relation.is_empty() || relation.ends_with('.') {
        return None;
    }
    Some(Statement::Subscribe { relation, copy })
}

/// The first words of the statements DuckDB's dialect does not read and Postgres's does.
const POSTGRES_ONLY: [&str; 4] = ["COMMENT", "LISTEN", "UNLISTEN", "NOTIFY"];

/// One expression from its text, read as an expression in a statement is.
pub fn parse_expression(text: &str) -> Result<ast::Expr, ParseError> {
    let tokens = tokenize(text)?;
    Parser::new(&dialect::PondraDialect(DuckDbDialect {}))
        .with_recursion_limit(depth::NESTING_LIMIT)
        .with_tokens_with_locations(tokens)
        .parse_expr()
        .map_err(parse_error)
}

fn parse_error(e: ParserError) -> ParseError {
    match e {
        ParserError::RecursionLimitExceeded => ParseError::TooDeep,
        e => ParseError::Syntax(bounded_message(clean(e.to_string()))),
    }
}

/// Parses one statement from its tokens, refusing one nested past the limits.
fn parse_tokens(tokens: Vec<TokenWithSpan>) -> Result<Statement, ParseError> {
    // Statements only Postgres has (COMMENT ON, LISTEN) are read in its dialect.
    let postgres_only = tokens.iter().find(|t| !matches!(t.token, Token::Whitespace(_))).is_some_and(
        |t| matches!(&t.token, Token::Word(w) if POSTGRES_ONLY.contains(&w.value.to_ascii_uppercase().as_str())),
    );
    let parser = match postgres_only {
        true => Parser::new(&sqlparser::dialect::PostgreSqlDialect {}),
        false => Parser::new(&dialect::PondraDialect(DuckDbDialect {})),
    };
    let mut statements = parser
        .with_recursion_limit(depth::NESTING_LIMIT)
        .with_tokens_with_locations(tokens)
        .parse_statements()
        .map_err(parse_error)?;
    if statements.len() != 1 {
        return Err(ParseError::Syntax(match statements.len() {
            0 => "empty statement".into(),
            _ => "expected one statement".into(),
        }));
    }
    let mut statement = statements.remove(0);
    if depth::exceeds_max_depth(&statement) {
        return Err(ParseError::TooDeep);
    }
    equals_arguments::equals_as_comparisons(&mut statement);
    Ok(Statement::Sql(Box::new(statement)))
}

/// The tokens of `text`, with two Postgres forms psql writes in its catalog queries read as
/// Postgres reads them: `OPERATOR(schema.op)` as the bare operator, and `E'...'` as a string
/// with backslash escapes; Flink's window table functions in their short form; and the
/// streaming clauses (`WATERMARK FOR`, `EMIT ON WINDOW CLOSE`) as options; DuckDB's ASOF
/// joins in the form sqlparser reads; window frames' `EXCLUDE` clauses as markers; and the
/// key of a keyed recursive CTE as marks on its columns; `IGNORE NULLS` behind the arguments it
/// ends.
fn tokenize(text: &str) -> Result<Vec<TokenWithSpan>, ParseError> {
    let tokens = Tokenizer::new(&DuckDbDialect {}, text)
        .tokenize_with_location()
        .map_err(|e| ParseError::Syntax(bounded_message(e.to_string())))?;
    let mut out = Vec::with_capacity(tokens.len());
    let mut i = 0;
    while i < tokens.len() {
        let is_operator = matches!(&tokens[i].token, Token::Word(w) if w.value.eq_ignore_ascii_case("operator"))
            && tokens.get(i + 1).map(|t| &t.token) == Some(&Token::LParen);
        if is_operator {
            // OPERATOR ( [schema .] op ): keep the op, the last token before the ).
            if let Some(close) = tokens[i..].iter().position(|t| t.token == Token::RParen)
                && close >= 3
            {
                out.push(tokens[i + close - 1].clone());
                i += close + 1;
                continue;
            }
        }
        if let (Token::Word(w), Some(Token::SingleQuotedString(escaped))) =
            (&tokens[i].token, tokens.get(i + 1).map(|t| &t.token))
            && w.quote_style.is_none()
            && w.value.eq_ignore_ascii_case("e")
        {
            let span = tokens[i].span.union(&tokens[i + 1].span);
            out.push(TokenWithSpan::new(
                Token::SingleQuotedString(unescape(escaped)),
                span,
            ));
            i += 2;
            continue;
        }
        out.push(tokens[i].clone());
        i += 1;
    }
    let out = positional::positional_references(from_values::from_values(out));
    let out = describe_subqueries::describe_subqueries(prefix_aliases::prefix_aliases(out));
    // After the comprehensions, whose `FOR x IN list` is not a membership test.
    let out = in_lists::in_lists(comprehensions::list_comprehensions(out));
    let out = asof::duckdb_asof_joins(windows::short_window_calls(out));
    let out = using_key::using_keys(frame_exclusion::frame_exclusions(out))?;
    let out = null_treatment::null_treatments(out);
    Ok(watermarks::streaming_clauses(out))
}

/// Text with Postgres's backslash escapes read (in `E'...'` strings and COPY's text format):
/// `\n`, `\t`, `\r`, `\b`, `\f`, and `\` before any other character, which stands for itself.
pub fn unescape(escaped: &str) -> String {
    if !escaped.contains('\\') {
        return escaped.to_string();
    }
    let mut out = String::with_capacity(escaped.len());
    let mut chars = escaped.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('r') => out.push('\r'),
            Some('b') => out.push('\u{8}'),
            Some('f') => out.push('\u{c}'),
            Some(other) => out.push(other),
            None => out.push('\\'),
        }
    }
    out
}

/// sqlparser prefixes its messages with "sql parser error: "; the caller adds its own context.
fn clean(message: String) -> String {
    message
        .strip_prefix("sql parser error: ")
        .map(str::to_string)
        .unwrap_or(message)
}

/// True for text holding nothing but whitespace, `;` and comments.
fn is_blank(text: &str) -> bool {
    text.lines()
        .map(|l| l.split("--").next().unwrap_or(""))
        .all(|l| l.trim().trim_matches(';').trim().is_empty())
}

/// `sql` rewritten by a token rewrite, as text: for testing the rewrites.
#[cfg(test)]
pub(crate) fn rewritten_by(
    rewrite: fn(Vec<TokenWithSpan>) -> Vec<TokenWithSpan>,
    sql: &str,
) -> String {
    let tokens = Tokenizer::new(&DuckDbDialect {}, sql)
        .tokenize_with_location()
        .unwrap();
    rewrite(tokens)
        .iter()
        .map(|t| t.token.to_string())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_quoted_part_by_part() {
        assert_eq!(quoted_name("sales.orders"), "\"sales\".\"orders\"");
        assert_eq!(quoted_name("a\"b"), "\"a\"\"b\"");
    }

    #[test]
    fn parses_sql_and_checkpoint() {
        let parsed = parse_sql("SELECT 1; checkpoint ;\n -- done\n").unwrap();
        assert_eq!(parsed.len(), 2);
        assert!(matches!(parsed[0].statement, Statement::Sql(_)));
        assert_eq!(parsed[1].statement, Statement::Checkpoint);
        let subscribe = |sql: &str| parse_sql(sql).unwrap().remove(0).statement;
        assert_eq!(
            subscribe("subscribe to Public.Totals;"),
            Statement::Subscribe {
                relation: "public.totals".into(),
                copy: false
            }
        );
        assert_eq!(
            subscribe("COPY (SUBSCRIBE \"Big\") TO STDOUT"),
            Statement::Subscribe {
                relation: "Big".into(),
                copy: true
            }
        );
        assert!(parse_sql("SUBSCRIBE TO a b").is_err());
    }

    #[test]
    fn user_is_a_column_name() {
        let parsed = parse_sql(
            "CREATE TABLE events (user VARCHAR, amount BIGINT); SELECT user, sum(amount) FROM events GROUP BY user",
        )
        .unwrap();
        assert_eq!(parsed.len(), 2);
    }

    #[test]
    fn escape_strings_read_backslashes() {
        let parsed = parse_sql("SELECT E'a\\nb', e'\\\\', 'c\\n'").unwrap();
        let Statement::Sql(statement) = &parsed[0].statement else {
            panic!("a query")
        };
        assert_eq!(statement.to_string(), "SELECT 'a\nb', '\\', 'c\\n'");
    }

    #[test]
    fn setting_the_memory_limit_is_an_administrators() {
        let kinds: Vec<StatementKind> =
            parse_sql("SET memory_limit = '1GB'; SET search_path = public; SHOW memory_limit")
                .unwrap()
                .iter()
                .map(|p| p.statement.kind())
                .collect();
        assert_eq!(
            kinds,
            [
                StatementKind::Schema,
                StatementKind::Read,
                StatementKind::Read
            ]
        );
    }

    #[test]
    fn reports_syntax_errors() {
        let err = parse_sql("SELEC 1").unwrap_err();
        assert!(err.to_string().starts_with("syntax error"), "{err}");
    }
}

/// Puts literal SQL text in place of the placeholders `$1`, `$2`, ... of `sql` (`values[0]` for
/// `$1`). The values must already be valid SQL literals; the text around them is kept as it
/// was, token by token.
pub fn substitute_placeholders(sql: &str, values: &[String]) -> Result<String, ParseError> {
    use sqlparser::tokenizer::{Token, Tokenizer};
    let tokens = Tokenizer::new(&DuckDbDialect {}, sql)
        .tokenize()
        .map_err(|e| ParseError::Syntax(e.to_string()))?;
    let mut out = String::with_capacity(sql.len());
    // DuckDB's `?` placeholders stand for the values in the order they come.
    let mut next_question = 0;
    for token in tokens {
        match &token {
            Token::Placeholder(name) if name == "?" => {
                let value = values.get(next_question).ok_or_else(|| {
                    ParseError::Syntax(format!(
                        "no value was given for ? number {}",
                        next_question + 1
                    ))
                })?;
                next_question += 1;
                out.push_str(value);
            }
            Token::Placeholder(name) if name.starts_with('$') => {
                let index: usize = name[1..]
                    .parse()
                    .map_err(|_| ParseError::Syntax(format!("invalid placeholder {name}")))?;
                let value = index
                    .checked_sub(1)
                    .and_then(|i| values.get(i))
                    .ok_or_else(|| ParseError::Syntax(format!("no value was given for {name}")))?;
                out.push_str(value);
            }
            other => out.push_str(&other.to_string()),
        }
    }
    Ok(out)
}

/// The highest placeholder number (`$n`) in `sql`: how many parameters it takes.
pub fn placeholder_count(sql: &str) -> usize {
    use sqlparser::tokenizer::{Token, Tokenizer};
    let Ok(tokens) = Tokenizer::new(&DuckDbDialect {}, sql).tokenize() else {
        return 0;
    };
    tokens
        .iter()
        .filter_map(|t| match t {
            Token::Placeholder(name) => name.strip_prefix('$')?.parse::<usize>().ok(),
            _ => None,
        })
        .max()
        .unwrap_or(0)
}

#[cfg(test)]
mod placeholder_tests {
    use super::*;

    #[test]
    fn placeholders_become_literals_and_strings_stay_whole() {
        let sql = "SELECT '$1', a FROM t WHERE a = $1 AND b = $2 -- $3";
        assert_eq!(placeholder_count(sql), 2);
        let out = substitute_placeholders(sql, &["1".into(), "'it''s'".into()]).unwrap();
        assert_eq!(
            out.trim_end(),
            "SELECT '$1', a FROM t WHERE a = 1 AND b = 'it''s' -- $3"
        );
        assert!(substitute_placeholders("SELECT $2", &["1".into()]).is_err());
    }
}
