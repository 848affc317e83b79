//! A scrape target whose series count exploded: an application that began putting user
//! ids, paths or session ids into labels multiplies its series, and Prometheus, which
//! keeps every head series in memory, slows down or is OOM-killed. Prometheus records for
//! every target the samples each scrape returned (`scrape_samples_scraped`, and what
//! metric relabeling kept, `scrape_samples_post_metric_relabeling`), and for itself the
//! series in its head block (`prometheus_tsdb_head_series`). A target whose samples per
//! scrape are now many times what they were over most of the look-back is told with its
//! level before and after, since when, and whether the head of a Prometheus rose with it.
//! The step detector leaves `scrape_*` out as bookkeeping, so this is the one fact.

use async_trait::async_trait;
use chrono::TimeDelta;

use super::since::rose_to;
use super::{Prom, by_identity, host, identity, labels_map, pick, selector};
use crate::analyze::{
    AnalyzeError, Analyzer, Entity, Fact, FactClass, Quantity, Scope, Severity, Source, round_sig,
};
use crate::integrations::prometheus::Labels;

/// How many times its usual samples a target's scrape must return to have exploded: a
/// target grows by a few percent as new label values appear (a new endpoint, a new
/// status code); tripling at once is a label taking unbounded values.
const RATIO: f64 = 3.0;
/// And by how many samples at least: ten thousand series are tens of MiB of Prometheus'
/// head (a few KiB each), felt by a small instance; a tiny target tripling is not.
const MIN_RISE: f64 = 10_000.0;
/// Ten times its usual samples, or a Prometheus whose head doubled with it, is critical.
const CRIT_RATIO: f64 = 10.0;
/// A head that rose by this factor (and by [`MIN_RISE`] series) over the look-back rose
/// with the target (a Prometheus started minutes ago grows from nothing).
const HEAD_RATIO: f64 = 1.5;
/// The quantile of the look-back taken as a target's usual samples: low, so that an
/// explosion over most of the look-back is still seen, and not the minimum, so that a
/// failed scrape (0 samples) is not the usual.
const USUAL_QUANTILE: f64 = 0.1;
/// Targets reported per sweep, the largest rise first.
const MAX_FACTS: usize = 3;
/// Points a target's samples are read at to tell since when.
const POINTS: u32 = 240;

pub struct ScrapeSeries(pub Prom);

/// A target's samples per scrape, usual and now.
#[derive(Debug, PartialEq)]
struct Exploded {
    labels: Labels,
    usual: f64,
    now: f64,
}

/// The targets of `now` whose samples exploded against their `usual`, the largest rise
/// first.
fn exploded(
    now: &std::collections::HashMap<Labels, f64>,
    usual: &std::collections::HashMap<Labels, f64>,
) -> Vec<Exploded> {
    let mut out: Vec<Exploded> = now
        .iter()
        .filter_map(|(k, &n)| {
            let u = *usual.get(k)?;
            (n >= RATIO * u && n - u >= MIN_RISE).then(|| Exploded {
                labels: k.clone(),
                usual: u,
                now: n,
            })
        })
        .collect();
    out.sort_by(|a, b| (b.now - b.usual).total_cmp(&(a.now - a.usual)));
    out
}

#[async_trait]
impl Analyzer for ScrapeSeries {
    fn name(&self) -> &'static str {
        "scrape_series"
    }

    async fn run(&self, scope: &Scope) -> Result<Vec<Fact>, AnalyzeError> {
        let span = scope
            .window()
            .num_seconds()
            .clamp(6 * 3600, 86400)
            .max(3600);
        let usual_q = |m: &str| format!("quantile_over_time({USUAL_QUANTILE}, {m}[{span}s])");
        let now = by_identity(self.0.vector("scrape_samples_scraped").await?);
        if now.is_empty() {
            return Ok(Vec::new());
        }
        let usual = by_identity(self.0.vector(&usual_q("scrape_samples_scraped")).await?);
        let mut found = exploded(&now, &usual);
        found.truncate(MAX_FACTS);
        if found.is_empty() {
            return Ok(Vec::new());
        }
        // The heads of the Prometheus servers: the most of the last hour (a server in an
        // OOM loop restarts with a smaller head) against their usual.
        let heads_now = self
            .0
            .vector("max_over_time(prometheus_tsdb_head_series[1h])")
            .await
            .unwrap_or_default();
        let heads_usual = by_identity(
            self.0
                .vector(&usual_q("prometheus_tsdb_head_series"))
                .await
                .unwrap_or_default(),
        );
        let mut heads = Vec::new();
        for h in heads_now {
            let Some(&u) = heads_usual.get(&identity(&h.metric)) else {
                continue;
            };
            if u > 0.0 && h.value >= HEAD_RATIO * u && h.value - u >= MIN_RISE {
                let who = super::label(&h.metric, "instance");
                heads.push((who, u, h.value));
            }
        }
        let post = by_identity(
            self.0
                .vector("scrape_samples_post_metric_relabeling")
                .await
                .unwrap_or_default(),
        );
        let back = TimeDelta::seconds(span);
        let start = scope.now.checked_sub_signed(back).unwrap_or(scope.now);
        let step = std::time::Duration::from_secs((span as u64 / u64::from(POINTS)).max(15));
        let mut facts = Vec::new();
        for e in found {
            let sel = selector(pick(&e.labels, &["job", "instance"]));
            let expr = format!("scrape_samples_scraped{sel}");
            let mid = (e.usual + e.now) / 2.0;
            let since = rose_to(&self.0, &expr, (start, scope.now), step, mid).await;
            let mut detail = format!(
                "rose {}-fold, from {} to {} samples per scrape (job {}): a label taking \
                 unbounded values (ids, paths) multiplies a target's series",
                round_sig(e.now / e.usual.max(1.0)),
                round_sig(e.usual),
                round_sig(e.now),
                super::label(&e.labels, "job"),
            );
            if let Some(&kept) = post.get(&e.labels)
                && kept < 0.9 * e.now
            {
                detail.push_str(&format!("; {} kept after relabeling", round_sig(kept)));
            }
            for (who, u, n) in &heads {
                detail.push_str(&format!(
                    "; with it, prometheus_tsdb_head_series of {who} rose from {} to {}",
                    round_sig(*u),
                    round_sig(*n)
                ));
            }
            let severity = if e.now >= CRIT_RATIO * e.usual || !heads.is_empty() {
                Severity::Critical
            } else {
                Severity::Warning
            };
            let name = super::label(&e.labels, "instance");
            facts.push(
                Fact::new(
                    FactClass::Exhaustion,
                    self.name(),
                    Entity::new("target", name)
                        .on_host(host(&e.labels))
                        .with_labels(labels_map(&e.labels)),
                    "series per scrape exploded",
                    severity,
                    Source::promql(&expr),
                )
                .value(Quantity::count(e.now))
                .since(since)
                .detail(detail),
            );
        }
        Ok(facts)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;
    use crate::analyze::prom::labels;

    #[test]
    fn a_target_many_times_its_usual_samples_exploded_and_a_growing_or_small_one_did_not() {
        let t = |i: &str| labels(&[("job", "app"), ("instance", i)]);
        let now = HashMap::from([
            (t("a:1"), 611_870.0),
            (t("b:1"), 1_500.0),
            (t("c:1"), 9_000.0),
            (t("d:1"), 40_000.0),
            (t("e:1"), 30_000.0),
        ]);
        let usual = HashMap::from([
            (t("a:1"), 1_412.0),
            // Grew 7 % (new label values of a bounded set).
            (t("b:1"), 1_400.0),
            // Tripled but tiny.
            (t("c:1"), 2_000.0),
            // Quadrupled by 30 000.
            (t("d:1"), 10_000.0),
            // Doubled only.
            (t("e:1"), 15_000.0),
        ]);
        let found = exploded(&now, &usual);
        let names: Vec<&str> = found
            .iter()
            .map(|e| e.labels["instance"].as_str())
            .collect();
        assert_eq!(names, vec!["a:1", "d:1"]);
        // A target without a usual (new in the look-back) is not compared.
        let fresh = HashMap::from([(t("n:1"), 900_000.0)]);
        assert!(exploded(&fresh, &usual).is_empty());
    }
}
