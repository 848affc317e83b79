//! A PromQL parser that keeps what decides a result's unit: numbers, metric names, function
//! and aggregation calls with their arguments, unary minus and binary operators with
//! Prometheus' precedence and `bool` modifier. Label matchers (but `__name__`), ranges,
//! subqueries, `offset`, `@`, and grouping or vector-matching label lists are read and
//! dropped. The text comes from the model or rule files, so the parser walks characters,
//! bounds its nesting, and answers `None` for what it cannot read. Its tokens come from
//! the tools' one PromQL lexer (`promql/lex.rs`).

use crate::tools::promql::lex::{AGGREGATIONS, Tok, lex};
use crate::tools::promql::{MatchOp, Matcher};

/// An expression, as far as its unit is concerned.
#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    Number(f64),
    Str,
    /// A vector selector by metric name (empty when it has none).
    Selector(String),
    /// A function or aggregation call (lowercased name) with its arguments in order; an
    /// aggregation's parameter (`topk`'s k) comes before its expression.
    Call(String, Vec<Expr>),
    Neg(Box<Expr>),
    Binary {
        op: String,
        /// `> bool`: the result is 0 or 1.
        bool_result: bool,
        /// `group_left` (`Some(true)`) or `group_right` (`Some(false)`) with labels: a
        /// join copying labels from the other side.
        join: Option<bool>,
        lhs: Box<Expr>,
        rhs: Box<Expr>,
    },
}

/// Parses `query`; `None` when it is not PromQL this parser can read.
pub fn parse(query: &str) -> Option<Expr> {
    let lexed = lex(query);
    if !lexed.complete {
        return None;
    }
    let mut p = Parser {
        toks: lexed.toks,
        pos: 0,
        depth: 0,
    };
    let e = p.expr(0)?;
    (p.pos == p.toks.len()).then_some(e)
}

/// The `__name__` a matcher list selects (empty when it selects none by `=`).
fn metric_name(matchers: &[Matcher]) -> String {
    matchers
        .iter()
        .find(|m| m.label == "__name__" && m.op == MatchOp::Eq)
        .map(|m| m.value.clone())
        .unwrap_or_default()
}

/// Binary operators from the loosest binding to the tightest.
const LEVELS: [&[&str]; 6] = [
    &["or"],
    &["and", "unless"],
    &["==", "!=", "<=", "<", ">=", ">"],
    &["+", "-"],
    &["*", "/", "%", "atan2"],
    &["^"],
];

/// Nested `expr` calls allowed: each parenthesis or call goes through every level of
/// [`LEVELS`], so this is 32 nestings, deeper than any real query, and bounds the
/// recursion on hostile input.
const MAX_DEPTH: usize = 32 * (LEVELS.len() + 1);

struct Parser {
    toks: Vec<Tok>,
    pos: usize,
    depth: usize,
}

impl Parser {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.pos)
    }

    fn peek_ident(&self, word: &str) -> bool {
        matches!(self.peek(), Some(Tok::Ident(w)) if w.eq_ignore_ascii_case(word))
    }

    fn eat(&mut self, t: &Tok) -> bool {
        let hit = self.peek() == Some(t);
        self.pos += usize::from(hit);
        hit
    }

    /// The binary operator at the cursor if it is of `level`.
    fn op_at(&self, level: usize) -> Option<String> {
        let word = match self.peek()? {
            Tok::Op(o) => o.to_string(),
            Tok::Ident(w) => w.to_ascii_lowercase(),
            _ => return None,
        };
        LEVELS[level].contains(&word.as_str()).then_some(word)
    }

    fn expr(&mut self, level: usize) -> Option<Expr> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return None;
        }
        let e = if level == LEVELS.len() {
            self.unary()
        } else {
            self.binary(level)
        };
        self.depth -= 1;
        e
    }

    fn binary(&mut self, level: usize) -> Option<Expr> {
        let mut lhs = self.expr(level + 1)?;
        while let Some(op) = self.op_at(level) {
            self.pos += 1;
            let bool_result = self.peek_ident("bool") && {
                self.pos += 1;
                true
            };
            let join = self.modifiers()?;
            // `^` is right-associative.
            let rhs = if op == "^" {
                self.expr(level)?
            } else {
                self.expr(level + 1)?
            };
            lhs = Expr::Binary {
                op,
                bool_result,
                join,
                lhs: Box::new(lhs),
                rhs: Box::new(rhs),
            };
        }
        Some(lhs)
    }

    /// Skips `on(…)`/`ignoring(…)` and `group_left(…)`/`group_right(…)`, telling which
    /// side a group modifier names.
    fn modifiers(&mut self) -> Option<Option<bool>> {
        if self.peek_ident("on") || self.peek_ident("ignoring") {
            self.pos += 1;
            self.labels()?;
        }
        let left = self.peek_ident("group_left");
        if !(left || self.peek_ident("group_right")) {
            return Some(None);
        }
        self.pos += 1;
        if self.peek() == Some(&Tok::LParen) {
            self.labels()?;
        }
        Some(Some(left))
    }

    /// Skips a parenthesised label list.
    fn labels(&mut self) -> Option<()> {
        if !self.eat(&Tok::LParen) {
            return None;
        }
        while !self.eat(&Tok::RParen) {
            match self.peek()? {
                Tok::Ident(_) | Tok::Str | Tok::Comma => self.pos += 1,
                _ => return None,
            }
        }
        Some(())
    }

    fn unary(&mut self) -> Option<Expr> {
        match self.peek() {
            Some(Tok::Op("-")) => {
                self.pos += 1;
                // `-a ^ b` is `-(a ^ b)`.
                let e = self.expr(LEVELS.len() - 1)?;
                Some(match e {
                    Expr::Number(v) => Expr::Number(-v),
                    e => Expr::Neg(Box::new(e)),
                })
            }
            Some(Tok::Op("+")) => {
                self.pos += 1;
                self.expr(LEVELS.len() - 1)
            }
            _ => {
                let e = self.primary()?;
                self.postfix()?;
                Some(e)
            }
        }
    }

    /// Skips ranges, subqueries, `offset` and `@` after a primary.
    fn postfix(&mut self) -> Option<()> {
        loop {
            if self.eat(&Tok::Brackets) {
            } else if self.peek_ident("offset") {
                self.pos += 1;
                self.eat(&Tok::Op("-"));
                match self.peek()? {
                    Tok::Dur | Tok::Num(_) => self.pos += 1,
                    _ => return None,
                }
            } else if self.eat(&Tok::At) {
                self.eat(&Tok::Op("-"));
                match self.peek()? {
                    Tok::Num(_) => self.pos += 1,
                    Tok::Ident(_) => {
                        self.pos += 1;
                        if !(self.eat(&Tok::LParen) && self.eat(&Tok::RParen)) {
                            return None;
                        }
                    }
                    _ => return None,
                }
            } else {
                return Some(());
            }
        }
    }

    fn primary(&mut self) -> Option<Expr> {
        let tok = self.peek()?.clone();
        self.pos += 1;
        match tok {
            Tok::Num(v) => Some(Expr::Number(v)),
            Tok::Str => Some(Expr::Str),
            Tok::Braces(matchers) => Some(Expr::Selector(metric_name(&matchers))),
            Tok::LParen => {
                let e = self.expr(0)?;
                self.eat(&Tok::RParen).then_some(e)
            }
            Tok::Ident(word) => self.named(word),
            _ => None,
        }
    }

    /// A call, an aggregation, a number word or a selector starting with `word`.
    fn named(&mut self, word: String) -> Option<Expr> {
        let lower = word.to_ascii_lowercase();
        if AGGREGATIONS.contains(&lower.as_str()) && self.grouping()? {
            let args = self.args()?;
            self.grouping()?;
            return Some(Expr::Call(lower, args));
        }
        if self.peek() == Some(&Tok::LParen) {
            let args = self.args()?;
            if AGGREGATIONS.contains(&lower.as_str()) {
                self.grouping()?;
            }
            return Some(Expr::Call(lower, args));
        }
        match lower.as_str() {
            "inf" => return Some(Expr::Number(f64::INFINITY)),
            "nan" => return Some(Expr::Number(f64::NAN)),
            _ => {}
        }
        if let Some(Tok::Braces(_)) = self.peek() {
            self.pos += 1;
        }
        Some(Expr::Selector(word))
    }

    /// Skips `by (…)` / `without (…)`; `Some(true)` when there was one.
    fn grouping(&mut self) -> Option<bool> {
        if self.peek_ident("by") || self.peek_ident("without") {
            self.pos += 1;
            self.labels()?;
            return Some(true);
        }
        Some(false)
    }

    fn args(&mut self) -> Option<Vec<Expr>> {
        if !self.eat(&Tok::LParen) {
            return None;
        }
        let mut args = Vec::new();
        if self.eat(&Tok::RParen) {
            return Some(args);
        }
        loop {
            args.push(self.expr(0)?);
            if self.eat(&Tok::RParen) {
                return Some(args);
            }
            if !self.eat(&Tok::Comma) {
                return None;
            }
        }
    }
}
