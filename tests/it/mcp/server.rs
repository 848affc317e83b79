//! sre-agent's MCP server, driven by the official Python SDK as a desktop assistant would:
//! over Streamable HTTP (`/mcp`, bearer token) and over stdio (`sre-agent mcp`), listing and
//! calling the agent's tools against a real Prometheus, asking and reading the finding
//! (scripted model), refused over the daily limit like the API, and bad input bounded.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

use super::{run_client, venv};
use crate::support::external::start_prometheus;
use crate::support::fake_llm::{FakeLlm, answer, finding_json, tool_calls};
use crate::support::{binary, free_port, spawn_app};

const TOKEN: &str = "mcp-t0ken";

/// A daemon with a real Prometheus, a scripted model that queries it and answers, and room
/// for two investigations a day (a question and its follow-up).
async fn daemon(prom_url: &str, llm: &FakeLlm) -> crate::support::TestApp {
    spawn_app(&format!(
        "[server]\napi_token = \"{TOKEN}\"\n[alerts]\nmax_investigations_per_day = 2\n\
         [prometheus]\nurl = \"{prom_url}\"\n{}",
        llm.config("")
    ))
    .await
}

async fn scripted_llm(summary: &str) -> FakeLlm {
    FakeLlm::start(vec![
        tool_calls(
            &[("call_1", "prometheus_query", r#"{"query":"vector(42)"}"#)],
            (50, 10, 0),
        ),
        answer(&finding_json(summary, "call_1"), (100, 20, 0)),
    ])
    .await
}

fn names(listed: &Value) -> Vec<String> {
    listed["tools"]
        .as_array()
        .expect("a tool list")
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect()
}

/// The operations every transport is checked with.
fn session_ops() -> Value {
    json!([
        {"op": "list"},
        {"op": "call", "tool": "prometheus_query", "args": {"query": "vector(42)"}},
        {"op": "ask_and_wait", "question": "What is the answer?", "timeout": 60},
        {"op": "follow_up_last", "question": "Why 42?"},
        {"op": "call", "tool": "ask", "args": {"question": "And one more?"}},
        {"op": "resources"},
        {"op": "read", "uri": "sre-agent://findings/recent"},
        {"op": "call", "tool": "no_such_tool", "args": {}},
    ])
}

/// What both transports must answer to [`session_ops`].
fn check_session(r: &[Value], app: &crate::support::TestApp) {
    let listed = names(&r[0]);
    for expected in [
        "current_time",
        "prometheus_query",
        "ask",
        "investigation",
        "investigations",
        "follow_up",
    ] {
        assert!(
            listed.iter().any(|n| n == expected),
            "{expected}: {listed:?}"
        );
    }
    // Same names, descriptions and schemas as the model sees.
    for def in app.state.dispatcher.tools().definitions() {
        let offered = r[0]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == def.name)
            .unwrap_or_else(|| panic!("{} is not offered", def.name));
        assert_eq!(offered["description"], def.description, "{}", def.name);
        assert_eq!(
            offered["schema"]["properties"], def.parameters["properties"],
            "{}",
            def.name
        );
    }
    let query = &r[1];
    assert_eq!(query["is_error"], false, "{query}");
    let text = query["text"].as_str().unwrap();
    assert!(text.starts_with("<data source=\"tool\">"), "{text}");
    assert!(text.contains("42"), "{text}");
    let inv = &r[2]["investigation"];
    let text = inv["text"].as_str().unwrap_or_else(|| panic!("{}", r[2]));
    assert!(text.contains("status: finished"), "{text}");
    assert!(text.contains("the answer is 42"), "{text}");
    assert!(text.contains("tool prometheus_query"), "timeline: {text}");
    let follow_up = &r[3];
    assert_eq!(follow_up["is_error"], false, "{follow_up}");
    assert!(
        follow_up["text"]
            .as_str()
            .unwrap()
            .starts_with("follow-up investigation "),
        "{follow_up}"
    );
    let refused = &r[4];
    assert_eq!(refused["is_error"], true, "{refused}");
    let refusal = refused["text"].as_str().unwrap();
    assert!(refusal.starts_with("not investigated: "), "{refusal}");
    assert!(refusal.contains("max_investigations_per_day"), "{refusal}");
    let resources = r[5]["resources"].as_array().unwrap();
    assert!(
        resources.contains(&json!("sre-agent://findings/recent")),
        "{resources:?}"
    );
    assert!(
        resources.contains(&json!("sre-agent://reports/latest")),
        "{resources:?}"
    );
    assert!(
        r[6]["text"].as_str().unwrap().contains("the answer is 42"),
        "{}",
        r[6]
    );
    let unknown = r[7].to_string();
    assert!(unknown.contains("unknown tool"), "{unknown}");
}

#[tokio::test]
async fn a_python_mcp_client_lists_calls_and_asks_over_http_and_is_refused_without_the_token() {
    let Some(venv) = venv() else { return };
    let Some(prom) = start_prometheus(&[], &[], "mcp") else {
        return;
    };
    let llm = scripted_llm("the answer is 42").await;
    let app = daemon(&prom.url, &llm).await;
    let url = app.url("/mcp");
    let with_token = vec!["--http".into(), url.clone(), "--token".into(), TOKEN.into()];
    let r = run_client(&venv, with_token, session_ops()).await;
    check_session(&r, &app);
    // The refusal is the API's own 429 text.
    let api = app
        .http
        .post(app.url("/api/v1/ask"))
        .bearer_auth(TOKEN)
        .json(&json!({"question": "And one more?"}))
        .send()
        .await
        .unwrap();
    assert_eq!(api.status(), 429);
    let api: Value = api.json().await.unwrap();
    assert_eq!(
        r[4]["text"].as_str().unwrap(),
        format!("not investigated: {}", api["error"].as_str().unwrap())
    );
    for target in [
        vec!["--http".to_string(), url.clone()],
        vec![
            "--http".into(),
            url.clone(),
            "--token".into(),
            "wrong".into(),
        ],
    ] {
        let r = run_client(&venv, target, json!([{"op": "list"}])).await;
        assert!(r[0]["error"].is_string(), "listed without the token: {r:?}");
    }
    let metrics = app.metrics().await;
    // The SDK reports any HTTP error alike; the daemon says it was a 401.
    let refused = crate::support::metric_value(
        &metrics,
        "sre_agent_http_requests_total{endpoint=\"/mcp\",status=\"401\"}",
    );
    assert!(refused.is_some_and(|n| n >= 2.0), "{metrics}");
    let counted = |tool: &str, status: &str| {
        metrics.lines().any(|l| {
            l.starts_with("sre_agent_mcp_server_calls_total{")
                && l.contains(&format!("tool=\"{tool}\""))
                && l.contains(&format!("status=\"{status}\""))
                && l.contains("via=\"http\"")
                && !l.ends_with(" 0")
        })
    };
    assert!(counted("prometheus_query", "ok"), "{metrics}");
    assert!(counted("ask", "error"), "{metrics}");
    assert!(counted("follow_up", "ok"), "{metrics}");
    assert!(counted("unknown", "error"), "{metrics}");
    // The agent's own tool metrics count the MCP call too.
    assert!(
        metrics.contains("sre_agent_tool_calls_total{status=\"ok\",tool=\"prometheus_query\"}"),
        "{metrics}"
    );
}

#[tokio::test]
async fn a_python_mcp_client_over_stdio_calls_tools_in_process_and_asks_the_running_daemon() {
    let Some(venv) = venv() else { return };
    let Some(prom) = start_prometheus(&[], &[], "mcp") else {
        return;
    };
    let llm = scripted_llm("the answer is 42").await;
    let app = daemon(&prom.url, &llm).await;
    let dir = tempfile::tempdir().unwrap();
    let write_config = |listen: &str, name: &str| {
        let file = dir.path().join(name);
        std::fs::write(
            &file,
            format!(
                "[server]\nlisten = \"{listen}\"\napi_token = \"{TOKEN}\"\ndata_dir = \"{}\"\n\
                 [prometheus]\nurl = \"{}\"\n",
                dir.path().join("data").display(),
                prom.url
            ),
        )
        .unwrap();
        file
    };
    let config = write_config(&app.addr.to_string(), "config.toml");
    let stdio = |config: &std::path::Path| {
        vec![
            "--stdio".to_string(),
            binary().display().to_string(),
            "mcp".into(),
            "--config".into(),
            config.display().to_string(),
        ]
    };
    let r = run_client(&venv, stdio(&config), session_ops()).await;
    check_session(&r, &app);
    // Without a daemon the tools still answer; investigations say what is missing.
    let nobody = write_config(&format!("127.0.0.1:{}", free_port()), "alone.toml");
    let r = run_client(
        &venv,
        stdio(&nobody),
        json!([
            {"op": "call", "tool": "prometheus_query", "args": {"query": "vector(7)"}},
            {"op": "call", "tool": "ask", "args": {"question": "anyone?"}},
        ]),
    )
    .await;
    assert_eq!(r[0]["is_error"], false, "{r:?}");
    assert!(r[0]["text"].as_str().unwrap().contains('7'), "{r:?}");
    assert_eq!(r[1]["is_error"], true, "{r:?}");
    assert!(
        r[1]["text"]
            .as_str()
            .unwrap()
            .contains("no sre-agent daemon answers"),
        "{r:?}"
    );
}

#[tokio::test]
async fn malformed_and_oversized_mcp_requests_get_an_error_and_the_daemon_keeps_serving() {
    let app = spawn_app(&format!("[server]\napi_token = \"{TOKEN}\"")).await;
    let post = |body: Vec<u8>| {
        app.http
            .post(app.url("/mcp"))
            .bearer_auth(TOKEN)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(body)
            .send()
    };
    for body in [
        b"this is not json".to_vec(),
        br#"{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": "#.to_vec(),
        br#"{"jsonrpc": "2.0", "id": 1, "method": "no/such/method"}"#.to_vec(),
    ] {
        let resp = post(body.clone()).await.unwrap();
        let status = resp.status().as_u16();
        let text = resp.text().await.unwrap();
        assert!(
            status < 500,
            "{status} for {:?}: {text}",
            String::from_utf8_lossy(&body)
        );
        assert!(status >= 400 || text.contains("error"), "{status}: {text}");
    }
    let huge = post(vec![b' '; 1024 * 1024]).await.unwrap();
    assert_eq!(huge.status(), 413);
    let off = spawn_app("[mcp]\nserve = false").await;
    assert_eq!(
        off.http
            .post(off.url("/mcp"))
            .send()
            .await
            .unwrap()
            .status(),
        404
    );
    assert_eq!(app.get("/healthz").await.status(), 200);
}

#[test]
fn the_stdio_server_skips_a_malformed_or_oversized_line_and_answers_the_next_request() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.toml");
    std::fs::write(
        &config,
        format!(
            "[server]\nlisten = \"127.0.0.1:{}\"\ndata_dir = \"{}\"\n",
            free_port(),
            dir.path().join("data").display()
        ),
    )
    .unwrap();
    let mut child = Command::new(binary())
        .args(["mcp", "--config"])
        .arg(&config)
        .env_remove("SRE_AGENT_CONFIG")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"}}});
    stdin.write_all(b"this is not json\n").unwrap();
    stdin.write_all(&vec![b'x'; 2 * 1024 * 1024]).unwrap();
    stdin.write_all(b"\n").unwrap();
    stdin
        .write_all(format!("{initialize}\n").as_bytes())
        .unwrap();
    stdin.flush().unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let answer = loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        let line = rx.recv_timeout(left).expect("an answer to initialize");
        let v: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
        if v["id"] == 1 {
            break v;
        }
    };
    assert_eq!(
        answer["result"]["serverInfo"]["name"], "sre-agent",
        "{answer}"
    );
    drop(stdin);
    let _ = child.wait();
}
