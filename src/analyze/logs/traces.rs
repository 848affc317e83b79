//! Stack traces folded into the line that tells what went wrong: its exception. A trace is
//! many lines (frames, "Traceback (most recent call last):", `goroutine 1 [running]:`)
//! around one informative line; quoted or counted line by line, its frames and the
//! generic line before it ("ERROR … Internal Server Error") crowd out the cause. The forms
//! known:
//!
//! - Python: `Traceback (most recent call last):`, indented `File "…", line N, in …` and
//!   code lines, then the exception (the first line not indented); chained tracebacks
//!   ("The above exception was the direct cause …", "During handling …") give the last;
//! - JVM and Node: a line followed by indented `at …` frames (`... N more`,
//!   `Suppressed:`), and the deepest `Caused by: x.y.Other: msg`, quoted without its prefix;
//! - Go: `panic: msg` (or `fatal error: msg`) then `goroutine N [running]:` and its frames;
//! - Rust: `thread '…' panicked at file:line:col:` and the message on the next line (or
//!   the older one-line form), with its `note:` and backtrace.
//!
//! A trace's lines come one per Loki entry (one stream, timestamps at most [`TRACE_GAP_NS`]
//! apart) or as one multi-line entry. The line just before a trace that looks bad is its
//! header and is folded in. A folded trace is graded at least an error.

use std::sync::LazyLock;

use regex_lite::Regex;

use super::signal::{Signal, signal};

/// Most time between two lines of one trace, in nanoseconds.
const TRACE_GAP_NS: i64 = 2_000_000_000;

/// A frame of the JVM or Node: `\tat x.y.Z(Z.java:10)`, `    at f (/app/x.js:3:9)`.
static AT_FRAME: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\s+at\s+\S").expect("valid regex"));
/// The JVM's elided frames: `\t... 42 more`, `... 12 common frames omitted`.
static ELIDED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^\s*\.\.\. \d+ (?:more|common frames omitted)").expect("valid regex")
});
/// A Go goroutine's header.
static GOROUTINE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^goroutine \d+ \[").expect("valid regex"));
/// A Go frame's function line: `main.main()`, `net/http.(*conn).serve(0xc000…)`.
static GO_CALL: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\S+\(.*\)(?: \+0x[0-9a-f]+)?$").expect("valid regex"));
/// Rust's panic line: the current form ends with `:` (the message follows on the next
/// line), the older one holds the message.
static RUST_PANIC: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^thread '[^']*' panicked at ").expect("valid regex"));

/// One line of a log, with the entry it came from.
struct Line<'a> {
    at: i64,
    entry: usize,
    text: &'a str,
}

/// What a run of lines is: a trace (its first line, past-the-end line and quoted line).
struct Trace {
    start: usize,
    end: usize,
    quote: String,
}

/// The entries `(unix ns, line)` of one stream, any order, as events oldest first: each
/// stack trace (with its header) as one entry quoting its exception, graded at least an
/// error; every other entry as it was, graded by [`signal`].
pub fn fold_entries(entries: &[(i64, String)]) -> Vec<(i64, String, Signal)> {
    let mut order: Vec<usize> = (0..entries.len()).collect();
    // Loki answers newest first: reversed first, a stable sort keeps equal times in order.
    if entries.first().map(|e| e.0) > entries.last().map(|e| e.0) {
        order.reverse();
    }
    order.sort_by_key(|i| entries[*i].0);
    let lines: Vec<Line> = order
        .iter()
        .flat_map(|i| {
            let (at, text) = &entries[*i];
            text.lines().map(move |l| Line {
                at: *at,
                entry: *i,
                text: l,
            })
        })
        .collect();
    let traces = traces(&lines);
    let mut out = Vec::new();
    let mut in_trace = vec![false; entries.len()];
    for t in &traces {
        for l in &lines[t.start..t.end] {
            in_trace[l.entry] = true;
        }
    }
    let mut next = traces.iter().peekable();
    let mut i = 0;
    while i < lines.len() {
        if let Some(t) = next.next_if(|t| t.start == i) {
            out.push((
                lines[i].at,
                t.quote.clone(),
                signal(&t.quote).max(Signal::Error),
            ));
            i = t.end;
            continue;
        }
        let e = lines[i].entry;
        // An entry with no trace stays whole; the other lines of one with a trace are
        // part of the event it logged.
        let (at, text) = &entries[e];
        // A frame left of a trace the read cut (its start before the read's first line)
        // tells nothing.
        let orphan_frame = AT_FRAME.is_match(text) || ELIDED.is_match(text);
        if !in_trace[e] && !orphan_frame {
            out.push((*at, text.clone(), signal(text)));
        }
        while i < lines.len() && lines[i].entry == e && !traces.iter().any(|t| t.start == i) {
            i += 1;
        }
    }
    out
}

/// The lines of `log` (a container's log, one line each), oldest first, with each stack
/// trace folded into its exception line as in [`fold_entries`].
pub fn fold_log(log: &str) -> Vec<(String, Signal)> {
    let entries: Vec<(i64, String)> = log.lines().map(|l| (0, l.to_string())).collect();
    fold_entries(&entries)
        .into_iter()
        .map(|(_, l, s)| (l, s))
        .collect()
}

/// The traces among `lines`, in order, not overlapping.
fn traces(lines: &[Line]) -> Vec<Trace> {
    let mut out: Vec<Trace> = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let Some((end, quote)) = trace_at(lines, i) else {
            i += 1;
            continue;
        };
        let mut start = i;
        // The bad-looking line just before is the trace's header.
        if i > 0
            && out.last().is_none_or(|t| t.end < i)
            && near(lines, i)
            && !indented(lines[i - 1].text)
            && signal(lines[i - 1].text) > Signal::None
        {
            start = i - 1;
        }
        out.push(Trace { start, end, quote });
        i = end.max(i + 1);
    }
    out
}

fn near(lines: &[Line], j: usize) -> bool {
    j > 0 && j < lines.len() && (lines[j].at - lines[j - 1].at).abs() <= TRACE_GAP_NS
}

fn indented(l: &str) -> bool {
    l.starts_with([' ', '\t'])
}

/// The trace that begins at line `i`: its past-the-end line and its quoted line.
fn trace_at(lines: &[Line], i: usize) -> Option<(usize, String)> {
    let text = lines[i].text.trim_end();
    if text.starts_with("Traceback (most recent call last):") {
        return Some(python(lines, i));
    }
    if !indented(text)
        && !text.is_empty()
        && near(lines, i + 1)
        && AT_FRAME.is_match(lines[i + 1].text)
    {
        return Some(jvm(lines, i));
    }
    if text.starts_with("panic: ") || text.starts_with("fatal error: ") {
        return go(lines, i);
    }
    if RUST_PANIC.is_match(text) {
        return Some(rust(lines, i));
    }
    None
}

fn python(lines: &[Line], i: usize) -> (usize, String) {
    let chained = |l: &str| {
        l.starts_with("The above exception was the direct cause")
            || l.starts_with("During handling of the above exception")
            || l.starts_with("Traceback (most recent call last):")
    };
    let mut exception: Option<usize> = None;
    let mut after_exception = false;
    let mut end = i + 1;
    let mut j = i + 1;
    while near(lines, j) {
        let l = lines[j].text.trim_end();
        if l.is_empty() {
        } else if chained(l) {
            after_exception = false;
            end = j + 1;
        } else if after_exception {
            break;
        } else if indented(l) {
            end = j + 1;
        } else {
            exception = Some(j);
            after_exception = true;
            end = j + 1;
        }
        j += 1;
    }
    let quote = exception.map_or(lines[i].text, |e| lines[e].text);
    (end, quote.trim().to_string())
}

fn jvm(lines: &[Line], i: usize) -> (usize, String) {
    // A trace cut by the read's limit may begin at a cause.
    let first = lines[i].text;
    let mut deepest = first.strip_prefix("Caused by: ").unwrap_or(first);
    let mut j = i + 1;
    while near(lines, j) {
        let l = lines[j].text;
        if let Some(cause) = l.strip_prefix("Caused by: ") {
            deepest = cause;
        } else if !(AT_FRAME.is_match(l)
            || ELIDED.is_match(l)
            || (indented(l) && l.trim_start().starts_with("Suppressed: ")))
        {
            break;
        }
        j += 1;
    }
    (j, deepest.trim().to_string())
}

fn go(lines: &[Line], i: usize) -> Option<(usize, String)> {
    // The goroutine's header comes within a few lines (a blank line, `[recovered]`, a
    // re-panic, `[signal SIGSEGV …]` between).
    let header = (i + 1..lines.len().min(i + 6))
        .take_while(|j| near(lines, *j))
        .find(|j| GOROUTINE.is_match(lines[*j].text))?;
    let mut end = header + 1;
    let mut j = header + 1;
    while near(lines, j) {
        let l = lines[j].text.trim_end();
        let part = l.is_empty()
            || indented(l)
            || GOROUTINE.is_match(l)
            || GO_CALL.is_match(l)
            || l.starts_with("created by ")
            || l.starts_with("exit status ");
        if !part {
            break;
        }
        if !l.is_empty() {
            end = j + 1;
        }
        j += 1;
    }
    Some((end, lines[i].text.trim().to_string()))
}

fn rust(lines: &[Line], i: usize) -> (usize, String) {
    let first = lines[i].text.trim();
    let mut quote = first.to_string();
    let mut j = i + 1;
    if first.ends_with(':') && near(lines, j) {
        quote = format!("{first} {}", lines[j].text.trim());
        j += 1;
    }
    while near(lines, j) {
        let l = lines[j].text;
        if !(indented(l) || l.starts_with("note: ") || l.starts_with("stack backtrace:")) {
            break;
        }
        j += 1;
    }
    (j, quote)
}

#[cfg(test)]
mod tests;
