//! Turns the compact series of a scenario into OpenMetrics text for `promtool tsdb
//! create-blocks-from openmetrics`. Samples run from `now - duration` to `now +
//! AHEAD` (the shape held after now), so an instant query stays current however long a
//! slow model takes; a series with `absent_for` has no samples in its last stretch. The
//! background (captured exporter series) is written in the same families.

use std::collections::{BTreeMap, HashSet};
use std::fmt::Write;
use std::time::Duration;

use super::background::{BackgroundSeries, Motion};
use super::scenario::{SeriesSpec, Shape};
use crate::analyze::prom::escape;

/// How long present series continue after now.
pub const AHEAD: Duration = Duration::from_secs(3600);

/// The value of `shape` at `t` seconds after the window start of length `len` seconds.
fn value_at(shape: &Shape, t: f64, len: f64) -> f64 {
    match *shape {
        Shape::Constant { value } => value,
        Shape::Linear { from, to } => from + (to - from) * (t / len.max(1.0)),
        Shape::Step { before, after, ago } => {
            if t < len - ago.as_secs_f64() {
                before
            } else {
                after
            }
        }
        Shape::Flapping { low, high, period } => {
            let n = (t / period.as_secs_f64().max(1.0)).floor() as i64;
            if n % 2 == 0 { high } else { low }
        }
    }
}

/// `(unix seconds, value)` samples of one series ending at `now` (plus [`AHEAD`]).
pub fn samples(spec: &SeriesSpec, now: i64, window: Duration, step: Duration) -> Vec<(i64, f64)> {
    let len = spec.duration.unwrap_or(window).as_secs() as i64;
    let step = step.as_secs().max(1) as i64;
    let start = now - len;
    let last = match spec.absent_for {
        Some(gap) => now - gap.as_secs() as i64,
        None => now + AHEAD.as_secs() as i64,
    };
    let mut out = Vec::new();
    let mut total = 0.0;
    let mut t = start;
    while t <= last {
        // After now the shape holds its value at now (a linear fill keeps its slope).
        let v = value_at(&spec.shape, (t - start) as f64, len as f64);
        if spec.counter {
            out.push((t, total));
            total += v * step as f64;
        } else {
            out.push((t, v));
        }
        t += step;
    }
    out
}

/// How long before now background series have the world's step; before that they are
/// coarser, which keeps a large background quick to backfill.
const BACKGROUND_FINE: i64 = 3600;
/// About this many background samples cover the window before the fine stretch.
const BACKGROUND_COARSE_SAMPLES: i64 = 100;

/// Sample times of background series: coarse from `start` to an hour before now, the
/// world's step for the last hour, and every two minutes (at least the step) for
/// [`AHEAD`] after now (enough for `rate(…[5m])` and the 5-minute lookback).
fn background_times(start: i64, now: i64, step: i64) -> Vec<i64> {
    let fine_from = (now - BACKGROUND_FINE).max(start);
    let coarse = ((fine_from - start) / BACKGROUND_COARSE_SAMPLES).max(step);
    let coarse = (coarse + step - 1) / step * step;
    let ahead = step.max(120);
    let mut times = Vec::new();
    let mut t = start;
    while t < fine_from {
        times.push(t);
        t += coarse;
    }
    let mut t = fine_from;
    while t <= now {
        times.push(t);
        t += step;
    }
    let mut t = now + ahead;
    while t <= now + AHEAD.as_secs() as i64 {
        times.push(t);
        t += ahead;
    }
    times
}

/// One member of a metric family: a scenario's series or a background one.
enum Member<'a> {
    Spec(&'a SeriesSpec),
    Background(&'a BackgroundSeries),
}

fn render_labels(labels: &BTreeMap<String, String>) -> String {
    if labels.is_empty() {
        return String::new();
    }
    let parts: Vec<String> = labels
        .iter()
        .map(|(k, v)| format!("{k}=\"{}\"", escape(v)))
        .collect();
    format!("{{{}}}", parts.join(","))
}

/// The OpenMetrics exposition of every series and of the background, grouped by metric
/// family. A background series with the same name and labels as a scenario's series is
/// left out: the scenario's wins.
pub fn openmetrics(
    series: &[SeriesSpec],
    background: &[BackgroundSeries],
    now: i64,
    window: Duration,
    step: Duration,
) -> String {
    let mut families: BTreeMap<&str, Vec<Member>> = BTreeMap::new();
    let mut explicit: HashSet<(&str, &BTreeMap<String, String>)> = HashSet::new();
    for s in series {
        explicit.insert((s.name.as_str(), &s.labels));
        families
            .entry(s.name.as_str())
            .or_default()
            .push(Member::Spec(s));
    }
    let mut seen: HashSet<(&str, &BTreeMap<String, String>)> = HashSet::new();
    for b in background {
        let key = (b.name.as_str(), &b.labels);
        if !explicit.contains(&key) && seen.insert(key) {
            families
                .entry(b.name.as_str())
                .or_default()
                .push(Member::Background(b));
        }
    }
    let len = window.as_secs() as i64;
    let step_secs = step.as_secs().max(1) as i64;
    let times = background_times(now - len, now, step_secs);
    let mut out = String::with_capacity(background.len() * times.len() * 96);
    for (name, members) in families {
        // OpenMetrics counters are named without `_total` in TYPE and with it on samples;
        // anything else is declared `unknown`, which PromQL treats the same.
        let gauge = members.iter().all(|m| match m {
            Member::Spec(s) => !s.counter,
            Member::Background(b) => !matches!(b.motion, Motion::Counter { .. }),
        }) && !name.ends_with("_total")
            && !name.ends_with("_bucket")
            && !name.ends_with("_count")
            && !name.ends_with("_sum")
            && !name.ends_with("_created")
            && !name.ends_with("_info");
        let _ = writeln!(
            out,
            "# TYPE {name} {}",
            if gauge { "gauge" } else { "unknown" }
        );
        for m in members {
            match m {
                Member::Spec(s) => {
                    let labels = render_labels(&s.labels);
                    for (t, v) in samples(s, now, window, step) {
                        let _ = writeln!(out, "{name}{labels} {v} {t}");
                    }
                }
                Member::Background(b) => {
                    let labels = render_labels(&b.labels);
                    let start = now - len;
                    for &t in &times {
                        let _ = writeln!(out, "{name}{labels} {} {t}", b.value_at(t, start, now));
                    }
                }
            }
        }
    }
    out.push_str("# EOF\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn background_times_are_coarse_then_at_the_step_for_the_last_hour_then_ahead() {
        let now = 100_000;
        let times = background_times(now - 6 * 3600, now, 60);
        assert!(times.windows(2).all(|w| w[0] < w[1]));
        assert!(times.len() < 220, "{}", times.len());
        assert!(times.contains(&now) && times.contains(&(now - 60)));
        assert_eq!(*times.last().unwrap(), now + 3600);
        // A 5-minute rate finds two samples at every point of the last hour and after now.
        let recent: Vec<i64> = times.iter().copied().filter(|t| *t >= now - 3600).collect();
        assert!(recent.windows(2).all(|w| w[1] - w[0] <= 120));
    }

    fn spec(toml_text: &str) -> SeriesSpec {
        toml::from_str(toml_text).unwrap()
    }

    #[test]
    fn a_linear_series_reaches_its_end_value_at_now_and_keeps_going() {
        let s = spec("name = \"x\"\nshape = \"linear\"\nfrom = 0\nto = 60");
        let v = samples(&s, 3600, Duration::from_secs(3600), Duration::from_secs(60));
        assert_eq!(v[0], (0, 0.0));
        assert!(v.contains(&(3600, 60.0)));
        assert_eq!(v.last().unwrap().0, 3600 + AHEAD.as_secs() as i64);
    }

    #[test]
    fn an_absent_series_stops_before_now_and_a_step_changes_at_its_offset() {
        let s = spec(
            "name = \"up\"\nshape = \"step\"\nbefore = 1\nafter = 0\nago = \"10m\"\nabsent_for = \"5m\"",
        );
        let v = samples(&s, 3600, Duration::from_secs(3600), Duration::from_secs(60));
        assert_eq!(v.last().unwrap(), &(3300, 0.0));
        assert!(v.contains(&(2940, 1.0)) && v.contains(&(3000, 0.0)));
    }

    #[test]
    fn a_counter_integrates_its_rate_and_openmetrics_groups_families() {
        let s = spec(
            "name = \"c_total\"\nlabels = { a = \"q\\\"\" }\nshape = \"constant\"\nvalue = 2\ncounter = true",
        );
        let v = samples(&s, 120, Duration::from_secs(120), Duration::from_secs(60));
        assert_eq!(&v[..3], &[(0, 0.0), (60, 120.0), (120, 240.0)]);
        let text = openmetrics(
            &[s],
            &[],
            120,
            Duration::from_secs(120),
            Duration::from_secs(60),
        );
        assert!(text.starts_with("# TYPE c_total unknown\nc_total{a=\"q\\\"\"} 0 0\n"));
        assert!(text.ends_with("# EOF\n"));
    }
}
