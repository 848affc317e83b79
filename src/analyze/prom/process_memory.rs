//! A process leaking memory (process-exporter `namedprocess_namegroup_memory_bytes` with
//! `memtype="resident"`): resident memory growing steadily, how fast, since when, and how
//! long until its host's available memory (node_exporter `MemAvailable`, joined by the
//! host of `instance`) is gone at that rate. A process that is merely large is not a leak;
//! nor is one whose memory saws up and down.

use std::collections::HashMap;

use async_trait::async_trait;

use super::{
    Prom, by_host, host, identity, label, labels_map, long_span, pick, selector, steepest,
};
use crate::analyze::{
    AnalyzeError, Analyzer, Entity, Fact, FactClass, Quantity, Rate, Scope, Severity, Source, Unit,
};

const RESIDENT: &str = r#"namedprocess_namegroup_memory_bytes{memtype="resident"}"#;
/// Growth over a span that counts as a leak: at least this many bytes…
const LEAK_MIN_BYTES: f64 = 64.0 * 1024.0 * 1024.0;
/// …and at least this share of the memory the process had at the span's start.
const LEAK_MIN_SHARE: f64 = 0.10;
/// Share of the memory's movement over the span a rising straight line must explain (R²):
/// a steady climb, not a sawtooth.
const STEADY_FIT: f64 = 0.8;
/// Time until the host's memory is gone under which a leak is critical, a warning; beyond
/// the longer one it is only noted.
const CRIT_ETA: f64 = 3600.0;
const WARN_ETA: f64 = 3.0 * 86400.0;
/// Most leaking processes read over the window (the steepest first).
const MAX_CANDIDATES: usize = 10;

pub struct ProcessMemory(pub Prom);

#[async_trait]
impl Analyzer for ProcessMemory {
    fn name(&self) -> &'static str {
        "process_memory"
    }

    async fn run(&self, scope: &Scope) -> Result<Vec<Fact>, AnalyzeError> {
        let now = self.0.vector(RESIDENT).await?;
        if now.is_empty() {
            return Ok(Vec::new());
        }
        let slopes = self
            .0
            .slopes(RESIDENT, &[900, 3600, long_span(scope)])
            .await?;
        let mut candidates = Vec::new();
        for s in &now {
            let key = identity(&s.metric);
            // Material growth over some span: at least the minimum, and a share of the
            // value at that span's start.
            let grew = slopes.iter().find_map(|(span, by)| {
                let d = *by.get(&key)?;
                let growth = d * span;
                let start = (s.value - growth).max(0.0);
                (d.is_finite()
                    && growth >= LEAK_MIN_BYTES
                    && growth >= LEAK_MIN_SHARE * start.max(LEAK_MIN_BYTES))
                .then_some(*span)
            });
            let (Some(span), Some(d)) = (grew, steepest(&slopes, &key, LEAK_MIN_BYTES, false))
            else {
                continue;
            };
            candidates.push((s, span, d));
        }
        if candidates.is_empty() {
            return Ok(Vec::new());
        }
        candidates.sort_by(|a, b| b.2.total_cmp(&a.2));
        candidates.truncate(MAX_CANDIDATES);
        let available = by_host(&self.0.vector("node_memory_MemAvailable_bytes").await?);
        let total = by_host(&self.0.vector("node_memory_MemTotal_bytes").await?);
        let mut facts = Vec::new();
        for (s, span, rate) in candidates {
            if let Some(f) = self.fact(scope, s, span, rate, &available, &total).await? {
                facts.push(f);
            }
        }
        Ok(facts)
    }
}

impl ProcessMemory {
    async fn fact(
        &self,
        scope: &Scope,
        s: &crate::integrations::prometheus::Sample,
        span: f64,
        rate: f64,
        available: &HashMap<String, f64>,
        total: &HashMap<String, f64>,
    ) -> Result<Option<Fact>, AnalyzeError> {
        let sel = selector(pick(
            &s.metric,
            &["instance", "job", "groupname", "memtype"],
        ));
        let query = format!("namedprocess_namegroup_memory_bytes{sel}");
        let series = self.0.range(&query, scope, 240).await?;
        let Some(values) = series.first().map(|s| s.values.as_slice()) else {
            return Ok(None);
        };
        let from = scope.now.timestamp() as f64 - span;
        let recent: Vec<f64> = values
            .iter()
            .filter(|(t, _)| *t >= from)
            .map(|(_, v)| *v)
            .collect();
        if !steady(&recent) {
            return Ok(None);
        }
        let host_name = host(&s.metric);
        let avail = host_name.as_ref().and_then(|h| available.get(h)).copied();
        let eta = avail.map(|a| a.max(0.0) / rate);
        let severity = match eta {
            Some(e) if e < CRIT_ETA => Severity::Critical,
            Some(e) if e >= WARN_ETA => Severity::Info,
            _ => Severity::Warning,
        };
        let name = label(&s.metric, "groupname");
        let mut detail = format!(
            "grew {} in the last {}",
            Quantity::bytes(rate * span),
            crate::analyze::human_seconds(span)
        );
        if let Some(a) = avail {
            detail.push_str(&format!("; its host has {} available", Quantity::bytes(a)));
        }
        let mut fact = Fact::new(
            FactClass::Exhaustion,
            self.name(),
            Entity::new("process", name)
                .on_host(host_name.clone())
                .with_labels(labels_map(&s.metric)),
            "resident memory",
            severity,
            Source::promql(&query),
        )
        .value(Quantity::bytes(s.value))
        .rate(Rate::from_per_second(rate, Unit::Bytes))
        .since(rise_start(values))
        .detail(detail);
        if let Some(t) = host_name.as_ref().and_then(|h| total.get(h)) {
            fact = fact.limit(Quantity::bytes(*t));
        }
        if let Some(e) = eta {
            fact = fact.eta(e, "host out of memory");
        }
        Ok(Some(fact))
    }
}

/// Whether `values` (equally spaced) climb steadily: a rising straight line explains
/// most of their movement (a garbage collector's sawtooth does not), and the last value
/// is near the highest (the climb goes on).
fn steady(values: &[f64]) -> bool {
    if values.len() < 3 {
        return false;
    }
    let n = values.len() as f64;
    let mean_x = (n - 1.0) / 2.0;
    let mean_y = values.iter().sum::<f64>() / n;
    let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
    for (i, y) in values.iter().enumerate() {
        let (dx, dy) = (i as f64 - mean_x, y - mean_y);
        sxy += dx * dy;
        sxx += dx * dx;
        syy += dy * dy;
    }
    if sxy <= 0.0 || syy <= 0.0 {
        return false;
    }
    let r_squared = sxy * sxy / (sxx * syy);
    let max = values.iter().copied().fold(f64::MIN, f64::max);
    let last = values.last().copied().unwrap_or(0.0);
    r_squared >= STEADY_FIT && last >= 0.9 * max
}

/// When the climb began: the last point near the lowest value of the window.
fn rise_start(values: &[(f64, f64)]) -> Option<chrono::DateTime<chrono::Utc>> {
    let min = values.iter().map(|(_, v)| *v).fold(f64::MAX, f64::min);
    let max = values.iter().map(|(_, v)| *v).fold(f64::MIN, f64::max);
    let low = min + 0.05 * (max - min);
    let i = values.iter().rposition(|(_, v)| *v <= low)?;
    let (t, _) = values.get(i)?;
    chrono::DateTime::from_timestamp_millis((t * 1000.0) as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_steady_climb_is_a_leak_and_a_sawtooth_is_not() {
        let climb: Vec<f64> = (0..20).map(|i| 100.0 + 10.0 * i as f64).collect();
        assert!(steady(&climb));
        let saw: Vec<f64> = (0..20).map(|i| 100.0 + 30.0 * (i % 4) as f64).collect();
        assert!(!steady(&saw));
        let fell_back: Vec<f64> = climb.iter().copied().chain([100.0]).collect();
        assert!(!steady(&fell_back));
        // A leak under a collector's sawtooth still climbs.
        let leaking_saw: Vec<f64> = (0..40)
            .map(|i| 100.0 + 10.0 * i as f64 + 30.0 * (i % 4) as f64)
            .collect();
        assert!(steady(&leaking_saw));
        let flat = [5.0; 10];
        assert!(!steady(&flat));
        assert!(!steady(&[1.0, 2.0]));
    }

    #[test]
    fn the_climb_starts_at_the_last_low_point() {
        let v = [
            (0.0, 5.0),
            (60.0, 1.0),
            (120.0, 1.0),
            (180.0, 50.0),
            (240.0, 90.0),
        ];
        assert_eq!(rise_start(&v).unwrap().timestamp(), 120);
        assert_eq!(rise_start(&[]), None);
    }
}
