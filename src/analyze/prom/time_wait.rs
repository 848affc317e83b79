//! `time_wait`: a host whose TCP sockets in TIME_WAIT near the ephemeral port range
//! (node_exporter's default sockstat collector, `node_sockstat_TCP_tw`). Every outgoing
//! connection a host closes first holds its local port for about a minute; a client that
//! opens and closes connections fast (no keep-alive, no pool) runs one destination out of
//! ports, and its next connections fail with "Cannot assign requested address"
//! (EADDRNOTAVAIL) while CPU, memory and the network look idle. Linux's default range
//! (`net.ipv4.ip_local_port_range`, 32768–60999) holds 28,232 ports; node_exporter does not
//! export the setting, so the share is told against that default, named as such. With it:
//! since when the count has been high, what it was at the window's start, and the pace of
//! new outgoing connections (`node_netstat_Tcp_ActiveOpens`).

use async_trait::async_trait;

use super::{Lookups, Prom, host, labels_map, pick, selector};
use crate::analyze::{
    AnalyzeError, Analyzer, Entity, Fact, FactClass, Quantity, Scope, Severity, Source, Unit,
    round_sig,
};
use crate::integrations::prometheus::Labels;

const NAME: &str = "time_wait";
const METRIC: &str = "node_sockstat_TCP_tw";
const OPENS: &str = "node_netstat_Tcp_ActiveOpens";
/// The ports of Linux's default ephemeral range, 32768–60999.
const DEFAULT_PORTS: f64 = 28232.0;
/// Shares of the default range from which the count is worth a look, and critical.
const WARN_SHARE: f64 = 0.5;
const CRIT_SHARE: f64 = 0.85;

pub struct TimeWait(pub Prom);

#[async_trait]
impl Analyzer for TimeWait {
    fn name(&self) -> &'static str {
        NAME
    }

    async fn run(&self, scope: &Scope) -> Result<Vec<Fact>, AnalyzeError> {
        let names = self.0.metric_names(scope).await?;
        if !names.iter().any(|n| n == METRIC) {
            return Ok(Vec::new());
        }
        let warn = WARN_SHARE * DEFAULT_PORTS;
        let high = self.0.vector(&format!("{METRIC} >= {warn}")).await?;
        if high.is_empty() {
            return Ok(Vec::new());
        }
        let left = Lookups::default();
        let opens_range = self.0.rate_range(OPENS).await;
        let mut facts = Vec::new();
        for s in high {
            let Some(severity) = severity(s.value) else {
                continue;
            };
            let sel = selector(pick(&s.metric, &["instance", "job"]));
            let query = format!("{METRIC}{sel}");
            let since = self.0.since(&left, &query, scope, |v| v >= warn).await;
            let first = self
                .0
                .vector(&format!(
                    "{METRIC}{sel} offset {}s",
                    scope.window().num_seconds().max(60)
                ))
                .await
                .ok()
                .and_then(|v| v.first().map(|x| x.value));
            let opens = match names.iter().any(|n| n == OPENS) {
                true => self
                    .0
                    .vector(&format!("rate({OPENS}{sel}[{opens_range}])"))
                    .await
                    .ok()
                    .and_then(|v| v.first().map(|x| x.value)),
                false => None,
            };
            facts.push(fact(&s.metric, s.value, severity, &query, first, opens).since(since));
        }
        Ok(facts)
    }
}

/// How bad `tw` sockets in TIME_WAIT are against the default range (`None`: fine).
fn severity(tw: f64) -> Option<Severity> {
    if !tw.is_finite() || tw < WARN_SHARE * DEFAULT_PORTS {
        return None;
    }
    Some(match tw >= CRIT_SHARE * DEFAULT_PORTS {
        true => Severity::Critical,
        false => Severity::Warning,
    })
}

/// The fact of one host's `tw` sockets in TIME_WAIT, with the count at the window's start
/// and the new outgoing connections per second when read.
fn fact(
    labels: &Labels,
    tw: f64,
    severity: Severity,
    query: &str,
    first: Option<f64>,
    opens: Option<f64>,
) -> Fact {
    let name = host(labels).unwrap_or_else(|| "?".into());
    let mut detail = format!(
        "{} % of the {} ports of Linux's default ephemeral range (32768–60999; the host's \
         net.ipv4.ip_local_port_range is not exported): once one destination's ports are \
         all waiting, new connections to it fail with \"Cannot assign requested address\"",
        round_sig(100.0 * tw / DEFAULT_PORTS),
        DEFAULT_PORTS
    );
    if let Some(f) = first.filter(|f| f.is_finite() && *f < tw) {
        detail.push_str(&format!("; {} at the window's start", round_sig(f)));
    }
    if let Some(o) = opens.filter(|o| o.is_finite() && *o > 0.0) {
        detail.push_str(&format!(
            "; opening {} outgoing connections per second ({OPENS})",
            round_sig(o)
        ));
    }
    Fact::new(
        FactClass::Exhaustion,
        NAME,
        Entity::new("host", name.clone())
            .on_host(Some(name))
            .with_labels(labels_map(labels)),
        "TCP sockets in TIME_WAIT",
        severity,
        Source::promql(query),
    )
    .value(Quantity::new(tw, Unit::Count))
    .detail(detail)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::prom::captures::captured;

    #[test]
    fn the_count_is_judged_against_the_default_range() {
        assert_eq!(severity(1.0), None);
        assert_eq!(severity(14_000.0), None);
        assert_eq!(severity(14_116.0), Some(Severity::Warning));
        assert_eq!(severity(24_000.0), Some(Severity::Critical));
        assert_eq!(severity(f64::NAN), None);
        assert_eq!(severity(f64::INFINITY), None);
    }

    #[test]
    fn a_real_hosts_sockets_are_fine_and_a_crowded_ones_fact_says_why_it_matters() {
        let text = include_str!("../../../tests/fixtures/exporters/node_exporter.prom");
        let samples = captured(text, &[("instance", "quay:9100"), ("job", "node")], 0.0);
        let tw = &samples[METRIC][0];
        assert!(severity(tw.value).is_none(), "a quiet host: {}", tw.value);

        let f = fact(
            &tw.metric,
            26_100.0,
            Severity::Critical,
            "node_sockstat_TCP_tw{instance=\"quay:9100\"}",
            Some(40.0),
            Some(410.0),
        );
        assert_eq!(f.entity.name, "quay");
        assert_eq!(f.class, FactClass::Exhaustion);
        let d = f.detail.as_deref().unwrap();
        assert!(d.starts_with("92.4 % of the 28232 ports"), "{d}");
        assert!(d.contains("Cannot assign requested address"), "{d}");
        assert!(d.contains("; 40 at the window's start"), "{d}");
        assert!(
            d.contains("opening 410 outgoing connections per second"),
            "{d}"
        );
        let quiet = fact(
            &tw.metric,
            15_000.0,
            Severity::Warning,
            "q",
            Some(16_000.0),
            None,
        );
        let d = quiet.detail.as_deref().unwrap();
        assert!(
            !d.contains("window's start") && !d.contains("opening"),
            "{d}"
        );
    }
}
