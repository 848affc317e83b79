//! Scrape targets down (`up == 0`): since when (from the history of each down target
//! only) and the scrape error Prometheus reports for it (`/api/v1/targets` `lastError`,
//! with any URL in it shown without credentials or query).

use async_trait::async_trait;

use super::history::last_transition;
use super::{Prom, host, labels_map, pick, selector};
use crate::analyze::{AnalyzeError, Analyzer, Entity, Fact, FactClass, Scope, Severity, Source};
use crate::integrations::prometheus::{Labels, Target};

/// The labels that name one scrape target.
const TARGET_LABELS: [&str; 2] = ["job", "instance"];

pub struct TargetsDown(pub Prom);

#[async_trait]
impl Analyzer for TargetsDown {
    fn name(&self) -> &'static str {
        "targets_down"
    }

    async fn run(&self, scope: &Scope) -> Result<Vec<Fact>, AnalyzeError> {
        let mut down = self.0.vector("up == 0").await?;
        if down.is_empty() {
            return Ok(Vec::new());
        }
        down.sort_by(|a, b| a.metric.cmp(&b.metric));
        let queries: Vec<String> = down
            .iter()
            .map(|s| format!("up{}", selector(pick(&s.metric, &TARGET_LABELS))))
            .collect();
        let (histories, targets) = tokio::join!(
            self.0.histories(&queries, scope),
            self.0.client.targets(Some("active"))
        );
        let histories = histories?;
        // The scrape errors only explain; without them the facts still stand.
        let targets = targets.map(|t| t.active_targets).unwrap_or_else(|e| {
            tracing::debug!(error = %e, "targets API unavailable to targets_down");
            Vec::new()
        });
        let mut facts = Vec::new();
        for (i, s) in down.iter().enumerate() {
            let since = histories
                .get(i)
                .and_then(|h| h.iter().find(|x| x.metric == s.metric).or(h.first()))
                .and_then(|h| last_transition(&h.values))
                .map(|(t, _)| t);
            let name = s
                .metric
                .get("instance")
                .or(s.metric.get("job"))
                .cloned()
                .unwrap_or_else(|| "?".into());
            let mut fact = Fact::new(
                FactClass::Availability,
                self.name(),
                Entity::new("target", name)
                    .on_host(host(&s.metric))
                    .with_labels(labels_map(&s.metric)),
                // The job says what the target is (`smartctl`, `postgres`): an instance's
                // address alone does not.
                match s.metric.get("job") {
                    Some(job) => format!("scrape target of job {job} down"),
                    None => "scrape target down".into(),
                },
                Severity::Critical,
                Source::promql(&queries[i]),
            )
            .since(since);
            if let Some(t) = matching_target(&targets, &s.metric) {
                fact = fact.detail(scrape_error(t));
            }
            facts.push(fact);
        }
        Ok(facts)
    }
}

/// The active target whose labels carry `labels`' job and instance.
fn matching_target<'a>(targets: &'a [Target], labels: &Labels) -> Option<&'a Target> {
    targets.iter().find(|t| {
        TARGET_LABELS
            .iter()
            .all(|k| t.labels.get(*k) == labels.get(*k))
    })
}

/// "job node: <last error>" with URLs shown without credentials, query or fragment.
fn scrape_error(t: &Target) -> String {
    let error = t
        .last_error
        .split(' ')
        .map(redact_word)
        .collect::<Vec<_>>()
        .join(" ");
    match error.trim().is_empty() {
        true => format!("Prometheus reports the target {}", t.health),
        false => format!("scrape error: {}", error.trim()),
    }
}

/// A word of an error message, with a URL in it (possibly quoted) redacted.
pub(crate) fn redact_word(word: &str) -> String {
    let Some(start) = word.find("http://").or_else(|| word.find("https://")) else {
        return word.to_string();
    };
    let (head, rest) = word.split_at(start);
    let end = rest.find(['"', '\'']).unwrap_or(rest.len());
    let (url, tail) = rest.split_at(end);
    let url = url.trim_end_matches(':');
    let shown = match url::Url::parse(url) {
        Ok(u) => crate::config::redact_url(&u),
        Err(_) => "<url>".to_string(),
    };
    let colon = if rest[..end].ends_with(':') { ":" } else { "" };
    format!("{head}{shown}{colon}{tail}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scrape_error_keeps_its_cause_and_loses_credentials_and_query() {
        let t = Target {
            last_error: "Get \"http://user:pw@10.0.0.5:9100/metrics?token=s3cr3t\": dial tcp \
                         10.0.0.5:9100: connect: connection refused"
                .into(),
            health: "down".into(),
            ..Default::default()
        };
        assert_eq!(
            scrape_error(&t),
            "scrape error: Get \"http://***@10.0.0.5:9100/metrics\": dial tcp 10.0.0.5:9100: \
             connect: connection refused"
        );
        let quiet = Target {
            health: "down".into(),
            ..Default::default()
        };
        assert_eq!(scrape_error(&quiet), "Prometheus reports the target down");
        assert_eq!(redact_word("ünïcode"), "ünïcode");
        assert_eq!(redact_word("http://[bad"), "<url>");
    }
}
