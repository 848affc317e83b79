//! Disks busy all the time (node_exporter `node_disk_io_time_seconds_total`: the share of
//! the last 5 minutes a device had I/O in flight), per device, with the average queue
//! (`node_disk_io_time_weighted_seconds_total`) that says how far past busy it is, and the
//! process groups doing the most I/O on its host (the top one its own fact when it does
//! most of it).

use async_trait::async_trait;

use super::{Prom, by_identity, host, identity, io_consumers, label, labels_map, pick, selector};
use crate::analyze::{
    AnalyzeError, Analyzer, Entity, Fact, FactClass, Quantity, Scope, Severity, Source, round_sig,
};

/// Busy share of a device worth a look, and critical (a device busy all the time queues
/// every request behind the others).
const WARN_PERCENT: f64 = 90.0;
const CRIT_PERCENT: f64 = 99.0;

const BUSY: &str = "100 * rate(node_disk_io_time_seconds_total[5m])";
const QUEUE: &str = "rate(node_disk_io_time_weighted_seconds_total[5m])";

pub struct DiskIo(pub Prom);

#[async_trait]
impl Analyzer for DiskIo {
    fn name(&self) -> &'static str {
        "disk_io"
    }

    async fn run(&self, scope: &Scope) -> Result<Vec<Fact>, AnalyzeError> {
        let left = super::Lookups::default();
        let busy = self.0.vector(&format!("{BUSY} >= {WARN_PERCENT}")).await?;
        if busy.is_empty() {
            return Ok(Vec::new());
        }
        let queue = by_identity(self.0.vector(QUEUE).await?);
        let io = io_consumers::by_host(&self.0).await?;
        let mut named_hosts = Vec::new();
        let mut facts = Vec::new();
        for s in busy {
            let share = s.value.min(100.0);
            let severity = match share >= CRIT_PERCENT {
                true => Severity::Critical,
                false => Severity::Warning,
            };
            let device = label(&s.metric, "device");
            let sel = selector(pick(&s.metric, &["instance", "job", "device"]));
            let query = format!("100 * rate(node_disk_io_time_seconds_total{sel}[5m])");
            let since = self
                .0
                .since(&left, &query, scope, |v| v >= WARN_PERCENT)
                .await;
            let mut fact = Fact::new(
                FactClass::Saturation,
                self.name(),
                Entity::new("disk", device)
                    .on_host(host(&s.metric))
                    .with_labels(labels_map(&s.metric)),
                "time busy with I/O",
                severity,
                Source::promql(&query),
            )
            .value(Quantity::percent(share))
            .since(since);
            let mut detail = Vec::new();
            if let Some(q) = queue.get(&identity(&s.metric)) {
                detail.push(format!("{} requests in flight on average", round_sig(*q)));
            }
            let host_name = host(&s.metric);
            let consumers = host_name.as_ref().and_then(|h| io.get(h));
            if let Some(c) = consumers {
                detail.push(io_consumers::named(c));
            }
            if !detail.is_empty() {
                fact = fact.detail(detail.join("; "));
            }
            facts.push(fact);
            // The process doing most of the host's I/O, once per host.
            if let (Some(h), Some(c)) = (host_name, consumers)
                && !named_hosts.contains(&h)
            {
                facts.extend(io_consumers::top_fact(self.name(), c, &h, severity, since));
                named_hosts.push(h);
            }
        }
        Ok(facts)
    }
}
