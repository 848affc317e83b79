//! Answers by path: the file `<dir>/<api path>.json` answers `<base>/<api path>` (any
//! method, query ignored). A path with no file answers an empty list in the service's
//! envelope (an empty map where the API answers a map: TrueNAS' disk temperatures), so a
//! tool that asks for something the scenario left out sees "nothing" rather than an error,
//! whichever path the investigation takes.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use axum::Router;
use axum::extract::State;
use axum::http::Uri;
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use crate::eval::EvalError;
use crate::eval::scenario::fill_placeholders;

/// The service an answers directory stands for.
#[derive(Clone, Copy, Debug)]
pub enum AnswerService {
    Proxmox,
    Pbs,
    Truenas,
    Grafana,
}

impl AnswerService {
    fn base(self) -> &'static str {
        match self {
            Self::Proxmox | Self::Pbs => "/api2/json/",
            Self::Truenas => "/api/v2.0/",
            Self::Grafana => "/",
        }
    }

    /// The answer for `rel`, a path the scenario has no file for.
    fn empty(self, rel: &str) -> Value {
        match self {
            Self::Proxmox | Self::Pbs => json!({"data": []}),
            // `POST disk/temperatures` answers `{"sda": 38, …}`, one entry per disk.
            Self::Truenas if rel == "disk/temperatures" => json!({}),
            Self::Truenas | Self::Grafana => json!([]),
        }
    }
}

struct Answers {
    service: AnswerService,
    by_path: HashMap<String, Value>,
}

/// A router answering from the `.json` files under `dir`.
pub fn answers_router(
    service: AnswerService,
    dir: &Path,
    now: DateTime<Utc>,
) -> Result<Router, EvalError> {
    let mut by_path = HashMap::new();
    collect(dir, dir, now, &mut by_path)?;
    if matches!(service, AnswerService::Grafana) {
        by_path
            .entry("api/health".to_string())
            .or_insert_with(|| json!({"commit": "eval", "database": "ok", "version": "11.3.0"}));
    }
    let state = Arc::new(Answers { service, by_path });
    Ok(Router::new().fallback(answer).with_state(state))
}

fn collect(
    root: &Path,
    dir: &Path,
    now: DateTime<Utc>,
    out: &mut HashMap<String, Value>,
) -> Result<(), EvalError> {
    let entries = std::fs::read_dir(dir).map_err(|e| EvalError::io(dir, e))?;
    for entry in entries.filter_map(Result::ok) {
        let path = entry.path();
        if path.is_dir() {
            collect(root, &path, now, out)?;
            continue;
        }
        if path.extension().and_then(|e| e.to_str()) != Some("json") {
            continue;
        }
        let text = std::fs::read_to_string(&path).map_err(|e| EvalError::io(&path, e))?;
        let invalid = |reason: String| EvalError::Scenario {
            path: path.clone(),
            reason,
        };
        let text = fill_placeholders(&text, now).map_err(invalid)?;
        let value: Value = serde_json::from_str(&text).map_err(|e| invalid(e.to_string()))?;
        let rel = path
            .strip_prefix(root)
            .unwrap_or(&path)
            .with_extension("")
            .to_string_lossy()
            .replace('\\', "/");
        out.insert(rel, value);
    }
    Ok(())
}

async fn answer(State(answers): State<Arc<Answers>>, uri: Uri) -> Response {
    let path = uri.path();
    let rel = path
        .strip_prefix(answers.service.base())
        .unwrap_or(path)
        .trim_matches('/');
    match answers.by_path.get(rel) {
        Some(v) => axum::Json(v.clone()).into_response(),
        None => axum::Json(answers.service.empty(rel)).into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_answer_is_empty_in_the_shape_the_api_answers() {
        assert_eq!(AnswerService::Truenas.empty("pool"), json!([]));
        assert_eq!(AnswerService::Truenas.empty("disk/temperatures"), json!({}));
        assert_eq!(
            AnswerService::Proxmox.empty("nodes/pve1/qemu"),
            json!({"data": []})
        );
    }
}
