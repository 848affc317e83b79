//! Prometheus HTTP API client (`/api/v1/*`): instant and range queries, alerts, rules,
//! targets, label values and the metrics' declared types. Values arrive as strings
//! (`"NaN"`, `"+Inf"` included) and are parsed to `f64`; error envelopes become
//! [`UpstreamError`]s carrying Prometheus' own text.
//! The query-answer types (`Sample`, `Series`, `QueryResult`) live in `query_result.rs`,
//! shared with the Loki client, and are re-exported here.

use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use super::query_result::{Labels, QueryResult, Sample, Series, parse_value};
pub(crate) use super::query_result::{decode_query_data, nullable};
use super::{Upstream, UpstreamError, UpstreamOptions};
use crate::config::UpstreamConfig;

/// An alert as `/api/v1/alerts` (and rules) report it.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PromAlert {
    #[serde(deserialize_with = "nullable")]
    pub labels: Labels,
    #[serde(deserialize_with = "nullable")]
    pub annotations: Labels,
    /// `pending` or `firing`.
    #[serde(deserialize_with = "nullable")]
    pub state: String,
    pub active_at: Option<DateTime<Utc>>,
    pub value: Option<String>,
}

/// An active scrape target.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Target {
    #[serde(deserialize_with = "nullable")]
    pub labels: Labels,
    #[serde(deserialize_with = "nullable")]
    pub discovered_labels: Labels,
    #[serde(deserialize_with = "nullable")]
    pub scrape_pool: String,
    #[serde(deserialize_with = "nullable")]
    pub scrape_url: String,
    /// `up`, `down` or `unknown`.
    #[serde(deserialize_with = "nullable")]
    pub health: String,
    #[serde(deserialize_with = "nullable")]
    pub last_error: String,
    pub last_scrape: Option<DateTime<Utc>>,
    pub last_scrape_duration: Option<f64>,
}

/// Active and dropped targets.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Targets {
    #[serde(deserialize_with = "nullable")]
    pub active_targets: Vec<Target>,
    #[serde(deserialize_with = "nullable")]
    pub dropped_targets: Vec<Target>,
}

/// A rule group from `/api/v1/rules`.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase", default)]
pub struct RuleGroup {
    #[serde(deserialize_with = "nullable")]
    pub name: String,
    #[serde(deserialize_with = "nullable")]
    pub file: String,
    #[serde(deserialize_with = "nullable")]
    pub rules: Vec<Rule>,
}

/// An alerting or recording rule.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Rule {
    /// `alerting` or `recording`.
    #[serde(rename = "type", deserialize_with = "nullable")]
    pub kind: String,
    #[serde(deserialize_with = "nullable")]
    pub name: String,
    #[serde(deserialize_with = "nullable")]
    pub query: String,
    /// `inactive`, `pending` or `firing` (alerting rules only).
    pub state: Option<String>,
    #[serde(deserialize_with = "nullable")]
    pub health: String,
    pub last_error: Option<String>,
    /// `for` in seconds.
    pub duration: Option<f64>,
    #[serde(deserialize_with = "nullable")]
    pub labels: Labels,
    #[serde(deserialize_with = "nullable")]
    pub annotations: Labels,
    #[serde(deserialize_with = "nullable")]
    pub alerts: Vec<PromAlert>,
}

#[derive(Deserialize)]
struct Envelope<T> {
    status: String,
    data: Option<T>,
    #[serde(rename = "errorType")]
    error_type: Option<String>,
    error: Option<String>,
    #[serde(default, deserialize_with = "nullable")]
    warnings: Vec<String>,
}

/// Prometheus' error text out of an error body such as
/// `{"status":"error","errorType":"bad_data","error":"…"}`; `None` when not an envelope.
fn envelope_error(body: &str) -> Option<String> {
    let env: Envelope<Value> = serde_json::from_str(body).ok()?;
    let error = env.error?;
    Some(match env.error_type {
        Some(t) => format!("{t}: {error}"),
        None => error,
    })
}

/// Seconds as Prometheus expects them (`1748772000.5`).
fn unix(t: DateTime<Utc>) -> String {
    format!("{:.3}", t.timestamp_millis() as f64 / 1000.0)
}

/// `start` and `end` query parameters.
fn window(start: DateTime<Utc>, end: DateTime<Utc>) -> Vec<(&'static str, String)> {
    vec![("start", unix(start)), ("end", unix(end))]
}

/// A client for one Prometheus server.
#[derive(Clone, Debug)]
pub struct PrometheusClient {
    upstream: Upstream,
}

impl PrometheusClient {
    /// A client for `[prometheus]`; fails when `url` is unset.
    pub fn new(config: &UpstreamConfig) -> Result<Self, UpstreamError> {
        let url = config.url.as_ref().ok_or(UpstreamError::Setup {
            service: "Prometheus",
            reason: "prometheus.url is not set".into(),
        })?;
        let opts = UpstreamOptions {
            timeout: config.timeout.get(),
            ..Default::default()
        };
        Ok(Self {
            upstream: Upstream::new("Prometheus", &url.0, opts)?,
        })
    }

    /// A client over an already built upstream.
    pub fn from_upstream(upstream: Upstream) -> Self {
        Self { upstream }
    }

    /// The HTTP plumbing under this client (the health checker probes through it).
    pub fn upstream(&self) -> &Upstream {
        &self.upstream
    }

    /// The base URL, redacted.
    pub fn base_display(&self) -> String {
        self.upstream.base_display()
    }

    /// GETs an `/api/v1` path and unwraps the envelope.
    async fn api<T: DeserializeOwned>(
        &self,
        path: &str,
        query: &[(&str, String)],
    ) -> Result<T, UpstreamError> {
        let body = self
            .upstream
            .get_bytes(path, query)
            .await
            .map_err(|e| e.map_status_body(|body| envelope_error(&body).unwrap_or(body)))?;
        let decode = |reason: String| UpstreamError::Decode {
            service: "Prometheus",
            url: super::redact_url(&self.upstream.url(path)),
            reason,
        };
        let env: Envelope<T> = serde_json::from_slice(&body).map_err(|e| {
            decode(format!(
                "{e}; body starts: {}",
                super::upstream::excerpt(&body, 200)
            ))
        })?;
        if env.status != "success" {
            return Err(UpstreamError::Status {
                service: "Prometheus",
                url: super::redact_url(&self.upstream.url(path)),
                status: 200,
                body: format!(
                    "{}: {}",
                    env.error_type.unwrap_or_else(|| "error".into()),
                    env.error.unwrap_or_default()
                ),
            });
        }
        if !env.warnings.is_empty() {
            tracing::debug!(warnings = ?env.warnings, path, "Prometheus answered with warnings");
        }
        env.data
            .ok_or_else(|| decode("success envelope without data".into()))
    }

    /// Evaluates `expr` at `time` (default: now).
    pub async fn query(
        &self,
        expr: &str,
        time: Option<DateTime<Utc>>,
    ) -> Result<QueryResult, UpstreamError> {
        let mut q = vec![("query", expr.to_string())];
        if let Some(t) = time {
            q.push(("time", unix(t)));
        }
        let data: Value = self.api("api/v1/query", &q).await?;
        decode_query_data(data).map_err(|reason| self.decode_error("api/v1/query", reason))
    }

    /// Evaluates `expr` at `time` expecting an instant vector; a scalar answer becomes one
    /// sample without labels.
    pub async fn query_vector(
        &self,
        expr: &str,
        time: Option<DateTime<Utc>>,
    ) -> Result<Vec<Sample>, UpstreamError> {
        match self.query(expr, time).await? {
            QueryResult::Vector(samples) => Ok(samples),
            QueryResult::Scalar { ts, value } => Ok(vec![Sample {
                metric: Labels::new(),
                value,
                ts,
            }]),
            other => Err(self.decode_error(
                "api/v1/query",
                format!("expected a vector, got {}", other.kind()),
            )),
        }
    }

    /// Evaluates `expr` from `start` to `end` every `step` (raised to stay ≤ 11,000 points).
    pub async fn query_range(
        &self,
        expr: &str,
        start: DateTime<Utc>,
        end: DateTime<Utc>,
        step: Duration,
    ) -> Result<Vec<Series>, UpstreamError> {
        let range = (end - start).num_seconds().max(0) as f64;
        let step = step.as_secs_f64().max(range / 11_000.0).max(0.001);
        let q = [
            ("query", expr.to_string()),
            ("start", unix(start)),
            ("end", unix(end)),
            ("step", format!("{step:.3}")),
        ];
        let data: Value = self.api("api/v1/query_range", &q).await?;
        match decode_query_data(data) {
            Ok(QueryResult::Matrix(series)) => Ok(series),
            Ok(other) => Err(self.decode_error(
                "api/v1/query_range",
                format!("expected a matrix, got {}", other.kind()),
            )),
            Err(reason) => Err(self.decode_error("api/v1/query_range", reason)),
        }
    }

    /// Pending and firing alerts.
    pub async fn alerts(&self) -> Result<Vec<PromAlert>, UpstreamError> {
        #[derive(Deserialize)]
        struct Data {
            #[serde(default, deserialize_with = "nullable")]
            alerts: Vec<PromAlert>,
        }
        let data: Data = self.api("api/v1/alerts", &[]).await?;
        Ok(data.alerts)
    }

    /// Scrape targets; `state` is `active`, `dropped` or `any` (default: Prometheus' own).
    pub async fn targets(&self, state: Option<&str>) -> Result<Targets, UpstreamError> {
        let q: Vec<(&str, String)> = state
            .map(|s| ("state", s.to_string()))
            .into_iter()
            .collect();
        self.api("api/v1/targets", &q).await
    }

    /// Values of `label` (e.g. `__name__` for metric names), optionally limited to series
    /// matching the selectors in `matchers`.
    pub async fn label_values(
        &self,
        label: &str,
        matchers: &[&str],
    ) -> Result<Vec<String>, UpstreamError> {
        let q: Vec<(&str, String)> = matchers
            .iter()
            .map(|m| ("match[]", m.to_string()))
            .collect();
        let path = format!("api/v1/label/{label}/values");
        let values: Option<Vec<String>> = self.api(&path, &q).await?;
        Ok(values.unwrap_or_default())
    }

    /// Values of `label` among series matching `matchers` that had samples between `start`
    /// and `end` (a window keeps the lookup cheap; Prometheus searches everything without).
    pub async fn label_values_between(
        &self,
        label: &str,
        matchers: &[&str],
        start: DateTime<Utc>,
        end: DateTime<Utc>,
    ) -> Result<Vec<String>, UpstreamError> {
        let mut q = window(start, end);
        q.extend(matchers.iter().map(|m| ("match[]", m.to_string())));
        let path = format!("api/v1/label/{label}/values");
        let values: Option<Vec<String>> = self.api(&path, &q).await?;
        Ok(values.unwrap_or_default())
    }

    /// Label names of series matching `matchers` between `start` and `end`.
    pub async fn label_names(
        &self,
        matchers: &[&str],
        start: DateTime<Utc>,
        end: DateTime<Utc>,
    ) -> Result<Vec<String>, UpstreamError> {
        let mut q = window(start, end);
        q.extend(matchers.iter().map(|m| ("match[]", m.to_string())));
        let names: Option<Vec<String>> = self.api("api/v1/labels", &q).await?;
        Ok(names.unwrap_or_default())
    }

    /// Label sets of the series matching `selector` between `start` and `end`, at most
    /// `limit` of them (cut client side: `limit=` needs Prometheus 2.54+).
    pub async fn series(
        &self,
        selector: &str,
        start: DateTime<Utc>,
        end: DateTime<Utc>,
        limit: usize,
    ) -> Result<Vec<Labels>, UpstreamError> {
        let mut q = window(start, end);
        q.push(("match[]", selector.to_string()));
        q.push(("limit", limit.to_string()));
        let series: Option<Vec<Labels>> = self.api("api/v1/series", &q).await?;
        let mut series = series.unwrap_or_default();
        series.truncate(limit);
        Ok(series)
    }

    /// The type (`counter`, `gauge`, `histogram`, `summary`, `unknown`, …) of each metric
    /// the scrapes declared, at most `limit` metrics; a metric whose targets declare two
    /// types is `unknown`.
    pub async fn metric_types(
        &self,
        limit: usize,
    ) -> Result<std::collections::HashMap<String, String>, UpstreamError> {
        #[derive(Deserialize)]
        struct Meta {
            #[serde(rename = "type", default)]
            kind: String,
        }
        let q = [("limit", limit.to_string())];
        let data: Option<std::collections::HashMap<String, Vec<Meta>>> =
            self.api("api/v1/metadata", &q).await?;
        Ok(data
            .unwrap_or_default()
            .into_iter()
            .map(|(name, metas)| {
                let mut kinds = metas.into_iter().map(|m| m.kind);
                let first = kinds.next().unwrap_or_default();
                let kind = match kinds.all(|k| k == first) {
                    true => first,
                    false => "unknown".to_string(),
                };
                (name, kind)
            })
            .collect())
    }

    /// Rule groups with their alerting and recording rules.
    pub async fn rules(&self) -> Result<Vec<RuleGroup>, UpstreamError> {
        #[derive(Deserialize)]
        struct Data {
            #[serde(default, deserialize_with = "nullable")]
            groups: Vec<RuleGroup>,
        }
        let data: Data = self.api("api/v1/rules", &[]).await?;
        Ok(data.groups)
    }

    fn decode_error(&self, path: &str, reason: String) -> UpstreamError {
        UpstreamError::Decode {
            service: "Prometheus",
            url: super::redact_url(&self.upstream.url(path)),
            reason,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn vector_values_are_strings_including_nan_and_infinities() {
        let data = json!({"resultType": "vector", "result": [
            {"metric": {"job": "a"}, "value": [1748772000.781, "NaN"]},
            {"metric": {"job": "b"}, "value": [1748772000, "+Inf"]},
            {"metric": null, "value": [1748772000, "-Inf"]},
            {"metric": {"job": "h"}, "histogram": [1748772000, {"count": "1"}]},
            {"metric": {"job": "c"}, "value": [1748772000, "1e-07"], "extra": true}
        ]});
        let QueryResult::Vector(v) = decode_query_data(data).unwrap() else {
            panic!("vector expected")
        };
        assert_eq!(v.len(), 4);
        assert!(v[0].value.is_nan());
        assert_eq!(v[1].value, f64::INFINITY);
        assert_eq!(v[2].value, f64::NEG_INFINITY);
        assert!(v[2].metric.is_empty());
        assert_eq!(v[3].value, 1e-7);
    }

    #[test]
    fn matrix_scalar_and_string_results_decode() {
        let m = decode_query_data(json!({"resultType": "matrix", "result": [
            {"metric": {"job": "x"}, "values": [[1, "0.5"], [2, "1.5"]]}]}))
        .unwrap();
        assert_eq!(
            m,
            QueryResult::Matrix(vec![Series {
                metric: Labels::from([("job".into(), "x".into())]),
                values: vec![(1.0, 0.5), (2.0, 1.5)]
            }])
        );
        let s = decode_query_data(json!({"resultType": "scalar", "result": [1, "2"]})).unwrap();
        assert_eq!(
            s,
            QueryResult::Scalar {
                ts: 1.0,
                value: 2.0
            }
        );
        let t = decode_query_data(json!({"resultType": "string", "result": [1, "hi"]})).unwrap();
        assert_eq!(
            t,
            QueryResult::String {
                ts: 1.0,
                value: "hi".into()
            }
        );
    }

    #[test]
    fn captured_error_body_yields_prometheus_text() {
        let body = r#"{"status":"error","errorType":"bad_data","error":"invalid parameter \"query\": 1:17: parse error: unclosed left parenthesis"}"#;
        assert_eq!(
            envelope_error(body).unwrap(),
            "bad_data: invalid parameter \"query\": 1:17: parse error: unclosed left parenthesis"
        );
        assert_eq!(envelope_error("Service Unavailable"), None);
    }
}
