//! `sre-agent ask` and `investigations` via the real binary, with and without a daemon.

use crate::support::fake_llm::{FakeLlm, answer, finding_json, tool_calls};
use crate::support::run_cli;

#[tokio::test]
async fn sre_agent_ask_without_a_daemon_runs_in_process_and_prints_the_finding() {
    let fake = FakeLlm::start(vec![
        tool_calls(&[("call_1", "current_time", "{}")], (10, 1, 0)),
        answer(&finding_json("CLI finding", "call_1"), (10, 1, 0)),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let port = crate::support::free_port();
    let cfg = format!(
        "[server]\nlisten = \"127.0.0.1:{port}\"\ndata_dir = \"data\"\n{}",
        fake.config("")
    );
    std::fs::write(dir.path().join("config.toml"), cfg).unwrap();
    let path = dir.path().to_path_buf();
    let (code, out, err) = tokio::task::spawn_blocking(move || {
        run_cli(
            &path,
            &["ask", "what time is it?", "--config", "config.toml"],
            &[],
        )
    })
    .await
    .unwrap();
    assert_eq!(code, 0, "stdout: {out}\nstderr: {err}");
    assert!(out.contains("## Summary\n\nCLI finding"), "{out}");
    assert!(err.contains("tool current_time"), "{err}");
    let path = dir.path().to_path_buf();
    let (code, out, _) = tokio::task::spawn_blocking(move || {
        run_cli(
            &path,
            &["investigations", "list", "--config", "config.toml"],
            &[],
        )
    })
    .await
    .unwrap();
    assert_eq!(code, 0);
    assert!(
        out.contains("finished") && out.contains("what time is it?"),
        "{out}"
    );
}

#[tokio::test]
async fn sre_agent_ask_talks_to_a_running_daemon_and_prints_json_on_request() {
    let fake = FakeLlm::start(vec![
        tool_calls(&[("call_1", "current_time", "{}")], (10, 1, 0)),
        answer(&finding_json("via daemon", "call_1"), (10, 1, 0)),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let port = crate::support::free_port();
    let cfg = format!(
        "[server]\nlisten = \"127.0.0.1:{port}\"\ndata_dir = \"data\"\napi_token = \"tok\"\n{}",
        fake.config("")
    );
    let file = dir.path().join("config.toml");
    std::fs::write(&file, cfg).unwrap();
    let _daemon = crate::support::Daemon::start(dir.path(), &file, &[]).await;
    let path = dir.path().to_path_buf();
    let (code, out, err) = tokio::task::spawn_blocking(move || {
        run_cli(
            &path,
            &["ask", "daemon?", "--json", "--config", "config.toml"],
            &[],
        )
    })
    .await
    .unwrap();
    assert_eq!(code, 0, "stdout: {out}\nstderr: {err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["status"], "finished");
    assert_eq!(v["finding"]["summary"], "via daemon");
    let id = v["id"].as_str().unwrap().to_string();
    let path = dir.path().to_path_buf();
    let (code, out, _) = tokio::task::spawn_blocking(move || {
        run_cli(
            &path,
            &["investigations", "show", &id, "--config", "config.toml"],
            &[],
        )
    })
    .await
    .unwrap();
    assert_eq!(code, 0);
    assert!(
        out.contains("via daemon") && out.contains("## Timeline"),
        "{out}"
    );
}
