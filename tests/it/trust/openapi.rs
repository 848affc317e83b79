//! The OpenAPI document (`GET /api/v1/openapi.json`) covers every route the router
//! registers, each documented operation is routed, and what the live daemon answers
//! validates against the document's schemas.

use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};

use crate::support::alerts::AM_FIRING;
use crate::support::fake_llm::{FakeLlm, answer, finding_json, tool_calls};
use crate::support::{TestApp, eventually, spawn_app};

const TOKEN: &str = "api-t0ken";

/// Whether a route belongs in the OpenAPI document: the JSON API, the webhooks and the
/// operations endpoints (the web console's HTML pages do not).
fn is_api(path: &str) -> bool {
    path.starts_with("/api/")
        || path.starts_with("/webhook/")
        || ["/metrics", "/healthz", "/readyz"].contains(&path)
}

/// `(method, path, file)` of every `.route("…", get(…).post(…))` in `src/http/` outside
/// the console (`src/http/console/`, HTML pages for browsers).
fn routes_in_source() -> BTreeSet<(String, String, String)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/http");
    let methods =
        regex_lite::Regex::new(r"\b(get|post|put|delete|patch|head|options|any)\s*\(").unwrap();
    let mut out = BTreeSet::new();
    let mut files = vec![dir];
    while let Some(path) = files.pop() {
        if path.is_dir() && path.file_name().is_some_and(|n| n == "console") {
            continue;
        }
        if path.is_dir() {
            files.extend(std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
            continue;
        }
        if path.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let file = path.file_name().unwrap().to_string_lossy().into_owned();
        for (at, _) in text.match_indices(".route(") {
            let args = &text[at + ".route(".len()..];
            let Some(args) = args.trim_start().strip_prefix('"') else {
                panic!("{file}: a .route( whose path is not a string literal; list it here");
            };
            let route_path = &args[..args.find('"').unwrap()];
            // The method chain runs to the parenthesis closing `.route(`.
            let mut depth = 1;
            let end = args
                .char_indices()
                .find(|&(_, c)| {
                    depth += match c {
                        '(' => 1,
                        ')' => -1,
                        _ => 0,
                    };
                    depth == 0
                })
                .map_or(args.len(), |(i, _)| i);
            if !is_api(route_path) {
                continue;
            }
            for m in methods.captures_iter(&args[..end]) {
                out.insert((m[1].to_string(), route_path.to_string(), file.clone()));
            }
        }
    }
    assert!(
        out.len() >= 14,
        "found only {} routes in src/http: {out:?}",
        out.len()
    );
    out
}

async fn document(app: &TestApp) -> Value {
    // No token: the document is public.
    let resp = app.get("/api/v1/openapi.json").await;
    assert_eq!(resp.status(), 200);
    resp.json().await.unwrap()
}

#[tokio::test]
async fn every_route_of_the_router_is_in_the_openapi_document() {
    let app = spawn_app(&format!("[server]\napi_token = \"{TOKEN}\"\n")).await;
    let doc = document(&app).await;
    assert!(
        doc["openapi"].as_str().unwrap().starts_with("3.1"),
        "{}",
        doc["openapi"]
    );
    let mut missing = Vec::new();
    for (method, path, file) in routes_in_source() {
        let documented = &doc["paths"][&path];
        let ok = if method == "any" {
            documented.is_object()
        } else {
            documented[&method].is_object()
        };
        if !ok {
            missing.push(format!(
                "{} {path} (src/http/{file}): add #[utoipa::path({method}, path = \"{path}\", \
                 responses(…))] to its handler and the handler to `paths(…)` in \
                 src/http/openapi.rs",
                method.to_uppercase()
            ));
        }
    }
    assert!(
        missing.is_empty(),
        "routes missing from the OpenAPI document:\n{}",
        missing.join("\n")
    );
}

#[tokio::test]
async fn every_documented_operation_is_routed() {
    let app = spawn_app(&format!("[server]\napi_token = \"{TOKEN}\"\n")).await;
    let doc = document(&app).await;
    for (path, ops) in doc["paths"].as_object().unwrap() {
        for method in ops.as_object().unwrap().keys() {
            let url = app.url(&path.replace("{id}", "no-such-id"));
            let method = Method::from_bytes(method.to_uppercase().as_bytes()).unwrap();
            let mut req = app.http.request(method.clone(), url).bearer_auth(TOKEN);
            if method == Method::POST {
                // Malformed, so nothing is generated or queued.
                req = req.header("content-type", "application/json").body("{");
            }
            let resp = req.send().await.unwrap();
            let status = resp.status();
            let body = resp.text().await.unwrap();
            assert_ne!(status, 405, "{method} {path} is documented but not routed");
            assert!(
                !body.contains("no route for"),
                "{method} {path} is documented but not routed: {body}"
            );
            assert!(
                !status.is_server_error(),
                "{method} {path}: {status} {body}"
            );
        }
    }
}

/// A validator for the schema of `status` answers of `method path` as JSON, with the
/// document's components for its `$ref`s.
fn response_schema(doc: &Value, method: &str, path: &str, status: u16) -> jsonschema::Validator {
    let op = &doc["paths"][path][method];
    let schema = &op["responses"][status.to_string()]["content"]["application/json"]["schema"];
    assert!(
        schema.is_object(),
        "{method} {path} documents no JSON body for {status}"
    );
    let mut root = schema.clone();
    root["components"] = doc["components"].clone();
    jsonschema::validator_for(&root).unwrap_or_else(|e| panic!("{method} {path}: {e}"))
}

async fn check(
    app: &TestApp,
    doc: &Value,
    method: &str,
    path: &str,
    url: &str,
    body: Option<Value>,
) {
    let mut req = app
        .http
        .request(
            Method::from_bytes(method.to_uppercase().as_bytes()).unwrap(),
            app.url(url),
        )
        .bearer_auth(TOKEN);
    if let Some(body) = body {
        req = req.json(&body);
    }
    let resp = req.send().await.unwrap();
    let status = resp.status().as_u16();
    let answer: Value = resp.json().await.unwrap();
    let validator = response_schema(doc, method, path, status);
    let errors: Vec<String> = validator
        .iter_errors(&answer)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "{method} {url} answered {status} not matching the document:\n{}\n{answer:#}",
        errors.join("\n")
    );
}

#[tokio::test]
async fn live_answers_validate_against_the_documented_schemas() {
    let llm = FakeLlm::start(vec![
        tool_calls(&[("call_1", "current_time", "{}")], (50, 10, 0)),
        answer(
            &finding_json("disk filling on host1", "call_1"),
            (100, 20, 5),
        ),
    ])
    .await;
    let app = spawn_app(&format!(
        "[server]\napi_token = \"{TOKEN}\"\n{}",
        llm.config("")
    ))
    .await;
    let doc = document(&app).await;
    let am: Value = serde_json::from_str(AM_FIRING).unwrap();
    check(
        &app,
        &doc,
        "post",
        "/webhook/alertmanager",
        "/webhook/alertmanager",
        Some(am),
    )
    .await;
    check(
        &app,
        &doc,
        "post",
        "/api/v1/ask",
        "/api/v1/ask",
        Some(json!({"question": "why?"})),
    )
    .await;
    let finished = eventually(
        Duration::from_secs(30),
        "investigations finished",
        || async {
            let page: Value = app
                .http
                .get(app.url("/api/v1/investigations"))
                .bearer_auth(TOKEN)
                .send()
                .await
                .ok()?
                .json()
                .await
                .ok()?;
            let items = page["items"].as_array()?.clone();
            (items.len() == 2 && items.iter().all(|i| i["finished_at"].is_string()))
                .then_some(items)
        },
    )
    .await;
    check(
        &app,
        &doc,
        "get",
        "/api/v1/investigations",
        "/api/v1/investigations?limit=1",
        None,
    )
    .await;
    for inv in &finished {
        let id = inv["id"].as_str().unwrap();
        let url = format!("/api/v1/investigations/{id}");
        check(&app, &doc, "get", "/api/v1/investigations/{id}", &url, None).await;
    }
    check(&app, &doc, "get", "/api/v1/alerts", "/api/v1/alerts", None).await;
    check(
        &app,
        &doc,
        "post",
        "/api/v1/reports",
        "/api/v1/reports",
        Some(json!({})),
    )
    .await;
    let reports: Value = app
        .http
        .get(app.url("/api/v1/reports"))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    check(
        &app,
        &doc,
        "get",
        "/api/v1/reports",
        "/api/v1/reports",
        None,
    )
    .await;
    let id = reports[0]["id"].as_str().unwrap();
    let url = format!("/api/v1/reports/{id}");
    check(&app, &doc, "get", "/api/v1/reports/{id}", &url, None).await;
    check(&app, &doc, "get", "/readyz", "/readyz", None).await;
    // Errors too: every one is the documented `{"error": …}`.
    check(
        &app,
        &doc,
        "get",
        "/api/v1/reports/{id}",
        "/api/v1/reports/nope",
        None,
    )
    .await;
    check(
        &app,
        &doc,
        "post",
        "/api/v1/ask",
        "/api/v1/ask",
        Some(json!({"question": ""})),
    )
    .await;
    check(
        &app,
        &doc,
        "delete",
        "/api/v1/investigations/{id}",
        "/api/v1/investigations/nope",
        None,
    )
    .await;
}
