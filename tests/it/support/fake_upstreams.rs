//! Small axum fakes speaking the exact Loki, Grafana and Prometheus wire formats
//! (reference/loki-api.md, grafana-api.md, captured/prometheus-*.json), recording each
//! request (`path?query` and Authorization header) for assertions.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::json;

/// A request the fake received.
#[derive(Clone, Debug)]
pub struct Seen {
    pub uri: String,
    pub auth: Option<String>,
}

/// A running fake: its base URL and the requests it saw.
pub struct Fake {
    pub url: String,
    pub seen: Arc<Mutex<Vec<Seen>>>,
}

impl Fake {
    pub fn requests(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

#[derive(Clone)]
struct Ctx {
    seen: Arc<Mutex<Vec<Seen>>>,
    token: String,
}

impl Ctx {
    fn record(&self, uri: &Uri, headers: &HeaderMap) {
        self.seen.lock().unwrap().push(Seen {
            uri: uri.to_string(),
            auth: headers
                .get("authorization")
                .and_then(|v| v.to_str().ok())
                .map(str::to_string),
        });
    }
}

async fn serve(router: Router<Ctx>, ctx: Ctx) -> Fake {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let seen = ctx.seen.clone();
    tokio::spawn(async move { axum::serve(listener, router.with_state(ctx)).await });
    Fake { url, seen }
}

fn ctx(token: &str) -> Ctx {
    Ctx {
        seen: Arc::default(),
        token: token.into(),
    }
}

type Params = Query<HashMap<String, String>>;

fn text_error(status: StatusCode, body: &str) -> Response {
    (
        status,
        [("content-type", "text/plain; charset=utf-8")],
        body.to_string(),
    )
        .into_response()
}

/// Error lines of job "api" (30 timeouts differing in numbers and IPs, one panic) and one
/// info line of job "web", as Loki would stream them (ns timestamps as strings).
fn loki_streams() -> serde_json::Value {
    let base: i64 = chrono::Utc::now().timestamp() * 1_000_000_000;
    let api: Vec<_> = (0..30)
        .map(|i| {
            json!([
                (base - i * 1_000_000_000).to_string(),
                format!(
                    "level=error msg=\"upstream timeout after {}ms\" peer=10.0.3.{i}:8080",
                    100 + i
                )
            ])
        })
        .chain([json!([
            base.to_string(),
            "panic: runtime error: invalid memory address"
        ])])
        .collect();
    json!([
        {"stream": {"job": "api", "level": "error"}, "values": api},
        {"stream": {"job": "web"}, "values": [[base.to_string(), "GET /healthz 200 1ms"]]}
    ])
}

/// Loki: `/loki/api/v1/query_range` (streams for log queries, matrix for metric queries)
/// and `/loki/api/v1/query` (vector; log queries are refused as Loki does). A query
/// containing `BAD` fails with Loki's plain-text parse error.
pub async fn loki() -> Fake {
    async fn range(State(c): State<Ctx>, uri: Uri, h: HeaderMap, Query(p): Params) -> Response {
        c.record(&uri, &h);
        let q = p.get("query").cloned().unwrap_or_default();
        if q.contains("BAD") {
            return text_error(
                StatusCode::BAD_REQUEST,
                "parse error at line 1, col 1: syntax error: unexpected IDENTIFIER",
            );
        }
        let data = if q.contains("_over_time") || q.starts_with("sum") || q.starts_with("rate") {
            json!({"resultType": "matrix", "result": [
                {"metric": {"job": "api"}, "values": [[1748768400, "12"], [1748772000, "37"]]}
            ], "stats": {}})
        } else {
            json!({"resultType": "streams", "result": loki_streams(), "stats": {"summary": {}}})
        };
        axum::Json(json!({"status": "success", "data": data})).into_response()
    }
    async fn instant(State(c): State<Ctx>, uri: Uri, h: HeaderMap, Query(p): Params) -> Response {
        c.record(&uri, &h);
        let q = p.get("query").cloned().unwrap_or_default();
        if !q.contains("count_over_time") && !q.contains("rate(") {
            return text_error(
                StatusCode::BAD_REQUEST,
                "log queries are not supported as an instant query type, please change your query to a range query type",
            );
        }
        axum::Json(
            json!({"status": "success", "data": {"resultType": "vector", "result": [
            {"metric": {"job": "api"}, "value": [1748772000, "31"]},
            {"metric": {"job": "web"}, "value": [1748772000, "2"]}
        ], "stats": {}}}),
        )
        .into_response()
    }
    let router = Router::new()
        .route("/loki/api/v1/query_range", get(range))
        .route("/loki/api/v1/query", get(instant));
    serve(router, ctx("")).await
}

/// Grafana with service-account token `token`: health (no auth), Alertmanager-compatible
/// alerts, provisioning alert rules and annotations; a wrong token gets Grafana's 401 JSON.
pub async fn grafana(token: &str) -> Fake {
    /// Grafana's 401 answer when the bearer token is not `c.token`.
    fn unauthorized(c: &Ctx, h: &HeaderMap) -> Option<Response> {
        let want = format!("Bearer {}", c.token);
        if h.get("authorization").and_then(|v| v.to_str().ok()) == Some(want.as_str()) {
            return None;
        }
        Some(
            (
                StatusCode::UNAUTHORIZED,
                axum::Json(json!({"message": "Invalid API key", "messageId": "api-key.invalid", "statusCode": 401, "traceID": ""})),
            )
                .into_response(),
        )
    }
    async fn health(State(c): State<Ctx>, uri: Uri, h: HeaderMap) -> Response {
        c.record(&uri, &h);
        axum::Json(json!({"commit": "a1b2c3d4e5", "database": "ok", "version": "11.6.0"}))
            .into_response()
    }
    async fn alerts(State(c): State<Ctx>, uri: Uri, h: HeaderMap) -> Response {
        c.record(&uri, &h);
        if let Some(r) = unauthorized(&c, &h) {
            return r;
        }
        axum::Json(json!([{
            "labels": {"alertname": "HighErrorRate", "grafana_folder": "SRE", "job": "checkout", "severity": "critical", "__alert_rule_uid__": "fe8r"},
            "annotations": {"summary": "5xx ratio above 5% for checkout"},
            "startsAt": "2025-06-01T10:15:00Z", "endsAt": "0001-01-01T00:00:00Z", "updatedAt": "2025-06-01T10:20:00Z",
            "generatorURL": "http://grafana/alerting/grafana/fe8r/view", "fingerprint": "a1b2",
            "receivers": [{"name": "sre-agent"}],
            "status": {"state": "active", "silencedBy": [], "inhibitedBy": [], "mutedBy": null}
        }]))
        .into_response()
    }
    async fn rules(State(c): State<Ctx>, uri: Uri, h: HeaderMap) -> Response {
        c.record(&uri, &h);
        if let Some(r) = unauthorized(&c, &h) {
            return r;
        }
        axum::Json(json!([{
            "id": 7, "uid": "fe8r", "orgID": 1, "folderUID": "sre", "ruleGroup": "sre-agent",
            "title": "HighErrorRate", "condition": "C",
            "data": [
                {"refId": "A", "queryType": "", "relativeTimeRange": {"from": 600, "to": 0}, "datasourceUid": "prometheus",
                 "model": {"refId": "A", "expr": "sum by (job) (rate(http_requests_total{code=~\"5..\"}[5m]))", "instant": true}},
                {"refId": "C", "queryType": "", "relativeTimeRange": {"from": 0, "to": 0}, "datasourceUid": "__expr__",
                 "model": {"refId": "C", "type": "threshold", "expression": "A"}}
            ],
            "updated": "2025-06-01T09:00:00Z", "noDataState": "NoData", "execErrState": "Error",
            "for": "5m", "keep_firing_for": "0s", "annotations": {"summary": "5xx"},
            "labels": {"severity": "critical"}, "provenance": "file", "isPaused": false,
            "notification_settings": null, "record": null
        }]))
        .into_response()
    }
    async fn annotations(
        State(c): State<Ctx>,
        uri: Uri,
        h: HeaderMap,
        Query(p): Params,
    ) -> Response {
        c.record(&uri, &h);
        if let Some(r) = unauthorized(&c, &h) {
            return r;
        }
        let from: i64 = p.get("from").and_then(|v| v.parse().ok()).unwrap_or(0);
        axum::Json(json!([{
            "id": 1124, "alertId": 0, "alertName": "HighErrorRate", "dashboardId": 0, "dashboardUID": "",
            "panelId": 0, "userId": 0, "newState": "Alerting", "prevState": "Pending",
            "created": from + 60_000, "updated": from + 60_000, "time": from + 60_000, "timeEnd": from + 60_000,
            "text": "job=checkout, severity=critical - A=0.0731, C=1", "tags": [], "login": "", "email": "",
            "avatarUrl": "", "data": {}
        }]))
        .into_response()
    }
    let router = Router::new()
        .route("/api/health", get(health))
        .route("/api/alertmanager/grafana/api/v2/alerts", get(alerts))
        .route("/api/v1/provisioning/alert-rules", get(rules))
        .route("/api/annotations", get(annotations));
    serve(router, ctx(token)).await
}

/// Prometheus answering `/api/v1/alerts` and `/api/v1/rules` with the captured bodies
/// (trimmed) of reference/captured/.
pub async fn prometheus_captured() -> Fake {
    async fn alerts(State(c): State<Ctx>, uri: Uri, h: HeaderMap) -> Response {
        c.record(&uri, &h);
        let body = r#"{"status":"success","data":{"alerts":[{"labels":{"alertname":"AlwaysFiring","severity":"warning"},"annotations":{"description":"vector(1) \u003e 0 is always true (value 1).","summary":"Always-firing test alert"},"state":"firing","activeAt":"2026-11-22T20:45:24.847291966Z","value":"1e+00"},{"labels":{"alertname":"TargetDown","instance":"127.0.0.1:40233","job":"capture","severity":"critical"},"annotations":{"summary":"Target 127.0.0.1:40233 of job capture is down"},"state":"pending","activeAt":"2026-11-22T20:45:30.847291966Z","value":"0e+00"}]}}"#;
        ([("content-type", "application/json")], body).into_response()
    }
    async fn rules(State(c): State<Ctx>, uri: Uri, h: HeaderMap) -> Response {
        c.record(&uri, &h);
        let body = r#"{"status":"success","data":{"groups":[{"name":"g","file":"/r.yml","rules":[{"state":"firing","name":"TargetDown","query":"up == 0","duration":0,"keepFiringFor":0,"labels":{"severity":"critical"},"annotations":{"summary":"down"},"alerts":[{"labels":{"alertname":"TargetDown"},"annotations":{},"state":"firing","activeAt":"2026-11-22T20:45:30.847291966Z","value":"0e+00"}],"health":"ok","evaluationTime":0.0005,"lastEvaluation":"2026-11-22T20:45:31.848891835Z","type":"alerting"},{"name":"job:up","query":"sum(up)","labels":null,"health":"ok","type":"recording"}],"interval":1}]}}"#;
        ([("content-type", "application/json")], body).into_response()
    }
    async fn unavailable(State(c): State<Ctx>, uri: Uri, h: HeaderMap) -> Response {
        c.record(&uri, &h);
        text_error(StatusCode::SERVICE_UNAVAILABLE, "Service Unavailable")
    }
    let router = Router::new()
        .route("/api/v1/alerts", get(alerts))
        .route("/api/v1/rules", get(rules))
        .route("/api/v1/query", get(unavailable));
    serve(router, ctx("")).await
}
