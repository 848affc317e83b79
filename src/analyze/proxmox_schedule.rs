//! How often a Proxmox VE calendar event (`systemd.time`-like: `*/15`, `hourly`, `22:30`,
//! `mon..fri 02:00`, `*/2:00`) fires, roughly: the usual gap between two runs, which is
//! what "several runs missed" is measured in. `None` for what is not understood (dates,
//! seconds): the caller falls back to another estimate. Hours picked by a list or range
//! count as daily (the night's gap is the longest).

/// Seconds.
const MINUTE: u64 = 60;
const HOUR: u64 = 3600;
const DAY: u64 = 86400;
/// Weekday names as a calendar event spells them (`mon`, `monday`).
const WEEKDAYS: [&str; 7] = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"];

/// The usual gap between two runs of calendar event `spec`, in seconds.
pub(super) fn period_secs(spec: &str) -> Option<u64> {
    let spec = spec.trim().to_ascii_lowercase();
    let named = match spec.as_str() {
        "minutely" => Some(MINUTE),
        "hourly" => Some(HOUR),
        "daily" => Some(DAY),
        "weekly" => Some(7 * DAY),
        "monthly" => Some(30 * DAY),
        "quarterly" => Some(91 * DAY),
        "semiannually" | "semi-annually" => Some(182 * DAY),
        "yearly" | "annually" => Some(365 * DAY),
        _ => None,
    };
    if named.is_some() {
        return named;
    }
    let mut words: Vec<&str> = spec.split_whitespace().collect();
    // A leading weekday part: one day (`sat`) makes a fixed time weekly.
    let one_weekday = match words.first() {
        Some(w) if w.chars().any(|c| c.is_ascii_alphabetic()) => {
            let days = w.split([',', '.']).filter(|d| !d.is_empty());
            if !days
                .clone()
                .all(|d| WEEKDAYS.iter().any(|wd| d.starts_with(wd)))
            {
                return None;
            }
            let one = !w.contains(',') && !w.contains("..");
            words.remove(0);
            one
        }
        _ => false,
    };
    let time = match words.as_slice() {
        [] if one_weekday => "0:00",
        [] => return None,
        [t] => *t,
        // A date part (`2024-*-01 02:00`) is not read.
        _ => return None,
    };
    let (hours, minutes) = match time.split_once(':') {
        Some((h, m)) => (Some(h), m),
        None => (None, time),
    };
    // Seconds (`02:00:30`) or an empty part are not read.
    if minutes.contains(':') || minutes.is_empty() || hours.is_some_and(str::is_empty) {
        return None;
    }
    let per_hour = per_span(minutes, 60)?;
    let gap = match hours {
        None | Some("*") => MINUTE * 60 / per_hour,
        Some(h) => {
            let per_day = per_span(h, 24)?;
            // Hours picked by a list or range (`8..17`) leave a longer gap between the
            // last of one day and the first of the next: the day's, to be safe.
            let uneven = per_day < 24 && (h.contains(',') || h.contains(".."));
            match uneven {
                true => DAY,
                // Several runs within an hour that runs: the longer gap is the hour's.
                false => (DAY / per_day).max(MINUTE * 60 / per_hour),
            }
        }
    };
    Some(match one_weekday {
        true => gap.max(7 * DAY),
        false => gap,
    })
}

/// How many times field `f` (minutes of an hour: `span` 60; hours of a day: 24) matches
/// within its span: `*` every, `*/n` and `a/n` every n, `a,b` twice, `a..b` each of them.
fn per_span(f: &str, span: u64) -> Option<u64> {
    let mut total: u64 = 0;
    for part in f.split(',') {
        let n = match part {
            "*" => span,
            p if p.contains('/') => {
                let (start, step) = p.split_once('/')?;
                let step: u64 = step.parse().ok().filter(|s| *s > 0)?;
                let from: u64 = match start {
                    "*" => 0,
                    s => s.parse().ok()?,
                };
                span.checked_sub(from).filter(|r| *r > 0)?.div_ceil(step)
            }
            p if p.contains("..") => {
                let (a, b) = p.split_once("..")?;
                let (a, b): (u64, u64) = (a.parse().ok()?, b.parse().ok()?);
                b.checked_sub(a)?.checked_add(1)?
            }
            p => {
                p.parse::<u64>().ok().filter(|v| *v < span)?;
                1
            }
        };
        total = total.checked_add(n)?;
    }
    (total > 0).then_some(total.min(span))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_calendar_event_gives_the_usual_gap_between_its_runs() {
        let cases = [
            ("*/15", Some(15 * MINUTE)),
            ("*/5", Some(5 * MINUTE)),
            ("0", Some(HOUR)),
            ("0,30", Some(30 * MINUTE)),
            ("hourly", Some(HOUR)),
            ("daily", Some(DAY)),
            ("22:30", Some(DAY)),
            ("*/2:00", Some(2 * HOUR)),
            ("8..17:00", Some(DAY)),
            ("0..23:00", Some(HOUR)),
            ("mon..fri 02:00", Some(DAY)),
            ("sat 02:00", Some(7 * DAY)),
            ("sun", Some(7 * DAY)),
            ("*:*/10", Some(10 * MINUTE)),
            ("02:00:30", None),
            ("2024-*-01 02:00", None),
            ("", None),
            ("*/0", None),
            ("61", None),
            ("banana", None),
        ];
        for (spec, want) in cases {
            assert_eq!(period_secs(spec), want, "{spec}");
        }
    }
}
