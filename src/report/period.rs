//! `ReportPeriod`: the ISO week a report covers, in the report time zone, and the time
//! window its collectors query. One report is sent per period.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use chrono::{DateTime, Datelike, NaiveDate, TimeZone, Utc, Weekday};
use chrono_tz::Tz;
use serde::{Deserialize, Serialize};

/// An ISO week such as `2026-W47`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct ReportPeriod {
    pub year: i32,
    pub week: u32,
}

impl ReportPeriod {
    /// The ISO week that contains `t` in `tz`.
    pub fn containing(t: DateTime<Utc>, tz: Tz) -> Self {
        let iso = t.with_timezone(&tz).iso_week();
        Self {
            year: iso.year(),
            week: iso.week(),
        }
    }

    /// The period a report whose data window is `lookback` ending at `end` is about: the
    /// ISO week of the window's midpoint (a Monday-morning report covers the week before).
    pub fn for_window(end: DateTime<Utc>, lookback: Duration, tz: Tz) -> Self {
        let half = chrono::Duration::from_std(lookback / 2).unwrap_or(chrono::Duration::zero());
        Self::containing(end - half, tz)
    }

    /// Monday 00:00 of this week in `tz`, as UTC.
    pub fn start(&self, tz: Tz) -> DateTime<Utc> {
        let monday = NaiveDate::from_isoywd_opt(self.year, self.week, Weekday::Mon)
            .expect("validated ISO week");
        local_midnight(monday, tz)
    }

    /// Monday 00:00 of the following week in `tz`, as UTC.
    pub fn end(&self, tz: Tz) -> DateTime<Utc> {
        let monday = NaiveDate::from_isoywd_opt(self.year, self.week, Weekday::Mon)
            .expect("validated ISO week");
        local_midnight(monday + chrono::Days::new(7), tz)
    }

    /// The week before this one.
    pub fn previous(&self) -> Self {
        let monday = NaiveDate::from_isoywd_opt(self.year, self.week, Weekday::Mon)
            .expect("validated ISO week");
        let iso = (monday - chrono::Days::new(7)).iso_week();
        Self {
            year: iso.year(),
            week: iso.week(),
        }
    }
}

fn local_midnight(day: NaiveDate, tz: Tz) -> DateTime<Utc> {
    let naive = day.and_hms_opt(0, 0, 0).expect("midnight exists");
    // Midnight can be skipped by a DST change in a few zones: take the first valid instant.
    tz.from_local_datetime(&naive)
        .earliest()
        .or_else(|| {
            tz.from_local_datetime(&(naive + chrono::Duration::hours(1)))
                .earliest()
        })
        .map(|d| d.with_timezone(&Utc))
        .unwrap_or_else(|| Utc.from_utc_datetime(&naive))
}

impl fmt::Display for ReportPeriod {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-W{:02}", self.year, self.week)
    }
}

/// A period string that is not `YYYY-Www` or names a week that does not exist.
#[derive(Debug, thiserror::Error)]
#[error("invalid report period {0:?}: expected an ISO week such as 2026-W47")]
pub struct InvalidPeriod(pub String);

impl FromStr for ReportPeriod {
    type Err = InvalidPeriod;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || InvalidPeriod(s.to_string());
        let (y, w) = s.trim().split_once("-W").ok_or_else(bad)?;
        let year: i32 = y.parse().map_err(|_| bad())?;
        let week: u32 = w.parse().map_err(|_| bad())?;
        if y.len() != 4 || w.len() != 2 {
            return Err(bad());
        }
        NaiveDate::from_isoywd_opt(year, week, Weekday::Mon).ok_or_else(bad)?;
        Ok(Self { year, week })
    }
}

impl TryFrom<String> for ReportPeriod {
    type Error = InvalidPeriod;
    fn try_from(s: String) -> Result<Self, Self::Error> {
        s.parse()
    }
}

impl From<ReportPeriod> for String {
    fn from(p: ReportPeriod) -> String {
        p.to_string()
    }
}

/// Which period a report request is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PeriodSpec {
    /// The window of `report.lookback` ending now (or at the injected end).
    Last,
    /// A named ISO week: Monday to Monday in the report time zone.
    Week(ReportPeriod),
}

impl FromStr for PeriodSpec {
    type Err = InvalidPeriod;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim() {
            "" | "last" => Ok(Self::Last),
            other => other.parse().map(Self::Week),
        }
    }
}

/// The resolved window of one report.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReportWindow {
    pub period: ReportPeriod,
    pub start: DateTime<Utc>,
    pub end: DateTime<Utc>,
}

impl ReportWindow {
    /// Resolves `spec` with `end` as "now" (injectable for tests).
    pub fn resolve(spec: PeriodSpec, now: DateTime<Utc>, lookback: Duration, tz: Tz) -> Self {
        match spec {
            PeriodSpec::Last => {
                let back = chrono::Duration::from_std(lookback)
                    .unwrap_or_else(|_| chrono::Duration::days(7));
                Self {
                    period: ReportPeriod::for_window(now, lookback, tz),
                    start: now - back,
                    end: now,
                }
            }
            PeriodSpec::Week(p) => Self {
                period: p,
                start: p.start(tz),
                end: p.end(tz).min(now),
            },
        }
    }

    /// The window length, at least one second.
    pub fn length(&self) -> Duration {
        (self.end - self.start)
            .to_std()
            .unwrap_or(Duration::from_secs(1))
            .max(Duration::from_secs(1))
    }

    /// A PromQL range such as `604800s`.
    pub fn promql_range(&self) -> String {
        format!("{}s", self.length().as_secs())
    }

    /// "Nov 16 – Nov 23" in `tz`, for subjects and titles.
    pub fn human(&self, tz: Tz) -> String {
        format!(
            "{} – {}",
            self.start.with_timezone(&tz).format("%b %-d"),
            self.end.with_timezone(&tz).format("%b %-d")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn utc(s: &str) -> DateTime<Utc> {
        s.parse().unwrap()
    }

    #[test]
    fn a_monday_morning_report_covers_the_previous_iso_week() {
        let w = ReportWindow::resolve(
            PeriodSpec::Last,
            utc("2026-11-23T08:00:00Z"),
            Duration::from_secs(7 * 86400),
            chrono_tz::UTC,
        );
        assert_eq!(w.period.to_string(), "2026-W47");
        assert_eq!(w.human(chrono_tz::UTC), "Nov 16 – Nov 23");
    }

    #[test]
    fn a_named_week_runs_monday_to_monday_in_the_report_time_zone() {
        let p: ReportPeriod = "2026-W13".parse().unwrap();
        let tz = chrono_tz::Europe::Berlin;
        // Berlin switches to summer time on Sunday 2026-03-29: the week is 167 hours long.
        assert_eq!(p.start(tz), utc("2026-03-22T23:00:00Z"));
        assert_eq!(p.end(tz), utc("2026-03-29T22:00:00Z"));
        assert_eq!(p.previous().to_string(), "2026-W12");
    }

    #[test]
    fn the_first_week_of_a_year_follows_the_last_week_of_the_previous_one() {
        let p: ReportPeriod = "2026-W01".parse().unwrap();
        assert_eq!(p.previous().to_string(), "2025-W52");
        let p: ReportPeriod = "2021-W01".parse().unwrap();
        assert_eq!(p.previous().to_string(), "2020-W53");
    }

    #[test]
    fn malformed_or_impossible_periods_are_rejected() {
        for bad in [
            "2026-47",
            "2026-W54",
            "2026-W7",
            "26-W07",
            "last week",
            "2025-W53",
        ] {
            assert!(bad.parse::<ReportPeriod>().is_err(), "{bad} should fail");
        }
        assert_eq!("last".parse::<PeriodSpec>().unwrap(), PeriodSpec::Last);
    }
}
