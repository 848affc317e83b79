//! How a changed series is told: its name with its own labels, how it moves (a counter's
//! pace before and since, an age's beginning, a gauge's levels at the four times), the
//! query that reads it, and the fact of an instance's clearest step.

use chrono::{DateTime, TimeDelta, Utc};

use super::{AGE_TOLERANCE, Points, is_counter};
use crate::analyze::prom::{host, identity, labels_map, selector};
use crate::analyze::{Entity, Fact, FactClass, Quantity, Severity, Source};
use crate::integrations::prometheus::Labels;

/// The series' metric name and its own labels: `node_hwmon_fan_rpm{sensor=fan2}`.
pub(super) fn series_name(p: &Points) -> String {
    let name = p.labels.get("__name__").cloned().unwrap_or_default();
    let own: Vec<String> = identity(&p.labels)
        .iter()
        .filter(|(k, _)| !matches!(k.as_str(), "instance" | "job"))
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    match own.is_empty() {
        true => name,
        false => format!("{name}{{{}}}", own.join(",")),
    }
}

/// The series as a fact's entity: its metric name, on its host, with its labels.
pub(super) fn series_entity(p: &Points) -> Entity {
    let name = p.labels.get("__name__").cloned().unwrap_or_default();
    Entity::new("series", name)
        .on_host(host(&p.labels))
        .with_labels(labels_map(&p.labels))
}

/// The query that reads the one series.
pub(super) fn series_expr(labels: &Labels) -> String {
    let name = labels.get("__name__").map_or("", String::as_str);
    let selector = selector(
        identity(labels)
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str())),
    );
    format!("{name}{selector}")
}

/// How the series moves: a counter's pace per second before and since, an age's
/// (grows one a second) beginning, or a gauge's levels.
pub(super) enum Motion {
    Counter { before: f64, since: f64 },
    Age { began: DateTime<Utc> },
    Gauge,
}

pub(super) fn motion(p: &Points, t: &[DateTime<Utc>; 4]) -> Motion {
    let name = p.labels.get("__name__").map_or("", String::as_str);
    let per = |a: usize, b: usize| (p.v[b] - p.v[a]) / (t[b] - t[a]).num_seconds().max(1) as f64;
    let suffixed = ["_total", "_count", "_sum"]
        .iter()
        .any(|x| name.ends_with(x));
    if !suffixed && (per(2, 3) - 1.0).abs() <= AGE_TOLERANCE && p.v[3] >= 60.0 {
        let began = TimeDelta::try_milliseconds((p.v[3] * 1000.0) as i64)
            .and_then(|d| t[3].checked_sub_signed(d));
        if let Some(began) = began {
            return Motion::Age { began };
        }
    }
    match is_counter(name, &p.v) {
        true => Motion::Counter {
            before: per(1, 2),
            since: per(2, 3),
        },
        false => Motion::Gauge,
    }
}

/// A changed series in a few words, for the list of what changed with the clearest one:
/// `network_ups_tools_battery_charge 100 → 78`.
pub(super) fn brief(p: &Points, t: &[DateTime<Utc>; 4]) -> String {
    let name = p.labels.get("__name__").map_or("", String::as_str);
    let how = match motion(p, t) {
        Motion::Counter { before, since } => format!(
            "counting {} → {}",
            Quantity::rate_of_counter(name, before),
            Quantity::rate_of_counter(name, since)
        ),
        Motion::Age { began } => format!(
            "{} and growing (began {})",
            Quantity::seconds(p.v[3]),
            began.format("%H:%M UTC")
        ),
        Motion::Gauge if p.early => format!(
            "{} → {} before {}",
            Quantity::of_metric(name, p.v[1]),
            Quantity::of_metric(name, p.v[2]),
            t[2].format("%H:%M UTC")
        ),
        Motion::Gauge => format!(
            "{} → {}",
            Quantity::of_metric(name, p.v[2]),
            Quantity::of_metric(name, p.v[3])
        ),
    };
    format!("{} {how}", series_name(p))
}

/// "changed: node_hwmon_fan_rpm{sensor=fan2} 0: 2400 at 04:10, 2400 at 05:10, 2400 at
/// 06:10 UTC, 0 now", a counter's rate before and since, or an age's beginning; values in
/// the unit the metric's name states.
pub(super) fn fact(analyzer: &'static str, p: &Points, t: &[DateTime<Utc>; 4]) -> Fact {
    let name = p.labels.get("__name__").cloned().unwrap_or_default();
    let what = format!("changed: {}", series_name(p));
    let (value, detail, began) = match motion(p, t) {
        Motion::Counter { before, since } => (
            Quantity::rate_of_counter(&name, since),
            format!(
                "counting {} before, {} since {}",
                Quantity::rate_of_counter(&name, before),
                Quantity::rate_of_counter(&name, since),
                t[2].format("%H:%M UTC")
            ),
            None,
        ),
        Motion::Age { began } => (
            Quantity::seconds(p.v[3]),
            format!(
                "grows one second a second: an age or a duration, began {} ({} at {})",
                began.format("%H:%M UTC"),
                Quantity::seconds(p.v[2]),
                t[2].format("%H:%M UTC")
            ),
            Some(began),
        ),
        Motion::Gauge => {
            let at = |i: usize| Quantity::of_metric(&name, p.v[i]);
            // The levels read (a series first seen later has no earliest one).
            let mut levels: Vec<String> = (0..3)
                .filter(|i| p.v[*i].is_finite())
                .map(|i| format!("{} at {}", at(i), t[i].format("%H:%M")))
                .collect();
            if let Some(last) = levels.last_mut() {
                last.push_str(" UTC");
            }
            levels.push(format!("{} now", at(3)));
            (at(3), levels.join(", "), None)
        }
    };
    Fact::new(
        FactClass::Change,
        analyzer,
        series_entity(p),
        what,
        Severity::Warning,
        Source::promql(&series_expr(&p.labels)),
    )
    .value(value)
    .detail(detail)
    .since(began)
}
