//! A long log line quoted in the few characters a fact has for it, keeping what says what
//! happened. A line is a sequence of parts: prose ("connect() failed (111: Connection
//! refused) while connecting to upstream", "status=bounced (host … said: 550 5.7.26 …
//! rejected …)") and fields that identify or measure (`client: 192.0.2.5`, `delay=0.81`,
//! `to=<ola@example.net>`). Where the cause sits differs by program: nginx puts it first, a
//! mail server's bounce after the relay and the timings, a JSON logger in its `error` key.
//! A cut at fixed shares of the line loses one or the other. So the parts are scored by
//! their words, the line's first part (who logged, at which level) is kept, then the wordiest
//! parts while they fit, shown in their order with "…" where parts were left out. Nothing
//! here knows a program or a word: the score counts alphabetic words outside a field's key.

use super::readable_line;
use crate::text::{truncate, truncate_middle};

/// Least room in which the wordiest part is shown cut rather than left out.
const MIN_CUT_CHARS: usize = 24;

/// Shortest word counted as prose (shorter ones are units and abbreviations: `ms`, `to`).
const MIN_WORD_CHARS: usize = 3;

/// `line` shown in at most `max` characters: readable ([`readable_line`]) and whole when
/// it fits; else its first part and its wordiest parts, in their order.
pub fn quote_line(line: &str, max: usize) -> String {
    let readable = readable_line(line);
    if readable.chars().count() <= max {
        return readable;
    }
    let parts = parts(&readable);
    if parts.len() < 2 {
        return truncate_middle(&readable, max);
    }
    let len = |s: &str| s.chars().count();
    if len(parts[0]) + 2 > max {
        // A first part longer than the room is prose that starts with what happened.
        return truncate(parts[0].trim_end(), max);
    }
    let mut keep: Vec<Option<String>> = vec![None; parts.len()];
    keep[0] = Some(parts[0].to_string());
    // Each part left out costs a "… " in the worst case.
    let mut used = len(parts[0]) + 2;
    let mut order: Vec<usize> = (1..parts.len()).collect();
    order.sort_by_key(|&i| (std::cmp::Reverse(prose_words(parts[i])), i));
    let mut cut_one = false;
    for i in order {
        let cost = len(parts[i]) + 2;
        let room = max.saturating_sub(used);
        if cost <= room {
            keep[i] = Some(parts[i].to_string());
            used += cost;
        } else if !cut_one && prose_words(parts[i]) > 0 && room >= MIN_CUT_CHARS {
            // The wordiest part that does not fit is shown from its start: prose says
            // what happened first ("said: 550 …", "failed: …").
            cut_one = true;
            let shown = truncate(parts[i].trim_end(), room - 2);
            used += len(&shown) + 2;
            keep[i] = Some(format!("{shown} "));
        }
    }
    let mut out = String::new();
    let mut gap = false;
    for part in &keep {
        match part {
            Some(p) => {
                if gap {
                    out.push_str("… ");
                    gap = false;
                }
                out.push_str(p);
            }
            None => gap = true,
        }
    }
    let mut out = out.trim_end().to_string();
    if gap && !out.ends_with('…') {
        out.push_str(" …");
    }
    if len(&out) > max {
        return truncate_middle(&out, max);
    }
    out
}

/// The parts of `line`, each with the separator after it: split after `, ` and `; ` and
/// before a `key=` token, never inside quotes, parentheses or brackets.
fn parts(line: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut quoted = false;
    let mut start = 0;
    let mut prev = ' ';
    for (i, c) in line.char_indices() {
        match c {
            '"' => quoted = !quoted,
            '(' | '[' | '{' | '<' if !quoted => depth += 1,
            ')' | ']' | '}' | '>' if !quoted => depth = depth.saturating_sub(1),
            ' ' if !quoted && depth == 0 => {
                let next = i + c.len_utf8();
                let cut = matches!(prev, ',' | ';') || line.get(next..).is_some_and(starts_field);
                if cut && let Some(part) = line.get(start..next).filter(|p| !p.is_empty()) {
                    out.push(part);
                    start = next;
                }
            }
            _ => {}
        }
        prev = c;
    }
    if let Some(rest) = line.get(start..).filter(|r| !r.is_empty()) {
        out.push(rest);
    }
    out
}

/// Whether `rest` starts with a logfmt key: a name then `=`.
fn starts_field(rest: &str) -> bool {
    let key: String = rest
        .chars()
        .take_while(|c| c.is_alphanumeric() || matches!(c, '_' | '.' | '-'))
        .collect();
    !key.is_empty()
        && key.chars().next().is_some_and(char::is_alphabetic)
        && rest.get(key.len()..).is_some_and(|r| r.starts_with('='))
}

/// The alphabetic words of `part` outside its key (`key=` or `key:` at its start).
fn prose_words(part: &str) -> usize {
    let body = part
        .split_once('=')
        .filter(|(k, _)| is_key(k))
        .or_else(|| part.split_once(": ").filter(|(k, _)| is_key(k)))
        .map_or(part, |(_, v)| v);
    body.split(|c: char| !(c.is_alphabetic() || c == '\''))
        .filter(|w| w.chars().count() >= MIN_WORD_CHARS)
        .count()
}

/// A single name (`status`, `client`, `upstream_addr`): what a field's key looks like.
fn is_key(k: &str) -> bool {
    !k.is_empty()
        && k.chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '_' | '.' | '-'))
}

#[cfg(test)]
#[path = "quote/tests.rs"]
mod tests;
