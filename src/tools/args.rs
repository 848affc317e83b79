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
        return DateTime::from_timestamp_millis((secs * 1000.0) as i64)
            .ok_or_else(|| ArgError::UnixTime(s.to_string()));
    }
    let rel = t.strip_prefix("now-").unwrap_or(t);
    let d = parse_duration(rel).map_err(|_| ArgError::Time(s.to_string()))?;
    chrono::Duration::from_std(d)
        .map(|d| now - d)
        .map_err(|_| ArgError::TooFarBack(s.to_string()))
}

/// `since` as a chrono duration back from now.
pub fn lookback(since: Duration) -> Result<chrono::Duration, ArgError> {
    chrono::Duration::from_std(since).map_err(|e| ArgError::Invalid(e.to_string()))
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
}
