//! Loki query client (`/loki/api/v1/query`, `/loki/api/v1/query_range`). Log queries
//! answer with streams (`[ns timestamp string, line]` entries), metric queries with a
//! Prometheus-style matrix or vector. Loki's errors are plain text and pass through as is.

use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::query_result::{
    Labels, QueryResult, Series, decode_matrix, decode_query_data, nullable,
};
use super::{Upstream, UpstreamError, UpstreamOptions};
use crate::config::UpstreamConfig;

/// One log stream: its labels and `(unix nanoseconds, line)` entries.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LogStream {
    pub labels: Labels,
    pub entries: Vec<(i64, String)>,
}

/// What a range query returns.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub enum LokiResult {
    /// A log query.
    Streams(Vec<LogStream>),
    /// A metric query.
    Matrix(Vec<Series>),
}

#[derive(Deserialize)]
struct Envelope {
    data: Option<Value>,
}

#[derive(Deserialize)]
struct RawData {
    #[serde(rename = "resultType")]
    result_type: String,
    result: Value,
}

#[derive(Deserialize)]
struct RawStream {
    #[serde(default, deserialize_with = "nullable")]
    stream: Labels,
    /// `[ts, line]` or `[ts, line, {structured metadata}]`.
    #[serde(default, deserialize_with = "nullable")]
    values: Vec<Vec<Value>>,
}

fn ns(t: DateTime<Utc>) -> String {
    t.timestamp_nanos_opt()
        .unwrap_or_else(|| t.timestamp().saturating_mul(1_000_000_000))
        .to_string()
}

fn decode_streams(result: Value) -> Result<Vec<LogStream>, String> {
    let streams: Vec<RawStream> = serde_json::from_value(result).map_err(|e| e.to_string())?;
    Ok(streams
        .into_iter()
        .map(|s| LogStream {
            labels: s.stream,
            entries: s
                .values
                .into_iter()
                .filter_map(|v| {
                    let ts = match v.first()? {
                        Value::String(s) => s.parse().ok()?,
                        Value::Number(n) => n.as_i64()?,
                        _ => return None,
                    };
                    Some((ts, v.get(1)?.as_str()?.to_string()))
                })
                .collect(),
        })
        .collect())
}

/// A client for one Loki.
#[derive(Clone, Debug)]
pub struct LokiClient {
    upstream: Upstream,
}

impl LokiClient {
    /// A client for `[loki]`; fails when `url` is unset.
    pub fn new(config: &UpstreamConfig) -> Result<Self, UpstreamError> {
        let url = config.url.as_ref().ok_or(UpstreamError::Setup {
            service: "Loki",
            reason: "loki.url is not set".into(),
        })?;
        let opts = UpstreamOptions {
            timeout: config.timeout.get(),
            ..Default::default()
        };
        Ok(Self {
            upstream: Upstream::new("Loki", &url.0, opts)?,
        })
    }

    /// The HTTP plumbing under this client (the health checker probes through it).
    pub fn upstream(&self) -> &Upstream {
        &self.upstream
    }

    pub fn base_display(&self) -> String {
        self.upstream.base_display()
    }

    async fn data(&self, path: &str, q: &[(&str, String)]) -> Result<RawData, UpstreamError> {
        let env: Envelope = self.upstream.get_json(path, q).await?;
        env.data
            .ok_or_else(|| "answer without data".to_string())
            .and_then(|d| serde_json::from_value(d).map_err(|e| e.to_string()))
            .map_err(|reason| self.decode_error(path, reason))
    }

    /// Runs `logql` from `start` to `end` (newest lines first). `limit` caps log lines;
    /// `step` applies to metric queries.
    pub async fn query_range(
        &self,
        logql: &str,
        start: DateTime<Utc>,
        end: DateTime<Utc>,
        limit: Option<u32>,
        step: Option<Duration>,
    ) -> Result<LokiResult, UpstreamError> {
        const PATH: &str = "loki/api/v1/query_range";
        let mut q = vec![
            ("query", logql.to_string()),
            ("start", ns(start)),
            ("end", ns(end)),
            ("direction", "backward".to_string()),
        ];
        if let Some(l) = limit {
            q.push(("limit", l.to_string()));
        }
        if let Some(s) = step {
            q.push(("step", format!("{:.3}", s.as_secs_f64().max(0.001))));
        }
        let raw = self.data(PATH, &q).await?;
        let result = match raw.result_type.as_str() {
            "streams" => decode_streams(raw.result).map(LokiResult::Streams),
            "matrix" => decode_matrix(raw.result).map(LokiResult::Matrix),
            other => Err(format!("unexpected resultType {other:?}")),
        };
        result.map_err(|reason| self.decode_error(PATH, reason))
    }

    /// Runs the metric query `logql` from `start` to `end` every `step`.
    pub async fn query_range_matrix(
        &self,
        logql: &str,
        start: DateTime<Utc>,
        end: DateTime<Utc>,
        step: Duration,
    ) -> Result<Vec<Series>, UpstreamError> {
        match self
            .query_range(logql, start, end, None, Some(step))
            .await?
        {
            LokiResult::Matrix(series) => Ok(series),
            other => Err(self.wrong_kind(&other)),
        }
    }

    /// Runs the log query `logql` from `start` to `end`: up to `limit` lines, newest first.
    pub async fn query_logs(
        &self,
        logql: &str,
        start: DateTime<Utc>,
        end: DateTime<Utc>,
        limit: u32,
    ) -> Result<Vec<LogStream>, UpstreamError> {
        match self
            .query_range(logql, start, end, Some(limit), None)
            .await?
        {
            LokiResult::Streams(streams) => Ok(streams),
            other => Err(self.wrong_kind(&other)),
        }
    }

    /// A range answer of the other kind: a log query where a metric query was expected,
    /// or the other way round.
    fn wrong_kind(&self, got: &LokiResult) -> UpstreamError {
        let (got, want) = match got {
            LokiResult::Streams(_) => ("streams", "a matrix (a metric query)"),
            LokiResult::Matrix(_) => ("a matrix", "streams (a log query)"),
        };
        self.decode_error(
            "loki/api/v1/query_range",
            format!("expected {want}, got {got}"),
        )
    }

    /// Evaluates the metric query `logql` at `time` (default: now).
    pub async fn query(
        &self,
        logql: &str,
        time: Option<DateTime<Utc>>,
    ) -> Result<QueryResult, UpstreamError> {
        const PATH: &str = "loki/api/v1/query";
        let mut q = vec![("query", logql.to_string())];
        if let Some(t) = time {
            q.push(("time", ns(t)));
        }
        let raw = self.data(PATH, &q).await?;
        let data = serde_json::json!({"resultType": raw.result_type, "result": raw.result});
        decode_query_data(data).map_err(|reason| self.decode_error(PATH, reason))
    }

    /// Label names of streams with entries between `start` and `end`.
    pub async fn labels(
        &self,
        start: DateTime<Utc>,
        end: DateTime<Utc>,
    ) -> Result<Vec<String>, UpstreamError> {
        self.strings("loki/api/v1/labels", start, end).await
    }

    /// Values of `label` among streams with entries between `start` and `end`.
    pub async fn label_values(
        &self,
        label: &str,
        start: DateTime<Utc>,
        end: DateTime<Utc>,
    ) -> Result<Vec<String>, UpstreamError> {
        self.strings(&format!("loki/api/v1/label/{label}/values"), start, end)
            .await
    }

    /// A `{"status":"success","data":[…strings]}` answer (`data` may be absent or null).
    async fn strings(
        &self,
        path: &str,
        start: DateTime<Utc>,
        end: DateTime<Utc>,
    ) -> Result<Vec<String>, UpstreamError> {
        #[derive(Deserialize)]
        struct Strings {
            #[serde(default, deserialize_with = "nullable")]
            data: Vec<String>,
        }
        let q = [("start", ns(start)), ("end", ns(end))];
        let answer: Strings = self.upstream.get_json(path, &q).await?;
        Ok(answer.data)
    }

    fn decode_error(&self, path: &str, reason: String) -> UpstreamError {
        UpstreamError::Decode {
            service: "Loki",
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
    fn streams_with_string_ns_timestamps_and_metadata_decode() {
        let result = json!([{"stream": {"job": "checkout"}, "values": [
            ["1748772061123456789", "level=error msg=timeout"],
            ["1748772059000000000", "second", {"trace_id": "abc"}]
        ]}]);
        let s = decode_streams(result).unwrap();
        assert_eq!(s[0].labels["job"], "checkout");
        assert_eq!(s[0].entries[0].0, 1_748_772_061_123_456_789);
        assert_eq!(s[0].entries[1].1, "second");
    }

    #[test]
    fn nanosecond_timestamps_are_sent() {
        let t = DateTime::from_timestamp(1_748_772_000, 5).unwrap();
        assert_eq!(ns(t), "1748772000000000005");
    }
}
