//! The text of error messages about a client's input: a message quotes input cut short, as
//! PostgreSQL's do, and never carries a whole statement or value back.

/// The most characters of input an error message quotes.
const QUOTED_CHARS: usize = 64;

/// The most characters an error message has; longer ones are cut, as PostgreSQL cuts the
/// input its messages quote: a message never carries a client's whole statement or value back.
pub const MESSAGE_CHARS: usize = 4096;

/// `text` quoted for an error message: whole when short, else its start and its length.
pub fn quoted_excerpt(text: &str) -> String {
    match text.char_indices().nth(QUOTED_CHARS) {
        None => format!("\"{text}\""),
        Some((end, _)) => format!("\"{}...\" ({} bytes)", &text[..end], text.len()),
    }
}

/// `message` cut to at most `MESSAGE_CHARS` characters, saying how long it was.
pub fn bounded_message(message: String) -> String {
    match message.char_indices().nth(MESSAGE_CHARS) {
        None => message,
        Some((end, _)) => format!(
            "{}... (message cut: {} bytes in all)",
            &message[..end],
            message.len()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_input_is_quoted_and_messages_are_cut() {
        assert_eq!(quoted_excerpt("ab"), "\"ab\"");
        let long = "x".repeat(1000);
        let quoted = quoted_excerpt(&long);
        assert!(
            quoted.starts_with("\"xxx") && quoted.ends_with("...\" (1000 bytes)"),
            "{quoted}"
        );
        assert!(quoted.len() < 100);
        let message = "é".repeat(MESSAGE_CHARS + 10);
        let cut = bounded_message(message);
        assert!(cut.chars().count() < MESSAGE_CHARS + 60, "{}", cut.len());
        assert!(cut.ends_with("bytes in all)"));
        assert_eq!(bounded_message("short".into()), "short");
    }
}
