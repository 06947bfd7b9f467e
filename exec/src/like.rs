//! LIKE patterns of literal pieces between `%` wildcards (`'%special%requests%'`), matched by
//! searching for each piece in turn. Arrow's kernels answer single-wildcard shapes (`'x%'`,
//! `'%x'`, `'%x%'`) without a regex, but compile others to one, which costs several times
//! more per row than a few substring searches.

use arrow::array::{Array, ArrayRef, AsArray, BooleanArray};
use arrow::buffer::BooleanBuffer;
use arrow::datatypes::DataType;
use memchr::memmem::Finder;

/// A pattern: a prefix the text starts with, pieces found in it in order, and a suffix it
/// ends with, none overlapping.
pub struct PiecePattern {
    prefix: Vec<u8>,
    pieces: Vec<Finder<'static>>,
    suffix: Vec<u8>,
}

impl PiecePattern {
    /// The pattern, when it is made of literal pieces and `%` alone (no `_`, no escapes),
    /// with at least two pieces (fewer are Arrow's own fast shapes).
    pub fn parse(pattern: &str) -> Option<PiecePattern> {
        if pattern.contains(['_', '\\']) || !pattern.contains('%') {
            return None;
        }
        let segments: Vec<&str> = pattern.split('%').collect();
        if segments.iter().filter(|s| !s.is_empty()).count() < 2 {
            return None;
        }
        let (first, rest) = segments.split_first()?;
        let (last, middle) = rest.split_last()?;
        Some(PiecePattern {
            prefix: first.as_bytes().to_vec(),
            pieces: middle
                .iter()
                .filter(|s| !s.is_empty())
                .map(|s| Finder::new(s.as_bytes()).into_owned())
                .collect(),
            suffix: last.as_bytes().to_vec(),
        })
    }

    pub fn matches(&self, text: &[u8]) -> bool {
        // Empty ends are checked apart: comparing empty slices still calls `memcmp`.
        if text.len() < self.prefix.len() + self.suffix.len()
            || (!self.prefix.is_empty() && !text.starts_with(&self.prefix))
            || (!self.suffix.is_empty() && !text.ends_with(&self.suffix))
        {
            return false;
        }
        let mut rest = &text[self.prefix.len()..text.len() - self.suffix.len()];
        for piece in &self.pieces {
            // The leftmost match leaves the most room for the pieces after it.
            match piece.find(rest) {
                Some(at) => rest = &rest[at + piece.needle().len()..],
                None => return false,
            }
        }
        true
    }

    /// `text LIKE pattern` (or NOT LIKE) for a string column; `None` for other types.
    pub fn evaluate(&self, text: &ArrayRef, negated: bool) -> Option<ArrayRef> {
        if text.data_type() != &DataType::Utf8 {
            return None;
        }
        let strings = text.as_string::<i32>();
        let values = BooleanBuffer::collect_bool(strings.len(), |row| {
            // The value under a NULL is an empty string or garbage: its result is masked.
            self.matches(strings.value(row).as_bytes()) != negated
        });
        Some(std::sync::Arc::new(BooleanArray::new(
            values,
            strings.nulls().cloned(),
        )))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::StringArray;
    use arrow::compute::kernels::comparison;

    use super::*;

    #[test]
    fn pieces_match_as_arrows_like_does() {
        let texts: ArrayRef = Arc::new(StringArray::from(vec![
            Some("special requests"),
            Some("a special pending requests"),
            Some("requests then special"),
            Some("specialrequests"),
            Some("special"),
            None,
            Some(""),
            Some("abcab"),
            Some("ab"),
            Some("aXbXc"),
        ]));
        for pattern in [
            "%special%requests%",
            "special%requests",
            "%special%requests",
            "ab%ab",
            "a%b%c",
            "a%%b",
            "%a%b%",
            "ab%b",
        ] {
            let parsed = PiecePattern::parse(pattern).expect(pattern);
            let scalar = StringArray::new_scalar(pattern);
            for negated in [false, true] {
                let expected = match negated {
                    false => comparison::like(&texts, &scalar).unwrap(),
                    true => comparison::nlike(&texts, &scalar).unwrap(),
                };
                let got = parsed.evaluate(&texts, negated).unwrap();
                assert_eq!(got.as_boolean(), &expected, "{pattern} negated {negated}");
            }
        }
    }

    #[test]
    fn other_shapes_are_left_to_arrow() {
        for pattern in ["%x%", "x%", "%x", "x", "a_b%c", "a\\%b%c", "%%"] {
            assert!(PiecePattern::parse(pattern).is_none(), "{pattern}");
        }
    }
}
