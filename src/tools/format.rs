//! Formatting shared by the tools: sizes, ages, percentages, alert ages and summaries,
//! written the way a person would write them, and query values in their [`Unit`].

use std::time::Duration;

use chrono::{DateTime, Utc};

use super::promql::{Class, classify};
use crate::integrations::prometheus::Labels;
use crate::text::truncate;

/// `1.5 GiB`-style sizes.
pub fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut v = n as f64;
    let mut i = 0;
    while v >= 1024.0 && i < UNITS.len() - 1 {
        v /= 1024.0;
        i += 1;
    }
    if i == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {}", UNITS[i])
    }
}

/// `3d4h`-style durations from seconds.
pub fn human_age(secs: i64) -> String {
    let s = secs.max(0);
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m", s / 60),
        3600..86400 => format!("{}h{}m", s / 3600, s % 3600 / 60),
        _ => format!("{}d{}h", s / 86400, s % 86400 / 3600),
    }
}

/// Percentage `part/whole`, or "?" when the whole is unknown.
pub fn percent(part: Option<u64>, whole: Option<u64>) -> String {
    match (part, whole) {
        (Some(p), Some(w)) if w > 0 => format!("{:.1}%", p as f64 * 100.0 / w as f64),
        _ => "?".into(),
    }
}

/// A duration without spaces: `1h30m`.
pub fn humanize(d: Duration) -> String {
    humantime::format_duration(d).to_string().replace(' ', "")
}

/// `5m` / `3h` since `t`.
pub fn age(t: Option<DateTime<Utc>>) -> String {
    t.map(|t| {
        let secs = (Utc::now() - t).num_seconds().max(0) as u64;
        let rounded = if secs >= 3600 { secs / 60 * 60 } else { secs };
        humanize(Duration::from_secs(rounded))
    })
    .unwrap_or_else(|| "?".into())
}

/// The annotation worth showing: summary, else description.
pub fn summary(annotations: &Labels) -> String {
    let text = annotations
        .get("summary")
        .or_else(|| annotations.get("description"))
        .map(String::as_str)
        .unwrap_or("");
    truncate(text, 160)
}

/// How values of a query are best shown (inferred by [`super::units::unit_of`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    Plain,
    Seconds,
    Bytes,
    /// Unix seconds (`probe_ssl_earliest_cert_expiry`, `node_boot_time_seconds`): the raw
    /// value, with its date and how far from the query time (see [`value_note`]).
    Timestamp,
    /// Seconds computed against `time()` (`x - time()`, `time() - x`): the raw value with
    /// the duration in words (see [`value_note`]).
    Duration,
    /// Percent (`100 * used / size`).
    Percent,
    Celsius,
    /// Seconds divided by 60, 3600 or 86400 (`x_seconds / 3600`).
    Minutes,
    Hours,
    Days,
    /// The rate of a byte counter.
    BytesPerSecond,
}

/// `query` with the contents of its string literals removed: a `/` in a mountpoint or a
/// URL in `instance="https://…"` is no division, nor a metric name.
pub fn without_strings(query: &str) -> String {
    classify(query)
        .filter(|(_, _, class)| *class != Class::Literal)
        .map(|(_, c, _)| c)
        .collect()
}

/// `v` with 3 significant digits, trailing zeros removed.
fn sig3(v: f64) -> String {
    if v == 0.0 {
        return "0".into();
    }
    let mag = v.abs().log10().floor() as i32;
    if !(-3..15).contains(&mag) {
        return format!("{v:.2e}");
    }
    let decimals = (2 - mag).max(0) as usize;
    let s = format!("{v:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// A compact number: 3 significant digits, SI or binary prefixes, `s`/`ms` for seconds.
pub fn format_number(v: f64, unit: Unit) -> String {
    if v.is_nan() {
        return "NaN".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "+Inf" } else { "-Inf" }.into();
    }
    let a = v.abs();
    match unit {
        Unit::Timestamp | Unit::Duration if a >= 1.0 => format!("{v:.0}"),
        Unit::Timestamp | Unit::Duration => sig3(v),
        Unit::Seconds if a != 0.0 && a < 1e-3 => format!("{}µs", sig3(v * 1e6)),
        Unit::Seconds if a != 0.0 && a < 1.0 => format!("{}ms", sig3(v * 1e3)),
        Unit::Seconds if a >= 86_400.0 => format!("{}d", sig3(v / 86_400.0)),
        Unit::Seconds if a >= 3_600.0 => format!("{}h", sig3(v / 3_600.0)),
        Unit::Seconds => format!("{}s", sig3(v)),
        // The number the query computed, so it reads as the query meant it.
        Unit::Minutes => format!("{}min", sig3(v)),
        Unit::Hours => format!("{}h", sig3(v)),
        Unit::Days => format!("{}d", sig3(v)),
        Unit::Percent => format!("{}%", sig3(v)),
        Unit::Celsius => format!("{}°C", sig3(v)),
        Unit::BytesPerSecond => format!("{}/s", format_number(v, Unit::Bytes)),
        Unit::Bytes => {
            let units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
            let mut x = v;
            let mut i = 0;
            while x.abs() >= 1024.0 && i < units.len() - 1 {
                x /= 1024.0;
                i += 1;
            }
            format!("{}{}", sig3(x), units[i])
        }
        Unit::Plain => {
            let prefixes = [(1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")];
            match prefixes.iter().find(|(p, _)| a >= *p) {
                Some((p, s)) if a < 1e15 => format!("{}{s}", sig3(v / p)),
                _ => sig3(v),
            }
        }
    }
}

/// `47 min`, `5.5 h`, `5.0 days` (`-` before a negative one).
pub fn human_span(secs: f64) -> String {
    let sign = if secs < 0.0 { "-" } else { "" };
    let a = secs.abs();
    if a < 90.0 {
        format!("{sign}{a:.0} s")
    } else if a < 5400.0 {
        format!("{sign}{:.0} min", a / 60.0)
    } else if a < 86_400.0 {
        format!("{sign}{:.1} h", a / 3600.0)
    } else {
        format!("{sign}{:.1} days", a / 86_400.0)
    }
}

/// `2026-11-29 10:13 UTC` for Unix seconds.
pub fn utc(secs: f64) -> String {
    DateTime::<Utc>::from_timestamp(secs as i64, 0).map_or_else(
        || "?".into(),
        |t| t.format("%Y-%m-%d %H:%M UTC").to_string(),
    )
}

/// What follows a value in its [`Unit`], computed so a model need not: for a timestamp
/// its date and distance from `at` (Unix seconds, the query time)
/// ` (2026-11-29 10:13 UTC, in 5.0 days)`, for a duration ` (5.0 days)`; else empty.
pub fn value_note(v: f64, unit: Unit, at: f64) -> String {
    match unit {
        Unit::Timestamp if (1e9..5e9).contains(&v) => {
            let d = v - at;
            let rel = if d >= 0.0 {
                format!("in {}", human_span(d))
            } else {
                format!("{} ago", human_span(-d))
            };
            format!(" ({}, {rel})", utc(v))
        }
        Unit::Duration if v.is_finite() => format!(" ({})", human_span(v)),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::units::unit_of;

    #[test]
    fn sizes_and_ages_read_like_a_human_wrote_them() {
        assert_eq!(human_bytes(512), "512 B");
        assert_eq!(human_bytes(3 * 1024 * 1024 * 1024), "3.0 GiB");
        assert_eq!(human_age(90), "1m");
        assert_eq!(human_age(2 * 86400 + 3 * 3600), "2d3h");
        assert_eq!(percent(Some(1), Some(4)), "25.0%");
        assert_eq!(percent(Some(1), None), "?");
    }

    #[test]
    fn timestamps_and_durations_against_time_say_when_and_how_long() {
        for q in [
            "probe_ssl_earliest_cert_expiry",
            "node_boot_time_seconds{instance=\"a\"}",
            "backup_last_success_timestamp_seconds",
            "timestamp(up)",
            // A URL in a label value is neither a division nor a metric name.
            "probe_ssl_earliest_cert_expiry{instance=\"https://nas.home.lan\",job=\"x_total\"}",
        ] {
            assert_eq!(unit_of(q), Unit::Timestamp, "{q}");
        }
        for q in [
            "probe_ssl_earliest_cert_expiry - time()",
            "time() - node_boot_time_seconds",
            "time() - x_last_success_timestamp_seconds",
            // An alert rule's expression: the values are its left side's.
            "probe_ssl_earliest_cert_expiry - time() < 14 * 86400",
        ] {
            assert_eq!(unit_of(q), Unit::Duration, "{q}");
        }
        assert_eq!(unit_of("(x_expiry - time()) / 86400"), Unit::Days);
        assert_eq!(unit_of("rate(node_cpu_seconds_total[5m])"), Unit::Plain);
        assert_eq!(unit_of("probe_duration_seconds"), Unit::Seconds);

        let at = 1_795_568_000.0; // 2026-11-25 00:53 UTC
        let v = at + 5.0 * 86_400.0;
        assert_eq!(
            format!(
                "{}{}",
                format_number(v, Unit::Timestamp),
                value_note(v, Unit::Timestamp, at)
            ),
            "1796000000 (2026-11-30 00:53 UTC, in 5.0 days)"
        );
        assert_eq!(
            value_note(at - 3.0 * 3600.0, Unit::Timestamp, at),
            " (2026-11-24 21:53 UTC, 3.0 h ago)"
        );
        assert_eq!(value_note(42.0, Unit::Timestamp, at), "");
        assert_eq!(
            format!(
                "{}{}",
                format_number(432_000.0, Unit::Duration),
                value_note(432_000.0, Unit::Duration, at)
            ),
            "432000 (5.0 days)"
        );
        assert_eq!(value_note(-2820.0, Unit::Duration, at), " (-47 min)");
    }
}
