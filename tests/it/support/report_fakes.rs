//! Fakes for the report tests, speaking the reference wire formats: Loki, Grafana and an
//! OpenAI-compatible LLM. Each answers after `delay` and records the requests in flight at
//! once (shared between fakes) to prove the collectors overlap.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{Query, State};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{Value, json};

/// Requests in flight across fakes, and the most seen at once.
#[derive(Clone, Default)]
pub struct InFlight {
    now: Arc<AtomicUsize>,
    pub max: Arc<AtomicUsize>,
}

impl InFlight {
    async fn during<T>(&self, delay: Duration, answer: T) -> T {
        let n = self.now.fetch_add(1, Ordering::SeqCst) + 1;
        self.max.fetch_max(n, Ordering::SeqCst);
        tokio::time::sleep(delay).await;
        self.now.fetch_sub(1, Ordering::SeqCst);
        answer
    }

    pub fn max_seen(&self) -> usize {
        self.max.load(Ordering::SeqCst)
    }
}

#[derive(Clone)]
struct Fake {
    inflight: InFlight,
    delay: Duration,
    bodies: Arc<Mutex<Vec<Value>>>,
}

/// A running fake: its base URL and the JSON bodies it received (LLM).
pub struct FakeServer {
    pub url: String,
    pub bodies: Arc<Mutex<Vec<Value>>>,
}

async fn serve(router: Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await });
    format!("http://{addr}")
}

fn fake(inflight: &InFlight, delay: Duration) -> Fake {
    Fake {
        inflight: inflight.clone(),
        delay,
        bodies: Arc::default(),
    }
}

/// Loki: error counts per job (matrix, one point a day) and error lines (streams).
pub async fn start_loki(inflight: &InFlight, delay: Duration) -> FakeServer {
    async fn query_range(
        State(f): State<Fake>,
        Query(q): Query<std::collections::HashMap<String, String>>,
    ) -> Json<Value> {
        let query = q.get("query").cloned().unwrap_or_default();
        // Loki reads `start` as seconds up to 10 digits, else nanoseconds; answers in seconds.
        let start = q.get("start").map_or(0.0, |s| {
            let n: f64 = s.parse().unwrap_or(0.0);
            if s.len() > 10 && !s.contains('.') {
                n / 1e9
            } else {
                n
            }
        });
        let answer = if query.contains("count_over_time") {
            // 14 daily points: the week before has 2 errors a day for nas, this week 5.
            let values: Vec<Value> = (0..14)
                .map(|i| json!([start + (i as f64) * 86_400.0, if i < 7 { "2" } else { "5" }]))
                .collect();
            json!({"status": "success", "data": {"resultType": "matrix", "result": [
                {"metric": {"job": "nas"}, "values": values}
            ]}})
        } else {
            json!({"status": "success", "data": {"resultType": "streams", "result": [
                {"stream": {"job": "nas"}, "values": [
                    ["1795400000000000000", "level=error msg=\"zfs scrub slow\" pool=tank took=31s"],
                    ["1795300000000000000", "level=error msg=\"zfs scrub slow\" pool=tank took=12s"],
                    ["1795200000000000000", "ERROR smartd: disk 3 temperature 61C"]
                ]}
            ]}})
        };
        f.inflight.during(f.delay, Json(answer)).await
    }
    let f = fake(inflight, delay);
    let bodies = f.bodies.clone();
    let url = serve(
        Router::new()
            .route("/loki/api/v1/query_range", get(query_range))
            .with_state(f),
    )
    .await;
    FakeServer { url, bodies }
}

/// Grafana: two provisioned rules, one firing alert, three state-change annotations.
pub async fn start_grafana(inflight: &InFlight, delay: Duration) -> FakeServer {
    async fn rules(State(f): State<Fake>) -> Json<Value> {
        let rule = |uid: &str, title: &str| json!({"id": 1, "uid": uid, "orgID": 1, "folderUID": "sre", "ruleGroup": "sre-agent", "title": title, "condition": "C", "data": []});
        f.inflight
            .during(
                f.delay,
                Json(json!([
                    rule("a1", "HighErrorRate"),
                    rule("a2", "BackupLate")
                ])),
            )
            .await
    }
    async fn alerts(State(f): State<Fake>) -> Json<Value> {
        f.inflight
            .during(f.delay, Json(json!([{
                "labels": {"alertname": "BackupLate", "grafana_folder": "sre"},
                "annotations": {}, "startsAt": "2026-11-22T03:00:00Z",
                "endsAt": "0001-01-01T00:00:00Z", "updatedAt": "2026-11-22T03:00:00Z",
                "generatorURL": "", "fingerprint": "f1", "receivers": [{"name": "sre"}],
                "status": {"state": "active", "silencedBy": [], "inhibitedBy": [], "mutedBy": []}
            }])))
            .await
    }
    async fn annotations(State(f): State<Fake>) -> Json<Value> {
        let a = |state: &str| json!({"id": 1, "alertName": "BackupLate", "newState": state, "prevState": "Normal", "time": 1795300000000i64, "text": ""});
        f.inflight
            .during(
                f.delay,
                Json(json!([a("Alerting"), a("Normal"), a("Alerting"), a("")])),
            )
            .await
    }
    let f = fake(inflight, delay);
    let bodies = f.bodies.clone();
    let url = serve(
        Router::new()
            .route("/api/v1/provisioning/alert-rules", get(rules))
            .route("/api/alertmanager/grafana/api/v2/alerts", get(alerts))
            .route("/api/annotations", get(annotations))
            .with_state(f),
    )
    .await;
    FakeServer { url, bodies }
}

/// An OpenAI-compatible chat endpoint answering `text`; records each request body.
pub async fn start_llm(inflight: &InFlight, delay: Duration, text: &'static str) -> FakeServer {
    async fn chat(
        State((f, text)): State<(Fake, &'static str)>,
        Json(body): Json<Value>,
    ) -> Json<Value> {
        f.bodies.lock().unwrap().push(body);
        f.inflight
            .during(
                f.delay,
                Json(json!({
                    "id": "chatcmpl-1", "object": "chat.completion", "model": "gpt-4o-mini",
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": text}}],
                    "usage": {"prompt_tokens": 900, "completion_tokens": 120, "total_tokens": 1020}
                })),
            )
            .await
    }
    let f = fake(inflight, delay);
    let bodies = f.bodies.clone();
    let url = serve(
        Router::new()
            .route("/v1/chat/completions", post(chat))
            .with_state((f, text)),
    )
    .await;
    FakeServer {
        url: format!("{url}/v1"),
        bodies,
    }
}
