//! Compaction of upstream answers into text that fits the tool output limit
//! (`llm.max_tool_output_chars`): range queries become one summary line per series, instant
//! vectors the top series by value, log lines patterns with counts. Output never exceeds the
//! limit; what is dropped is counted so the model knows to narrow its query.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write;

pub use super::format::{Unit, format_number, value_note};
use super::steps::{is_steps, step_line, stopped};
use super::trend::{Measure, Sizes, describe, join_key, used_note};
pub use crate::analyze::line_pattern;
use crate::analyze::readable_line;
use crate::integrations::loki::LogStream;
use crate::integrations::prometheus::{Labels, Sample, Series};
use crate::text::truncate;

/// `name{a="1",b="2"}` without the labels in `skip`.
pub fn format_labels(metric: &Labels, skip: &Labels) -> String {
    let name = metric
        .get("__name__")
        .filter(|_| !skip.contains_key("__name__"));
    let pairs: Vec<String> = metric
        .iter()
        .filter(|(k, v)| k.as_str() != "__name__" && skip.get(*k) != Some(*v))
        .map(|(k, v)| format!("{k}={v:?}"))
        .collect();
    let mut out = name.cloned().unwrap_or_default();
    if !pairs.is_empty() || out.is_empty() {
        out.push('{');
        out.push_str(&pairs.join(","));
        out.push('}');
    }
    truncate(&out, 300)
}

/// Labels every one of `sets` has with the same value (only when there are ≥ 2 sets).
fn common_labels<'a>(mut sets: impl Iterator<Item = &'a Labels>) -> Labels {
    let Some(first) = sets.next() else {
        return Labels::new();
    };
    let mut common = first.clone();
    let mut n = 1;
    for s in sets {
        common.retain(|k, v| s.get(k) == Some(v));
        n += 1;
    }
    if n < 2 { Labels::new() } else { common }
}

/// Appends `lines` under `header` while they fit `max_chars`, then says how many were dropped.
pub fn fit_lines(header: &str, lines: &[String], what: &str, max_chars: usize) -> String {
    fit_lines_with(header, lines.len(), |i| lines[i].clone(), what, max_chars)
}

/// Like [`fit_lines`], formatting line `i` only when it is reached (the first that does
/// not fit ends the output), so large inputs cost only what is shown.
pub fn fit_lines_with(
    header: &str,
    total: usize,
    mut line: impl FnMut(usize) -> String,
    what: &str,
    max_chars: usize,
) -> String {
    let footer = |n: usize| format!("\n… and {n} more {what} dropped");
    let mut out = truncate(header, max_chars);
    let mut used = out.chars().count();
    for i in 0..total {
        let line = line(i);
        let left_after = total - i - 1;
        // Room is kept for the footer a later line may need, so it always fits.
        let reserve = if left_after > 0 {
            footer(left_after).chars().count()
        } else {
            0
        };
        let len = line.chars().count() + 1;
        if used + len + reserve > max_chars {
            let f = footer(total - i);
            if used + f.chars().count() <= max_chars {
                out.push_str(&f);
            }
            return out;
        }
        out.push('\n');
        out.push_str(&line);
        used += len;
    }
    out
}

/// Min, avg, max and last of the non-NaN points, and their trend.
struct Stats {
    min: f64,
    avg: f64,
    max: f64,
    last: f64,
    trend: &'static str,
    n: usize,
}

fn stats(values: &[(f64, f64)]) -> Stats {
    let vs: Vec<f64> = values.iter().map(|p| p.1).filter(|v| !v.is_nan()).collect();
    if vs.is_empty() {
        return Stats {
            min: f64::NAN,
            avg: f64::NAN,
            max: f64::NAN,
            last: f64::NAN,
            trend: "flat",
            n: values.len(),
        };
    }
    let min = vs.iter().copied().fold(f64::INFINITY, f64::min);
    let max = vs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let avg = vs.iter().sum::<f64>() / vs.len() as f64;
    let third = (vs.len() / 3).max(1);
    let mean = |s: &[f64]| s.iter().sum::<f64>() / s.len() as f64;
    let first = mean(&vs[..third]);
    let last_part = mean(&vs[vs.len() - third..]);
    let delta = last_part - first;
    let spread = max - min;
    let trend = if vs.len() < 3
        || !delta.is_finite()
        || delta.abs() < 0.25 * spread
        || delta.abs() < 0.01 * first.abs().max(last_part.abs())
    {
        "flat"
    } else if delta > 0.0 {
        "rising"
    } else {
        "falling"
    };
    Stats {
        min,
        avg,
        max,
        last: *vs.last().expect("not empty"),
        trend,
        n: values.len(),
    }
}

/// Sort key that puts NaN last.
fn desc(v: f64) -> f64 {
    if v.is_nan() { f64::NEG_INFINITY } else { v }
}

/// A range query as one line per series, most relevant (highest max, then last) first,
/// each followed by its computed change and rate (see [`compact_matrix_with`]).
pub fn compact_matrix(series: &[Series], unit: Unit, max_chars: usize) -> String {
    compact_matrix_with(series, unit, max_chars, Measure::Other, &Sizes::new(), None)
}

/// [`compact_matrix`] for a query whose values are `measure`: a gauge moving toward a
/// limit also gets the time until it gets there, and free bytes with a size in `sizes`
/// (by [`join_key`]) the share used. A series moving in steps (`up`, a status code) gets
/// its last change and how long the value has held instead of a rate; with `window`
/// (range end and step, Unix seconds) a series whose points stop early says since when.
pub fn compact_matrix_with(
    series: &[Series],
    unit: Unit,
    max_chars: usize,
    measure: Measure,
    sizes: &Sizes,
    window: Option<(f64, f64)>,
) -> String {
    if series.is_empty() {
        return "no data: the query returned no series in this range".into();
    }
    let common = common_labels(series.iter().map(|s| &s.metric));
    let mut rows: Vec<(Stats, &Series)> = series.iter().map(|s| (stats(&s.values), s)).collect();
    rows.sort_by(|a, b| {
        desc(b.0.max)
            .total_cmp(&desc(a.0.max))
            .then(desc(b.0.last).total_cmp(&desc(a.0.last)))
    });
    let f = |v| format_number(v, unit);
    let line = |i: usize| {
        let (st, s) = &rows[i];
        let last_at = s.values.last().map_or(f64::NAN, |p| p.0);
        let mut line = format!(
            "{} min={} avg={} max={} last={}{} trend={} ({} point{})",
            format_labels(&s.metric, &common),
            f(st.min),
            f(st.avg),
            f(st.max),
            f(st.last),
            value_note(st.last, unit, last_at),
            st.trend,
            st.n,
            if st.n == 1 { "" } else { "s" }
        );
        // One entry with its computed line, so both fit or both are dropped.
        let size = sizes.get(&join_key(&s.metric)).copied();
        let computed = if measure == Measure::Other && is_steps(&s.values) {
            let name = s.metric.get("__name__").map(String::as_str);
            step_line(&s.values, unit, name)
        } else {
            describe(&s.values, unit, measure, size)
        };
        let gone = window.and_then(|(end, step)| stopped(&s.values, end, step));
        for computed in computed.into_iter().chain(gone) {
            line.push('\n');
            line.push_str(&computed);
        }
        line
    };
    let mut header = format!("{} series", series.len());
    if !common.is_empty() {
        let _ = write!(
            header,
            "; common labels {}",
            format_labels(&common, &Labels::new())
        );
    }
    fit_lines_with(&header, rows.len(), line, "series", max_chars)
}

/// An instant vector, highest values first.
pub fn compact_vector(samples: &[Sample], unit: Unit, max_chars: usize) -> String {
    compact_vector_with(
        samples,
        unit,
        max_chars,
        Measure::Other,
        &Sizes::new(),
        f64::NAN,
    )
}

/// [`compact_vector`] for a query whose values are `measure`: shares and free bytes with
/// a size in `sizes` also say how much is used; timestamps their date and distance from
/// `at` (the query time, Unix seconds), durations against `time()` their length in words.
pub fn compact_vector_with(
    samples: &[Sample],
    unit: Unit,
    max_chars: usize,
    measure: Measure,
    sizes: &Sizes,
    at: f64,
) -> String {
    if samples.is_empty() {
        return "no data: the query returned an empty vector".into();
    }
    let common = common_labels(samples.iter().map(|s| &s.metric));
    let mut sorted: Vec<&Sample> = samples.iter().collect();
    sorted.sort_by(|a, b| desc(b.value).total_cmp(&desc(a.value)));
    let lines: Vec<String> = sorted
        .iter()
        .map(|s| {
            let size = sizes.get(&join_key(&s.metric)).copied();
            format!(
                "{} {}{}{}",
                format_labels(&s.metric, &common),
                format_number(s.value, unit),
                value_note(s.value, unit, at),
                used_note(s.value, measure, size)
            )
        })
        .collect();
    let mut header = format!("{} series", samples.len());
    if !common.is_empty() {
        let _ = write!(
            header,
            "; common labels {}",
            format_labels(&common, &Labels::new())
        );
    }
    fit_lines(&header, &lines, "series", max_chars)
}

/// One group of log lines with the same pattern.
struct LogGroup<'a> {
    count: usize,
    example: &'a str,
    newest: i64,
    streams: BTreeMap<String, usize>,
}

/// Log lines grouped by pattern, most frequent first, with one example each.
pub fn compact_logs(streams: &[LogStream], max_chars: usize) -> String {
    let total: usize = streams.iter().map(|s| s.entries.len()).sum();
    if total == 0 {
        return "no log lines matched in this range".into();
    }
    let mut groups: HashMap<String, LogGroup> = HashMap::new();
    for s in streams {
        let who = stream_name(&s.labels);
        for (ts, line) in &s.entries {
            let g = groups.entry(line_pattern(line)).or_insert(LogGroup {
                count: 0,
                example: line,
                newest: *ts,
                streams: BTreeMap::new(),
            });
            g.count += 1;
            if *ts > g.newest {
                g.newest = *ts;
                g.example = line;
            }
            *g.streams.entry(who.clone()).or_default() += 1;
        }
    }
    let mut sorted: Vec<LogGroup> = groups.into_values().collect();
    sorted.sort_by(|a, b| b.count.cmp(&a.count).then(b.newest.cmp(&a.newest)));
    let lines: Vec<String> = sorted
        .iter()
        .map(|g| {
            let newest = chrono::DateTime::from_timestamp_nanos(g.newest).format("%m-%d %H:%M:%S");
            let mut who: Vec<&String> = g.streams.keys().collect();
            let more = who.len().saturating_sub(2);
            who.truncate(2);
            let who = who.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(" ");
            let who = if more > 0 {
                format!("{who} +{more}")
            } else {
                who
            };
            format!(
                "{}× [{who}] last {newest}: {}",
                g.count,
                truncate(&readable_line(g.example), 240)
            )
        })
        .collect();
    let header = format!(
        "{total} lines in {} streams, {} patterns (count, stream, newest example):",
        streams.len(),
        sorted.len()
    );
    fit_lines(&header, &lines, "patterns", max_chars)
}

/// A short name for a stream: its job/app/service/container label, else all labels.
pub fn stream_name(labels: &Labels) -> String {
    ["job", "app", "service_name", "service", "container", "unit"]
        .iter()
        .find_map(|k| labels.get(*k).map(|v| format!("{k}={v}")))
        .unwrap_or_else(|| format_labels(labels, &Labels::new()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_log_lines_are_shown_as_their_fields_without_the_timestamp() {
        let line = r#"{"level":"error","ts":1.7e9,"logger":"tls","msg":"could not renew","error":"timeout during connect"}"#;
        let stream = LogStream {
            labels: [("job".to_string(), "caddy".to_string())].into(),
            entries: vec![(1_700_000_000_000_000_000, line.to_string())],
        };
        let out = compact_logs(&[stream], 2_000);
        assert!(
            out.contains(
                r#": level=error logger=tls msg="could not renew" error="timeout during connect""#
            ),
            "{out}"
        );
    }
}
