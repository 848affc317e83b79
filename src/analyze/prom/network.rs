//! Network interfaces losing packets (node_exporter `node_network_{receive,transmit}_{errs,
//! drop}_total`): errors and drops per second over 5 minutes, worth a look only when both
//! the rate and the share of the interface's packets are material, so the odd drop on a
//! loopback or a container's veth is not noise in the findings.

use async_trait::async_trait;

use super::{Prom, by_identity, host, identity, label, labels_map, pick, selector};
use crate::analyze::{
    AnalyzeError, Analyzer, Entity, Fact, FactClass, Quantity, Scope, Severity, Source, Unit,
};

/// Errors or drops per second worth a look…
const MIN_PER_SECOND: f64 = 1.0;
/// …when they are also this share of the packets (awesome-prometheus-alerts'
/// `HostNetworkReceiveErrors` uses 1 %), and critical beyond the second share.
const WARN_SHARE: f64 = 0.01;
const CRIT_SHARE: f64 = 0.10;

pub struct NetworkErrors(pub Prom);

#[async_trait]
impl Analyzer for NetworkErrors {
    fn name(&self) -> &'static str {
        "network_errors"
    }

    async fn run(&self, scope: &Scope) -> Result<Vec<Fact>, AnalyzeError> {
        let left = super::Lookups::default();
        let mut facts = Vec::new();
        for (dir, done) in [("receive", "received"), ("transmit", "transmitted")] {
            let packets = by_identity(
                self.0
                    .vector(&format!("rate(node_network_{dir}_packets_total[5m])"))
                    .await?,
            );
            for (kind, word) in [("errs", "errors"), ("drop", "drops")] {
                let metric = format!("node_network_{dir}_{kind}_total");
                let bad = self
                    .0
                    .vector(&format!("rate({metric}[5m]) >= {MIN_PER_SECOND}"))
                    .await?;
                for s in bad {
                    let pkts = packets.get(&identity(&s.metric)).copied().unwrap_or(0.0);
                    // Errors and drops are counted apart from the packets that got through.
                    let share = s.value / (pkts + s.value);
                    if !share.is_finite() || share < WARN_SHARE {
                        continue;
                    }
                    let severity = match share >= CRIT_SHARE {
                        true => Severity::Critical,
                        false => Severity::Warning,
                    };
                    let device = label(&s.metric, "device");
                    let sel = selector(pick(&s.metric, &["instance", "job", "device"]));
                    let query = format!("rate({metric}{sel}[5m])");
                    let since = self
                        .0
                        .since(&left, &query, scope, |v| v >= MIN_PER_SECOND)
                        .await;
                    facts.push(
                        Fact::new(
                            FactClass::Saturation,
                            self.name(),
                            Entity::new("interface", device)
                                .on_host(host(&s.metric))
                                .with_labels(labels_map(&s.metric)),
                            format!("{dir} {word}"),
                            severity,
                            Source::promql(&query),
                        )
                        .value(Quantity::new(s.value, Unit::PerSecond))
                        .since(since)
                        .detail(format!(
                            "{} of the packets {done}",
                            Quantity::percent(100.0 * share)
                        )),
                    );
                }
            }
        }
        Ok(facts)
    }
}
