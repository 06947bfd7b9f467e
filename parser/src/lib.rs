//! SQL text to statements: sqlparser's AST for standard SQL, plus Pondra's own statements.

mod split;

pub use split::{SplitResult, split_statements};
pub use sqlparser::ast;

use sqlparser::dialect::DuckDbDialect;
use sqlparser::parser::Parser;

/// One statement, as Pondra will run it.
#[derive(Debug, Clone, PartialEq)]
pub enum Statement {
    /// A statement sqlparser understands.
    Sql(Box<ast::Statement>),
    /// `CHECKPOINT`: move every waiting row of the log tail into Parquet now.
    Checkpoint,
}

/// What a statement does, for deciding who may run it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StatementKind {
    /// Reads only: queries, EXPLAIN, SHOW, DESCRIBE, and what clients set and ask at connect
    /// time (SET, SHOW, transaction control).
    Read,
    /// Changes rows: INSERT, UPDATE, DELETE, COPY FROM, CHECKPOINT.
    Write,
    /// Changes the schema or touches the server's files: CREATE, DROP, COPY TO, and anything
    /// else.
    Schema,
}

impl Statement {
    pub fn kind(&self) -> StatementKind {
        let Statement::Sql(statement) = self else {
            return StatementKind::Write;
        };
        match statement.as_ref() {
            // The memory limit is the whole process's: an administrator's to change.
            ast::Statement::Set(ast::Set::SingleAssignment { variable, .. })
                if variable.to_string().eq_ignore_ascii_case("memory_limit") =>
            {
                StatementKind::Schema
            }
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
            ast::Statement::Copy { to: false, .. } => StatementKind::Write,
            _ => StatementKind::Schema,
        }
    }
}

/// A statement with the text it came from (materialized views keep their defining text).
#[derive(Debug, Clone, PartialEq)]
pub struct ParsedStatement {
    pub text: String,
    pub statement: Statement,
}

/// A statement that could not be parsed, with the reason.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("syntax error: {0}")]
pub struct ParseError(pub String);

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
    let words: Vec<String> = text
        .split_whitespace()
        .map(|w| w.trim_end_matches(';').to_ascii_uppercase())
        .filter(|w| !w.is_empty())
        .collect();
    if words == ["CHECKPOINT"] {
        return Ok(Statement::Checkpoint);
    }
    let upper = text.to_ascii_uppercase();
    let mut statements = if upper.contains("OPERATOR") || upper.contains("E'") {
        let tokens = postgres_tokens(text)?;
        Parser::new(&DuckDbDialect {})
            .with_tokens(tokens)
            .parse_statements()
    } else {
        Parser::parse_sql(&DuckDbDialect {}, text)
    }
    .map_err(|e| ParseError(clean(e.to_string())))?;
    match statements.len() {
        1 => Ok(Statement::Sql(Box::new(statements.remove(0)))),
        0 => Err(ParseError("empty statement".into())),
        _ => Err(ParseError("expected one statement".into())),
    }
}

/// The tokens of `text` with two Postgres forms psql writes in its catalog queries read as
/// Postgres reads them: `OPERATOR(schema.op)` as the bare operator, and `E'...'` as a string
/// with backslash escapes.
fn postgres_tokens(text: &str) -> Result<Vec<sqlparser::tokenizer::Token>, ParseError> {
    use sqlparser::tokenizer::{Token, Tokenizer};
    let tokens = Tokenizer::new(&DuckDbDialect {}, text)
        .tokenize()
        .map_err(|e| ParseError(e.to_string()))?;
    let mut out = Vec::with_capacity(tokens.len());
    let mut i = 0;
    while i < tokens.len() {
        let is_operator = matches!(&tokens[i], Token::Word(w) if w.value.eq_ignore_ascii_case("operator"))
            && tokens.get(i + 1) == Some(&Token::LParen);
        if is_operator {
            // OPERATOR ( [schema .] op ): keep the op, the last token before the ).
            if let Some(close) = tokens[i..].iter().position(|t| *t == Token::RParen)
                && close >= 3
            {
                out.push(tokens[i + close - 1].clone());
                i += close + 1;
                continue;
            }
        }
        if let (Token::Word(w), Some(Token::SingleQuotedString(escaped))) =
            (&tokens[i], tokens.get(i + 1))
            && w.quote_style.is_none()
            && w.value.eq_ignore_ascii_case("e")
        {
            out.push(Token::SingleQuotedString(unescape(escaped)));
            i += 2;
            continue;
        }
        out.push(tokens[i].clone());
        i += 1;
    }
    Ok(out)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_sql_and_checkpoint() {
        let parsed = parse_sql("SELECT 1; checkpoint ;\n -- done\n").unwrap();
        assert_eq!(parsed.len(), 2);
        assert!(matches!(parsed[0].statement, Statement::Sql(_)));
        assert_eq!(parsed[1].statement, Statement::Checkpoint);
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
        .map_err(|e| ParseError(e.to_string()))?;
    let mut out = String::with_capacity(sql.len());
    for token in tokens {
        match &token {
            Token::Placeholder(name) if name.starts_with('$') => {
                let index: usize = name[1..]
                    .parse()
                    .map_err(|_| ParseError(format!("invalid placeholder {name}")))?;
                let value = index
                    .checked_sub(1)
                    .and_then(|i| values.get(i))
                    .ok_or_else(|| ParseError(format!("no value was given for {name}")))?;
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
