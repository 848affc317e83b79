//! A Grafana that takes `POST /api/annotations` (grafana-api.md §5): it records each post
//! exactly as sent (headers and raw body) and answers like Grafana: `200 {"message":
//! "Annotation added","id":N}`; a missing or wrong bearer token gets Grafana's 401 JSON;
//! a body Grafana would refuse (not JSON, wrong field types, empty `text`) gets 400. It
//! starts on a chosen port, so a test can bring it up after sre-agent failed to reach it.

use std::sync::{Arc, Mutex};

use axum::Json;
use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::{get, post};
use serde_json::{Value, json};

/// One annotation post as received.
#[derive(Clone, Debug)]
pub struct Posted {
    pub headers: HeaderMap,
    pub body: String,
}

impl Posted {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap()
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

#[derive(Clone)]
struct Shared {
    token: String,
    got: Arc<Mutex<Vec<Posted>>>,
}

/// The running fake; stops when dropped.
pub struct AnnotationGrafana {
    pub base: String,
    got: Arc<Mutex<Vec<Posted>>>,
    handle: tokio::task::JoinHandle<()>,
}

impl Drop for AnnotationGrafana {
    fn drop(&mut self) {
        self.handle.abort();
    }
}

impl AnnotationGrafana {
    /// Listens on 127.0.0.1:`port`, accepting service-account token `token`.
    pub async fn start(port: u16, token: &str) -> AnnotationGrafana {
        let shared = Shared {
            token: token.to_string(),
            got: Arc::default(),
        };
        let app = Router::new()
            .route(
                "/api/health",
                get(|| async {
                    Json(json!({"commit": "a1b2c3d4e5", "database": "ok", "version": "11.6.0"}))
                }),
            )
            .route("/api/annotations", post(annotate))
            .with_state(shared.clone());
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
            .await
            .unwrap();
        let handle = tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        AnnotationGrafana {
            base: format!("http://127.0.0.1:{port}"),
            got: shared.got,
            handle,
        }
    }

    /// The annotation posts accepted so far, oldest first.
    pub fn posted(&self) -> Vec<Posted> {
        self.got.lock().unwrap().clone()
    }
}

fn refuse(status: StatusCode, message: &str) -> (StatusCode, Json<Value>) {
    (status, Json(json!({"message": message})))
}

async fn annotate(
    State(s): State<Shared>,
    headers: HeaderMap,
    body: Bytes,
) -> (StatusCode, Json<Value>) {
    let bearer = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    if bearer != Some(s.token.as_str()) {
        return (
            StatusCode::UNAUTHORIZED,
            Json(
                json!({"message": "Invalid API key", "messageId": "api-key.invalid",
                "statusCode": 401, "traceID": ""}),
            ),
        );
    }
    let Ok(v) = serde_json::from_slice::<Value>(&body) else {
        return refuse(StatusCode::BAD_REQUEST, "bad request data");
    };
    let typed = v.get("dashboardUID").is_none_or(Value::is_string)
        && v.get("panelId").is_none_or(Value::is_i64)
        && v.get("time").is_none_or(Value::is_i64)
        && v.get("tags")
            .is_none_or(|t| t.as_array().is_some_and(|a| a.iter().all(Value::is_string)));
    if !typed {
        return refuse(StatusCode::BAD_REQUEST, "bad request data");
    }
    if v.get("text")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty)
    {
        return refuse(
            StatusCode::BAD_REQUEST,
            "Failed to save annotation: text field should not be empty",
        );
    }
    let mut got = s.got.lock().unwrap();
    got.push(Posted {
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
    });
    let id = 1124 + got.len() as i64;
    (
        StatusCode::OK,
        Json(json!({"message": "Annotation added", "id": id})),
    )
}
