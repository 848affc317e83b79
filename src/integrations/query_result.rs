//! The query-answer encoding Prometheus and Loki share: `resultType` + `result`, with
//! sample values as strings (`"NaN"`, `"+Inf"` included) parsed to `f64`.

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

/// A label set.
pub type Labels = BTreeMap<String, String>;

/// One point of an instant vector.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Sample {
    pub metric: Labels,
    pub value: f64,
    /// Unix seconds.
    pub ts: f64,
}

/// One series of a range query: `(unix seconds, value)` points in time order.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Series {
    pub metric: Labels,
    pub values: Vec<(f64, f64)>,
}

/// The `data` of a query answer, by `resultType`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub enum QueryResult {
    Vector(Vec<Sample>),
    Matrix(Vec<Series>),
    Scalar { ts: f64, value: f64 },
    String { ts: f64, value: String },
}

impl QueryResult {
    /// The `resultType` this came as, for error messages.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Vector(_) => "vector",
            Self::Matrix(_) => "matrix",
            Self::Scalar { .. } => "scalar",
            Self::String { .. } => "string",
        }
    }
}

/// Deserializes `null` as the default value (lenient parsing of optional collections).
pub(crate) fn nullable<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

#[derive(Deserialize)]
struct RawData {
    #[serde(rename = "resultType")]
    result_type: String,
    result: Value,
}

#[derive(Deserialize)]
struct RawSample {
    #[serde(default, deserialize_with = "nullable")]
    metric: Labels,
    value: Option<(f64, String)>,
}

#[derive(Deserialize)]
struct RawSeries {
    #[serde(default, deserialize_with = "nullable")]
    metric: Labels,
    #[serde(default, deserialize_with = "nullable")]
    values: Vec<(f64, String)>,
}

/// A Prometheus sample value: Go float text, `NaN`, `+Inf`, `-Inf`.
pub fn parse_value(s: &str) -> f64 {
    s.trim().parse().unwrap_or(f64::NAN)
}

/// Decodes the `data` of a query answer (shared with Loki, which uses the same encoding).
pub(crate) fn decode_query_data(data: Value) -> Result<QueryResult, String> {
    let raw: RawData = serde_json::from_value(data).map_err(|e| e.to_string())?;
    match raw.result_type.as_str() {
        "vector" => {
            let samples: Vec<RawSample> =
                serde_json::from_value(raw.result).map_err(|e| e.to_string())?;
            Ok(QueryResult::Vector(
                samples
                    .into_iter()
                    // Native-histogram samples carry `histogram` instead of `value`: skipped.
                    .filter_map(|s| {
                        s.value.map(|(ts, v)| Sample {
                            metric: s.metric,
                            value: parse_value(&v),
                            ts,
                        })
                    })
                    .collect(),
            ))
        }
        "matrix" => Ok(QueryResult::Matrix(decode_matrix(raw.result)?)),
        "scalar" => {
            let (ts, v): (f64, String) =
                serde_json::from_value(raw.result).map_err(|e| e.to_string())?;
            Ok(QueryResult::Scalar {
                ts,
                value: parse_value(&v),
            })
        }
        "string" => {
            let (ts, value): (f64, String) =
                serde_json::from_value(raw.result).map_err(|e| e.to_string())?;
            Ok(QueryResult::String { ts, value })
        }
        other => Err(format!("unknown resultType {other:?}")),
    }
}

pub(crate) fn decode_matrix(result: Value) -> Result<Vec<Series>, String> {
    let series: Vec<RawSeries> = serde_json::from_value(result).map_err(|e| e.to_string())?;
    Ok(series
        .into_iter()
        .filter(|s| !s.values.is_empty())
        .map(|s| Series {
            metric: s.metric,
            values: s
                .values
                .into_iter()
                .map(|(ts, v)| (ts, parse_value(&v)))
                .collect(),
        })
        .collect())
}
