//! When a question says its trouble began: "since yesterday", "about two hours ago",
//! "this afternoon", "for three days", "since Monday". A question names no start, and a
//! fixed look-back misses an incident older than it (uploads failing since yesterday) or
//! reads around the wrong time for a newer one. Times of day are read in UTC (the daemon
//! does not know the asker's zone), so a part of the day starts an hour or two early.

use std::sync::LazyLock;

use chrono::{DateTime, Datelike, NaiveTime, TimeDelta, Utc};
use regex_lite::Regex;

/// "3 hours ago", "an hour ago", "a couple of days ago", "two days back".
static AGO: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&format!(
        r"(?i)\b{COUNT}\s+(minute|min|hour|hr|day|week)(s?)\s+(?:ago|back|before now)\b"
    ))
    .expect("valid regex")
});
/// "for 3 days", "in the last two hours", "over the past week", "for the past hour", "for
/// about three hours".
static SPAN: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&format!(
        r"(?i)\b(?:for|in|over|during|within)\s+(?:the\s+)?(?:last|past)?\s*(?:about|around|roughly|nearly|almost|approximately|some|maybe|over|like)?\s*{COUNT}?\s*(minute|min|hour|hr|day|week)(s?)\b"
    ))
    .expect("valid regex")
});
/// A count in digits or words.
const COUNT: &str = r"(\d{1,3}|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|a couple of|a few|several|couple of|few)";
/// Parts of a day and named days.
static DAY_PART: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(yesterday|last night|tonight|this morning|this afternoon|this evening|today|earlier today|last week|this week|monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b")
        .expect("valid regex")
});

/// Furthest back a question's start is read.
const MAX_BACK: TimeDelta = TimeDelta::days(7);

fn count(word: Option<&str>) -> i64 {
    let Some(w) = word else { return 1 };
    let w = w.to_ascii_lowercase();
    if let Ok(n) = w.parse::<i64>() {
        return n;
    }
    match w.as_str() {
        "a" | "an" | "one" => 1,
        "two" | "a couple of" | "couple of" => 2,
        "three" | "a few" | "few" | "several" => 3,
        "four" => 4,
        "five" => 5,
        "six" => 6,
        "seven" => 7,
        "eight" => 8,
        "nine" => 9,
        "ten" => 10,
        "eleven" => 11,
        "twelve" => 12,
        _ => 1,
    }
}

fn unit(word: &str) -> TimeDelta {
    match word.to_ascii_lowercase().as_str() {
        "minute" | "min" => TimeDelta::minutes(1),
        "hour" | "hr" => TimeDelta::hours(1),
        "day" => TimeDelta::days(1),
        _ => TimeDelta::weeks(1),
    }
}

/// The start of today (UTC) at `h` o'clock, a day earlier when that is still to come.
fn at_hour(now: DateTime<Utc>, h: u32, days_back: i64) -> Option<DateTime<Utc>> {
    let day = now
        .date_naive()
        .checked_sub_signed(TimeDelta::days(days_back))?;
    let t = day.and_time(NaiveTime::from_hms_opt(h, 0, 0)?).and_utc();
    match t > now {
        true => t.checked_sub_signed(TimeDelta::days(1)),
        false => Some(t),
    }
}

/// When a question says its trouble began: the earliest start it states, and how
/// precisely ("since yesterday" is any time yesterday, "about two hours ago" an hour or so
/// either side of it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Asked {
    /// The stated start (the look-back reads from here).
    pub start: DateTime<Utc>,
    /// The span the trouble's start may fall in.
    pub from: DateTime<Utc>,
    pub to: DateTime<Utc>,
}

/// The earliest start `text` states within a week, with the span it may fall in.
pub fn asked(text: &str, now: DateTime<Utc>) -> Option<Asked> {
    let mut times: Vec<Asked> = Vec::new();
    for re in [&*AGO, &*SPAN] {
        for c in re.captures_iter(text) {
            let Some(u) = c.get(2) else { continue };
            let u = unit(u.as_str());
            let plural = c.get(3).is_some_and(|m| !m.as_str().is_empty());
            let counted = c.get(1).map(|m| m.as_str());
            times.extend(match (counted, plural) {
                // "for hours", "for days": one to a dozen of them.
                (None, true) => span(now, u.checked_mul(3), u.checked_mul(12), Some(u)),
                _ => {
                    let back = u.checked_mul(count(counted).clamp(1, 1000) as i32);
                    // A stated count is a rough one: a third of it either side, ten
                    // minutes at least.
                    let tol = back
                        .and_then(|b| b.checked_div(3))
                        .map(|t| t.max(TimeDelta::minutes(10)));
                    let far = back.zip(tol).and_then(|(b, t)| b.checked_add(&t));
                    let near = back.zip(tol).and_then(|(b, t)| b.checked_sub(&t));
                    span(now, back, far, near)
                }
            });
        }
    }
    for c in DAY_PART.captures_iter(text) {
        let part = c[1].to_ascii_lowercase();
        let hours = |h: i64| TimeDelta::hours(h);
        let (start, length) = match part.as_str() {
            "yesterday" => (at_hour(now, 0, 1), hours(24)),
            "last night" => (at_hour(now, 18, 1), hours(13)),
            "this morning" => (at_hour(now, 0, 0), hours(12)),
            "today" | "earlier today" => (at_hour(now, 0, 0), hours(24)),
            "this afternoon" => (at_hour(now, 12, 0), hours(6)),
            "this evening" | "tonight" => (at_hour(now, 17, 0), hours(7)),
            "last week" | "this week" => (now.checked_sub_signed(TimeDelta::weeks(1)), hours(168)),
            day => (weekday_start(now, day), hours(24)),
        };
        times.extend(start.and_then(|s| {
            Some(Asked {
                start: s,
                from: s,
                to: s.checked_add_signed(length)?.min(now),
            })
        }));
    }
    let earliest = now.checked_sub_signed(MAX_BACK)?;
    times
        .into_iter()
        .filter(|t| t.start <= now)
        .min_by_key(|t| t.start)
        .map(|t| Asked {
            start: t.start.max(earliest),
            from: t.from.max(earliest),
            to: t.to.max(earliest),
        })
}

/// The start `back` before `now`, in the span from `far` to `near` before it.
fn span(
    now: DateTime<Utc>,
    back: Option<TimeDelta>,
    far: Option<TimeDelta>,
    near: Option<TimeDelta>,
) -> Option<Asked> {
    Some(Asked {
        start: now.checked_sub_signed(back?)?,
        from: now.checked_sub_signed(far?)?,
        to: now.checked_sub_signed(near?)?,
    })
}

/// The start of the latest `day` (a weekday name) up to today.
fn weekday_start(now: DateTime<Utc>, day: &str) -> Option<DateTime<Utc>> {
    let names = [
        "monday",
        "tuesday",
        "wednesday",
        "thursday",
        "friday",
        "saturday",
        "sunday",
    ];
    let want = names.iter().position(|n| *n == day)? as i64;
    let today = i64::from(now.weekday().num_days_from_monday());
    at_hour(now, 0, (today - want).rem_euclid(7))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Friday 2026-11-27 01:15 UTC.
    fn now() -> DateTime<Utc> {
        "2026-11-27T01:15:00Z".parse().unwrap()
    }

    fn asked(text: &str) -> Option<String> {
        super::asked(text, now()).map(|a| a.start.format("%Y-%m-%d %H:%M").to_string())
    }

    #[test]
    fn phrases_of_time_give_the_start() {
        assert_eq!(
            asked("uploads fail since yesterday").as_deref(),
            Some("2026-11-26 00:00")
        );
        assert_eq!(
            asked("stopped about two hours ago").as_deref(),
            Some("2026-11-26 23:15")
        );
        assert_eq!(
            asked("went away 45 minutes ago?").as_deref(),
            Some("2026-11-27 00:30")
        );
        assert_eq!(
            asked("slow for 3 days now").as_deref(),
            Some("2026-11-24 01:15")
        );
        assert_eq!(
            asked("errors in the last hour").as_deref(),
            Some("2026-11-27 00:15")
        );
        assert_eq!(
            asked("over the past week").as_deref(),
            Some("2026-11-20 01:15")
        );
        // This afternoon has not come yet at 01:15: yesterday's.
        assert_eq!(
            asked("sometime this afternoon").as_deref(),
            Some("2026-11-26 12:00")
        );
        assert_eq!(asked("since Monday").as_deref(), Some("2026-11-23 00:00"));
        assert_eq!(asked("since Friday").as_deref(), Some("2026-11-27 00:00"));
        // The earliest of two; never more than a week back.
        assert_eq!(
            asked("an hour ago, maybe since yesterday").as_deref(),
            Some("2026-11-26 00:00")
        );
        assert_eq!(asked("for 40 days").as_deref(), Some("2026-11-20 01:15"));
        // A hedge before the count.
        assert_eq!(
            asked("hanging for about three hours").as_deref(),
            Some("2026-11-26 22:15")
        );
        assert_eq!(
            asked("dropping for roughly 20 minutes").as_deref(),
            Some("2026-11-27 00:55")
        );
    }

    fn window(text: &str) -> Option<String> {
        super::asked(text, now()).map(|a| {
            let f = |t: DateTime<Utc>| t.format("%d %H:%M").to_string();
            format!("{}..{}", f(a.from), f(a.to))
        })
    }

    #[test]
    fn a_stated_time_is_a_span_as_wide_as_its_words_are_vague() {
        assert_eq!(
            window("since yesterday").as_deref(),
            Some("26 00:00..27 00:00")
        );
        assert_eq!(
            window("about two hours ago").as_deref(),
            Some("26 22:35..26 23:55")
        );
        assert_eq!(
            window("went away 15 minutes ago").as_deref(),
            Some("27 00:50..27 01:10")
        );
        assert_eq!(
            window("getting slower for hours").as_deref(),
            Some("26 13:15..27 00:15")
        );
        assert_eq!(
            asked("getting slower for hours").as_deref(),
            Some("2026-11-26 22:15")
        );
        // A part of the day ends at most now.
        assert_eq!(
            window("since this morning").as_deref(),
            Some("27 00:00..27 01:15")
        );
    }

    #[test]
    fn a_question_without_a_time_has_none() {
        assert_eq!(asked("What happened to my MQTT devices?"), None);
        assert_eq!(asked("which host has the least free memory"), None);
        assert_eq!(asked("is the 3 day backup retention enough"), None);
        assert_eq!(asked("a day in the life"), None);
    }
}
