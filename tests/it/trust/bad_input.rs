//! Bad input on every route, found from the OpenAPI document so routes added later are
//! covered too: malformed JSON gets 400, a body over the limit 413 (by Content-Length or
//! chunked), huge headers 431, missing credentials 401, a wrong method 405; each is a JSON
//! `{"error": …}`, stores nothing, and the daemon keeps answering well-formed traffic.

use reqwest::{Method, StatusCode};
use serde_json::Value;

use crate::support::alerts::AM_FIRING;
use crate::support::{TestApp, spawn_app};

const API_TOKEN: &str = "api-t0ken";
const HOOK_TOKEN: &str = "hook-t0ken";

/// A body just over the route's limit (axum's 2 MiB for the API, `webhook.max_body_bytes`
/// for the webhooks): the unread rest fits the socket buffers, so the client reads the
/// answer instead of a reset.
fn oversize(path: &str) -> usize {
    let limit = if path.starts_with("/webhook/") {
        65536
    } else {
        2 * 1024 * 1024
    };
    limit + 32 * 1024
}

async fn app() -> TestApp {
    spawn_app(&format!(
        "[server]\napi_token = \"{API_TOKEN}\"\n[webhook]\ntoken = \"{HOOK_TOKEN}\"\nmax_body_bytes = 65536\n"
    ))
    .await
}

fn token_for(path: &str) -> &'static str {
    if path.starts_with("/webhook/") {
        HOOK_TOKEN
    } else {
        API_TOKEN
    }
}

/// `(method, path)` of every documented operation, `{id}` filled in.
async fn operations(app: &TestApp) -> Vec<(Method, String)> {
    let doc: Value = app.get("/api/v1/openapi.json").await.json().await.unwrap();
    let mut ops = Vec::new();
    for (path, methods) in doc["paths"].as_object().unwrap() {
        for m in methods.as_object().unwrap().keys() {
            let method = Method::from_bytes(m.to_uppercase().as_bytes()).unwrap();
            ops.push((method, path.replace("{id}", "no-such-id")));
        }
    }
    assert!(ops.len() >= 14, "{ops:?}");
    ops
}

/// What the daemon has stored: alerts, investigations, reports.
fn stored(app: &TestApp) -> (usize, usize, usize) {
    let s = &app.state;
    (
        s.intake.store().alert_count(),
        s.dispatcher.list(None, 500, None).unwrap().items.len(),
        s.reports.store().list(500).unwrap().len(),
    )
}

/// Sends `req`, expects `want` with a JSON error, and returns the error text.
async fn expect_error(req: reqwest::RequestBuilder, want: StatusCode, what: &str) -> String {
    let resp = req.send().await.unwrap();
    let status = resp.status();
    let content_type = resp
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_string());
    let text = resp.text().await.unwrap();
    assert_eq!(status, want, "{what}: {text}");
    assert_eq!(content_type.as_deref(), Some("application/json"), "{what}");
    let body: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{what}: {e}: {text}"));
    let error = body["error"]
        .as_str()
        .unwrap_or_else(|| panic!("{what}: {text}"));
    assert!(!error.is_empty(), "{what}");
    error.to_string()
}

async fn still_healthy(app: &TestApp) {
    let resp = app
        .http
        .post(app.url("/webhook/alertmanager"))
        .bearer_auth(HOOK_TOKEN)
        .header("content-type", "application/json")
        .body(AM_FIRING)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
}

#[tokio::test]
async fn malformed_json_on_every_post_route_gets_400_and_stores_nothing() {
    let app = app().await;
    for (method, path) in operations(&app).await {
        if method != Method::POST {
            continue;
        }
        for body in [
            &b"{"[..],
            b"[1,2",
            b"\xff\xfe",
            b"{\"question\": 5, \"send\": 7}",
            b"null",
        ] {
            let req = app
                .http
                .post(app.url(&path))
                .bearer_auth(token_for(&path))
                .header("content-type", "application/json")
                .body(body.to_vec());
            let what = format!("POST {path} {:?}", String::from_utf8_lossy(body));
            expect_error(req, StatusCode::BAD_REQUEST, &what).await;
        }
    }
    assert_eq!(stored(&app), (0, 0, 0));
    still_healthy(&app).await;
}

#[tokio::test]
async fn a_body_over_the_limit_on_every_post_route_gets_413_and_stores_nothing() {
    let app = app().await;
    for (method, path) in operations(&app).await {
        if method != Method::POST {
            continue;
        }
        // A JSON string holding a huge question or label: valid, only too large.
        let body = format!("{{\"question\": \"{}\"}}", "a".repeat(oversize(&path)));
        let req = app
            .http
            .post(app.url(&path))
            .bearer_auth(token_for(&path))
            .header("content-type", "application/json")
            .body(body);
        let err = expect_error(req, StatusCode::PAYLOAD_TOO_LARGE, &format!("POST {path}")).await;
        assert!(err.contains("limit"), "POST {path}: {err}");
        // Chunked, without Content-Length: cut off while reading.
        let chunks =
            (0..oversize(&path) / 8192 + 1).map(|_| Ok::<_, std::io::Error>(vec![b' '; 8192]));
        let req = app
            .http
            .post(app.url(&path))
            .bearer_auth(token_for(&path))
            .header("content-type", "application/json")
            .body(reqwest::Body::wrap_stream(futures::stream::iter(chunks)));
        expect_error(
            req,
            StatusCode::PAYLOAD_TOO_LARGE,
            &format!("chunked POST {path}"),
        )
        .await;
    }
    assert_eq!(stored(&app), (0, 0, 0));
    still_healthy(&app).await;
}

#[tokio::test]
async fn huge_headers_on_every_route_get_431_and_store_nothing() {
    let app = app().await;
    for (method, path) in operations(&app).await {
        let req = app
            .http
            .request(method.clone(), app.url(&path))
            .bearer_auth(token_for(&path))
            .header("x-padding", "p".repeat(40 * 1024))
            .body(AM_FIRING);
        let err = expect_error(
            req,
            StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            &format!("{method} {path}"),
        )
        .await;
        assert!(err.contains("headers"), "{err}");
        // Many headers adding up count too.
        let mut req = app.http.request(method.clone(), app.url(&path));
        for i in 0..60 {
            req = req.header(format!("x-h{i}"), "v".repeat(700));
        }
        expect_error(
            req.body(AM_FIRING),
            StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            &format!("{method} {path} with 60 headers"),
        )
        .await;
    }
    assert_eq!(stored(&app), (0, 0, 0));
    still_healthy(&app).await;
}

#[tokio::test]
async fn missing_credentials_get_401_and_a_wrong_method_405_both_as_json() {
    let app = app().await;
    for (method, path) in operations(&app).await {
        let open = ["/healthz", "/readyz", "/metrics", "/api/v1/openapi.json"];
        if !open.contains(&path.as_str()) {
            let req = app
                .http
                .request(method.clone(), app.url(&path))
                .body(AM_FIRING);
            expect_error(req, StatusCode::UNAUTHORIZED, &format!("{method} {path}")).await;
        }
    }
    let req = app.http.put(app.url("/api/v1/ask")).bearer_auth(API_TOKEN);
    let err = expect_error(req, StatusCode::METHOD_NOT_ALLOWED, "PUT /api/v1/ask").await;
    assert!(err.contains("method not allowed"), "{err}");
    let req = app
        .http
        .get(app.url("/api/v1/alerts?limit=many"))
        .bearer_auth(API_TOKEN);
    expect_error(req, StatusCode::BAD_REQUEST, "a malformed query string").await;
    assert_eq!(stored(&app), (0, 0, 0));
    still_healthy(&app).await;
}
