//! Numbers a small model should not compute, computed: per series of a range query the
//! first and last value, the change, the rate per hour and per day (least-squares slope),
//! and for a gauge moving toward a limit (free bytes falling to 0, a used share rising to
//! 100 %) the time until it gets there. [`Measure`] recognises such gauges from the query:
//! `*_avail_bytes` / `*_free_bytes` alone, or divided by `*_size_bytes` (free share), or
//! `1 - avail/size` (used share), in fractions or percent; or a usage the query's units
//! make a share ([`share_scale`]: `100 * x_used_bytes / x_capacity_bytes`, `x_usage_ratio`).

use std::collections::HashMap;

use chrono::{DateTime, Utc};

use super::format::{Unit, format_number, humanize, without_strings};
use super::units::share_scale;
use crate::analyze::{
    Entity, Fact, FactClass, Quantity, Rate, Severity, Source, Unit as AUnit, host_of,
};
use crate::integrations::prometheus::Labels;

/// What a query's values measure, when they approach a limit.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Measure {
    /// Free bytes (`node_filesystem_avail_bytes`): full at 0.
    FreeBytes,
    /// A used share, full at `full` (1 or 100).
    Used { full: f64 },
    /// A free share out of `scale` (1 or 100), full at 0.
    Free { scale: f64 },
    /// Anything else: only change and rate.
    Other,
}

fn free_bytes_name(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    n.ends_with("_avail_bytes")
        || n.ends_with("_free_bytes")
        || n.ends_with("memavailable_bytes")
        || n.ends_with("memfree_bytes")
}

/// The size metric that goes with a free-bytes metric.
pub fn size_metric(free: &str) -> Option<String> {
    for (suffix, size) in [
        ("_avail_bytes", "_size_bytes"),
        ("_free_bytes", "_size_bytes"),
        ("_MemAvailable_bytes", "_MemTotal_bytes"),
        ("_MemFree_bytes", "_MemTotal_bytes"),
    ] {
        if let Some(stem) = free.strip_suffix(suffix) {
            return Some(format!("{stem}{size}"));
        }
    }
    None
}

impl Measure {
    /// The unit its values are in, when the measure decides it (a share of bytes has none).
    pub fn unit(self) -> Option<Unit> {
        match self {
            Self::FreeBytes => Some(Unit::Bytes),
            // A share is shown in the unit the query states (a fraction or `%`).
            Self::Used { .. } | Self::Free { .. } | Self::Other => None,
        }
    }

    /// Recognises the gauge from the query text and the values it returned.
    pub fn of(query: &str, values: impl IntoIterator<Item = f64>) -> Self {
        let q: String = without_strings(query)
            .chars()
            .filter(|c| !c.is_whitespace())
            .collect::<String>()
            .to_ascii_lowercase();
        let words: Vec<&str> = q
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
            .collect();
        let has_free = words.iter().any(|w| free_bytes_name(w));
        let has_size = words
            .iter()
            .any(|w| w.ends_with("_size_bytes") || w.ends_with("memtotal_bytes"));
        let biggest = values
            .into_iter()
            .filter(|v| v.is_finite())
            .fold(0.0_f64, |a, v| a.max(v.abs()));
        let share = share_scale(query);
        let percent_text = share.is_none() && (q.contains("*100") || q.contains("100*"));
        let scale = if share == Some(100.0) || percent_text || biggest > 1.5 {
            100.0
        } else {
            1.0
        };
        if has_free && has_size && q.contains('/') {
            let used = regex_lite::Regex::new(
                r"(^|[^0-9.e])(1|100)-|(_size_bytes|memtotal_bytes)(\{[^}]*\})?-",
            )
            .expect("valid regex");
            return if used.is_match(&q) {
                Self::Used { full: scale }
            } else {
                Self::Free { scale }
            };
        }
        let computed = q.contains('/') || q.contains('*') || q.contains("rate(");
        if has_free && !computed {
            return Self::FreeBytes;
        }
        let usage = ["used", "usage", "utilization", "utilisation"]
            .iter()
            .any(|w| q.contains(w));
        if usage && share.is_some() {
            return Self::Used { full: scale };
        }
        Self::Other
    }
}

/// A least-squares line through the finite points, with first, last and span.
struct Fit {
    first: (f64, f64),
    last: (f64, f64),
    /// Change per second.
    slope: f64,
    r2: f64,
}

fn fit(values: &[(f64, f64)]) -> Option<Fit> {
    let pts: Vec<(f64, f64)> = values.iter().copied().filter(|p| p.1.is_finite()).collect();
    if pts.len() < 2 {
        return None;
    }
    let n = pts.len() as f64;
    // Centred on the first point: Unix seconds squared lose precision.
    let t0 = pts[0].0;
    let mt = pts.iter().map(|p| p.0 - t0).sum::<f64>() / n;
    let mv = pts.iter().map(|p| p.1).sum::<f64>() / n;
    let (mut stt, mut stv, mut svv) = (0.0, 0.0, 0.0);
    for (t, v) in &pts {
        let (dt, dv) = (t - t0 - mt, v - mv);
        stt += dt * dt;
        stv += dt * dv;
        svv += dv * dv;
    }
    if stt == 0.0 {
        return None;
    }
    let slope = stv / stt;
    let r2 = if svv == 0.0 {
        0.0
    } else {
        (stv * stv) / (stt * svv)
    };
    Some(Fit {
        first: pts[0],
        last: *pts.last().expect("two points"),
        slope,
        r2,
    })
}

/// A value with a space before its unit: `60 GiB`, `94.1 %`.
fn human(v: f64, unit: Unit) -> String {
    let s = format_number(v, unit);
    match unit {
        Unit::Bytes | Unit::BytesPerSecond => match s.find(|c: char| c.is_ascii_alphabetic()) {
            Some(i) => format!("{} {}", &s[..i], &s[i..]),
            None => s,
        },
        _ => s,
    }
}

fn signed(v: f64, unit: Unit) -> String {
    let s = human(v, unit);
    if v > 0.0 { format!("+{s}") } else { s }
}

/// `~40 min`, `~5.5 h`, `~1.2 days`.
fn eta(secs: f64) -> String {
    if secs < 3600.0 {
        format!("~{} min", (secs / 60.0).round().max(1.0))
    } else if secs < 86_400.0 {
        format!("~{:.1} h", secs / 3600.0)
    } else {
        format!("~{:.1} days", secs / 86_400.0)
    }
}

/// How long until `value`, moving at `slope` per second, reaches `limit`; the text says
/// when, or `None` when it is not moving toward it (or not within a year).
fn until(fit: &Fit, limit: f64) -> Option<String> {
    let (ts, value) = fit.last;
    let gap = limit - value;
    if gap == 0.0 || (gap > 0.0) != (fit.slope > 0.0) {
        return None;
    }
    // A line that explains little of the movement is noise, not a trend.
    if fit.r2 < 0.5 {
        return None;
    }
    let secs = gap / fit.slope;
    if secs > 365.0 * 86_400.0 {
        return Some("not full within a year at this rate".into());
    }
    let at = DateTime::<Utc>::from_timestamp((ts + secs) as i64, 0)?;
    Some(format!(
        "full in {} ({}, from the last point)",
        eta(secs),
        at.format("%Y-%m-%d %H:%M UTC")
    ))
}

/// The computed line for one series: `None` for a constant series (nothing to add).
/// `size` is the matching size in bytes, for free bytes.
pub fn describe(
    values: &[(f64, f64)],
    unit: Unit,
    measure: Measure,
    size: Option<f64>,
) -> Option<String> {
    let f = fit(values)?;
    let (first, last) = (f.first.1, f.last.1);
    let span = humanize(std::time::Duration::from_secs(
        (f.last.0 - f.first.0).max(0.0) as u64,
    ));
    let constant = values.iter().all(|p| p.1 == first || !p.1.is_finite());
    let mut parts = Vec::new();
    let (show_unit, k, suffix) = match measure {
        Measure::Used { full } | Measure::Free { scale: full } => (Unit::Plain, 100.0 / full, " %"),
        _ => (unit, 1.0, ""),
    };
    let show = |v: f64| format!("{}{suffix}", human(v * k, show_unit));
    let rate = |v: f64| format!("{}{suffix}", human(v.abs() * k, show_unit));
    match (measure, size) {
        (Measure::FreeBytes, Some(size)) if size > 0.0 => parts.push(format!(
            "used {:.1} % ({} free of {}; {last:.0} bytes free)",
            100.0 * (1.0 - last / size),
            human(last, Unit::Bytes),
            human(size, Unit::Bytes)
        )),
        (Measure::Used { full }, _) => parts.push(format!("used {:.1} %", last * 100.0 / full)),
        (Measure::Free { scale }, _) => {
            parts.push(format!("used {:.1} %", 100.0 - last * 100.0 / scale))
        }
        _ => {}
    }
    if constant {
        return (!parts.is_empty()).then(|| format!("  {}", parts.join("; ")));
    }
    parts.push(format!(
        "first {} → last {} over {span} ({})",
        show(first),
        show(last),
        if suffix.is_empty() {
            signed(last - first, unit)
        } else {
            format!("{:+.1} points", (last - first) * k)
        }
    ));
    let direction = if f.slope > 0.0 { "rising" } else { "falling" };
    parts.push(format!(
        "{direction} {}/day ({}/h, linear fit)",
        rate(f.slope * 86_400.0),
        rate(f.slope * 3_600.0)
    ));
    let limit = match measure {
        Measure::FreeBytes | Measure::Free { .. } => Some(0.0),
        Measure::Used { full } => Some(full),
        Measure::Other => None,
    };
    if let Some(text) = limit.and_then(|l| until(&f, l)) {
        parts.push(text);
    }
    Some(format!("  {}", parts.join("; ")))
}

/// The finite points of a series.
pub(super) fn finite(values: &[(f64, f64)]) -> Vec<(f64, f64)> {
    values.iter().copied().filter(|p| p.1.is_finite()).collect()
}

/// ` (used 94.1 % of 1 TiB)` after an instant value that is free bytes with a known size
/// or a share; empty otherwise.
pub fn used_note(value: f64, measure: Measure, size: Option<f64>) -> String {
    match (measure, size) {
        (Measure::FreeBytes, Some(size)) if size > 0.0 => format!(
            " (used {:.1} % of {}; {} free)",
            100.0 * (1.0 - value / size),
            human(size, Unit::Bytes),
            human(value, Unit::Bytes)
        ),
        // A percentage used is already printed as one.
        (Measure::Used { full }, _) if full != 100.0 => {
            format!(" (used {:.1} %)", value * 100.0 / full)
        }
        (Measure::Free { scale }, _) => format!(" (used {:.1} %)", 100.0 - value * 100.0 / scale),
        _ => String::new(),
    }
}

/// The typed fact of a series moving toward its limit (free bytes to 0, a used share to
/// full): its used share (or free bytes), rate and time to full, citable by the call that
/// computed it (`source`). `None` for a series not moving toward a limit, or whose line
/// explains little of its movement.
pub fn fact(
    labels: &Labels,
    values: &[(f64, f64)],
    measure: Measure,
    size: Option<f64>,
    source: Source,
) -> Option<Fact> {
    let f = fit(values)?;
    let last = f.last.1;
    let (limit, value, rate) = match (measure, size) {
        (Measure::FreeBytes, Some(size)) if size > 0.0 => (
            0.0,
            Quantity::percent(100.0 * (1.0 - last / size)),
            Rate::from_per_second(f.slope, AUnit::Bytes),
        ),
        (Measure::FreeBytes, _) => (
            0.0,
            Quantity::bytes(last),
            Rate::from_per_second(f.slope, AUnit::Bytes),
        ),
        (Measure::Used { full }, _) => (
            full,
            Quantity::percent(last * 100.0 / full),
            Rate::from_per_second(f.slope * 100.0 / full, AUnit::Percent),
        ),
        (Measure::Free { scale }, _) => (
            0.0,
            Quantity::percent(100.0 - last * 100.0 / scale),
            Rate::from_per_second(-f.slope * 100.0 / scale, AUnit::Percent),
        ),
        (Measure::Other, _) => return None,
    };
    let gap = limit - last;
    if f.r2 < 0.5 || gap == 0.0 || (gap > 0.0) != (f.slope > 0.0) {
        return None;
    }
    let secs = gap / f.slope;
    let severity = match secs {
        s if s < 86_400.0 => Severity::Critical,
        s if s < 7.0 * 86_400.0 => Severity::Warning,
        _ => Severity::Info,
    };
    let name = ["mountpoint", "device", "instance", "__name__"]
        .iter()
        .find_map(|k| labels.get(*k))
        .cloned()
        .unwrap_or_else(|| "series".into());
    let host = labels.get("instance").map(|i| host_of(i));
    let what = match value.unit {
        AUnit::Percent => "used",
        _ => "free",
    };
    let mut fact = Fact::new(
        FactClass::Exhaustion,
        "prometheus_query_range",
        Entity::new("series", name)
            .on_host(host)
            .with_labels(join_key(labels).into_iter().collect()),
        what,
        severity,
        source,
    )
    .value(value)
    .rate(rate)
    .eta(secs, "full");
    if let Some(size) = size.filter(|_| measure == Measure::FreeBytes) {
        fact = fact.limit(Quantity::bytes(size));
    }
    Some(fact)
}

/// Labels without `__name__`: how a free-bytes series finds its size series.
pub fn join_key(labels: &Labels) -> Labels {
    let mut k = labels.clone();
    k.remove("__name__");
    k
}

/// Sizes by [`join_key`], from the answer of a size query.
pub type Sizes = HashMap<Labels, f64>;

#[cfg(test)]
mod tests;
