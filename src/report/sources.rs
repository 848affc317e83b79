//! The report's read access to Prometheus, Loki and Grafana, over the shared
//! `integrations::Upstream` plumbing (answers decoded per reference/*.md).

use std::collections::BTreeMap;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde_json::Value;

use crate::config::Config;
use crate::integrations::{Auth, Upstream, UpstreamError, UpstreamOptions};

pub type Labels = BTreeMap<String, String>;

/// One series of a range answer: labels and (unix seconds, value) points.
#[derive(Clone, Debug)]
pub struct Series {
    pub metric: Labels,
    pub values: Vec<(f64, f64)>,
}

/// The configured upstreams a report reads from.
#[derive(Clone, Debug, Default)]
pub struct Sources {
    pub prometheus: Option<Upstream>,
    pub loki: Option<Upstream>,
    pub grafana: Option<Upstream>,
}

impl Sources {
    pub fn from_config(config: &Config) -> Result<Self, UpstreamError> {
        let make = |service, url: &Option<crate::config::HttpUrl>, timeout: Duration, auth| {
            url.as_ref()
                .map(|u| {
                    Upstream::new(
                        service,
                        &u.0,
                        UpstreamOptions {
                            timeout,
                            auth,
                            ..UpstreamOptions::default()
                        },
                    )
                })
                .transpose()
        };
        Ok(Self {
            prometheus: make(
                "Prometheus",
                &config.prometheus.url,
                config.prometheus.timeout.get(),
                None,
            )?,
            loki: make("Loki", &config.loki.url, config.loki.timeout.get(), None)?,
            grafana: make(
                "Grafana",
                &config.grafana.url,
                config.grafana.timeout.get(),
                config.grafana.token.clone().map(Auth::Bearer),
            )?,
        })
    }
}

#[derive(Deserialize)]
struct ApiAnswer {
    status: String,
    #[serde(default)]
    data: Option<ApiData>,
    #[serde(default)]
    error: Option<String>,
}

#[derive(Deserialize)]
struct ApiData {
    #[serde(rename = "resultType")]
    result_type: String,
    result: Value,
}

fn decode_err(up: &Upstream, path: &str, reason: String) -> UpstreamError {
    UpstreamError::Decode {
        service: up.service(),
        url: crate::integrations::redact_url(&up.url(path)),
        reason,
    }
}

async fn api_data(
    up: &Upstream,
    path: &str,
    query: &[(&str, String)],
) -> Result<ApiData, UpstreamError> {
    let answer: ApiAnswer = up.get_json(path, query).await?;
    match (answer.status.as_str(), answer.data) {
        ("success", Some(d)) => Ok(d),
        _ => Err(decode_err(
            up,
            path,
            answer
                .error
                .unwrap_or_else(|| "status is not success".into()),
        )),
    }
}

fn number(v: &Value) -> Option<f64> {
    match v {
        Value::String(s) => s.parse().ok(),
        Value::Number(n) => n.as_f64(),
        _ => None,
    }
}

fn labels(v: &Value, key: &str) -> Labels {
    serde_json::from_value(v.get(key).cloned().unwrap_or(Value::Null)).unwrap_or_default()
}

/// An instant query (Prometheus or Loki metric query): labels and value per series.
pub async fn instant(
    up: &Upstream,
    api: &str,
    expr: &str,
    time: DateTime<Utc>,
) -> Result<Vec<(Labels, f64)>, UpstreamError> {
    let path = format!("{api}/query");
    let data = api_data(
        up,
        &path,
        &[
            ("query", expr.to_string()),
            ("time", time.timestamp().to_string()),
        ],
    )
    .await?;
    let items = match data.result_type.as_str() {
        "vector" => data.result.as_array().cloned().unwrap_or_default(),
        "scalar" => {
            let v = data.result.get(1).and_then(number);
            return Ok(v.map(|v| vec![(Labels::new(), v)]).unwrap_or_default());
        }
        other => {
            return Err(decode_err(
                up,
                &path,
                format!("unexpected resultType {other}"),
            ));
        }
    };
    Ok(items
        .iter()
        .filter_map(|s| {
            let v = s.get("value").and_then(|p| p.get(1)).and_then(number)?;
            Some((labels(s, "metric"), v))
        })
        .collect())
}

/// A range query returning a matrix (Prometheus, or a Loki metric query).
pub async fn range(
    up: &Upstream,
    api: &str,
    expr: &str,
    start: DateTime<Utc>,
    end: DateTime<Utc>,
    step: Duration,
) -> Result<Vec<Series>, UpstreamError> {
    let path = format!("{api}/query_range");
    let data = api_data(
        up,
        &path,
        &[
            ("query", expr.to_string()),
            ("start", start.timestamp().to_string()),
            ("end", end.timestamp().to_string()),
            ("step", step.as_secs().max(1).to_string()),
        ],
    )
    .await?;
    if data.result_type != "matrix" {
        return Err(decode_err(
            up,
            &path,
            format!("expected a matrix, got {}", data.result_type),
        ));
    }
    let items = data.result.as_array().cloned().unwrap_or_default();
    Ok(items
        .iter()
        .map(|s| Series {
            metric: labels(s, "metric"),
            values: s
                .get("values")
                .and_then(Value::as_array)
                .map(|vs| {
                    vs.iter()
                        .filter_map(|p| Some((number(p.get(0)?)?, number(p.get(1)?)?)))
                        .collect()
                })
                .unwrap_or_default(),
        })
        .collect())
}

/// A Loki log query: up to `limit` lines, newest first, across all streams.
pub async fn loki_lines(
    up: &Upstream,
    logql: &str,
    start: DateTime<Utc>,
    end: DateTime<Utc>,
    limit: usize,
) -> Result<Vec<(Labels, String)>, UpstreamError> {
    let path = "loki/api/v1/query_range";
    let data = api_data(
        up,
        path,
        &[
            ("query", logql.to_string()),
            (
                "start",
                start.timestamp_nanos_opt().unwrap_or(0).to_string(),
            ),
            ("end", end.timestamp_nanos_opt().unwrap_or(0).to_string()),
            ("limit", limit.to_string()),
            ("direction", "backward".to_string()),
        ],
    )
    .await?;
    if data.result_type != "streams" {
        return Err(decode_err(
            up,
            path,
            format!("expected streams, got {}", data.result_type),
        ));
    }
    let mut lines = Vec::new();
    for s in data.result.as_array().into_iter().flatten() {
        let stream = labels(s, "stream");
        for v in s
            .get("values")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Some(line) = v.get(1).and_then(Value::as_str) {
                lines.push((stream.clone(), line.to_string()));
            }
        }
    }
    lines.truncate(limit);
    Ok(lines)
}
