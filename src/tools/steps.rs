//! Series that move in steps rather than along a slope (`up`, a 0/1 probe, a status
//! code): the last change and how long the value has held ("1 → 0 at 00:25 UTC, down since
//! 00:25 UTC (48 min)"), and a series whose samples stop before the end of the range.

use super::format::{Unit, format_number, human_span, utc};
use super::trend::finite;

/// Changes in one range from which a step series is called flapping (up and down again and
/// again, not one outage and its recovery).
pub const FLAPPING_CHANGES: usize = 6;

/// Whether a series moves in steps rather than along a slope: at most 3 distinct values
/// (`up`, a 0/1 probe, a status code), or integers that change in at most a tenth of the
/// points. Such a series gets [`step_line`], not a rate.
pub fn is_steps(values: &[(f64, f64)]) -> bool {
    let vs: Vec<f64> = finite(values).iter().map(|p| p.1).collect();
    if vs.len() < 2 {
        return false;
    }
    let mut distinct = vs.clone();
    distinct.sort_by(f64::total_cmp);
    distinct.dedup();
    let changes = vs.windows(2).filter(|w| w[0] != w[1]).count();
    distinct.len() <= 3 || (vs.iter().all(|v| v.fract() == 0.0) && changes * 10 <= vs.len())
}

/// `HH:MM UTC` when `t` is on the same day as `reference`, else the full date.
fn clock(t: f64, reference: f64) -> String {
    let (a, b) = (utc(t), utc(reference));
    if a.get(..10) == b.get(..10) {
        a[11..].to_string()
    } else {
        a
    }
}

/// The computed line for a series moving in steps: its last change, and how long the value
/// has held since (to the last point): `  1 → 0 at 2026-11-24 01:16 UTC, 0 for the last
/// 47 min`; for `up` / `probe_success` (metric `name`) at 0 or 1 `down since 01:16 UTC
/// (47 min)`; `flapping: 40 changes in range, about one every 3 min` past
/// [`FLAPPING_CHANGES`]. `None` when the value never changes.
pub fn step_line(values: &[(f64, f64)], unit: Unit, name: Option<&str>) -> Option<String> {
    let pts = finite(values);
    let changes: Vec<usize> = (1..pts.len())
        .filter(|&i| pts[i].1 != pts[i - 1].1)
        .collect();
    let &i = changes.last()?;
    let (prev, (at, cur)) = (pts[i - 1].1, pts[i]);
    let end = pts.last().expect("a change has two points").0;
    let f = |v| format_number(v, unit);
    let held = human_span(end - at);
    let updown = matches!(name, Some("up" | "probe_success")) && (cur == 0.0 || cur == 1.0);
    let mut line = if updown {
        format!(
            "  {} → {} at {}, {} since {} ({held})",
            f(prev),
            f(cur),
            utc(at),
            if cur == 0.0 { "down" } else { "up" },
            clock(at, end)
        )
    } else {
        format!(
            "  {} → {} at {}, {} for the last {held}",
            f(prev),
            f(cur),
            utc(at),
            f(cur)
        )
    };
    match changes.len() {
        n if n >= FLAPPING_CHANGES => {
            let first = pts[changes[0]].0;
            let every = human_span((at - first) / (n - 1) as f64);
            line.push_str(&format!(
                "; flapping: {n} changes in range, about one every {every}"
            ));
        }
        n if n > 1 => line.push_str(&format!("; {n} changes in range")),
        _ => {}
    }
    Some(line)
}

/// `  no samples since 01:16 UTC (47 min)` when the series' points stop more than two
/// steps before `end` (Unix seconds): the target went down or the series went away. The
/// time is the last point; the last raw sample is up to the 5-minute lookback before it.
pub fn stopped(values: &[(f64, f64)], end: f64, step: f64) -> Option<String> {
    let last = values.iter().rev().find(|p| p.1.is_finite())?.0;
    (end - last > 2.0 * step.max(1.0)).then(|| {
        format!(
            "  no samples since {} ({} before the end of the range)",
            clock(last, end),
            human_span(end - last)
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const END: f64 = 1_795_410_000.0; // 2026-11-23 05:00 UTC

    #[test]
    fn values_moving_in_steps_say_the_last_change_and_how_long_it_held() {
        // up: 1 for 5 h, then 0 for the last 47 min (1-minute points).
        let up: Vec<(f64, f64)> = (0..=347)
            .map(|m| {
                (
                    END - (347 - m) as f64 * 60.0,
                    if m < 300 { 1.0 } else { 0.0 },
                )
            })
            .collect();
        assert!(is_steps(&up));
        assert_eq!(
            step_line(&up, Unit::Plain, Some("up")).unwrap(),
            "  1 → 0 at 2026-11-23 04:13 UTC, down since 04:13 UTC (47 min)"
        );
        let codes: Vec<(f64, f64)> = up
            .iter()
            .map(|(t, v)| (*t, if *v == 1.0 { 200.0 } else { 502.0 }))
            .collect();
        assert_eq!(
            step_line(&codes, Unit::Plain, Some("probe_http_status_code")).unwrap(),
            "  200 → 502 at 2026-11-23 04:13 UTC, 502 for the last 47 min"
        );
        let slope: Vec<(f64, f64)> = (0..=168)
            .map(|h| {
                (
                    END - (168 - h) as f64 * 3600.0,
                    400.0 - 2.0 * h as f64 + 0.37,
                )
            })
            .collect();
        assert!(!is_steps(&slope));
        assert_eq!(
            step_line(&[(0.0, 1.0), (60.0, 1.0)], Unit::Plain, None),
            None
        );
        assert_eq!(
            stopped(&up[..300], END, 60.0).unwrap(),
            "  no samples since 04:12 UTC (48 min before the end of the range)"
        );
        assert_eq!(stopped(&up, END, 60.0), None);
    }

    #[test]
    fn a_series_changing_again_and_again_is_called_flapping() {
        // up: 0 and 1 in turns every 3 minutes for 2 hours (30-second points).
        let up: Vec<(f64, f64)> = (0..=240)
            .map(|i| (END - (240 - i) as f64 * 30.0, ((i / 6) % 2) as f64))
            .collect();
        let line = step_line(&up, Unit::Plain, Some("up")).unwrap();
        assert!(
            line.ends_with("; flapping: 40 changes in range, about one every 3 min"),
            "{line}"
        );
        let twice: Vec<(f64, f64)> = up
            .iter()
            .enumerate()
            .map(|(i, (t, _))| (*t, if (100..120).contains(&i) { 0.0 } else { 1.0 }))
            .collect();
        let line = step_line(&twice, Unit::Plain, Some("up")).unwrap();
        assert!(line.ends_with("; 2 changes in range"), "{line}");
    }
}
