//! Alert-first evidence: before the first LLM call, the agent gathers the facts a person
//! would look at first, so a small model that calls no tool (or the wrong one) still sees
//! them. They run through the tool registry like the model's own calls (same output, same
//! metrics), and reach the model as earlier tool calls `evidence_N` it can cite.
//!
//! - An alert: the rule that fired (the `g0.expr` of a Prometheus `generatorURL`, else the
//!   Prometheus rules API or the Grafana ruler, by alert name), its value now, and the
//!   series it reads for the alert's identifying labels over the last day (the range tool
//!   computes change per day and time to a limit). A filesystem alert also gets the used
//!   ratio of that filesystem over the day; an application's alert (a rule on neither
//!   node-exporter nor probe series) the overview of the host it runs on.
//! - An alert storm (one rule firing on many instances, `alerts::storm`): the rule across
//!   all instances instead of one: how many series breach it now and over the lookback
//!   (`count(rule)`, so when it began), and the ten worst (`topk`/`bottomk` of its value);
//!   without a known rule, `up` of the instances listed. Topics read only the labels the
//!   groups share.
//! - An ask: the instances it names (matched against Prometheus' `instance` values), with
//!   `up` and their filesystems (the one it names, when it names a path).

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Value, json};

use super::promql::{
    escape, fires_below, identity_by, identity_selector, metric_names, value_expr, without_comments,
};
use super::{AlertContext, Investigation, Trigger};
use crate::integrations::{GrafanaClient, PrometheusClient, Upstreams};
use crate::tools::ToolRegistry;

/// Most calls gathered before the first LLM call (each costs prompt tokens; the health
/// sweep's facts cover the rest).
const MAX_CALLS: usize = 4;
/// How far back the range queries look: a day for filesystems (a fill rate needs it), six
/// hours for the rest (a finer step, so "since when" is exact to two minutes).
const FILESYSTEM_LOOKBACK: &str = "24h";
const LOOKBACK: &str = "6h";
const QUERY: &str = "prometheus_query";
const QUERY_RANGE: &str = "prometheus_query_range";
const OVERVIEW: &str = crate::tools::overview::PrometheusInstanceOverview::NAME;

/// An alerting rule's query, by the language of its datasource.
#[derive(Debug, PartialEq)]
enum Rule {
    Promql(String),
    Logql(String),
}

/// Whether a query of unknown datasource is LogQL: a stream selector followed by a line
/// filter or a parser stage, which PromQL has no syntax for.
fn looks_like_logql(q: &str) -> bool {
    let Some(close) = q.find('}') else {
        return false;
    };
    let after = q[close + 1..].trim_start();
    let filter = ["|=", "|~", "!=", "!~"].iter().any(|op| {
        after
            .strip_prefix(op)
            .is_some_and(|rest| rest.trim_start().starts_with(['"', '`']))
    });
    let stage = [
        "| json",
        "| logfmt",
        "| pattern",
        "| regexp",
        "| line_format",
        "| label_format",
        "| unwrap",
        "| decolorize",
    ]
    .iter()
    .any(|p| after.starts_with(p));
    filter || stage
}

/// The Loki query of a rule over the last hour.
fn loki(q: &str) -> PlannedCall {
    PlannedCall {
        name: "loki_query",
        arguments: json!({ "query": q, "since": "1h" }),
    }
}

/// A tool call decided before the loop.
#[derive(Clone, Debug, PartialEq)]
pub struct PlannedCall {
    pub name: &'static str,
    pub arguments: Value,
}

/// Finds the evidence to gather for an investigation.
#[derive(Clone, Default)]
pub struct EvidencePlanner {
    prometheus: Option<Arc<PrometheusClient>>,
    grafana: Option<Arc<GrafanaClient>>,
}

/// What the alert context says about the first firing alert.
#[derive(Debug, Default)]
struct AlertFacts {
    labels: BTreeMap<String, String>,
    /// The rule's expression, when the alert carries it.
    rule_expr: Option<String>,
    /// Set for a storm's investigation.
    storm: Option<StormFacts>,
}

/// What a storm's context says about its groups.
#[derive(Debug, Default)]
struct StormFacts {
    /// The `instance` values listed (a bounded few of the affected groups).
    instances: Vec<String>,
}

/// Instances listed in a storm's fallback `up` query.
const STORM_UP_INSTANCES: usize = 20;

impl EvidencePlanner {
    /// A planner reading the configured Prometheus and Grafana (none: no evidence) through
    /// the shared clients.
    pub fn new(upstreams: &Upstreams) -> Self {
        Self {
            prometheus: upstreams.prometheus.clone(),
            grafana: upstreams.grafana.clone(),
        }
    }

    /// The calls to run before the first LLM call of `inv`, only with tools `tools` has:
    /// the alert's rule and the series it reads, or the overview of the instances a
    /// question names (matched against the `instance` values in the data). The other
    /// integrations are covered by the health sweep. Failures to read rules or instances
    /// only mean less evidence.
    pub async fn plan(&self, inv: &Investigation, tools: &ToolRegistry) -> Vec<PlannedCall> {
        let overview = tools.get(OVERVIEW).is_some();
        if self.prometheus.is_none() || tools.get(QUERY).is_none() {
            return Vec::new();
        }
        let mut calls = match inv.trigger {
            Trigger::Alert => match inv.alert().and_then(alert_facts) {
                Some(facts) => self.for_alert(&facts, overview).await,
                None => Vec::new(),
            },
            Trigger::Ask | Trigger::Schedule => self.for_question(&inv.prompt, overview).await,
        };
        calls.retain(|c| tools.get(c.name).is_some());
        calls.truncate(MAX_CALLS);
        calls
    }

    async fn for_alert(&self, facts: &AlertFacts, overview: bool) -> Vec<PlannedCall> {
        if let Some(storm) = &facts.storm {
            return self.for_storm(facts, storm).await;
        }
        let expr = match self.rule_expr(facts).await {
            Some(Rule::Logql(q)) => return vec![loki(&q)],
            Some(Rule::Promql(e)) => Some(e),
            None => None,
        };
        let Some(expr) = expr else {
            return match facts.labels.get("instance") {
                // A probed endpoint: every series of its probe now (status code, timings,
                // TLS), and its success and status code over the lookback, whose step
                // ("200 → 502 at …, 502 for the last 25 min") becomes a key figure.
                Some(instance)
                    if instance.contains("://")
                        || facts.labels.get("job").is_some_and(|j| j == "blackbox") =>
                {
                    let instance = escape(instance);
                    vec![
                        query(&format!("{{instance=\"{instance}\"}}")),
                        query_range(&format!(
                            "{{__name__=~\"probe_success|probe_http_status_code\",instance=\"{instance}\"}}"
                        )),
                    ]
                }
                Some(instance) => instance_calls(instance, None, overview),
                None => Vec::new(),
            };
        };
        let selector = identity_selector(&facts.labels);
        let mut calls = vec![query(&value_expr(&expr))];
        let metrics = metric_names(&expr);
        if let Some(fs) = filesystem_ratio(&metrics, &selector) {
            calls.push(query_range_over(&fs, FILESYSTEM_LOOKBACK));
        }
        // A counter's values say nothing, its rate does: summed to what the alert is about
        // (sixteen CPU-mode series of seconds counted since boot were a third of a small
        // model's first prompt). Histogram buckets are the rule's own value's business.
        let by = identity_by(&facts.labels);
        calls.extend(
            metrics
                .iter()
                .filter(|m| *m != "up" || metrics.len() == 1)
                .filter(|m| !m.ends_with("_bucket"))
                .map(|m| match is_counter(m) {
                    true => query_range(&format!("sum by ({by}) (rate({m}{selector}[5m]))")),
                    false => query_range(&format!("{m}{selector}")),
                }),
        );
        // An application's alert (its rule reads no host or probe series): the host it
        // runs on, whose CPU, memory and disks a person looks at next.
        let host_metric =
            |m: &String| m.starts_with("node_") || m.starts_with("probe_") || m == "up";
        let instance = facts.labels.get("instance").filter(|i| !i.contains("://"));
        if let Some(instance) = instance.filter(|_| overview && !metrics.iter().any(host_metric)) {
            let host = instance
                .rsplit_once(':')
                .map_or(instance.as_str(), |(h, _)| h);
            if self.is_measured_host(host).await {
                calls.push(PlannedCall {
                    name: OVERVIEW,
                    arguments: json!({ "instance": host }),
                });
            }
        }
        calls
    }

    /// Whether a node exporter reports on `host` (an application's exporter may run
    /// elsewhere, e.g. kube-state-metrics: an overview of it would be lines of "no data"
    /// that cost the model time and say nothing). Without an answer, yes.
    async fn is_measured_host(&self, host: &str) -> bool {
        let Some(prom) = &self.prometheus else {
            return true;
        };
        let shown = r#"{__name__=~"node_cpu_seconds_total|node_memory_MemAvailable_bytes|node_filesystem_avail_bytes"}"#;
        match prom.label_values("instance", &[shown]).await {
            Ok(nodes) => nodes
                .iter()
                .any(|i| i.rsplit_once(':').map_or(i.as_str(), |(h, _)| h) == host),
            Err(_) => true,
        }
    }

    /// A storm: the rule across every instance, not one of them.
    async fn for_storm(&self, facts: &AlertFacts, storm: &StormFacts) -> Vec<PlannedCall> {
        let expr = match self.rule_expr(facts).await {
            Some(Rule::Logql(q)) => return vec![loki(&q)],
            Some(Rule::Promql(e)) => Some(e),
            None => None,
        };
        let Some(expr) = expr else {
            let listed: Vec<String> = storm
                .instances
                .iter()
                .take(STORM_UP_INSTANCES)
                .map(|i| regex_lite::escape(i))
                .collect();
            return match listed.is_empty() {
                true => Vec::new(),
                false => vec![query(&format!(
                    "up{{instance=~\"{}\"}}",
                    escape(&listed.join("|"))
                ))],
            };
        };
        let value = value_expr(&expr);
        let worst = if fires_below(&expr) {
            "bottomk"
        } else {
            "topk"
        };
        let lookback = match filesystem_ratio(&metric_names(&expr), "") {
            Some(_) => FILESYSTEM_LOOKBACK,
            None => LOOKBACK,
        };
        vec![
            query(&format!("count({expr})")),
            query(&format!("{worst}(10, {value})")),
            query_range_over(&format!("count({expr})"), lookback),
        ]
    }

    /// The expression of the rule behind the alert, in the language of its datasource,
    /// without its `# comments` (it is wrapped in `count(…)`, where a comment would swallow
    /// the closing parenthesis).
    async fn rule_expr(&self, facts: &AlertFacts) -> Option<Rule> {
        let clean =
            |e: String| Some(without_comments(&e).trim().to_string()).filter(|e| !e.is_empty());
        match self.rule_text(facts).await? {
            Rule::Promql(e) => clean(e).map(Rule::Promql),
            Rule::Logql(e) => clean(e).map(Rule::Logql),
        }
    }

    /// The expression of the rule behind the alert, as written.
    async fn rule_text(&self, facts: &AlertFacts) -> Option<Rule> {
        if let Some(expr) = &facts.rule_expr {
            return Some(Rule::Promql(expr.clone()));
        }
        let name = facts.labels.get("alertname")?;
        if let Some(prom) = &self.prometheus
            && let Ok(groups) = prom.rules().await
        {
            let found = groups
                .iter()
                .flat_map(|g| &g.rules)
                .find(|r| r.kind == "alerting" && &r.name == name);
            if let Some(rule) = found {
                return Some(Rule::Promql(rule.query.clone()));
            }
        }
        let grafana = self.grafana.as_ref()?;
        let rules = grafana.alert_rules().await.ok()?;
        let rule = rules.iter().find(|r| &r.title == name)?;
        // The rule's data queries; the condition and other server-side expressions
        // (math, reduce, threshold) are not queries of a datasource.
        let query = rule
            .data
            .iter()
            .filter(|q| q.datasource_uid != "__expr__" && q.ref_id != rule.condition)
            .find(|q| q.text().is_some())?;
        let text = query.text()?.to_string();
        let kind = query
            .model
            .pointer("/datasource/type")
            .and_then(Value::as_str);
        match kind {
            Some("loki") => Some(Rule::Logql(text)),
            Some("prometheus") => Some(Rule::Promql(text)),
            _ if looks_like_logql(&text) => Some(Rule::Logql(text)),
            _ => Some(Rule::Promql(text)),
        }
    }

    async fn for_question(&self, question: &str, overview: bool) -> Vec<PlannedCall> {
        let Some(prom) = &self.prometheus else {
            return Vec::new();
        };
        let Ok(instances) = prom.label_values("instance", &[]).await else {
            return Vec::new();
        };
        let words: Vec<String> = question
            .split(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':' | '_')))
            .map(|w| w.trim_matches('.').to_ascii_lowercase())
            .filter(|w| !w.is_empty())
            .collect();
        let path = question
            .split_whitespace()
            .map(|w| {
                w.trim_matches(|c: char| matches!(c, ',' | '?' | '!' | '"' | '\'' | ')' | '('))
            })
            .find(|w| w.starts_with('/') && w.len() > 1)
            .map(|w| w.trim_end_matches('.'));
        instances
            .iter()
            .filter(|i| {
                let host = i.split(':').next().unwrap_or(i).to_ascii_lowercase();
                words
                    .iter()
                    .any(|w| *w == host || *w == i.to_ascii_lowercase())
            })
            .take(2)
            .flat_map(|i| instance_calls(i, path, overview))
            .collect()
    }
}

/// `up` and filesystem usage of `instance` (the overview tool when there is one; the used
/// ratio over the day of the filesystem at `path`).
fn instance_calls(instance: &str, path: Option<&str>, overview: bool) -> Vec<PlannedCall> {
    let mut calls = Vec::new();
    if overview {
        calls.push(PlannedCall {
            name: OVERVIEW,
            arguments: json!({ "instance": instance }),
        });
    }
    let instance = escape(instance);
    if !overview {
        calls.push(query(&format!("up{{instance=\"{instance}\"}}")));
    }
    match path {
        Some(p) => {
            let sel = format!("{{instance=\"{instance}\",mountpoint=\"{}\"}}", escape(p));
            calls.push(query_range_over(&used_ratio(&sel), FILESYSTEM_LOOKBACK));
        }
        None if !overview => {
            let sel = format!("{{instance=\"{instance}\",fstype!~\"tmpfs|overlay|squashfs\"}}");
            calls.push(query(&used_ratio(&sel)));
        }
        None => {}
    }
    calls
}

/// The used ratio of a filesystem when the expression reads node filesystem space.
fn filesystem_ratio(metrics: &[String], selector: &str) -> Option<String> {
    metrics
        .iter()
        .any(|m| m == "node_filesystem_avail_bytes" || m == "node_filesystem_free_bytes")
        .then(|| used_ratio(selector))
}

fn used_ratio(selector: &str) -> String {
    format!("1 - node_filesystem_avail_bytes{selector} / node_filesystem_size_bytes{selector}")
}

fn query(q: &str) -> PlannedCall {
    PlannedCall {
        name: QUERY,
        arguments: json!({ "query": q }),
    }
}

/// Whether metric `name` is a counter by Prometheus' naming (`_total`, a summary's or
/// histogram's `_count` and `_sum`).
fn is_counter(name: &str) -> bool {
    ["_total", "_count", "_sum"]
        .iter()
        .any(|s| name.ends_with(s))
}

fn query_range(q: &str) -> PlannedCall {
    query_range_over(q, LOOKBACK)
}

fn query_range_over(q: &str, lookback: &str) -> PlannedCall {
    PlannedCall {
        name: QUERY_RANGE,
        arguments: json!({ "query": q, "start": lookback }),
    }
}

/// What the evidence reads of an alert investigation: its first alert's labels and rule;
/// for a storm, without the labels its groups differ in, and the instances it lists.
fn alert_facts(alert: &AlertContext) -> Option<AlertFacts> {
    let storm = alert.storm().map(|s| StormFacts {
        instances: s
            .members
            .iter()
            .filter_map(|m| m.get("instance").cloned())
            .collect(),
    });
    Some(AlertFacts {
        labels: alert.first_labels()?,
        rule_expr: alert.first()?.rule_expr(),
        storm,
    })
}

#[cfg(test)]
mod tests;
