/// Statements split out of SQL text, and what is left after the last `;`.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct SplitResult {
    /// Statements that ended with `;` (without it).
    pub complete: Vec<String>,
    /// Text after the last `;`: an unfinished statement, or blank.
    pub rest: String,
}

/// Splits SQL text at the `;`s that end statements, skipping those inside quotes, dollar
/// quotes (`$$ ... $$`, `$tag$ ... $tag$`, as a function's body is written) and comments.
///
/// The shell uses it to know when a statement is complete; the parser to run statements one by one.
pub fn split_statements(sql: &str) -> SplitResult {
    #[derive(Clone, PartialEq)]
    enum State {
        Code,
        Quoted(char),
        /// Inside a dollar quote, closed by the same `$tag$` that opened it.
        DollarQuoted(String),
        LineComment,
        BlockComment,
    }
    let chars: Vec<char> = sql.chars().collect();
    let mut result = SplitResult::default();
    let mut current = String::new();
    let mut state = State::Code;
    let mut at = 0;
    while at < chars.len() {
        let c = chars[at];
        let next = chars.get(at + 1).copied();
        match &state {
            State::Code => match c {
                ';' => {
                    result.complete.push(std::mem::take(&mut current));
                    at += 1;
                    continue;
                }
                '\'' | '"' => state = State::Quoted(c),
                '-' if next == Some('-') => state = State::LineComment,
                '/' if next == Some('*') => state = State::BlockComment,
                // `a$b$` is an identifier holding `$`, not the start of a quote.
                '$' if !(at > 0 && (chars[at - 1].is_alphanumeric() || chars[at - 1] == '_')) => {
                    if let Some(tag) = dollar_tag(&chars[at..]) {
                        current.push_str(&tag);
                        at += tag.chars().count();
                        state = State::DollarQuoted(tag);
                        continue;
                    }
                }
                _ => {}
            },
            State::Quoted(quote) if c == *quote => state = State::Code,
            State::Quoted(_) => {}
            State::DollarQuoted(tag) if c == '$' && starts_with(&chars[at..], tag) => {
                current.push_str(tag);
                at += tag.chars().count();
                state = State::Code;
                continue;
            }
            State::DollarQuoted(_) => {}
            State::LineComment if c == '\n' => state = State::Code,
            State::LineComment => {}
            State::BlockComment if c == '*' && next == Some('/') => {
                current.push_str("*/");
                at += 2;
                state = State::Code;
                continue;
            }
            State::BlockComment => {}
        }
        current.push(c);
        at += 1;
    }
    result.rest = current;
    result
}

/// The dollar quote `$tag$` (or `$$`) that `text` starts with, if it starts with one: a tag is
/// a letter or `_` and then letters, digits or `_`. `$1` is a placeholder, not a quote.
fn dollar_tag(text: &[char]) -> Option<String> {
    let inner: String = text[1..]
        .iter()
        .take_while(|c| c.is_alphanumeric() || **c == '_')
        .collect();
    if inner.starts_with(|c: char| c.is_ascii_digit()) {
        return None;
    }
    let closing = text.get(1 + inner.chars().count())?;
    (*closing == '$').then(|| format!("${inner}$"))
}

fn starts_with(text: &[char], tag: &str) -> bool {
    let tag: Vec<char> = tag.chars().collect();
    text.len() >= tag.len() && text[..tag.len()] == tag[..]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ignores_semicolons_in_quotes_and_comments() {
        let split = split_statements("SELECT 'a;b'; -- x;y\nSELECT \"c;\" /* ; */; SELECT");
        assert_eq!(split.complete.len(), 2);
        assert_eq!(split.complete[0], "SELECT 'a;b'");
        assert_eq!(split.rest, " SELECT");
    }

    #[test]
    fn ignores_semicolons_in_dollar_quotes() {
        let body =
            "CREATE PROCEDURE p() AS $$ INSERT INTO t VALUES (1); INSERT INTO t VALUES (2); $$";
        let split = split_statements(&format!("{body}; SELECT $tag$a;$$;b$tag$; SELECT $1;"));
        assert_eq!(
            split.complete,
            [body, " SELECT $tag$a;$$;b$tag$", " SELECT $1"],
            "a tag closes only its own quote; $1 is a placeholder"
        );
        let open = split_statements("SELECT $$ a; b");
        assert!(open.complete.is_empty(), "an open dollar quote holds its ;");
        assert_eq!(open.rest, "SELECT $$ a; b");
        let money = split_statements("SELECT 'x' AS \"$\"; SELECT 2");
        assert_eq!(money.complete.len(), 1);
        let named = split_statements("SELECT a$b$c; SELECT 2;");
        assert_eq!(
            named.complete.len(),
            2,
            "$ inside an identifier opens no quote"
        );
    }
}
