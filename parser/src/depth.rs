//! How deep a statement may nest, and the walk that refuses one nested deeper.
//!
//! sqlparser's recursion limit bounds what it parses by recursion (parentheses, subqueries,
//! function calls), but it builds chains of operators (`1 + 1 + ... + 1`, `a AND b AND ...`)
//! and of set operations (`SELECT 1 UNION ALL SELECT 1 ...`) in loops, as trees as deep as the
//! chain is long. Everything after the parser (binding, planning, evaluating, even dropping the
//! tree) recurses over that depth, and a stack overflow aborts the whole process. So:
//!
//! 1. Before parsing, [`depth_bound`] bounds the depth of the tree the tokens can make, in one
//!    pass over them. Text whose bound passes [`HARD_BOUND`] is refused unparsed.
//! 2. Text whose bound passes [`INLINE_BOUND`] is parsed on a thread of its own whose stack is
//!    sized for that bound, so that building, measuring and dropping its tree cannot overflow.
//! 3. After parsing, [`exceeds_max_depth`] measures the tree by a walk that stops at
//!    [`MAX_DEPTH`], so that no later step ever sees a statement nested deeper.

use std::ops::ControlFlow;

use sqlparser::ast::{Expr, Query, SetExpr, Statement, Visit, Visitor};
use sqlparser::keywords::Keyword;
use sqlparser::tokenizer::Token;

/// How deep a statement's expressions, subqueries and set operations may nest. DuckDB's
/// `max_expression_depth` is 1000 too.
pub const MAX_DEPTH: usize = 1000;

/// How many levels of parentheses, subqueries and function calls sqlparser follows.
pub const NESTING_LIMIT: usize = 200;

/// Token text whose tree may be deeper than this is parsed on a thread sized for it.
pub const INLINE_BOUND: usize = 2 * MAX_DEPTH;

/// Token text whose tree may be deeper than this is refused without being parsed.
pub const HARD_BOUND: usize = 100 * MAX_DEPTH;

/// The stack a thread parsing text of depth bound `bound` needs: room for the parser's own
/// recursion, plus a generous share per level of tree for dropping and measuring it.
pub fn parse_stack_bytes(bound: usize) -> usize {
    (16 << 20) + bound * 2048
}

/// The error a statement nested past the limit gets.
pub fn too_deep_message() -> String {
    format!("statement too deeply nested (limit {MAX_DEPTH})")
}

/// A nesting level of the token text: a parenthesis, a bracket or a CASE.
#[derive(Default)]
struct Level {
    /// Operators and keywords since the last separator at this level.
    run: usize,
    /// The longest run at this level so far.
    longest: usize,
    /// The deepest bound of a level inside this one.
    inner: usize,
    /// A CASE, ended by END, whose WHEN, THEN and ELSE separate runs.
    case: bool,
}

impl Level {
    fn bound(&self) -> usize {
        self.longest.max(self.run) + self.inner + 1
    }
}

/// An upper bound on the depth of the syntax tree `tokens` can parse into.
///
/// Each level of a parsed tree either consumes an operator or keyword of a chain at one
/// nesting level (between commas), or enters a nesting level (a parenthesis, bracket or
/// CASE). So a level's depth is at most its longest run of operators plus the deepest level
/// inside it.
pub fn depth_bound<'t>(tokens: impl IntoIterator<Item = &'t Token>) -> usize {
    let mut levels = vec![Level::default()];
    let close = |levels: &mut Vec<Level>| {
        let closed = levels.pop().expect("a level to close");
        let outer = levels.last_mut().expect("the outermost level stays");
        outer.inner = outer.inner.max(closed.bound());
    };
    for token in tokens {
        let top = levels.last_mut().expect("the outermost level stays");
        match token {
            Token::LParen | Token::LBracket | Token::LBrace => {
                top.run += 1;
                levels.push(Level::default());
            }
            Token::RParen | Token::RBracket | Token::RBrace => {
                if levels.len() > 1 {
                    close(&mut levels);
                }
            }
            Token::Comma | Token::SemiColon => {
                top.longest = top.longest.max(top.run);
                top.run = 0;
            }
            Token::Word(word) => match word.keyword {
                Keyword::CASE if word.quote_style.is_none() => {
                    top.run += 1;
                    levels.push(Level {
                        case: true,
                        ..Level::default()
                    });
                }
                Keyword::END if top.case && word.quote_style.is_none() => close(&mut levels),
                Keyword::WHEN | Keyword::THEN | Keyword::ELSE if top.case => {
                    top.longest = top.longest.max(top.run);
                    top.run = 0;
                }
                Keyword::NoKeyword => {}
                _ if word.quote_style.is_some() => {}
                _ => top.run += 1,
            },
            Token::Whitespace(_)
            | Token::Number(..)
            | Token::SingleQuotedString(_)
            | Token::DoubleQuotedString(_)
            | Token::EscapedStringLiteral(_)
            | Token::NationalStringLiteral(_)
            | Token::HexStringLiteral(_)
            | Token::Placeholder(_)
            | Token::EOF => {}
            _ => top.run += 1,
        }
    }
    while levels.len() > 1 {
        close(&mut levels);
    }
    levels[0].bound()
}

/// True when `statement` nests deeper than [`MAX_DEPTH`]. The walk stops at the limit, so its
/// own recursion is bounded by it.
pub fn exceeds_max_depth(statement: &Statement) -> bool {
    let mut measure = Measure {
        depth: 0,
        added: Vec::new(),
    };
    statement.visit(&mut measure).is_break()
}

/// Counts levels as the walk enters and leaves them.
struct Measure {
    depth: usize,
    /// What each query being walked added to `depth`.
    added: Vec<usize>,
}

impl Measure {
    fn enter(&mut self, levels: usize) -> ControlFlow<()> {
        self.depth += levels;
        if self.depth > MAX_DEPTH {
            return ControlFlow::Break(());
        }
        ControlFlow::Continue(())
    }
}

impl Visitor for Measure {
    type Break = ();

    fn pre_visit_expr(&mut self, _expr: &Expr) -> ControlFlow<()> {
        self.enter(1)
    }

    fn post_visit_expr(&mut self, _expr: &Expr) -> ControlFlow<()> {
        self.depth -= 1;
        ControlFlow::Continue(())
    }

    /// The walk has no hook for set operations, whose chain it recurses down: a query counts
    /// as deep as its chain, for everything inside it.
    fn pre_visit_query(&mut self, query: &Query) -> ControlFlow<()> {
        let levels = 1 + set_operation_depth(&query.body, MAX_DEPTH + 1);
        self.added.push(levels);
        self.enter(levels)
    }

    fn post_visit_query(&mut self, _query: &Query) -> ControlFlow<()> {
        let levels = self.added.pop().expect("a query entered");
        self.depth -= levels;
        ControlFlow::Continue(())
    }
}

/// How deep the set operations of `body` nest, counted without recursion up to `limit`.
fn set_operation_depth(body: &SetExpr, limit: usize) -> usize {
    let mut deepest = 0;
    let mut pending = vec![(body, 0)];
    while let Some((node, depth)) = pending.pop() {
        deepest = deepest.max(depth);
        if deepest >= limit {
            break;
        }
        if let SetExpr::SetOperation { left, right, .. } = node {
            pending.push((left, depth + 1));
            pending.push((right, depth + 1));
        }
    }
    deepest
}

#[cfg(test)]
mod tests {
    use super::*;
    use sqlparser::dialect::DuckDbDialect;
    use sqlparser::tokenizer::Tokenizer;

    fn bound(sql: &str) -> usize {
        let tokens = Tokenizer::new(&DuckDbDialect {}, sql).tokenize().unwrap();
        depth_bound(&tokens)
    }

    #[test]
    fn chains_count_their_operators_and_lists_do_not() {
        let chain = format!("SELECT 1{}", " + 1".repeat(500));
        assert!(bound(&chain) > 500);
        let list = format!("SELECT x IN (1{})", ", 1".repeat(5000));
        assert!(bound(&list) < 10, "{}", bound(&list));
        let values = format!("INSERT INTO t VALUES (1, 'a'){}", ", (2, 'b')".repeat(5000));
        assert!(bound(&values) < 10);
    }

    #[test]
    fn nested_chains_add_up() {
        let inner = format!("(1{})", " + 1".repeat(300));
        let outer = format!("SELECT {inner}{}", format!(" + {inner}").repeat(300));
        assert!(bound(&outer) >= 600, "{}", bound(&outer));
    }

    #[test]
    fn case_branches_are_separate_runs() {
        let case = format!("SELECT CASE{} END", " WHEN x = 1 THEN 'a'".repeat(5000));
        assert!(bound(&case) < 10, "{}", bound(&case));
    }
}
