//! sre-agent's MCP client against real MCP servers: `mcp-server-time` from PyPI called by an
//! investigation (scripted model) through the allow-list, and a server on the Python SDK
//! that crashes, hangs, floods, writes garbage or answers too much, each giving an error
//! and a bound, never a hang; a server that cannot start is named and the daemon starts.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use sre_agent::telemetry::Metrics;
use sre_agent::tools::catalog::build_registry;

use super::{script, venv};
use crate::support::fake_llm::{FakeLlm, answer, finding_json, tool_calls};
use crate::support::{eventually, spawn_app, test_config};

#[tokio::test]
async fn an_investigation_calls_an_allowed_tool_of_mcp_server_time_and_cannot_call_another() {
    let Some(venv) = venv() else { return };
    let llm = FakeLlm::start(vec![
        tool_calls(
            &[
                (
                    "call_1",
                    "mcp_time_get_current_time",
                    r#"{"timezone":"UTC"}"#,
                ),
                (
                    "call_2",
                    "mcp_time_convert_time",
                    r#"{"source_timezone":"UTC","time":"12:00","target_timezone":"Europe/Paris"}"#,
                ),
            ],
            (50, 10, 0),
        ),
        answer(&finding_json("it is now in UTC", "call_1"), (100, 20, 0)),
    ])
    .await;
    let app = spawn_app(&format!(
        "[[mcp.servers]]\nname = \"time\"\ncommand = \"{}\"\ntimeout = \"20s\"\n\
         tools = [\"get_current_time\"]\n{}",
        venv.join("bin/mcp-server-time").display(),
        llm.config("")
    ))
    .await;
    eventually(
        Duration::from_secs(30),
        "mcp_time healthy in /readyz",
        || async {
            let r: Value = app.get("/readyz").await.json().await.ok()?;
            (r["components"]["mcp_time"]["healthy"] == true).then_some(())
        },
    )
    .await;
    let resp = app
        .http
        .post(app.url("/api/v1/ask"))
        .json(&json!({"question": "What time is it?"}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 202);
    let id = resp.json::<Value>().await.unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let detail: Value = eventually(
        Duration::from_secs(60),
        "the investigation ends",
        || async {
            let d: Value = app
                .get(&format!("/api/v1/investigations/{id}"))
                .await
                .json()
                .await
                .ok()?;
            (d["status"] == "finished").then_some(d)
        },
    )
    .await;
    assert_eq!(detail["finding"]["summary"], "it is now in UTC", "{detail}");
    // The allowed tool ran against the real server; the other one was never offered.
    let results = llm.requests()[1].tool_results();
    let allowed = results
        .iter()
        .find(|r| r.contains("call_1"))
        .unwrap_or_else(|| panic!("{results:?}"));
    assert!(
        allowed.contains("\\\"timezone\\\":\\\"UTC\\\"")
            || allowed.contains("\"timezone\":\"UTC\""),
        "{allowed}"
    );
    assert!(allowed.contains("datetime"), "{allowed}");
    let refused = results
        .iter()
        .find(|r| r.contains("mcp_time_convert_time"))
        .unwrap_or_else(|| panic!("{results:?}"));
    assert!(refused.contains("there is no tool"), "{refused}");
    let offered: Vec<String> = llm.requests()[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_string())
        .collect();
    assert!(
        offered.contains(&"mcp_time_get_current_time".to_string()),
        "{offered:?}"
    );
    assert!(
        !offered.iter().any(|n| n == "mcp_time_convert_time"),
        "{offered:?}"
    );
    let description = llm.requests()[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["function"]["name"] == "mcp_time_get_current_time")
        .map(|t| t["function"]["description"].as_str().unwrap().to_string())
        .unwrap();
    assert!(
        description.contains("<data source=\"mcp:time\">"),
        "{description}"
    );
}

/// A registry whose only MCP server is tests/support/mcp/misbehaving_server.py.
fn misbehaving(
    venv: &std::path::Path,
    dir: &std::path::Path,
    tools: &[&str],
) -> sre_agent::tools::ToolRegistry {
    sre_agent::install_crypto_provider();
    let config = test_config(
        dir,
        &format!(
            "[llm]\nmax_tool_output_chars = 2000\n[[mcp.servers]]\nname = \"bad\"\ncommand = \"{}\"\n\
             args = [\"{}\"]\ntimeout = \"4s\"\nmax_bytes = 65536\ntools = {}\n",
            venv.join("bin/python").display(),
            script("misbehaving_server.py").display(),
            serde_json::to_string(tools).unwrap()
        ),
    );
    build_registry(
        &config,
        &sre_agent::integrations::Upstreams::from_config(&config).unwrap(),
        Arc::new(Metrics::new("m")),
    )
    .unwrap()
}

async fn up(reg: &sre_agent::tools::ToolRegistry) {
    let server = reg.mcp_servers()[0].clone();
    eventually(Duration::from_secs(90), "the MCP server is up", || {
        let server = server.clone();
        async move { server.peer().ok().map(|_| ()) }
    })
    .await;
}

#[tokio::test]
async fn a_server_that_crashes_mid_call_gives_an_error_and_is_restarted_not_a_hang() {
    let Some(venv) = venv() else { return };
    let dir = tempfile::tempdir().unwrap();
    let reg = misbehaving(&venv, dir.path(), &["echo", "crash"]);
    up(&reg).await;
    let ok = reg.call("mcp_bad_echo", json!({"text": "hi"})).await;
    assert!(ok.ok && ok.text.contains("echo: hi"), "{}", ok.text);
    let start = Instant::now();
    let crashed = reg.call("mcp_bad_crash", json!({})).await;
    assert!(!crashed.ok, "{}", crashed.text);
    assert!(
        start.elapsed() < Duration::from_secs(4),
        "waited {:?}",
        start.elapsed()
    );
    // Meanwhile its tools answer an error; then it is back.
    let server = reg.mcp_servers()[0].clone();
    eventually(Duration::from_secs(90), "a restart", || {
        let server = server.clone();
        async move { (server.restarts() >= 1 && server.peer().is_ok()).then_some(()) }
    })
    .await;
    let again = reg.call("mcp_bad_echo", json!({"text": "back"})).await;
    assert!(
        again.ok && again.text.contains("echo: back"),
        "{}",
        again.text
    );
}

#[tokio::test]
async fn a_hanging_a_flooding_an_oversized_and_a_garbage_writing_server_give_errors_or_answers_within_bounds()
 {
    let Some(venv) = venv() else { return };
    let dir = tempfile::tempdir().unwrap();
    let reg = misbehaving(
        &venv,
        dir.path(),
        &["echo", "hang", "huge", "flood", "garbage"],
    );
    up(&reg).await;
    let timed = |name: &'static str| {
        let reg = reg.clone();
        async move {
            let start = Instant::now();
            let out = reg.call(name, json!({})).await;
            let took = start.elapsed();
            assert!(took < Duration::from_secs(8), "{name} took {took:?}");
            out
        }
    };
    let hang = timed("mcp_bad_hang").await;
    assert!(
        !hang.ok && hang.text.contains("did not answer within"),
        "{}",
        hang.text
    );
    let huge = timed("mcp_bad_huge").await;
    assert!(!huge.ok, "{}", huge.text);
    assert!(huge.text.chars().count() <= 2000, "{}", huge.text.len());
    let flood = timed("mcp_bad_flood").await;
    assert!(
        flood.ok && flood.text.contains("flood done"),
        "{}",
        flood.text
    );
    let garbage = timed("mcp_bad_garbage").await;
    assert!(garbage.text.chars().count() <= 2000, "{}", garbage.text);
    // After all that the server (or its restart) still answers.
    let server = reg.mcp_servers()[0].clone();
    eventually(Duration::from_secs(90), "echo answers again", || {
        let reg = reg.clone();
        let server = server.clone();
        async move {
            server.peer().ok()?;
            let out = reg.call("mcp_bad_echo", json!({"text": "still"})).await;
            out.ok.then_some(())
        }
    })
    .await;
    assert!(reg.get("mcp_bad_not_allowed").is_none());
}

#[tokio::test]
async fn a_server_that_cannot_start_is_named_in_health_and_check_config_and_the_daemon_starts() {
    let toml = "[[mcp.servers]]\nname = \"broken\"\ncommand = \"/nonexistent/mcp-server\"\n\
                timeout = \"2s\"\ntools = [\"anything\"]\n";
    let app = spawn_app(toml).await;
    let status: Value = eventually(Duration::from_secs(10), "mcp_broken in /readyz", || async {
        let r: Value = app.get("/readyz").await.json().await.ok()?;
        let c = r["components"]["mcp_broken"].clone();
        c["error"].is_string().then_some(c)
    })
    .await;
    assert_eq!(status["healthy"], false, "{status}");
    assert!(
        status["error"].as_str().unwrap().contains("cannot start"),
        "{status}"
    );
    let out = app
        .state
        .dispatcher
        .tools()
        .call("mcp_broken_anything", json!({}))
        .await;
    assert!(
        !out.ok && out.text.contains("MCP server broken is down"),
        "{}",
        out.text
    );
    let file = app.dir.path().join("config.toml");
    let check = tokio::task::spawn_blocking(move || {
        std::process::Command::new(crate::support::binary())
            .args(["check-config", "--config"])
            .arg(file)
            .env_remove("SRE_AGENT_CONFIG")
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&check.stdout);
    assert!(check.status.success(), "{stdout}");
    assert!(
        stdout.contains("mcp server \"broken\" cannot be used") && stdout.contains("cannot start"),
        "{stdout}"
    );
}

#[tokio::test]
async fn an_mcp_server_over_streamable_http_is_reached_with_its_token_or_header_and_not_without() {
    // The upstream is a second sre-agent daemon: its /mcp checks the bearer token.
    let upstream = spawn_app("[server]\napi_token = \"up-t0ken\"").await;
    let url = upstream.url("/mcp");
    let dir = tempfile::tempdir().unwrap();
    let config = test_config(
        dir.path(),
        &format!(
            "[[mcp.servers]]\nname = \"bytoken\"\nurl = \"{url}\"\ntoken = \"up-t0ken\"\n\
             tools = [\"current_time\", \"investigations\"]\n\
             [[mcp.servers]]\nname = \"byheader\"\nurl = \"{url}\"\nheader_name = \"Authorization\"\n\
             header_value = \"Bearer up-t0ken\"\ntools = [\"current_time\"]\n\
             [[mcp.servers]]\nname = \"wrong\"\nurl = \"{url}\"\ntoken = \"n0pe-secret\"\n\
             tools = [\"current_time\"]\n"
        ),
    );
    let reg = build_registry(
        &config,
        &sre_agent::integrations::Upstreams::from_config(&config).unwrap(),
        Arc::new(Metrics::new("m")),
    )
    .unwrap();
    for tool in ["mcp_bytoken_current_time", "mcp_byheader_current_time"] {
        let out = eventually(Duration::from_secs(60), tool, || {
            let reg = reg.clone();
            async move {
                let out = reg.call(tool, json!({})).await;
                out.ok.then_some(out.text)
            }
        })
        .await;
        assert!(out.contains("unix"), "{tool}: {out}");
    }
    let listed = reg.call("mcp_bytoken_investigations", json!({})).await;
    assert!(
        listed.ok && listed.text.contains("no investigations"),
        "{}",
        listed.text
    );
    let wrong = reg
        .mcp_servers()
        .iter()
        .find(|s| s.name() == "wrong")
        .unwrap()
        .clone();
    let error = eventually(Duration::from_secs(60), "the wrong token refused", || {
        let wrong = wrong.clone();
        async move { wrong.error() }
    })
    .await;
    assert!(!error.contains("n0pe-secret"), "{error}");
    let out = reg.call("mcp_wrong_current_time", json!({})).await;
    assert!(
        !out.ok && out.text.contains("MCP server wrong is down"),
        "{}",
        out.text
    );
    assert!(!out.text.contains("n0pe-secret"), "{}", out.text);
}
