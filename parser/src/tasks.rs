//! Task statements (ADR 0081), which no SQL dialect has: `CREATE [OR REPLACE] TASK [IF NOT
//! EXISTS] name SCHEDULE '...' AS <statement>`, `ALTER TASK name SUSPEND | RESUME`, `EXECUTE
//! TASK name` and `DROP TASK [IF EXISTS] name`.

use sqlparser::tokenizer::{Token, TokenWithSpan};

use crate::{ParseError, Statement};

/// A task statement.
#[derive(Debug, Clone, PartialEq)]
pub enum TaskStatement {
    Create {
        name: String,
        or_replace: bool,
        if_not_exists: bool,
        schedule: String,
        /// The statement each tick runs, as written.
        statement: String,
    },
    Alter {
        name: String,
        suspend: bool,
    },
    Execute {
        name: String,
    },
    Drop {
        name: String,
        if_exists: bool,
    },
}

/// The statement, when `tokens` are a task statement; none when they are not one.
pub(crate) fn task_statement(spans: &[TokenWithSpan]) -> Option<Result<Statement, ParseError>> {
    let tokens: Vec<&Token> = spans
        .iter()
        .map(|t| &t.token)
        .filter(|t| !matches!(t, Token::Whitespace(_)))
        .collect();
    let word = |at: usize| match tokens.get(at) {
        Some(Token::Word(w)) if w.quote_style.is_none() => w.value.to_ascii_uppercase(),
        _ => String::new(),
    };
    let mut at = 1;
    let or_replace = word(1) == "OR" && word(2) == "REPLACE";
    if or_replace {
        at = 3;
    }
    let lead = word(0);
    let is_task = match lead.as_str() {
        "CREATE" | "ALTER" | "DROP" | "EXECUTE" => word(at) == "TASK",
        _ => false,
    };
    // `EXECUTE task` alone runs a prepared statement named task.
    if !is_task || (lead == "EXECUTE" && !matches!(tokens.get(at + 1), Some(Token::Word(_)))) {
        return None;
    }
    Some(parse(&lead, or_replace, &tokens, at + 1, spans))
}

/// The text of `spans` after the first top-level word AS, whitespace kept.
fn text_after_as(spans: &[TokenWithSpan]) -> String {
    spans
        .iter()
        .map(|t| &t.token)
        .skip_while(|t| !matches!(t, Token::Word(w) if w.quote_style.is_none() && w.value.eq_ignore_ascii_case("AS")))
        .skip(1)
        .filter(|t| !matches!(t, Token::EOF))
        .map(|t| t.to_string())
        .collect()
}

fn parse(
    lead: &str,
    or_replace: bool,
    tokens: &[&Token],
    mut at: usize,
    spans: &[TokenWithSpan],
) -> Result<Statement, ParseError> {
    let syntax = |message: &str| Err(ParseError::Syntax(message.to_string()));
    let word = |at: usize| match tokens.get(at) {
        Some(Token::Word(w)) if w.quote_style.is_none() => w.value.to_ascii_uppercase(),
        _ => String::new(),
    };
    let mut if_exists = false;
    let mut if_not_exists = false;
    if lead == "CREATE" && word(at) == "IF" && word(at + 1) == "NOT" && word(at + 2) == "EXISTS" {
        if_not_exists = true;
        at += 3;
    }
    if lead == "DROP" && word(at) == "IF" && word(at + 1) == "EXISTS" {
        if_exists = true;
        at += 2;
    }
    let name = match tokens.get(at) {
        Some(Token::Word(w)) if w.quote_style.is_some() => w.value.clone(),
        Some(Token::Word(w)) => w.value.to_lowercase(),
        _ => return syntax("a task statement names the task after TASK"),
    };
    at += 1;
    let rest: Vec<&&Token> = tokens[at..]
        .iter()
        .filter(|t| !matches!(t, Token::SemiColon | Token::EOF))
        .collect();
    let task = match lead {
        "CREATE" => {
            let (Some(Token::Word(schedule_word)), Some(Token::SingleQuotedString(schedule))) =
                (rest.first().map(|t| **t), rest.get(1).map(|t| **t))
            else {
                return syntax("CREATE TASK name SCHEDULE '...' AS <statement>");
            };
            let as_word = rest.get(2).map(|t| t.to_string().to_ascii_uppercase());
            if !schedule_word.value.eq_ignore_ascii_case("SCHEDULE")
                || as_word.as_deref() != Some("AS")
            {
                return syntax("CREATE TASK name SCHEDULE '...' AS <statement>");
            }
            let statement = text_after_as(spans);
            let statement = statement.trim().trim_end_matches(';').trim().to_string();
            if statement.is_empty() {
                return syntax(
                    "a task runs a statement: CREATE TASK name SCHEDULE '...' AS <statement>",
                );
            }
            TaskStatement::Create {
                name,
                or_replace,
                if_not_exists,
                schedule: schedule.clone(),
                statement,
            }
        }
        "ALTER" => match rest.as_slice() {
            [Token::Word(w)] if w.value.eq_ignore_ascii_case("SUSPEND") => TaskStatement::Alter {
                name,
                suspend: true,
            },
            [Token::Word(w)] if w.value.eq_ignore_ascii_case("RESUME") => TaskStatement::Alter {
                name,
                suspend: false,
            },
            _ => return syntax("ALTER TASK name SUSPEND | RESUME"),
        },
        "EXECUTE" if rest.is_empty() => TaskStatement::Execute { name },
        "DROP" if rest.is_empty() => TaskStatement::Drop { name, if_exists },
        _ => return syntax("EXECUTE TASK name; DROP TASK [IF EXISTS] name"),
    };
    if or_replace && !matches!(task, TaskStatement::Create { .. }) {
        return syntax("OR REPLACE goes with CREATE TASK");
    }
    Ok(Statement::Task(task))
}
