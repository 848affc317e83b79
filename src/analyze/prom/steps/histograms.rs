//! A histogram read as what it measures. Its `_bucket` series are cumulative counts per
//! upper bound (`le`) and its `_sum` a running total: read as counters they tell "counting
//! faster" when a latency went from 4 ms to 1.2 s, and the model never sees the latency.
//! So a histogram family (declared `histogram`, or undeclared `…_bucket` series with an
//! `le` label) is read, at each of the step detector's times, as its 99th percentile over
//! the [`RATE_WINDOW`] before it — what
//! `histogram_quantile(0.99, sum by (le) (rate(<name>_bucket{…}[5m])))` answers for one
//! label set — and its mean from `_sum` and the observations counted: one gauge per label
//! set, named by the family (so `_seconds` reads in ms or s, `_bytes` in bytes). The
//! buckets and the sum are then left out; `_count` stays (how many were observed). The
//! quantile is computed from the bucket counts read at the time and [`RATE_WINDOW`] before
//! (a restart in between counts from zero), as Prometheus interpolates within a bucket.

use std::collections::{BTreeMap, HashMap, HashSet};

use chrono::TimeDelta;

use crate::integrations::prometheus::{Labels, Sample};

/// The quantile read.
pub(super) const QUANTILE: f64 = 0.99;
/// The span the quantile is read over at each time (as `rate(…[5m])`).
pub(super) const RATE_WINDOW: TimeDelta = TimeDelta::minutes(5);
/// The series read [`RATE_WINDOW`] before each time: a histogram's buckets and sums.
pub(super) const PARTS_SELECTOR: &str = r#"__name__=~".+_(bucket|sum)""#;

/// The histogram family a `_bucket` series belongs to: declared a histogram, or
/// undeclared (or `unknown`) with an `le` label. A gauge histogram's buckets are levels,
/// not counts, and are left as they are.
pub(super) fn family<'a>(labels: &'a Labels, types: &HashMap<String, String>) -> Option<&'a str> {
    let family = labels.get("__name__")?.strip_suffix("_bucket")?;
    if !labels.contains_key("le") {
        return None;
    }
    match types.get(family).map(String::as_str) {
        None | Some("histogram" | "unknown" | "untyped") => Some(family),
        Some(_) => None,
    }
}

/// Whether series `name` is a bucket or the sum of one of `families`: read through its
/// quantile and mean, not as a counter of its own.
pub(super) fn part(name: &str, families: &HashSet<String>) -> bool {
    ["_bucket", "_sum"]
        .iter()
        .filter_map(|x| name.strip_suffix(x))
        .any(|f| families.contains(f))
}

/// The key of one histogram: the family as `__name__`, its labels without `le`.
fn key(labels: &Labels, family: &str) -> Labels {
    let mut k = labels.clone();
    k.remove("le");
    k.insert("__name__".into(), family.to_string());
    k
}

/// One histogram at one read: counts by upper bound, and its sum.
#[derive(Clone, Debug, Default)]
struct Read {
    buckets: BTreeMap<Bound, f64>,
    sum: Option<f64>,
}

/// An upper bound, ordered (`+Inf` last).
#[derive(Clone, Copy, Debug, PartialEq)]
struct Bound(f64);

impl Eq for Bound {}
impl PartialOrd for Bound {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Bound {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&other.0)
    }
}

/// An `le` value: a number, or `+Inf`.
fn bound(le: &str) -> Option<f64> {
    match le.trim() {
        "+Inf" | "Inf" | "+inf" | "inf" => Some(f64::INFINITY),
        s => s.parse::<f64>().ok().filter(|v| !v.is_nan()),
    }
}

/// The histograms of `families` in one read, by key.
fn reads(samples: &[Sample], families: &HashSet<String>) -> HashMap<Labels, Read> {
    let mut out: HashMap<Labels, Read> = HashMap::new();
    for s in samples.iter().filter(|s| s.value.is_finite()) {
        let name = s.metric.get("__name__").map_or("", String::as_str);
        if let Some(f) = name
            .strip_suffix("_bucket")
            .filter(|f| families.contains(*f))
        {
            let Some(le) = s.metric.get("le").and_then(|l| bound(l)) else {
                continue;
            };
            let r = out.entry(key(&s.metric, f)).or_default();
            r.buckets.insert(Bound(le), s.value);
        } else if let Some(f) = name.strip_suffix("_sum").filter(|f| families.contains(*f)) {
            out.entry(key(&s.metric, f)).or_default().sum = Some(s.value);
        }
    }
    out
}

/// What was observed between two reads of one histogram: each count's increase (all of
/// the later counts when one went down: the process restarted and counts from zero).
fn observed(then: &Read, now: &Read) -> Read {
    let restarted = now
        .buckets
        .iter()
        .any(|(b, v)| then.buckets.get(b).is_some_and(|t| v < t))
        || matches!((then.sum, now.sum), (Some(t), Some(n)) if n < t);
    let buckets = now
        .buckets
        .iter()
        .filter_map(|(b, v)| match restarted {
            true => Some((*b, *v)),
            false => then.buckets.get(b).map(|t| (*b, v - t)),
        })
        .collect();
    let sum = match restarted {
        true => now.sum,
        false => now.sum.zip(then.sum).map(|(n, t)| n - t),
    };
    Read { buckets, sum }
}

/// The `q` quantile of cumulative `buckets` as Prometheus' `histogram_quantile` reads it:
/// linear within the bucket the rank falls in (from 0 in the first bucket), the highest
/// finite bound when it falls in `+Inf`; `NaN` without observations or without `+Inf`.
pub(super) fn quantile(q: f64, buckets: &[(f64, f64)]) -> f64 {
    let mut b: Vec<(f64, f64)> = buckets.to_vec();
    b.sort_by(|x, y| x.0.total_cmp(&y.0));
    let n = b.len();
    if n < 2 || b.last().is_none_or(|l| l.0 != f64::INFINITY) {
        return f64::NAN;
    }
    // Counts read at slightly different moments may not be monotonic.
    for i in 1..n {
        if b[i].1 < b[i - 1].1 {
            b[i].1 = b[i - 1].1;
        }
    }
    let total = b[n - 1].1;
    if total.is_nan() || total <= 0.0 {
        return f64::NAN;
    }
    let rank = q * total;
    let Some(i) = b.iter().position(|(_, c)| *c >= rank) else {
        return f64::NAN;
    };
    if i == n - 1 {
        return b[n - 2].0;
    }
    if i == 0 && b[0].0 <= 0.0 {
        return b[0].0;
    }
    let (start, below) = match i {
        0 => (0.0, 0.0),
        _ => b[i - 1],
    };
    let (end, upto) = b[i];
    let inside = upto - below;
    match inside > 0.0 {
        true => start + (end - start) * ((rank - below) / inside),
        false => end,
    }
}

/// One histogram read at the four times: its quantile and mean at each (`NaN` when not
/// read or nothing was observed).
pub(super) struct Read4 {
    pub labels: Labels,
    pub quantile: [f64; 4],
    pub mean: [f64; 4],
}

/// The histograms of `families` read at the four times (`at`) and [`RATE_WINDOW`] before
/// each (`before`), as quantiles and means.
pub(super) fn fold(
    at: &[Vec<Sample>; 4],
    before: &[Vec<Sample>; 4],
    families: &HashSet<String>,
) -> Vec<Read4> {
    let mut out: HashMap<Labels, Read4> = HashMap::new();
    for k in 0..4 {
        let then = reads(&before[k], families);
        for (key, now) in reads(&at[k], families) {
            let Some(then) = then.get(&key) else { continue };
            let seen = observed(then, &now);
            let buckets: Vec<(f64, f64)> = seen.buckets.iter().map(|(b, v)| (b.0, *v)).collect();
            let total = buckets.last().map_or(0.0, |(_, c)| *c);
            let r = out.entry(key.clone()).or_insert_with(|| Read4 {
                labels: key,
                quantile: [f64::NAN; 4],
                mean: [f64::NAN; 4],
            });
            r.quantile[k] = quantile(QUANTILE, &buckets);
            if let Some(sum) = seen.sum.filter(|_| total > 0.0) {
                r.mean[k] = sum / total;
            }
        }
    }
    out.into_values()
        .filter(|r| r.quantile.iter().any(|v| v.is_finite()))
        .collect()
}

/// The query that shows the quantile of the histogram `labels` (its family as
/// `__name__`, its other labels), as [`fold`] read it.
pub(super) fn expr(labels: &Labels) -> String {
    let family = labels.get("__name__").map_or("", String::as_str);
    let selector = crate::analyze::prom::selector(
        crate::analyze::prom::identity(labels)
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str())),
    );
    format!(
        "histogram_quantile({QUANTILE}, sum by (le) (rate({family}_bucket{selector}[{}m])))",
        RATE_WINDOW.num_minutes()
    )
}

#[cfg(test)]
mod tests;
