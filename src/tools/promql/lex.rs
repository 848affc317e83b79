//! The one PromQL lexer of the tools: tokens for the unit parser (`units/parse.rs`) and
//! for the selectors of `promql.rs`, and the character classes of an expression (code,
//! string literal, comment) that the agent's rule helpers and `format::without_strings`
//! scan by. Queries come from the model, rule files and webhooks, so it walks characters,
//! never fails, and says when it met what PromQL has no token for (an unclosed string,
//! brace or bracket, a stray character): a strict reader gives up there, a lenient one
//! keeps what was read.

use super::{MatchOp, Matcher};

/// A token of a PromQL expression.
#[derive(Clone, Debug, PartialEq)]
pub enum Tok {
    Num(f64),
    /// A duration or anything else that starts with a digit but is no number (`5m`).
    Dur,
    Ident(String),
    Str,
    /// A `{…}` matcher list (`{"name"}` alone is a `__name__` matcher, as in Prometheus 3).
    Braces(Vec<Matcher>),
    /// A `[…]` range or subquery.
    Brackets,
    LParen,
    RParen,
    Comma,
    At,
    Op(&'static str),
}

/// The tokens of a query, and whether every character was read into one.
pub struct Lexed {
    pub toks: Vec<Tok>,
    pub complete: bool,
}

/// The aggregation operators (each may take `by (…)`/`without (…)` before or after its
/// parenthesis).
pub const AGGREGATIONS: [&str; 14] = [
    "sum",
    "avg",
    "min",
    "max",
    "count",
    "group",
    "stddev",
    "stdvar",
    "topk",
    "bottomk",
    "quantile",
    "count_values",
    "limitk",
    "limit_ratio",
];

/// Whether `c` continues an identifier (a metric, label or function name).
pub fn ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == ':'
}

fn ident_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_' || c == ':'
}

fn is_quote(c: char) -> bool {
    matches!(c, '"' | '\'' | '`')
}

/// Lexes `query`.
pub fn lex(query: &str) -> Lexed {
    let chars: Vec<char> = query.chars().collect();
    let mut toks = Vec::new();
    let mut complete = true;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        match c {
            c if c.is_whitespace() => i += 1,
            '#' => {
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
            }
            c if is_quote(c) => {
                complete &= string(&chars, &mut i).1;
                toks.push(Tok::Str);
            }
            '{' => {
                let (found, closed) = matchers(&chars, &mut i);
                complete &= closed;
                toks.push(Tok::Braces(found));
            }
            '[' => {
                while i < chars.len() && chars[i] != ']' {
                    i += 1;
                }
                complete &= i < chars.len();
                i += 1;
                toks.push(Tok::Brackets);
            }
            '(' | ')' | ',' | '@' => {
                toks.push(match c {
                    '(' => Tok::LParen,
                    ')' => Tok::RParen,
                    ',' => Tok::Comma,
                    _ => Tok::At,
                });
                i += 1;
            }
            c if c.is_ascii_digit() || (c == '.' && next.is_some_and(|n| n.is_ascii_digit())) => {
                let start = i;
                while i < chars.len() {
                    let d = chars[i];
                    let exp_sign = matches!(d, '+' | '-')
                        && i > start
                        && matches!(chars[i - 1], 'e' | 'E')
                        && !chars[start..i].iter().any(|c| c.eq_ignore_ascii_case(&'x'));
                    if d.is_ascii_alphanumeric() || d == '.' || d == '_' || exp_sign {
                        i += 1;
                    } else {
                        break;
                    }
                }
                let text: String = chars[start..i].iter().collect();
                toks.push(number(&text).map_or(Tok::Dur, Tok::Num));
            }
            c if ident_start(c) => {
                toks.push(Tok::Ident(ident(&chars, &mut i)));
            }
            _ => {
                let two: String = chars[i..chars.len().min(i + 2)].iter().collect();
                let op = ["==", "!=", "<=", ">="]
                    .into_iter()
                    .find(|o| *o == two)
                    .or_else(|| {
                        ["+", "-", "*", "/", "%", "^", "<", ">"]
                            .into_iter()
                            .find(|o| o.starts_with(c))
                    });
                match op {
                    Some(op) => {
                        i += op.len();
                        toks.push(Tok::Op(op));
                    }
                    None => {
                        complete = false;
                        i += 1;
                    }
                }
            }
        }
    }
    Lexed { toks, complete }
}

/// The identifier starting at `i`.
fn ident(chars: &[char], i: &mut usize) -> String {
    let start = *i;
    while *i < chars.len() && ident_char(chars[*i]) {
        *i += 1;
    }
    chars[start..*i].iter().collect()
}

/// The string starting at the quote at `i`, unescaped, and whether it was closed.
fn string(chars: &[char], i: &mut usize) -> (String, bool) {
    let q = chars[*i];
    *i += 1;
    let mut out = String::new();
    while *i < chars.len() {
        let c = chars[*i];
        *i += 1;
        if c == q {
            return (out, true);
        }
        if c == '\\' && q != '`' && *i < chars.len() {
            out.push(match chars[*i] {
                'n' => '\n',
                'r' => '\r',
                't' => '\t',
                other => other,
            });
            *i += 1;
        } else {
            out.push(c);
        }
    }
    (out, false)
}

/// The matchers of the list opening at `i` (`{`), and whether its `}` was found. A
/// matcher PromQL would reject ends the list where it stands.
fn matchers(chars: &[char], i: &mut usize) -> (Vec<Matcher>, bool) {
    *i += 1;
    let mut out = Vec::new();
    loop {
        while chars.get(*i).is_some_and(|c| c.is_whitespace()) {
            *i += 1;
        }
        match chars.get(*i).copied() {
            None => return (out, false),
            Some('}') => {
                *i += 1;
                return (out, true);
            }
            Some(',') => *i += 1,
            Some(c) if ident_start(c) => {
                let label = ident(chars, i);
                while chars.get(*i).is_some_and(|c| c.is_whitespace()) {
                    *i += 1;
                }
                let op = match (chars.get(*i), chars.get(*i + 1)) {
                    (Some('='), Some('~')) => MatchOp::Re,
                    (Some('!'), Some('=')) => MatchOp::Ne,
                    (Some('!'), Some('~')) => MatchOp::NotRe,
                    (Some('='), _) => MatchOp::Eq,
                    _ => return (out, skip_past_brace(chars, i)),
                };
                *i += if op == MatchOp::Eq { 1 } else { 2 };
                while chars.get(*i).is_some_and(|c| c.is_whitespace()) {
                    *i += 1;
                }
                if !chars.get(*i).is_some_and(|c| is_quote(*c)) {
                    return (out, skip_past_brace(chars, i));
                }
                let (value, closed) = string(chars, i);
                out.push(Matcher { label, op, value });
                if !closed {
                    return (out, false);
                }
            }
            Some(c) if is_quote(c) => {
                let (value, closed) = string(chars, i);
                out.push(Matcher {
                    label: "__name__".into(),
                    op: MatchOp::Eq,
                    value,
                });
                if !closed {
                    return (out, false);
                }
            }
            Some(_) => return (out, skip_past_brace(chars, i)),
        }
    }
}

/// Skips past the `}` that closes a matcher list, over strings; false when none does.
fn skip_past_brace(chars: &[char], i: &mut usize) -> bool {
    while let Some(&c) = chars.get(*i) {
        if is_quote(c) {
            if !string(chars, i).1 {
                return false;
            }
            continue;
        }
        *i += 1;
        if c == '}' {
            return true;
        }
    }
    false
}

/// A PromQL number literal: decimal, scientific or hexadecimal.
fn number(text: &str) -> Option<f64> {
    let t = text.to_ascii_lowercase();
    match t.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).ok().map(|v| v as f64),
        None => t.parse().ok(),
    }
}

/// What a character of an expression is part of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    Code,
    /// The opening or closing quote of a string literal.
    Quote,
    /// A character between a string literal's quotes.
    Literal,
    /// From `#` to the end of the line.
    Comment,
}

/// Every character of `expr` with its byte offset and what it is part of.
pub fn classify(expr: &str) -> impl Iterator<Item = (usize, char, Class)> + '_ {
    let mut quote: Option<char> = None;
    let mut escaped = false;
    let mut comment = false;
    expr.char_indices().map(move |(i, c)| {
        if comment {
            comment = c != '\n';
            return (i, c, if comment { Class::Comment } else { Class::Code });
        }
        if let Some(q) = quote {
            if escaped {
                escaped = false;
            } else if c == '\\' && q != '`' {
                escaped = true;
            } else if c == q {
                quote = None;
                return (i, c, Class::Quote);
            }
            return (i, c, Class::Literal);
        }
        match c {
            c if is_quote(c) => {
                quote = Some(c);
                (i, c, Class::Quote)
            }
            '#' => {
                comment = true;
                (i, c, Class::Comment)
            }
            _ => (i, c, Class::Code),
        }
    })
}
