/// Statements split out of SQL text, and what is left after the last `;`.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct SplitResult {
    /// Statements that ended with `;` (without it).
    pub complete: Vec<String>,
    /// Text after the last `;`: an unfinished statement, or blank.
    pub rest: String,
}

/// Splits SQL text at the `;`s that end statements, skipping those inside quotes and comments.
///
/// The shell uses it to know when a statement is complete; the parser to run statements one by one.
pub fn split_statements(sql: &str) -> SplitResult {
    #[derive(Clone, Copy, PartialEq)]
    enum State {
        Code,
        Quoted(char),
        LineComment,
        BlockComment,
    }
    let mut result = SplitResult::default();
    let mut current = String::new();
    let mut state = State::Code;
    let mut chars = sql.chars().peekable();
    while let Some(c) = chars.next() {
        match state {
            State::Code => match c {
                ';' => {
                    result.complete.push(std::mem::take(&mut current));
                    continue;
                }
                '\'' | '"' => state = State::Quoted(c),
                '-' if chars.peek() == Some(&'-') => state = State::LineComment,
                '/' if chars.peek() == Some(&'*') => state = State::BlockComment,
                _ => {}
            },
            State::Quoted(quote) if c == quote => state = State::Code,
            State::Quoted(_) => {}
            State::LineComment if c == '\n' => state = State::Code,
            State::LineComment => {}
            State::BlockComment if c == '*' && chars.peek() == Some(&'/') => {
                current.push(c);
                current.push(chars.next().expect("peeked"));
                state = State::Code;
                continue;
            }
            State::BlockComment => {}
        }
        current.push(c);
    }
    result.rest = current;
    result
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
}
