//! A fake Loki over fixed streams. It understands the LogQL an investigation writes:
//! a stream selector (`=`, `!=`, `=~`, `!~`), line filters (`|=`, `!=`, `|~`, `!~`; other
//! pipeline stages pass lines through), and the metric forms `count_over_time`, `rate`,
//! `bytes_over_time` (a range covers `(t - range, t]`, lines filtered once per query) with
//! an optional `sum|count|max by (…)`. It answers `query_range`
//! (streams, newest first, or a matrix), `query` (a vector), `labels`, `label/{name}/values`
//! and `series` in Loki's JSON; a query it cannot parse gets Loki's 400 plain text.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use axum::Router;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use chrono::{DateTime, Utc};
use regex_lite::Regex;
use serde_json::{Value, json};

type Labels = BTreeMap<String, String>;

/// One log line: unix nanoseconds and text.
pub type LogLine = (i64, String);

struct Streams(Vec<(Labels, Vec<LogLine>)>);

/// A router serving `streams` (lines in any order).
pub fn loki_router(streams: Vec<(Labels, Vec<LogLine>)>) -> Router {
    let streams = streams
        .into_iter()
        .map(|(l, mut lines)| {
            lines.sort_by_key(|(t, _)| *t);
            (l, lines)
        })
        .collect();
    Router::new()
        .route("/loki/api/v1/query_range", get(query_range))
        .route("/loki/api/v1/query", get(query))
        .route("/loki/api/v1/labels", get(labels))
        .route("/loki/api/v1/label/{name}/values", get(label_values))
        .route("/loki/api/v1/series", get(series))
        .route("/ready", get(|| async { "ready" }))
        .with_state(Arc::new(Streams(streams)))
}

enum Matcher {
    Eq(String, String),
    Ne(String, String),
    Re(String, Regex),
    NotRe(String, Regex),
}

enum LineFilter {
    Contains(String),
    NotContains(String),
    Re(Regex),
    NotRe(Regex),
}

struct Metric {
    range_ns: i64,
    per_second: bool,
    bytes: bool,
    /// `Some(labels)` for an aggregation (empty: everything in one series).
    by: Option<Vec<String>>,
}

struct LogQuery {
    selector: Vec<Matcher>,
    filters: Vec<LineFilter>,
    metric: Option<Metric>,
}

fn anchored(re: &str) -> Result<Regex, String> {
    Regex::new(&format!("^(?:{re})$")).map_err(|e| format!("invalid regex {re:?}: {e}"))
}

/// Reads a "…" or `…` literal at the start of `s`; returns it and the rest.
fn literal(s: &str) -> Result<(String, &str), String> {
    let s = s.trim_start();
    if let Some(rest) = s.strip_prefix('`') {
        let end = rest.find('`').ok_or("unclosed `")?;
        return Ok((rest[..end].to_string(), &rest[end + 1..]));
    }
    let rest = s
        .strip_prefix('"')
        .ok_or_else(|| format!("expected a string at {s:?}"))?;
    let mut out = String::new();
    let mut chars = rest.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '\\' => {
                if let Some((_, n)) = chars.next() {
                    out.push(n);
                }
            }
            '"' => return Ok((out, &rest[i + 1..])),
            c => out.push(c),
        }
    }
    Err("unclosed \"".into())
}

fn parse_selector(inner: &str) -> Result<Vec<Matcher>, String> {
    let mut out = Vec::new();
    let mut rest = inner.trim();
    while !rest.is_empty() {
        let name_end = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .ok_or_else(|| format!("expected a matcher at {rest:?}"))?;
        let name = rest[..name_end].to_string();
        let after = rest[name_end..].trim_start();
        let (op, after) = ["=~", "!~", "!=", "="]
            .iter()
            .find_map(|op| after.strip_prefix(op).map(|a| (*op, a)))
            .ok_or_else(|| format!("expected =, !=, =~ or !~ after {name}"))?;
        let (value, after) = literal(after)?;
        out.push(match op {
            "=" => Matcher::Eq(name, value),
            "!=" => Matcher::Ne(name, value),
            "=~" => Matcher::Re(name, anchored(&value)?),
            _ => Matcher::NotRe(name, anchored(&value)?),
        });
        rest = after.trim_start().trim_start_matches(',').trim_start();
    }
    Ok(out)
}

fn parse_duration_ns(s: &str) -> Result<i64, String> {
    humantime::parse_duration(s.trim())
        .map(|d| d.as_nanos() as i64)
        .map_err(|e| format!("invalid range [{s}]: {e}"))
}

fn parse(q: &str) -> Result<LogQuery, String> {
    let open = q
        .find('{')
        .ok_or("parse error: a stream selector {…} is required")?;
    let close = open + q[open..].find('}').ok_or("parse error: unclosed {")?;
    let selector = parse_selector(&q[open + 1..close])?;
    let head = &q[..open];
    let mut filters = Vec::new();
    let mut rest = &q[close + 1..];
    loop {
        rest = rest.trim_start();
        if let Some((op, after)) = ["|=", "!=", "|~", "!~"]
            .iter()
            .find_map(|op| rest.strip_prefix(op).map(|a| (*op, a)))
        {
            let (text, after) = literal(after)?;
            filters.push(match op {
                "|=" => LineFilter::Contains(text),
                "!=" => LineFilter::NotContains(text),
                "|~" => LineFilter::Re(Regex::new(&text).map_err(|e| e.to_string())?),
                _ => LineFilter::NotRe(Regex::new(&text).map_err(|e| e.to_string())?),
            });
            rest = after;
        } else if let Some(after) = rest.strip_prefix('|') {
            // Another stage (json, logfmt, label filters…): lines pass through.
            let end = after.find(['|', '[', ')']).unwrap_or(after.len());
            rest = &after[end..];
            if end == 0 && after.is_empty() {
                break;
            }
        } else {
            break;
        }
    }
    let metric = if head.trim().is_empty() {
        None
    } else {
        let range = rest
            .trim_start()
            .strip_prefix('[')
            .and_then(|r| r.split_once(']'))
            .ok_or("parse error: a metric query needs a range such as [5m]")?
            .0;
        let by = Regex::new(r"\b(?:by|without)\s*\(([^)]*)\)")
            .expect("valid regex")
            .captures(q)
            .map(|c| {
                c[1].split(',')
                    .map(|s| s.trim().to_string())
                    .filter(|s| !s.is_empty())
                    .collect()
            });
        let aggregated = Regex::new(r"^\s*(sum|count|max|min|avg|topk|bottomk)\b")
            .expect("valid regex")
            .is_match(head);
        Some(Metric {
            range_ns: parse_duration_ns(range)?,
            per_second: head.contains("rate("),
            bytes: head.contains("bytes_"),
            by: by.or(aggregated.then(Vec::new)),
        })
    };
    Ok(LogQuery {
        selector,
        filters,
        metric,
    })
}

impl LogQuery {
    fn selects(&self, labels: &Labels) -> bool {
        self.selector.iter().all(|m| match m {
            Matcher::Eq(k, v) => labels.get(k).map_or(v.is_empty(), |x| x == v),
            Matcher::Ne(k, v) => labels.get(k).is_none_or(|x| x != v),
            Matcher::Re(k, r) => r.is_match(labels.get(k).map_or("", String::as_str)),
            Matcher::NotRe(k, r) => !r.is_match(labels.get(k).map_or("", String::as_str)),
        })
    }

    fn keeps(&self, line: &str) -> bool {
        self.filters.iter().all(|f| match f {
            LineFilter::Contains(s) => line.contains(s.as_str()),
            LineFilter::NotContains(s) => !line.contains(s.as_str()),
            LineFilter::Re(r) => r.is_match(line),
            LineFilter::NotRe(r) => !r.is_match(line),
        })
    }

    /// The matching streams with their lines in `[start, end]`.
    fn select<'a>(
        &self,
        streams: &'a Streams,
        start: i64,
        end: i64,
    ) -> Vec<(&'a Labels, Vec<&'a LogLine>)> {
        streams
            .0
            .iter()
            .filter(|(l, _)| self.selects(l))
            .map(|(l, lines)| {
                let kept = lines
                    .iter()
                    .filter(|(t, text)| *t >= start && *t <= end && self.keeps(text))
                    .collect();
                (l, kept)
            })
            .collect()
    }

    /// The metric's series at `at`: group labels → value.
    fn evaluate(&self, m: &Metric, streams: &Streams, at: i64) -> BTreeMap<Labels, f64> {
        let picked = self.select(streams, at - m.range_ns, at);
        Self::evaluate_picked(m, &picked, at)
    }

    /// The metric's series at `at` over lines already selected (each stream's in time
    /// order): a range covers `(at - range, at]`, as in Loki.
    fn evaluate_picked(
        m: &Metric,
        picked: &[(&Labels, Vec<&LogLine>)],
        at: i64,
    ) -> BTreeMap<Labels, f64> {
        let mut out = BTreeMap::new();
        for (labels, lines) in picked {
            let from = lines.partition_point(|(t, _)| *t <= at - m.range_ns);
            let to = lines.partition_point(|(t, _)| *t <= at);
            let lines = &lines[from..to.max(from)];
            if lines.is_empty() {
                continue;
            }
            let amount: f64 = if m.bytes {
                lines.iter().map(|(_, l)| l.len() as f64).sum()
            } else {
                lines.len() as f64
            };
            let value = if m.per_second {
                amount / (m.range_ns as f64 / 1e9)
            } else {
                amount
            };
            let key = match &m.by {
                None => (*labels).clone(),
                Some(by) => by
                    .iter()
                    .filter_map(|k| labels.get(k).map(|v| (k.clone(), v.clone())))
                    .collect(),
            };
            *out.entry(key).or_insert(0.0) += value;
        }
        out
    }
}

/// Loki's time parameters: unix nanoseconds, (fractional) seconds, or RFC 3339.
fn time_param(q: &HashMap<String, String>, key: &str) -> Result<Option<i64>, String> {
    let Some(v) = q.get(key) else { return Ok(None) };
    if let Ok(n) = v.parse::<i64>() {
        return Ok(Some(if n > 10_000_000_000 {
            n
        } else {
            n * 1_000_000_000
        }));
    }
    if let Ok(f) = v.parse::<f64>() {
        return Ok(Some((f * 1e9) as i64));
    }
    DateTime::parse_from_rfc3339(v)
        .map(|t| Some(t.timestamp_nanos_opt().unwrap_or_default()))
        .map_err(|_| format!("invalid {key} {v:?}"))
}

fn bad_request(reason: String) -> Response {
    (StatusCode::BAD_REQUEST, reason).into_response()
}

fn now_ns() -> i64 {
    Utc::now().timestamp_nanos_opt().unwrap_or_default()
}

fn success(data: Value) -> Response {
    axum::Json(json!({"status": "success", "data": data})).into_response()
}

fn number(v: f64) -> String {
    if v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        v.to_string()
    }
}

async fn query_range(
    State(streams): State<Arc<Streams>>,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let run = || -> Result<Value, String> {
        let query = parse(q.get("query").map_or("", String::as_str))?;
        let end = time_param(&q, "end")?.unwrap_or_else(now_ns);
        let start = time_param(&q, "start")?.unwrap_or(end - 3_600_000_000_000);
        let Some(m) = &query.metric else {
            let limit: usize = q.get("limit").and_then(|l| l.parse().ok()).unwrap_or(100);
            let forward = q.get("direction").is_some_and(|d| d == "forward");
            let mut picked: Vec<(&Labels, &LogLine)> = query
                .select(&streams, start, end)
                .into_iter()
                .flat_map(|(l, lines)| lines.into_iter().map(move |line| (l, line)))
                .collect();
            picked.sort_by_key(|(_, (t, _))| if forward { *t } else { -*t });
            picked.truncate(limit);
            let mut grouped: BTreeMap<&Labels, Vec<Value>> = BTreeMap::new();
            for (l, (t, text)) in picked {
                grouped
                    .entry(l)
                    .or_default()
                    .push(json!([t.to_string(), text]));
            }
            let result: Vec<Value> = grouped
                .into_iter()
                .map(|(l, values)| json!({"stream": l, "values": values}))
                .collect();
            return Ok(json!({"resultType": "streams", "result": result, "stats": {}}));
        };
        let step = q
            .get("step")
            .map(|s| {
                s.parse::<f64>()
                    .map(|f| (f * 1e9) as i64)
                    .or_else(|_| parse_duration_ns(s))
            })
            .transpose()?
            .unwrap_or(((end - start) / 100).max(1_000_000_000));
        let mut series: BTreeMap<Labels, Vec<Value>> = BTreeMap::new();
        // Lines are filtered once for the whole range, then counted per step.
        let picked = query.select(&streams, start - m.range_ns, end);
        let mut t = start;
        while t <= end {
            for (labels, v) in LogQuery::evaluate_picked(m, &picked, t) {
                series
                    .entry(labels)
                    .or_default()
                    .push(json!([t as f64 / 1e9, number(v)]));
            }
            t += step.max(1);
        }
        let result: Vec<Value> = series
            .into_iter()
            .map(|(l, values)| json!({"metric": l, "values": values}))
            .collect();
        Ok(json!({"resultType": "matrix", "result": result, "stats": {}}))
    };
    match run() {
        Ok(data) => success(data),
        Err(e) => bad_request(e),
    }
}

async fn query(
    State(streams): State<Arc<Streams>>,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let run = || -> Result<Value, String> {
        let query = parse(q.get("query").map_or("", String::as_str))?;
        let at = time_param(&q, "time")?.unwrap_or_else(now_ns);
        let Some(m) = &query.metric else {
            return Err("log queries are not supported by /query; use /query_range".into());
        };
        let result: Vec<Value> = query
            .evaluate(m, &streams, at)
            .into_iter()
            .map(|(l, v)| json!({"metric": l, "value": [at as f64 / 1e9, number(v)]}))
            .collect();
        Ok(json!({"resultType": "vector", "result": result, "stats": {}}))
    };
    match run() {
        Ok(data) => success(data),
        Err(e) => bad_request(e),
    }
}

async fn labels(State(streams): State<Arc<Streams>>) -> Response {
    let names: BTreeSet<&String> = streams.0.iter().flat_map(|(l, _)| l.keys()).collect();
    success(json!(names))
}

async fn label_values(State(streams): State<Arc<Streams>>, Path(name): Path<String>) -> Response {
    let values: BTreeSet<&String> = streams.0.iter().filter_map(|(l, _)| l.get(&name)).collect();
    success(json!(values))
}

async fn series(State(streams): State<Arc<Streams>>) -> Response {
    let all: Vec<&Labels> = streams.0.iter().map(|(l, _)| l).collect();
    success(json!(all))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn streams() -> Streams {
        let l = |job: &str| Labels::from([("job".to_string(), job.to_string())]);
        Streams(vec![
            (
                l("nginx"),
                vec![(10, "GET / 502 upstream".into()), (20, "GET / 200".into())],
            ),
            (l("dns"), vec![(15, "SERVFAIL example.org".into())]),
        ])
    }

    #[test]
    fn selectors_and_line_filters_pick_lines() {
        let s = streams();
        let q = parse(r#"{job=~"ngi.*"} |= "502" | json"#).unwrap();
        let picked = q.select(&s, 0, 100);
        assert_eq!(picked.len(), 1);
        assert_eq!(picked[0].1.len(), 1);
        let q = parse(r#"{job!="nginx"} !~ `(?i)ok`"#).unwrap();
        assert_eq!(q.select(&s, 0, 100)[0].1[0].1, "SERVFAIL example.org");
        assert!(parse("job=\"x\"").is_err());
    }

    #[test]
    fn metric_queries_count_per_group() {
        let s = streams();
        let q =
            parse(r#"sum by (job) (count_over_time({job=~".+"} |~ "502|SERVFAIL" [1m]))"#).unwrap();
        let m = q.metric.as_ref().unwrap();
        let v = q.evaluate(m, &s, 60_000_000_000);
        assert_eq!(v.len(), 2);
        assert!(v.values().all(|x| *x == 1.0));
        let q = parse(r#"sum(count_over_time({job=~".+"}[1m]))"#).unwrap();
        let v = q.evaluate(q.metric.as_ref().unwrap(), &s, 60_000_000_000);
        assert_eq!(v.get(&Labels::new()), Some(&3.0));
    }

    #[test]
    fn a_range_excludes_its_start_so_consecutive_steps_count_each_line_once() {
        let s = streams();
        let q = parse(r#"sum(count_over_time({job=~".+"} [10ns]))"#).unwrap();
        let m = q.metric.as_ref().unwrap();
        let at = |t| q.evaluate(m, &s, t).get(&Labels::new()).copied();
        // Lines at 10, 15 and 20 ns: (0, 10] has one, (10, 20] has two.
        assert_eq!(at(10), Some(1.0));
        assert_eq!(at(20), Some(2.0));
    }
}
