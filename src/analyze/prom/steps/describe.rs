//! How a changed series is told: its name with its own labels and what happened to it (a
//! gauge that fell or rose from one level to another, a counter's pace before and now, an
//! age's beginning), values in the unit its name states (`_volts` V, `_celsius` °C,
//! `_bytes`, `_seconds`, a `_ratio` as percent…), the query that reads it, and the fact of
//! an instance's clearest step.

use chrono::{DateTime, TimeDelta, Utc};

use super::{AGE_TOLERANCE, Points, counter};
use crate::analyze::prom::ages::age_name;
use crate::analyze::prom::{host, identity, labels_map, selector};
use crate::analyze::{Entity, Fact, FactClass, Quantity, Severity, Source, is_alarm, is_identity};
use crate::integrations::prometheus::Labels;

/// The series' metric name and its own labels: `node_hwmon_fan_rpm{sensor=fan2}`.
pub(super) fn series_name(p: &Points) -> String {
    let name = p.labels.get("__name__").cloned().unwrap_or_default();
    let own: Vec<String> = identity(&p.labels)
        .iter()
        .filter(|(k, _)| !matches!(k.as_str(), "instance" | "job"))
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    let name = match own.is_empty() {
        true => name,
        false => format!("{name}{{{}}}", own.join(",")),
    };
    match p.quantile {
        true => format!("p{} of {name}", super::histograms::QUANTILE * 100.0),
        false => name,
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

/// The query that reads series `p`: its selector, or a histogram's quantile.
pub(super) fn points_expr(p: &Points) -> String {
    match p.quantile {
        true => super::histograms::expr(&p.labels),
        false => series_expr(&p.labels),
    }
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
    // An age only when the name says it is a span of time: a counter of one request a
    // second without its `_total` suffix grows by one a second too.
    if age_name(name) && !p.quantile && (per(2, 3) - 1.0).abs() <= AGE_TOLERANCE && p.v[3] >= 60.0 {
        let began = TimeDelta::try_milliseconds((p.v[3] * 1000.0) as i64)
            .and_then(|d| t[3].checked_sub_signed(d));
        if let Some(began) = began {
            return Motion::Age { began };
        }
    }
    match counter(p) {
        true => Motion::Counter {
            before: per(1, 2),
            since: per(2, 3),
        },
        false => Motion::Gauge,
    }
}

/// How a gauge moved from `from` to `to`: "fell from 232 V to", "rose from 2 to", "appeared
/// at", "gone after" (the value it moved to follows).
fn moved(name: &str, from: f64, to: f64) -> (String, f64) {
    let q = |v: f64| Quantity::of_metric(name, v);
    match (from.is_finite(), to.is_finite()) {
        (false, _) => ("appeared at".to_string(), to),
        (true, false) => ("gone after".to_string(), from),
        // A hash or checksum names a thing (the address a probe resolved, a config).
        (true, true) if is_identity(name) => {
            (format!("changed (another value) from {} to", q(from)), to)
        }
        (true, true) if is_alarm(name) && from == 0.0 && to > 0.0 => {
            ("alarm raised: from 0 to".to_string(), to)
        }
        (true, true) if is_alarm(name) && to == 0.0 => {
            (format!("alarm cleared: from {} to", q(from)), to)
        }
        (true, true) if to < from => (format!("fell from {} to", q(from)), to),
        (true, true) => (format!("rose from {} to", q(from)), to),
    }
}

/// The two values a gauge's change is told between: the level before and after an early
/// change (before the window), else the window's start and now.
fn ends(p: &Points) -> (f64, f64) {
    match p.early {
        true => (p.v[1], p.v[2]),
        false => (p.v[2], p.v[3]),
    }
}

/// A changed series in a few words, for the list of what changed with the clearest one:
/// `ipmi_voltage_volts{name=Voltage 2} fell from 232 V to 0 V`.
pub(super) fn brief(p: &Points, t: &[DateTime<Utc>; 4]) -> String {
    let name = p.labels.get("__name__").map_or("", String::as_str);
    let how = match motion(p, t) {
        Motion::Counter { before, since } => format!(
            "counting {} before, {} since",
            Quantity::rate_of_counter(name, before),
            Quantity::rate_of_counter(name, since)
        ),
        Motion::Age { began } => format!(
            "{} and growing (began {})",
            Quantity::seconds(p.v[3]),
            began.format("%H:%M UTC")
        ),
        Motion::Gauge => {
            let (from, to) = ends(p);
            let (verb, value) = moved(name, from, to);
            let mut s = format!("{verb} {}", Quantity::of_metric(name, value));
            if p.early {
                s.push_str(&format!(" before {}", t[2].format("%H:%M UTC")));
            }
            s
        }
    };
    format!("{} {how}", series_name(p))
}

/// "ipmi_voltage_volts{id=111,name=Voltage 2} fell from 232 V to 0 V: 232 V at 04:10, 05:10
/// and 06:10 UTC", a counter's pace before and since, or an age's beginning; values in the
/// unit the metric's name states.
pub(super) fn fact(analyzer: &'static str, p: &Points, t: &[DateTime<Utc>; 4]) -> Fact {
    let name = p.labels.get("__name__").cloned().unwrap_or_default();
    let series = series_name(p);
    let (what, value, detail, began) = match motion(p, t) {
        Motion::Counter { before, since } => (
            format!(
                "{series} counting {} before, now",
                Quantity::rate_of_counter(&name, before)
            ),
            Quantity::rate_of_counter(&name, since),
            format!("its pace changed after {}", t[2].format("%H:%M UTC")),
            None,
        ),
        Motion::Age { began } => (
            format!("{series} grows one second a second, now"),
            Quantity::seconds(p.v[3]),
            format!(
                "an age or a duration, began {} ({} at {})",
                began.format("%H:%M UTC"),
                Quantity::seconds(p.v[2]),
                t[2].format("%H:%M UTC")
            ),
            Some(began),
        ),
        Motion::Gauge => {
            let (from, to) = ends(p);
            let (verb, value) = moved(&name, from, to);
            let mut detail = match p.early {
                true => format!("before {}, and held since", t[2].format("%H:%M UTC")),
                false => levels(&name, p, t),
            };
            if let Some(mean) = mean(&name, p) {
                detail = format!("{detail}; {mean}");
            }
            (
                format!("{series} {verb}"),
                Quantity::of_metric(&name, value),
                detail,
                None,
            )
        }
    };
    Fact::new(
        FactClass::Change,
        analyzer,
        series_entity(p),
        what,
        Severity::Warning,
        Source::promql(&points_expr(p)),
    )
    .value(value)
    .detail(detail)
    .since(began)
}

/// A histogram's mean at the two times its quantile's change is told between: "mean 3 ms
/// → 610 ms" (`None`: not a histogram, or a mean not read).
fn mean(name: &str, p: &Points) -> Option<String> {
    let (a, b) = match p.early {
        true => (p.mean[1], p.mean[2]),
        false => (p.mean[2], p.mean[3]),
    };
    let q = |v: f64| Quantity::of_metric(name, v);
    (p.quantile && a.is_finite() && b.is_finite()).then(|| format!("mean {} → {}", q(a), q(b)))
}

/// The levels read before the window, equal ones told once: "232 V at 04:10, 05:10 and
/// 06:10 UTC" (a series first seen later has no earliest one).
fn levels(name: &str, p: &Points, t: &[DateTime<Utc>; 4]) -> String {
    let mut runs: Vec<(f64, Vec<String>)> = Vec::new();
    for i in (0..3).filter(|i| p.v[*i].is_finite()) {
        let at = t[i].format("%H:%M").to_string();
        match runs.last_mut() {
            Some((v, times)) if *v == p.v[i] => times.push(at),
            _ => runs.push((p.v[i], vec![at])),
        }
    }
    let told: Vec<String> = runs
        .iter()
        .map(|(v, times)| {
            let when = match times.split_last() {
                Some((last, rest)) if !rest.is_empty() => {
                    format!("{} and {last}", rest.join(", "))
                }
                _ => times.join(""),
            };
            format!("{} at {when}", Quantity::of_metric(name, *v))
        })
        .collect();
    match told.is_empty() {
        true => String::new(),
        false => format!("{} UTC", told.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::super::points;
    use super::*;

    fn times() -> [DateTime<Utc>; 4] {
        let now = DateTime::from_timestamp(1_800_000_000, 0).unwrap();
        let h = TimeDelta::hours(1);
        [now - h * 3, now - h * 2, now - h, now]
    }

    #[test]
    fn an_identity_changes_and_an_alarm_is_raised_whatever_their_units() {
        let (verb, to) = moved("probe_ip_addr_hash", 1.4e9, 3.3e9);
        assert_eq!(verb, "changed (another value) from 1400000000 to");
        assert_eq!(to, 3.3e9);
        assert!(
            moved("probe_ip_addr_hash", 3.3e9, 1.4e9)
                .0
                .starts_with("changed")
        );
        assert_eq!(
            moved("node_hwmon_in_lcrit_alarm_volts", 0.0, 1.0).0,
            "alarm raised: from 0 to"
        );
        assert_eq!(
            moved("node_hwmon_temp_crit_alarm_celsius", 1.0, 0.0).0,
            "alarm cleared: from 1 to"
        );
        assert_eq!(
            moved("ipmi_voltage_volts", 232.0, 0.0).0,
            "fell from 232 V to"
        );
    }

    #[test]
    fn a_gauge_that_fell_is_told_as_a_fall_in_its_unit_with_its_earlier_levels() {
        let t = times();
        let (_, p) = points(
            &[
                ("__name__", "ipmi_voltage_volts"),
                ("instance", "bmc-4:9290"),
                ("name", "Voltage 2"),
            ],
            [232.0, 232.0, 231.0, 0.0],
        );
        let f = fact("steps", &p, &t);
        assert_eq!(
            f.what,
            "ipmi_voltage_volts{name=Voltage 2} fell from 231 V to"
        );
        assert_eq!(f.value.unwrap().to_string(), "0 V");
        assert_eq!(
            f.detail.as_deref(),
            Some("232 V at 05:00 and 06:00, 231 V at 07:00 UTC")
        );
        assert_eq!(
            brief(&p, &t),
            "ipmi_voltage_volts{name=Voltage 2} fell from 231 V to 0 V"
        );
    }

    #[test]
    fn only_a_series_named_as_a_span_of_time_that_grows_a_second_a_second_is_an_age() {
        let t = times();
        let climb = [100.0, 3700.0, 7300.0, 10900.0];
        let (_, lag) = points(&[("__name__", "mysql_slave_lag_seconds")], climb);
        assert!(matches!(motion(&lag, &t), Motion::Age { .. }));
        // A counter of one request a second without its `_total` suffix.
        let (_, requests) = points(
            &[
                ("__name__", "nginx_ingress_controller_requests"),
                ("status", "503"),
            ],
            climb,
        );
        assert!(!matches!(motion(&requests, &t), Motion::Age { .. }));
        let f = fact("steps", &requests, &t);
        assert!(!f.what.contains("second a second"), "{}", f.what);
    }

    #[test]
    fn a_rise_a_counters_pace_a_new_series_and_an_early_change_are_told_as_they_happened() {
        let t = times();
        // Only rising, but a temperature: a gauge, not a count.
        let (_, temp) = points(
            &[("__name__", "node_hwmon_temp_celsius"), ("sensor", "temp1")],
            [40.0, 41.0, 41.0, 88.5],
        );
        assert_eq!(
            brief(&temp, &t),
            "node_hwmon_temp_celsius{sensor=temp1} rose from 41 °C to 88.5 °C"
        );
        let (_, kills) = points(
            &[("__name__", "jobs_failed_total")],
            [5.0, 5.0, 5.0, 5.0 + 0.29 * 3600.0],
        );
        let f = fact("steps", &kills, &t);
        assert_eq!(f.what, "jobs_failed_total counting 0/s before, now");
        assert_eq!(f.value.unwrap().to_string(), "0.29/s");
        let (_, new) = points(
            &[("__name__", "cache_hit_ratio")],
            [f64::NAN, f64::NAN, f64::NAN, 0.5],
        );
        assert_eq!(brief(&new, &t), "cache_hit_ratio appeared at 50 %");
        let (_, mut early) = points(&[("__name__", "db_sessions")], [29.0, 29.0, 146.0, 146.0]);
        early.early = true;
        assert_eq!(
            brief(&early, &t),
            "db_sessions rose from 29 to 146 before 07:00 UTC"
        );
        let f = fact("steps", &early, &t);
        assert_eq!(f.what, "db_sessions rose from 29 to");
        assert_eq!(
            f.detail.as_deref(),
            Some("before 07:00 UTC, and held since")
        );
    }
}
