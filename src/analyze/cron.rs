//! The usual interval of a cron schedule (`0 3 * * *`, `*/15 * * * *`, `@daily`), the one
//! number the CronJob analyzers (API and kube-state-metrics) need: how long one run may
//! take before it holds up the next. Approximate by design: the gap a schedule mostly
//! leaves between runs, from its finest field that is not fixed; `None` when the
//! schedule is not read (a timezone prefix is dropped first). And what a run held past
//! the interval does to the next ones under the CronJob's `concurrencyPolicy`.

pub mod suspended;

use super::Severity;

/// Seconds of a minute, an hour, a day, a week, a month and a year.
const MINUTE: f64 = 60.0;
const HOUR: f64 = 3600.0;
const DAY: f64 = 86400.0;
const WEEK: f64 = 7.0 * DAY;
const MONTH: f64 = 30.0 * DAY;
const YEAR: f64 = 365.0 * DAY;

/// How one field of a schedule repeats.
enum Field {
    /// `*`: every unit.
    Every,
    /// `*/n`, `a-b/n`: every `n` units.
    Step(f64),
    /// A list or range of `n` values: `n` per cycle of the field above.
    Count(f64),
    /// One value.
    Fixed,
}

fn field(s: &str) -> Option<Field> {
    if s == "*" || s == "?" {
        return Some(Field::Every);
    }
    if let Some((_, step)) = s.split_once('/') {
        let n: f64 = step.parse::<u32>().ok().filter(|n| *n > 0)?.into();
        return Some(Field::Step(n));
    }
    let mut count = 0u32;
    for part in s.split(',') {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b) = (a.parse::<u32>().ok(), b.parse::<u32>().ok());
                count = count.saturating_add(match (a, b) {
                    (Some(a), Some(b)) if b >= a => b - a + 1,
                    // Names (MON-FRI) and wrapped ranges: count them as two.
                    _ => 2,
                });
            }
            None if part.is_empty() => return None,
            None => count = count.saturating_add(1),
        }
    }
    Some(if count <= 1 {
        Field::Fixed
    } else {
        Field::Count(f64::from(count))
    })
}

/// The usual seconds between runs of `schedule`.
pub fn interval(schedule: &str) -> Option<f64> {
    let s = schedule.trim();
    // `CRON_TZ=Europe/Berlin 0 3 * * *` (and `TZ=`): the zone does not change the gap.
    let s = match s.split_once(' ') {
        Some((head, rest)) if head.contains('=') => rest.trim(),
        _ => s,
    };
    match s {
        "@yearly" | "@annually" => return Some(YEAR),
        "@monthly" => return Some(MONTH),
        "@weekly" => return Some(WEEK),
        "@daily" | "@midnight" => return Some(DAY),
        "@hourly" => return Some(HOUR),
        _ => {}
    }
    let fields: Vec<&str> = s.split_whitespace().collect();
    let [minute, hour, dom, month, dow] = fields.as_slice() else {
        return None;
    };
    let (minute, hour, dom, month, dow) = (
        field(minute)?,
        field(hour)?,
        field(dom)?,
        field(month)?,
        field(dow)?,
    );
    // The finest field that repeats sets the gap; a fixed one hands over to the next.
    let level = |f: &Field, unit: f64, cycle: f64| match f {
        Field::Every => Some(unit),
        Field::Step(n) => Some(unit * n),
        Field::Count(n) => Some(cycle / n),
        Field::Fixed => None,
    };
    if let Some(i) = level(&minute, MINUTE, HOUR) {
        return Some(i);
    }
    if let Some(i) = level(&hour, HOUR, DAY) {
        return Some(i);
    }
    let days = match (&dom, &dow) {
        (Field::Every, Field::Every) => Some(DAY),
        (Field::Every, d) => level(d, DAY, WEEK).or(Some(WEEK)),
        (d, Field::Every) => level(d, DAY, MONTH).or(Some(MONTH)),
        // Both set: either matches (cron's rule), at least weekly.
        (_, d) => level(d, DAY, WEEK).or(Some(WEEK)),
    };
    match (&month, days) {
        (Field::Every, d) => d,
        (_, Some(d)) if d < MONTH => Some(d),
        (m, _) => level(m, MONTH, YEAR).or(Some(YEAR)),
    }
}

/// Slack beyond one interval before a run holds up the next (scrapes, a late start).
pub const SLACK: f64 = 900.0;
/// The interval assumed when the schedule is not read.
pub const DEFAULT_INTERVAL: f64 = DAY;

/// What a run held past its interval does to the runs after it, under `policy`.
pub fn consequence(policy: Option<&str>, due: u64) -> (String, Severity) {
    let (runs, were) = if due == 1 {
        ("run", "was")
    } else {
        ("runs", "were")
    };
    match policy {
        Some("Forbid") => (
            format!(
                "concurrencyPolicy Forbid: {due} {runs} due since {were} skipped and later ones will be until it ends"
            ),
            Severity::Critical,
        ),
        Some("Replace") => (
            "concurrencyPolicy Replace: the next run should have replaced it".into(),
            Severity::Warning,
        ),
        Some(p) => (
            format!("concurrencyPolicy {p}: {due} later {runs} started beside it"),
            Severity::Warning,
        ),
        None => (
            format!("{due} {runs} due since it started"),
            Severity::Warning,
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn common_schedules_give_their_usual_gap() {
        assert_eq!(interval("30 2 * * *"), Some(DAY));
        assert_eq!(interval("*/10 * * * *"), Some(600.0));
        assert_eq!(interval("5 * * * *"), Some(HOUR));
        assert_eq!(interval("0 */6 * * *"), Some(6.0 * HOUR));
        assert_eq!(interval("0 1,13 * * *"), Some(12.0 * HOUR));
        assert_eq!(interval("15 4 * * 0"), Some(WEEK));
        assert_eq!(interval("0 22 * * 1-5"), Some(WEEK / 5.0));
        assert_eq!(interval("0 0 1 * *"), Some(MONTH));
        assert_eq!(interval("0 0 1 1 *"), Some(YEAR));
        assert_eq!(interval("@hourly"), Some(HOUR));
        assert_eq!(interval("CRON_TZ=Europe/Paris 45 23 * * *"), Some(DAY));
        assert_eq!(interval("* * * * *"), Some(MINUTE));
    }

    #[test]
    fn what_is_not_a_schedule_has_no_interval() {
        assert_eq!(interval(""), None);
        assert_eq!(interval("every night"), None);
        assert_eq!(interval("0 3 * *"), None);
        assert_eq!(interval("*/0 * * * *"), None);
        assert_eq!(interval("0 3 ,, * *"), None);
    }
}
