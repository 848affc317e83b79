//! Whether a series read at the four times changed: a slope since the window's start that
//! the two before it do not foretell (a step, a counter that began or stopped counting),
//! or a level that moved in the span just before the window and held (the cause that
//! came before the alert: a client that took the connections half an hour before they
//! ran out). Counters and gauges are told apart by the type the scrape
//! declared, else by name and by how they moved.

use chrono::{DateTime, Utc};

use crate::analyze::prom::kinds::Kind;

/// How much larger the slope since must differ from the slopes before than they differ
/// from each other.
const SURPRISE: f64 = 8.0;
/// Least change of slope, as a share of the larger slope, that counts.
const MIN_SLOPE_CHANGE: f64 = 0.1;
/// Least move of a gauge, as a share of its level, that counts.
const MIN_LEVEL_CHANGE: f64 = 0.05;
/// Whether the series `p` is a counter: as its scrape declared it, else as
/// [`is_counter`] reads its name and values.
pub(super) fn counter(p: &super::Points) -> bool {
    match p.kind {
        Kind::Gauge => false,
        Kind::Counter => true,
        Kind::Unknown => is_counter(p.labels.get("__name__").map_or("", String::as_str), &p.v),
    }
}

/// Whether undeclared series `name` with values `v` is a counter: by its name's suffix, or one
/// without it (`node_vmstat_oom_kill`) that never went down and rose before; a gauge that
/// rose and fell is a gauge (its values say more than its slope). A suffixed series that
/// went down without falling to a restart's low is a gauge whose name happens to end so
/// (`pg_stat_activity_count`, a count of connections): a counter only drops when its
/// process restarts, to a small part of what it had.
pub(super) fn is_counter(name: &str, v: &[f64; 4]) -> bool {
    let dropped_but_not_reset = crate::analyze::prom::kinds::fell_without_reset(v);
    let suffix = ["_total", "_count", "_sum"]
        .iter()
        .any(|x| name.ends_with(x))
        && !dropped_but_not_reset;
    // A name with a unit (bytes, seconds, a share, volts, degrees…) is a gauge's: a
    // temperature that only rose is not counting.
    let unit = crate::analyze::Quantity::of_metric(name, 0.5).unit != crate::analyze::Unit::Plain;
    let never_down = v.windows(2).all(|w| w[1] >= w[0]) && v[1] > v[0];
    suffix || (never_down && !unit)
}

/// What a counter counted by each read, across restarts (as `increase()` reads it): after
/// a drop, its new value is what it counted since it restarted. A restart is not a change
/// of pace, and a counter's pace is never negative.
pub(super) fn counted(v: &[f64; 4]) -> [f64; 4] {
    let mut out = *v;
    for i in 1..4 {
        // Not read before (a series first seen later): counting starts here.
        if !(v[i - 1].is_finite() && out[i - 1].is_finite()) {
            continue;
        }
        let step = match v[i] < v[i - 1] {
            true => v[i],
            false => v[i] - v[i - 1],
        };
        out[i] = out[i - 1] + step;
    }
    out
}

/// Whether a gauge's last value differs from the one before by [`MIN_LEVEL_CHANGE`] of
/// the larger.
pub(super) fn moved(v: &[f64; 4]) -> bool {
    (v[3] - v[2]).abs() >= MIN_LEVEL_CHANGE * v[2].abs().max(v[3].abs())
}

/// How surprising the series' last slope is given the two before it (`None`: steady, or
/// too little data). Slopes per second, so unequal spans compare.
pub(super) fn surprise(v: &[f64; 4], t: &[DateTime<Utc>; 4]) -> Option<f64> {
    let mut v = *v;
    // A series first seen after the earliest time (a host added this morning, a short
    // retention) that stayed exactly level over the span before the window: that span is
    // its steady past (a bond's two slaves, a link up, a counter not counting).
    if v[0].is_nan() && v[1..].iter().all(|x| x.is_finite()) && v[1] == v[2] {
        v[0] = v[1];
    }
    if v.iter().any(|x| !x.is_finite()) {
        return None;
    }
    let secs = |a: usize, b: usize| (t[b] - t[a]).num_seconds().max(1) as f64;
    let s = [
        (v[1] - v[0]) / secs(0, 1),
        (v[2] - v[1]) / secs(1, 2),
        (v[3] - v[2]) / secs(2, 3),
    ];
    let before = (s[1] - s[0]).abs();
    let since = (s[2] - s[1]).abs();
    if since == 0.0 {
        return None;
    }
    // A change must also matter against the series' own size (a byte counter wobbling by
    // a few bytes a second is not a step).
    let scale = v.iter().map(|x| x.abs()).fold(0.0, f64::max);
    let change = (v[3] - v[2] - s[1] * secs(2, 3)).abs();
    if change < 1e-6 * scale.max(1.0) || since <= SURPRISE * before {
        return None;
    }
    // And against the slope: a counter counting as before, give or take a few percent,
    // did not change.
    if since < MIN_SLOPE_CHANGE * s[1].abs().max(s[2].abs()) {
        return None;
    }
    Some(match before {
        0.0 => 1e6 + change / scale.max(1e-9),
        b => since / b,
    })
}

/// How clearly a gauge (`counter` false) moved to a new level in the span just before the
/// window and held it since (`None`: it did not, or it is a counter). Such a change comes before the
/// trouble the window was drawn around (an alert fires when the damage shows, not when
/// the cause began). Scores stay below 1, under every change within the window.
pub(super) fn early(counter: bool, v: &[f64; 4]) -> Option<f64> {
    if counter || v.iter().any(|x| !x.is_finite()) {
        return None;
    }
    let step = (v[2] - v[1]).abs();
    let level = v.iter().map(|x| x.abs()).fold(0.0, f64::max);
    let (before, after) = ((v[1] - v[0]).abs(), (v[3] - v[2]).abs());
    if step < MIN_LEVEL_CHANGE * level || step <= SURPRISE * before || step <= SURPRISE * after {
        return None;
    }
    Some(step / level.max(f64::MIN_POSITIVE) * 0.99)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `early` of an undeclared series, its kind read from its name and values.
    fn early_of(name: &str, v: &[f64; 4]) -> Option<f64> {
        early(is_counter(name, v), v)
    }
    use chrono::TimeDelta;

    fn at(mins_ago: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_800_000_000, 0).unwrap() - TimeDelta::minutes(mins_ago)
    }

    #[test]
    fn a_step_a_new_count_and_a_stopped_process_are_surprises_and_steady_series_are_not() {
        let t = [at(210), at(150), at(90), at(0)];
        // Stepped: a fan at 2400 rpm stops.
        assert!(surprise(&[2400.0, 2400.0, 2400.0, 0.0], &t).is_some());
        // A counter that never counted begins (OOM kills).
        assert!(surprise(&[3.0, 3.0, 3.0, 4.0], &t).is_some());
        // A counter at a steady rate (bytes at 1 kB/s) is not.
        let steady = |m: i64| 1e9 + 1000.0 * 60.0 * (300 - m) as f64;
        assert!(surprise(&[steady(210), steady(150), steady(90), steady(0)], &t).is_none());
        // Nor one whose rate wobbles a few percent (a CPU-seconds counter of an idle
        // process), however steady it was before.
        let cpu = |m: i64, r: f64| 12.0 + r * 60.0 * (300 - m) as f64;
        let wobble = [
            cpu(210, 4e-5),
            cpu(150, 4e-5),
            cpu(90, 4e-5),
            cpu(90, 4e-5) + 4.1e-5 * 5400.0,
        ];
        assert!(surprise(&wobble, &t).is_none());
        // A noisy gauge that moved as much before is not.
        assert!(surprise(&[50.0, 58.0, 49.0, 57.0], &t).is_none());
        // A flat series is not; a missing point is not judged.
        assert!(surprise(&[1.0, 1.0, 1.0, 1.0], &t).is_none());
        assert!(surprise(&[1.0, f64::NAN, 1.0, 0.0], &t).is_none());
    }

    #[test]
    fn a_series_first_seen_after_the_earliest_read_that_held_level_before_the_window_is_judged() {
        let t = [at(600), at(300), at(90), at(0)];
        // A bond's active slaves, 2 → 1, in a Prometheus that holds four hours.
        assert!(surprise(&[f64::NAN, 2.0, 2.0, 1.0], &t).is_some());
        // A counter that began counting.
        assert!(surprise(&[f64::NAN, 3.0, 3.0, 9.0], &t).is_some());
        // One that moved before the window is no steady past: not judged.
        assert!(surprise(&[f64::NAN, 50.0, 58.0, 20.0], &t).is_none());
    }

    #[test]
    fn a_level_that_moved_just_before_the_window_and_held_is_an_early_change() {
        // Connections of one client: 4, 4, then 121 at the window's start, 121 now.
        let score = early_of(
            "mysql_info_schema_processes_by_user",
            &[4.0, 4.0, 121.0, 121.0],
        );
        assert!(score.is_some_and(|s| s > 0.9 && s < 1.0), "{score:?}");
        // A level that moved and moved back, or keeps moving, did not change early.
        assert!(early_of("db_connections", &[4.0, 4.0, 121.0, 5.0]).is_none());
        assert!(early_of("db_connections", &[4.0, 60.0, 121.0, 180.0]).is_none());
        // Jitter of a percent is no change; a counter's rise is its work.
        assert!(early_of("queue_depth", &[1000.0, 1001.0, 1010.0, 1010.0]).is_none());
        assert!(early_of("http_requests_total", &[4.0, 4.0, 121.0, 121.0]).is_none());
        // A missing read is not judged.
        assert!(early_of("db_connections", &[f64::NAN, 4.0, 121.0, 121.0]).is_none());
    }

    #[test]
    fn a_gauge_moves_by_a_share_of_its_level_and_a_counter_by_its_rate() {
        assert!(moved(&[2400.0, 2400.0, 2400.0, 0.0]));
        assert!(moved(&[0.0, 0.0, 0.0, 1.0]));
        // A limit wandering by 1 % is jitter.
        assert!(!moved(&[
            2_444_329.0,
            2_469_688.0,
            2_493_444.0,
            2_460_045.0
        ]));
        assert!(is_counter("node_vmstat_oom_kill", &[3.0, 4.0, 4.0, 5.0]));
        assert!(is_counter(
            "node_network_receive_errs_total",
            &[9.0, 9.0, 9.0, 9.0]
        ));
        assert!(!is_counter(
            "namedprocess_namegroup_memory_bytes",
            &[1.0, 2.0, 3.0, 4.0]
        ));
        assert!(!is_counter("node_load5", &[0.5, 0.6, 0.5, 36.0]));
        // A count of connections that fell from 21 to 14 is a gauge; a counter that
        // restarted falls to what it counted since its restart.
        assert!(!is_counter(
            "pg_stat_activity_count",
            &[21.0, 21.0, 21.0, 14.0]
        ));
        assert!(is_counter(
            "http_requests_total",
            &[9_000.0, 9_500.0, 10_000.0, 300.0]
        ));
    }

    #[test]
    fn a_counter_that_restarted_counts_on_from_what_it_had_and_a_flat_one_stays_flat() {
        assert_eq!(
            counted(&[9_000.0, 9_500.0, 10_000.0, 300.0]),
            [9_000.0, 9_500.0, 10_000.0, 10_300.0]
        );
        let flat = counted(&[20.0, 20.0, 20.0, 0.0]);
        assert_eq!(flat, [20.0, 20.0, 20.0, 20.0]);
        assert_eq!(surprise(&flat, &[at(240), at(180), at(60), at(0)]), None);
        let late = counted(&[f64::NAN, 5.0, 5.0, 9.0]);
        assert!(late[0].is_nan());
        assert_eq!(late[1..], [5.0, 5.0, 9.0]);
    }

    #[test]
    fn a_declared_type_decides_over_the_name_and_the_values() {
        let (_, mut p) = super::super::points(
            &[("__name__", "kea_dhcp4_addresses_assigned_total")],
            [10.0, 10.0, 10.0, 90.0],
        );
        assert!(counter(&p), "undeclared, a `_total` that only rose counts");
        p.kind = Kind::Gauge;
        assert!(!counter(&p));
        let (_, mut q) = super::super::points(&[("__name__", "jobs_done")], [5.0, 5.0, 5.0, 5.0]);
        assert!(!counter(&q));
        q.kind = Kind::Counter;
        assert!(counter(&q));
    }
}
