//! Captured exporter output (tests/fixtures/exporters) as the samples a query returns, for
//! the analyzers' tests.

use std::collections::HashMap;

use crate::integrations::prometheus::Sample;

/// The samples of a captured exposition (tests/fixtures/exporters) by metric name, each
/// with the labels `extra` Prometheus would add (`instance`, `job`), at `ts` (for tests).
pub(crate) fn captured(
    text: &str,
    extra: &[(&str, &str)],
    ts: f64,
) -> HashMap<String, Vec<Sample>> {
    let mut out: HashMap<String, Vec<Sample>> = HashMap::new();
    for s in crate::eval::background::parse(text).0 {
        let mut metric = s.labels;
        for (k, v) in extra {
            metric.insert(k.to_string(), v.to_string());
        }
        metric.insert("__name__".into(), s.name.clone());
        out.entry(s.name).or_default().push(Sample {
            metric,
            value: s.value,
            ts,
        });
    }
    out
}
