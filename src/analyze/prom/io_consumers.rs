//! What does the I/O on a host: process groups by bytes read and written per second
//! (process-exporter `namedprocess_namegroup_{read,write}_bytes_total`), the busiest first,
//! for the facts about disks busy all the time and CPUs waiting on I/O: a person asks
//! next which process it is.

use std::collections::HashMap;

use super::{Prom, host, labels_map, pick, selector};
use crate::analyze::{AnalyzeError, Entity, Fact, FactClass, Quantity, Severity, Source, Unit};
use crate::integrations::prometheus::Sample;

/// Bytes read and written per second by each process group (process-exporter exports both
/// counters for every group; a regex over the names would collide once `rate` drops them).
const PROCESS_IO: &str = "sum by (instance, job, groupname) (rate(namedprocess_namegroup_read_bytes_total[5m])) + sum by (instance, job, groupname) (rate(namedprocess_namegroup_write_bytes_total[5m]))";
/// A process group doing less is not named (idle daemons touch a few kB/s).
const NAMED_BYTES_PER_SEC: f64 = 1024.0 * 1024.0;
/// Process groups named in a host's fact.
const NAMED: usize = 3;
/// Share of the host's process I/O the top group must do to be its own fact.
const OWN_FACT_SHARE: f64 = 0.5;

/// A process group reading and writing on a host.
pub(super) struct IoConsumer {
    pub name: String,
    pub bytes_per_sec: f64,
    /// Its share of the I/O of every process group on the host (0–1).
    pub share: f64,
    sample: Sample,
}

/// Process groups by host, the busiest first (those doing at least 1 MiB/s).
pub(super) async fn by_host(prom: &Prom) -> Result<HashMap<String, Vec<IoConsumer>>, AnalyzeError> {
    let mut by: HashMap<String, Vec<IoConsumer>> = HashMap::new();
    for s in prom.vector(PROCESS_IO).await? {
        let (Some(h), Some(g)) = (host(&s.metric), s.metric.get("groupname").cloned()) else {
            continue;
        };
        if !s.value.is_finite() {
            continue;
        }
        by.entry(h).or_default().push(IoConsumer {
            name: g,
            bytes_per_sec: s.value,
            share: 0.0,
            sample: s,
        });
    }
    for v in by.values_mut() {
        let total: f64 = v.iter().map(|c| c.bytes_per_sec).sum();
        v.retain(|c| c.bytes_per_sec >= NAMED_BYTES_PER_SEC);
        for c in v.iter_mut() {
            c.share = c.bytes_per_sec / total;
        }
        v.sort_by(|a, b| b.bytes_per_sec.total_cmp(&a.bytes_per_sec));
        v.truncate(NAMED);
    }
    by.retain(|_, v| !v.is_empty());
    Ok(by)
}

/// "top I/O: process rsync 84.0 MiB/s (91 %), …" for a host's fact.
pub(super) fn named(consumers: &[IoConsumer]) -> String {
    let named: Vec<String> = consumers
        .iter()
        .map(|c| {
            format!(
                "process {} {} ({})",
                c.name,
                Quantity::new(c.bytes_per_sec, Unit::BytesPerSecond),
                Quantity::percent(100.0 * c.share)
            )
        })
        .collect();
    format!("top I/O: {}", named.join(", "))
}

/// The fact about the group doing most of a host's I/O, when it does most of it.
pub(super) fn top_fact(
    analyzer: &'static str,
    consumers: &[IoConsumer],
    host_name: &str,
    severity: Severity,
    since: Option<chrono::DateTime<chrono::Utc>>,
) -> Option<Fact> {
    let c = consumers.first().filter(|c| c.share >= OWN_FACT_SHARE)?;
    let sel = selector(pick(&c.sample.metric, &["instance", "groupname"]));
    let query = format!(
        "sum by (groupname) (rate(namedprocess_namegroup_read_bytes_total{sel}[5m])) + sum by (groupname) (rate(namedprocess_namegroup_write_bytes_total{sel}[5m]))"
    );
    Some(
        Fact::new(
            FactClass::Saturation,
            analyzer,
            Entity::new("process", c.name.clone())
                .on_host(Some(host_name.to_string()))
                .with_labels(labels_map(&c.sample.metric)),
            "I/O read and written, the most on its host",
            severity,
            Source::promql(&query),
        )
        .value(Quantity::new(c.bytes_per_sec, Unit::BytesPerSecond))
        .since(since)
        .detail(format!(
            "{} of the I/O of the host's processes",
            Quantity::percent(100.0 * c.share)
        )),
    )
}
