//! Turns the compact series of a scenario into OpenMetrics text for `promtool tsdb
//! create-blocks-from openmetrics`. Samples run from `now - duration` to `now +
//! AHEAD` (the shape held after now), so an instant query stays current however long a
//! slow model takes; a series with `absent_for` has no samples in its last stretch.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::time::Duration;

use super::scenario::{SeriesSpec, Shape};

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

fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// The OpenMetrics exposition of every series, grouped by metric family.
pub fn openmetrics(series: &[SeriesSpec], now: i64, window: Duration, step: Duration) -> String {
    let mut families: BTreeMap<&str, Vec<&SeriesSpec>> = BTreeMap::new();
    for s in series {
        families.entry(s.name.as_str()).or_default().push(s);
    }
    let mut out = String::new();
    for (name, members) in families {
        // OpenMetrics counters are named without `_total` in TYPE and with it on samples;
        // anything else is declared `unknown`, which PromQL treats the same.
        let kind = if members.iter().all(|s| !s.counter) {
            "gauge"
        } else {
            "unknown"
        };
        let _ = writeln!(out, "# TYPE {name} {kind}");
        for s in members {
            let labels: Vec<String> = s
                .labels
                .iter()
                .map(|(k, v)| format!("{k}=\"{}\"", escape(v)))
                .collect();
            let labels = if labels.is_empty() {
                String::new()
            } else {
                format!("{{{}}}", labels.join(","))
            };
            for (t, v) in samples(s, now, window, step) {
                let _ = writeln!(out, "{name}{labels} {v} {t}");
            }
        }
    }
    out.push_str("# EOF\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let text = openmetrics(&[s], 120, Duration::from_secs(120), Duration::from_secs(60));
        assert!(text.starts_with("# TYPE c_total unknown\nc_total{a=\"q\\\"\"} 0 0\n"));
        assert!(text.ends_with("# EOF\n"));
    }
}
