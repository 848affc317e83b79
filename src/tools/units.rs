//! The unit of a PromQL query's values, inferred from the expression's structure and the
//! Prometheus naming conventions of the metrics it reads: a name's suffix (`_bytes`,
//! `_seconds`, `_ratio`, `_percent`, `_celsius`, `_timestamp_seconds`, counters' `_total`,
//! histograms' `_bucket`/`_sum`/`_count`, recording rules' `level:metric:operations`), then
//! what functions, aggregations and operators make of it (`rate` of a byte counter is bytes
//! per second, bytes over bytes a ratio, a ratio times 100 a percentage, `time() - x` of a
//! timestamp a duration, seconds over 3600 hours). Whatever it cannot tell is
//! [`Unit::Plain`]: no unit is better than a wrong one, which a model would copy.

mod parse;
#[cfg(test)]
mod published;
#[cfg(test)]
mod tests;

use super::format::Unit;
use parse::{Expr, parse};

/// What one value is measured in.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Base {
    /// Events, series, states: a plain number.
    Count,
    Bytes,
    Seconds,
    /// A share out of 1.
    Ratio,
    Percent,
    Celsius,
    /// Unix seconds.
    Timestamp,
    /// Seconds between a timestamp and another (`time() - x`).
    Duration,
    Minutes,
    Hours,
    Days,
}

/// The inferred kind of an expression's values.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    Unknown,
    /// A literal number (kept to read `* 100`, `/ 3600`, `1 -`).
    Number(f64),
    /// An `_info` series: its value is 1, a join with it keeps the other side.
    Info,
    Value(Base),
    /// A cumulative counter of `Base`.
    Counter(Base),
    /// `Base` per second.
    Rate(Base),
    /// Histogram bucket counts of observations in `Base` (rates and sums of them too).
    Bucket(Base),
}

/// The unit of the values `query` returns; [`Unit::Plain`] when it cannot be told.
pub fn unit_of(query: &str) -> Unit {
    parse(query).map_or(Unit::Plain, |e| display(kind(&e)))
}

/// The scale of a share of a whole the query computes (1 for a ratio, 100 for a
/// percentage): used or free bytes over a size, a `_ratio` or `_percent` gauge. Per-second
/// shares (`rate` of CPU seconds) are none: they have no "full".
pub fn share_scale(query: &str) -> Option<f64> {
    let e = parse(query)?;
    if per_second(&e) {
        return None;
    }
    match kind(&e) {
        Kind::Value(Base::Ratio) => Some(1.0),
        Kind::Value(Base::Percent) => Some(100.0),
        _ => None,
    }
}

fn per_second(e: &Expr) -> bool {
    match e {
        Expr::Call(f, args) => {
            matches!(f.as_str(), "rate" | "irate" | "deriv") || args.iter().any(per_second)
        }
        Expr::Neg(e) => per_second(e),
        Expr::Binary { lhs, rhs, .. } => per_second(lhs) || per_second(rhs),
        Expr::Number(_) | Expr::Str | Expr::Selector(_) => false,
    }
}

fn display(k: Kind) -> Unit {
    match k {
        Kind::Value(b) | Kind::Counter(b) => match b {
            Base::Bytes => Unit::Bytes,
            Base::Seconds => Unit::Seconds,
            Base::Percent => Unit::Percent,
            Base::Celsius => Unit::Celsius,
            Base::Timestamp => Unit::Timestamp,
            Base::Duration => Unit::Duration,
            Base::Minutes => Unit::Minutes,
            Base::Hours => Unit::Hours,
            Base::Days => Unit::Days,
            Base::Count | Base::Ratio => Unit::Plain,
        },
        Kind::Rate(Base::Bytes) => Unit::BytesPerSecond,
        _ => Unit::Plain,
    }
}

/// The base unit a metric name's suffix states (`counter`: `_total`/`_sum` was stripped,
/// so `_time_seconds` is time spent, not a point in time).
fn base_of_suffix(name: &str, counter: bool) -> Option<Base> {
    const TIMESTAMPS: [&str; 7] = [
        "_timestamp_seconds",
        "_time_seconds",
        "_timestamp",
        "_expiry",
        "_not_after",
        "_not_before",
        "_created",
    ];
    if !counter && TIMESTAMPS.iter().any(|s| name.ends_with(s)) {
        return Some(Base::Timestamp);
    }
    let units = [
        ("_bytes", Base::Bytes),
        ("_seconds", Base::Seconds),
        ("_ratio", Base::Ratio),
        ("_percent", Base::Percent),
        ("_percentage", Base::Percent),
        ("_pct", Base::Percent),
        ("_celsius", Base::Celsius),
    ];
    units
        .into_iter()
        .find(|(s, _)| name.ends_with(s))
        .map(|(_, b)| b)
}

/// The kind of a metric's values from its name.
fn of_name(name: &str) -> Kind {
    let n = name.to_ascii_lowercase();
    let parts: Vec<&str> = n.split(':').filter(|p| !p.is_empty()).collect();
    match parts.as_slice() {
        [] => Kind::Unknown,
        [metric] => of_plain_name(metric),
        // `level:metric` and `level:metric:operations` recording rules.
        [.., metric, ops] if parts.len() >= 3 => {
            if ops.contains("ratio") {
                Kind::Value(Base::Ratio)
            } else if ops.contains("rate") {
                rate(of_plain_name(metric))
            } else if ops.contains("quantile")
                || ["sum", "avg", "max", "min", "relabel"]
                    .iter()
                    .any(|o| ops == o)
            {
                of_plain_name(metric)
            } else {
                Kind::Unknown
            }
        }
        [.., metric] => of_plain_name(metric),
    }
}

fn of_plain_name(n: &str) -> Kind {
    if n == "up" {
        return Kind::Value(Base::Count);
    }
    if n.ends_with("_info") {
        return Kind::Info;
    }
    if let Some(stem) = n.strip_suffix("_bucket") {
        return Kind::Bucket(base_of_suffix(stem, true).unwrap_or(Base::Count));
    }
    if n.ends_with("_count") {
        return Kind::Counter(Base::Count);
    }
    if let Some(stem) = n.strip_suffix("_total").or_else(|| n.strip_suffix("_sum")) {
        return Kind::Counter(base_of_suffix(stem, true).unwrap_or(Base::Count));
    }
    base_of_suffix(n, false).map_or(Kind::Unknown, Kind::Value)
}

/// `rate`/`irate`/`deriv`: per second of a counter or gauge; bucket rates stay buckets.
fn rate(k: Kind) -> Kind {
    match k {
        Kind::Counter(b) | Kind::Value(b) if !matches!(b, Base::Timestamp) => Kind::Rate(b),
        Kind::Bucket(b) => Kind::Bucket(b),
        _ => Kind::Unknown,
    }
}

/// A share of one: a ratio, or seconds spent per second (CPU, disk busy time).
fn is_ratio(k: Kind) -> bool {
    matches!(k, Kind::Value(Base::Ratio) | Kind::Rate(Base::Seconds))
}

fn kind(e: &Expr) -> Kind {
    match e {
        Expr::Number(v) => Kind::Number(*v),
        Expr::Str => Kind::Unknown,
        Expr::Selector(name) => of_name(name),
        Expr::Neg(e) => match kind(e) {
            Kind::Number(v) => Kind::Number(-v),
            k => k,
        },
        Expr::Call(f, args) => call(f, args),
        Expr::Binary {
            op,
            bool_result,
            join,
            lhs,
            rhs,
        } => {
            let (l, r) = (kind(lhs), kind(rhs));
            // `x * on(…) group_left(node) kubelet_node_name`: a join copying labels from a
            // series whose value is no measure keeps the measured side.
            match (op.as_str(), join) {
                ("*", Some(true)) if matches!(r, Kind::Unknown | Kind::Info) => l,
                ("*", Some(false)) if matches!(l, Kind::Unknown | Kind::Info) => r,
                ("/", _) => {
                    scaled_ratio(lhs, rhs).unwrap_or_else(|| binary(op, *bool_result, l, r))
                }
                _ => binary(op, *bool_result, l, r),
            }
        }
    }
}

/// `a * 100 / b` (and `100 * a / b`) as `(a / b) * 100`: how percentages are often written.
fn scaled_ratio(lhs: &Expr, rhs: &Expr) -> Option<Kind> {
    let Expr::Binary {
        op, lhs: a, rhs: n, ..
    } = lhs
    else {
        return None;
    };
    let (a, n) = match (a.as_ref(), n.as_ref()) {
        (a, Expr::Number(n)) | (Expr::Number(n), a) if op == "*" => (a, *n),
        _ => return None,
    };
    let ratio = divide(kind(a), kind(rhs));
    (ratio != Kind::Unknown).then(|| multiply(Kind::Number(n), ratio).unwrap_or(Kind::Unknown))
}

fn call(f: &str, args: &[Expr]) -> Kind {
    let first = || args.first().map_or(Kind::Unknown, kind);
    let last = || args.last().map_or(Kind::Unknown, kind);
    let count = Kind::Value(Base::Count);
    match f {
        "rate" | "irate" | "deriv" => rate(first()),
        "increase" | "delta" | "idelta" => match first() {
            Kind::Counter(b) => Kind::Value(b),
            k @ (Kind::Value(_) | Kind::Bucket(_)) => k,
            _ => Kind::Unknown,
        },
        "histogram_quantile" => match last() {
            Kind::Bucket(b) | Kind::Rate(b) | Kind::Value(b) if b != Base::Count => Kind::Value(b),
            _ => Kind::Unknown,
        },
        "histogram_avg" | "histogram_sum" => match first() {
            Kind::Rate(b) | Kind::Value(b) => Kind::Value(b),
            _ => Kind::Unknown,
        },
        "histogram_fraction" => Kind::Value(Base::Ratio),
        "time" | "timestamp" => Kind::Value(Base::Timestamp),
        "count" | "count_values" | "group" | "count_over_time" | "changes" | "resets"
        | "absent" | "absent_over_time" | "present_over_time" | "histogram_count" => count,
        "sum" => match first() {
            Kind::Info => count,
            k => k,
        },
        "abs"
        | "ceil"
        | "floor"
        | "round"
        | "clamp"
        | "clamp_max"
        | "clamp_min"
        | "sort"
        | "sort_desc"
        | "sort_by_label"
        | "sort_by_label_desc"
        | "label_replace"
        | "label_join"
        | "last_over_time"
        | "avg_over_time"
        | "min_over_time"
        | "max_over_time"
        | "sum_over_time"
        | "stddev_over_time"
        | "mad_over_time"
        | "predict_linear"
        | "holt_winters"
        | "double_exponential_smoothing"
        | "scalar"
        | "vector"
        | "avg"
        | "min"
        | "max"
        | "stddev" => first(),
        "quantile_over_time" | "quantile" | "topk" | "bottomk" | "limitk" | "limit_ratio" => last(),
        _ => Kind::Unknown,
    }
}

/// The plain base of a vector's kind, with whether it is per second.
fn base(k: Kind) -> Option<(Base, bool)> {
    match k {
        Kind::Value(b) | Kind::Counter(b) => Some((b, false)),
        Kind::Rate(b) => Some((b, true)),
        _ => None,
    }
}

fn binary(op: &str, bool_result: bool, l: Kind, r: Kind) -> Kind {
    if let (Kind::Number(a), Kind::Number(b)) = (l, r) {
        return match op {
            "+" => Kind::Number(a + b),
            "-" => Kind::Number(a - b),
            "*" => Kind::Number(a * b),
            "/" => Kind::Number(a / b),
            _ => Kind::Unknown,
        };
    }
    match op {
        "==" | "!=" | "<" | ">" | "<=" | ">=" if bool_result => Kind::Value(Base::Count),
        // A filter keeps the values of its vector side.
        "==" | "!=" | "<" | ">" | "<=" | ">=" => match l {
            Kind::Number(_) => r,
            _ => l,
        },
        "and" | "unless" => l,
        "or" if r == l || matches!(r, Kind::Number(_)) => l,
        "+" | "-" => add(op == "-", l, r),
        "*" => multiply(l, r)
            .or_else(|| multiply(r, l))
            .unwrap_or(Kind::Unknown),
        "/" => divide(l, r),
        _ => Kind::Unknown,
    }
}

fn add(minus: bool, l: Kind, r: Kind) -> Kind {
    use Base::{Duration, Seconds, Timestamp};
    match (l, r) {
        (Kind::Number(_), k) | (k, Kind::Number(_)) => k,
        (Kind::Value(Timestamp), Kind::Value(Timestamp)) if minus => Kind::Value(Duration),
        (Kind::Value(Timestamp), Kind::Value(Seconds | Duration)) => Kind::Value(Timestamp),
        (Kind::Value(Seconds | Duration), Kind::Value(Timestamp)) if !minus => {
            Kind::Value(Timestamp)
        }
        (a, b) if a == b && !matches!(a, Kind::Info) => a,
        (Kind::Value(a) | Kind::Counter(a), Kind::Value(b) | Kind::Counter(b)) if a == b => {
            Kind::Value(a)
        }
        _ => Kind::Unknown,
    }
}

/// `l * r` when `l` is the side that decides (tried both ways round).
fn multiply(l: Kind, r: Kind) -> Option<Kind> {
    match (l, r) {
        (Kind::Number(1.0), k) => Some(k),
        (Kind::Number(n), k) if n == 100.0 && is_ratio(k) => Some(Kind::Value(Base::Percent)),
        (Kind::Info, k) => Some(k),
        (Kind::Value(Base::Ratio), k @ (Kind::Value(_) | Kind::Rate(_))) => Some(k),
        _ => None,
    }
}

fn divide(l: Kind, r: Kind) -> Kind {
    if let Kind::Number(n) = r {
        return match (l, n) {
            (k, 1.0) => k,
            (Kind::Value(Base::Seconds | Base::Duration), 60.0) => Kind::Value(Base::Minutes),
            (Kind::Value(Base::Seconds | Base::Duration), 3600.0) => Kind::Value(Base::Hours),
            (Kind::Value(Base::Seconds | Base::Duration), 86_400.0) => Kind::Value(Base::Days),
            (Kind::Value(Base::Percent), 100.0) => Kind::Value(Base::Ratio),
            _ => Kind::Unknown,
        };
    }
    let counts =
        |k: Kind| matches!(k, Kind::Bucket(_)) || base(k).is_some_and(|b| b.0 == Base::Count);
    match (l, r) {
        (Kind::Bucket(_), r) if counts(r) => Kind::Value(Base::Ratio),
        (l, Kind::Bucket(_)) if counts(l) => Kind::Value(Base::Ratio),
        (l, r) => match (base(l), base(r)) {
            (Some(a), Some(b)) if a == b => Kind::Value(Base::Ratio),
            // Per item: bytes over a count of series, seconds per request.
            (Some((a, per_l)), Some((Base::Count, per_r))) if per_l == per_r || !per_r => {
                if per_l && !per_r { l } else { Kind::Value(a) }
            }
            _ => Kind::Unknown,
        },
    }
}
