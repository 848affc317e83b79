//! The range of a `rate()` that fits how often a metric is scraped.

use super::Prom;

impl Prom {
    /// The range of a `rate()` of `metric` that holds about four of its samples: `5m` at
    /// the usual scrape intervals, longer for one scraped every few minutes (`[5m]` over a
    /// 5-minute interval holds one sample and rates nothing), from the samples its densest
    /// series had in the last hour; `5m` when that cannot be read.
    pub async fn rate_range(&self, metric: &str) -> String {
        let expr = format!("max(count_over_time({metric}[1h]))");
        let count = match self.vector(&expr).await {
            Ok(v) => v.first().map(|s| s.value).unwrap_or(0.0),
            Err(_) => 0.0,
        };
        format!("{:.0}m", rate_minutes(count))
    }
}

/// Minutes of a rate range holding about four samples of a series that had `count` in an
/// hour: at least 5, at most 60; 5 when the count says nothing.
fn rate_minutes(count: f64) -> f64 {
    match count >= 2.0 {
        true => (4.0 * 60.0 / count).ceil().clamp(5.0, 60.0),
        false => 5.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rate_range_holds_about_four_samples_and_never_less_than_five_minutes() {
        assert_eq!(rate_minutes(240.0), 5.0, "every 15 s");
        assert_eq!(rate_minutes(60.0), 5.0, "every minute");
        assert_eq!(rate_minutes(12.0), 20.0, "every 5 minutes");
        assert_eq!(rate_minutes(2.0), 60.0, "every 30 minutes: capped");
        assert_eq!(rate_minutes(0.0), 5.0);
        assert_eq!(rate_minutes(f64::NAN), 5.0);
    }
}
