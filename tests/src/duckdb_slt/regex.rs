//! The part of RE2's syntax the corpus's `<REGEX>:` lines use (`.`, `*`, `+`, `?`, groups with
//! `|`, classes such as `[^\]]`, `\s`, `\d`, `\w`, `(?s)`), matched against a whole text as
//! DuckDB's runner matches them, with `.` matching newlines too. Written here because none of
//! this crate's dependencies exports a regex engine. Matching simulates the pattern's
//! automaton a character at a time (Pike's method), so `.*a.*b.*c` over long text stays
//! linear.

/// Whether `pattern` matches all of `text`; `None` when the pattern is outside this subset.
pub fn full_match(pattern: &str, text: &str) -> Option<bool> {
    let mut parser = Parser {
        chars: pattern.chars().collect(),
        at: 0,
    };
    let tree = parser.alternation()?;
    if parser.at != parser.chars.len() {
        return None;
    }
    let mut program = Vec::new();
    compile(&tree, &mut program);
    program.push(Inst::Match);
    Some(run(&program, text))
}

#[derive(Clone, Debug)]
enum Node {
    Char(char),
    Any,
    Class {
        negated: bool,
        ranges: Vec<(char, char)>,
    },
    Empty,
    Concat(Vec<Node>),
    Alternatives(Vec<Node>),
    Repeat {
        node: Box<Node>,
        min_one: bool,
        max_one: bool,
    },
}

struct Parser {
    chars: Vec<char>,
    at: usize,
}

impl Parser {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.at).copied()
    }

    fn alternation(&mut self) -> Option<Node> {
        let mut alternatives = vec![self.concatenation()?];
        while self.peek() == Some('|') {
            self.at += 1;
            alternatives.push(self.concatenation()?);
        }
        Some(match alternatives.len() {
            1 => alternatives.pop().expect("one alternative"),
            _ => Node::Alternatives(alternatives),
        })
    }

    fn concatenation(&mut self) -> Option<Node> {
        let mut nodes = Vec::new();
        while let Some(c) = self.peek() {
            if c == '|' || c == ')' {
                break;
            }
            let atom = self.atom()?;
            let (min_one, max_one) = match self.peek() {
                Some('*') => (false, false),
                Some('+') => (true, false),
                Some('?') => (false, true),
                _ => {
                    nodes.push(atom);
                    continue;
                }
            };
            self.at += 1;
            nodes.push(Node::Repeat {
                node: Box::new(atom),
                min_one,
                max_one,
            });
        }
        Some(Node::Concat(nodes))
    }

    fn atom(&mut self) -> Option<Node> {
        let c = self.peek()?;
        self.at += 1;
        Some(match c {
            '.' => Node::Any,
            // The whole text is matched, so anchors add nothing.
            '^' | '$' => Node::Empty,
            '\\' => {
                let escaped = self.peek()?;
                self.at += 1;
                escape_class(escaped).unwrap_or(Node::Char(escaped))
            }
            '[' => self.class()?,
            '(' => {
                if self.chars[self.at..].starts_with(&['?', 's', ')']) {
                    // `(?s)`: dot matches newlines, as it does here anyway.
                    self.at += 3;
                    return Some(Node::Empty);
                }
                if self.chars[self.at..].starts_with(&['?', ':']) {
                    self.at += 2;
                }
                let inner = self.alternation()?;
                if self.peek() != Some(')') {
                    return None;
                }
                self.at += 1;
                inner
            }
            '*' | '+' | '?' | ')' => return None,
            c => Node::Char(c),
        })
    }

    /// `[...]` after its `[`.
    fn class(&mut self) -> Option<Node> {
        let negated = self.peek() == Some('^');
        if negated {
            self.at += 1;
        }
        let mut ranges = Vec::new();
        let mut first = true;
        loop {
            let c = self.peek()?;
            self.at += 1;
            match c {
                ']' if !first => break,
                '\\' => {
                    let escaped = self.peek()?;
                    self.at += 1;
                    match escape_class(escaped) {
                        Some(Node::Class { ranges: more, .. }) => ranges.extend(more),
                        _ => ranges.push((escaped, escaped)),
                    }
                }
                c if self.peek() == Some('-') && self.chars.get(self.at + 1) != Some(&']') => {
                    let end = *self.chars.get(self.at + 1)?;
                    self.at += 2;
                    ranges.push((c, end));
                }
                c => ranges.push((c, c)),
            }
            first = false;
        }
        Some(Node::Class { negated, ranges })
    }
}

/// `\d`, `\s`, `\w` (and `\D`, `\S`, `\W`).
fn escape_class(c: char) -> Option<Node> {
    let ranges = match c.to_ascii_lowercase() {
        'd' => vec![('0', '9')],
        's' => vec![(' ', ' '), ('\t', '\r')],
        'w' => vec![('a', 'z'), ('A', 'Z'), ('0', '9'), ('_', '_')],
        _ => return None,
    };
    Some(Node::Class {
        negated: c.is_ascii_uppercase(),
        ranges,
    })
}

#[derive(Debug)]
enum Inst {
    Char(char),
    Any,
    Class {
        negated: bool,
        ranges: Vec<(char, char)>,
    },
    /// Continue at both.
    Split(usize, usize),
    Jump(usize),
    Match,
}

fn compile(node: &Node, program: &mut Vec<Inst>) {
    match node {
        Node::Char(c) => program.push(Inst::Char(*c)),
        Node::Any => program.push(Inst::Any),
        Node::Class { negated, ranges } => program.push(Inst::Class {
            negated: *negated,
            ranges: ranges.clone(),
        }),
        Node::Empty => {}
        Node::Concat(nodes) => nodes.iter().for_each(|n| compile(n, program)),
        Node::Alternatives(alternatives) => {
            // Each alternative but the last: split to it or past it; then jump to the end.
            let mut jumps = Vec::new();
            for (i, alternative) in alternatives.iter().enumerate() {
                let split = program.len();
                if i + 1 < alternatives.len() {
                    program.push(Inst::Split(split + 1, 0));
                }
                compile(alternative, program);
                if i + 1 < alternatives.len() {
                    jumps.push(program.len());
                    program.push(Inst::Jump(0));
                    let next = program.len();
                    program[split] = Inst::Split(split + 1, next);
                }
            }
            let end = program.len();
            for jump in jumps {
                program[jump] = Inst::Jump(end);
            }
        }
        Node::Repeat {
            node,
            min_one,
            max_one,
        } => {
            let start = program.len();
            if *min_one {
                // e+: e, then back to e or on.
                compile(node, program);
                program.push(Inst::Split(start, program.len() + 1));
                return;
            }
            program.push(Inst::Split(start + 1, 0));
            compile(node, program);
            if !*max_one {
                program.push(Inst::Jump(start));
            }
            let end = program.len();
            program[start] = Inst::Split(start + 1, end);
        }
    }
}

/// Every thread of the program at once, a character at a time.
fn run(program: &[Inst], text: &str) -> bool {
    let mut current = Vec::new();
    add_thread(program, &mut current, 0);
    for c in text.chars() {
        let mut next = Vec::new();
        for &pc in &current {
            let advances = match &program[pc] {
                Inst::Char(expected) => *expected == c,
                Inst::Any => true,
                Inst::Class { negated, ranges } => {
                    ranges.iter().any(|(lo, hi)| (*lo..=*hi).contains(&c)) != *negated
                }
                _ => false,
            };
            if advances {
                add_thread(program, &mut next, pc + 1);
            }
        }
        if next.is_empty() {
            return false;
        }
        current = next;
    }
    current.iter().any(|&pc| matches!(program[pc], Inst::Match))
}

/// Adds the thread at `pc`, following splits and jumps.
fn add_thread(program: &[Inst], threads: &mut Vec<usize>, pc: usize) {
    if threads.contains(&pc) {
        return;
    }
    threads.push(pc);
    match program[pc] {
        Inst::Split(a, b) => {
            add_thread(program, threads, a);
            add_thread(program, threads, b);
        }
        Inst::Jump(to) => add_thread(program, threads, to),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::full_match;

    #[test]
    fn matches_the_corpus_patterns() {
        let yes = |p: &str, t: &str| assert_eq!(full_match(p, t), Some(true), "{p} on {t}");
        let no = |p: &str, t: &str| assert_eq!(full_match(p, t), Some(false), "{p} on {t}");
        yes(
            ".*Binder Error.*not found.*",
            "x\nBinder Error: table t not found!",
        );
        no(".*Binder Error.*not found.*", "Parser Error: t");
        yes(
            "(.*SELECT INTO not supported.*|.*syntax error at or near \"INTO\".*)",
            "syntax error at or near \"INTO\"",
        );
        yes(
            "(?s).*Filters:.*\\((k >=|k <=).*",
            "Filters: optional: (k <= 3)",
        );
        yes(
            ".*\"Groups\":\\s*\\[[^\\]]*\"g\"[^\\]]*\\].*",
            "{\"Groups\": [\"a\", \"g\"]}",
        );
        no(
            ".*\"Groups\":\\s*\\[[^\\]]*\"g\"[^\\]]*\\].*",
            "{\"Groups\": [\"a\"], \"g\"}",
        );
        yes("Direct Consumers: (1|2)+x?", "Direct Consumers: 12");
        yes(
            ".*a.*b.*c.*d.*e.*f.*",
            &format!("{}abcdef", "a".repeat(5000)),
        );
        assert_eq!(full_match("(unclosed", "x"), None);
    }
}
