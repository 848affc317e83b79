//! Retry timing: exponential backoff with jitter, and `Retry-After` (seconds or an HTTP
//! date), both capped so one rate-limited call cannot stall an investigation for minutes.

use std::time::Duration;

use rand::Rng;

/// The longest wait between two attempts, whatever the server asks.
pub const MAX_DELAY: Duration = Duration::from_secs(30);

/// The delay before retry number `attempt + 1`: 0.5 s × 2^attempt, ±25 % jitter, capped.
pub fn backoff_delay(attempt: u32) -> Duration {
    let base = 0.5 * 2f64.powi(attempt.min(10) as i32);
    let jitter = rand::rng().random_range(0.75..1.25);
    Duration::from_secs_f64(base * jitter).min(MAX_DELAY)
}

/// Parses a `Retry-After` value (delta seconds or an HTTP date), capped at [`MAX_DELAY`].
pub fn parse_retry_after(value: &str) -> Option<Duration> {
    let value = value.trim();
    let delay = if let Ok(secs) = value.parse::<f64>() {
        // Capped before converting: `Duration` panics above u64::MAX seconds ("1e20").
        (secs.is_finite() && secs >= 0.0)
            .then(|| Duration::from_secs_f64(secs.min(MAX_DELAY.as_secs_f64())))?
    } else {
        let at = chrono::DateTime::parse_from_rfc2822(value).ok()?;
        let wait = at.with_timezone(&chrono::Utc) - chrono::Utc::now();
        wait.to_std().unwrap_or(Duration::ZERO)
    };
    Some(delay.min(MAX_DELAY))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_accepts_seconds_and_http_dates_and_is_capped() {
        assert_eq!(parse_retry_after("2"), Some(Duration::from_secs(2)));
        assert_eq!(parse_retry_after("86400"), Some(MAX_DELAY));
        assert_eq!(
            parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"),
            Some(Duration::ZERO)
        );
        let soon = (chrono::Utc::now() + chrono::Duration::seconds(10)).to_rfc2822();
        let d = parse_retry_after(&soon).unwrap();
        assert!(
            d > Duration::from_secs(8) && d <= Duration::from_secs(10),
            "{d:?}"
        );
        assert_eq!(parse_retry_after("soon"), None);
    }

    #[test]
    fn a_retry_after_beyond_any_duration_is_capped_not_a_panic() {
        for huge in [
            "1e20",
            "18446744073709551616",
            "1.7e308",
            "99999999999999999999.5",
        ] {
            assert_eq!(parse_retry_after(huge), Some(MAX_DELAY), "{huge}");
        }
        for bad in ["inf", "NaN", "-1", "-1e20"] {
            assert_eq!(parse_retry_after(bad), None, "{bad}");
        }
        assert_eq!(parse_retry_after("0.25"), Some(Duration::from_millis(250)));
    }

    #[test]
    fn backoff_grows_and_stays_capped() {
        assert!(backoff_delay(0) < Duration::from_millis(700));
        assert!(backoff_delay(3) > Duration::from_secs(2));
        assert!(backoff_delay(30) <= MAX_DELAY);
    }
}
