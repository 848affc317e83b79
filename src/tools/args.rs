//! Reading tool arguments: optional strings, booleans and integers, and the time forms
//! every tool accepts ("2h" = two hours ago, "now-30m", RFC 3339 or Unix seconds). A bad
//! argument is an [`ArgError`] the model can correct.

use std::time::Duration;

use chrono::{DateTime, Utc};
use serde_json::Value;

/// An argument the model sent that the tool cannot use.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ArgError {
    #[error("\"{0}\" must not be empty")]
    Empty(&'static str),
    #[error("invalid duration {0:?} (use e.g. \"30m\", \"2h\", \"1d\")")]
    Duration(String),
    #[error("invalid time {0:?} (use \"now\", a relative \"2h\", RFC 3339 or Unix seconds)")]
    Time(String),
    #[error("invalid Unix time {0:?}")]
    UnixTime(String),
    #[error("time {0:?} is too far back")]
    TooFarBack(String),
    #[error("\"selector\" must be a stream selector such as {{job=\"api\"}}, got {0:?}")]
    StreamSelector(String),
    /// Any other bad value; the text says which argument and why.
    #[error("{0}")]
    Invalid(String),
}

/// The string argument `key`, if present and not blank (untrimmed).
pub fn arg<'a>(args: &'a Value, key: &str) -> Option<&'a str> {
    args.get(key)
        .and_then(Value::as_str)
        .filter(|s| !s.trim().is_empty())
}

/// The string argument `key`, trimmed, when present and non-empty.
pub fn arg_str(args: &Value, key: &str) -> Option<String> {
    args.get(key)
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(String::from)
}

/// The boolean argument `key`; false when absent.
pub fn arg_bool(args: &Value, key: &str) -> bool {
    args.get(key).and_then(Value::as_bool).unwrap_or(false)
}

/// The integer argument `key`, when present.
pub fn arg_i64(args: &Value, key: &str) -> Option<i64> {
    args.get(key).and_then(Value::as_i64)
}

/// The string argument `key`, required.
pub fn required<'a>(args: &'a Value, key: &'static str) -> Result<&'a str, ArgError> {
    arg(args, key).ok_or(ArgError::Empty(key))
}

/// A duration such as "2h", "30m", "1d", "90s" (spaces and a trailing " ago" allowed).
pub fn parse_duration(s: &str) -> Result<Duration, ArgError> {
    let t = s.trim().trim_end_matches("ago").trim();
    humantime::parse_duration(t).map_err(|_| ArgError::Duration(s.to_string()))
}

/// A time argument: "now", "2h" / "now-2h" (two hours ago), RFC 3339, or Unix seconds.
pub fn parse_time(s: &str, now: DateTime<Utc>) -> Result<DateTime<Utc>, ArgError> {
    let t = s.trim();
    if t.eq_ignore_ascii_case("now") {
        return Ok(now);
    }
    if let Ok(dt) = DateTime::parse_from_rfc3339(t) {
        return Ok(dt.with_timezone(&Utc));
    }
    if let Ok(secs) = t.parse::<f64>() {
        // `as` saturates, and the calendar's bounds are well inside i64 milliseconds.
        return Some(secs * 1000.0)
            .filter(|ms| ms.is_finite())
            .and_then(|ms| DateTime::from_timestamp_millis(ms as i64))
            .ok_or_else(|| ArgError::UnixTime(s.to_string()));
    }
    let rel = t.strip_prefix("now-").unwrap_or(t);
    let d = parse_duration(rel).map_err(|_| ArgError::Time(s.to_string()))?;
    ago(now, d).map_err(|_| ArgError::TooFarBack(s.to_string()))
}

/// The time `since` before `from`; an error when that is before the calendar begins (the
/// model may ask for "300000y").
pub fn ago(from: DateTime<Utc>, since: Duration) -> Result<DateTime<Utc>, ArgError> {
    chrono::Duration::from_std(since)
        .ok()
        .and_then(|d| from.checked_sub_signed(d))
        .ok_or_else(|| ArgError::TooFarBack(humantime::format_duration(since).to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_arguments_accept_relative_absolute_and_unix_forms() {
        let now = DateTime::parse_from_rfc3339("2026-11-23T07:00:00Z")
            .unwrap()
            .with_timezone(&Utc);
        let at = |s| parse_time(s, now).unwrap().to_rfc3339();
        assert_eq!(at("2h"), "2026-11-23T05:00:00+00:00");
        assert_eq!(at("now-30m"), "2026-11-23T06:30:00+00:00");
        assert_eq!(at("1d ago"), "2026-11-22T07:00:00+00:00");
        assert_eq!(at("now"), now.to_rfc3339());
        assert_eq!(at("2026-11-23T01:00:00Z"), "2026-11-23T01:00:00+00:00");
        assert_eq!(at("1795380332"), "2026-11-22T20:45:32+00:00");
        let err = parse_time("yesterday", now).unwrap_err();
        assert_eq!(err, ArgError::Time("yesterday".into()));
        assert!(err.to_string().contains("invalid time"));
    }

    #[test]
    fn times_before_the_calendar_begins_are_errors() {
        let now = Utc::now();
        for s in ["300000y", "now-300000y"] {
            assert_eq!(parse_time(s, now), Err(ArgError::TooFarBack(s.into())));
        }
        for s in ["1e300", "-1e300", "NaN", "inf"] {
            assert_eq!(parse_time(s, now), Err(ArgError::UnixTime(s.into())));
        }
        let far = Duration::from_secs(300_000 * 366 * 86_400);
        assert!(matches!(ago(now, far), Err(ArgError::TooFarBack(_))));
        assert!(matches!(
            ago(now, Duration::MAX),
            Err(ArgError::TooFarBack(_))
        ));
        let first = DateTime::<Utc>::MIN_UTC;
        assert!(ago(first, Duration::from_secs(1)).is_err());
        assert_eq!(
            ago(now, Duration::from_secs(60)),
            Ok(now - chrono::Duration::minutes(1))
        );
    }
}
