//! `sre-agent ask --follow-up ID`: in-process and through a running daemon.

use serde_json::Value;

use crate::support::fake_llm::{FakeLlm, answer, finding_json, tool_calls};
use crate::support::{Daemon, free_port, run_cli};

async fn cli(dir: &std::path::Path, args: &[&str]) -> (i32, String, String) {
    let dir = dir.to_path_buf();
    let mut args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    args.extend(["--config".into(), "config.toml".into()]);
    tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        run_cli(&dir, &args, &[])
    })
    .await
    .unwrap()
}

#[tokio::test]
async fn ask_follow_up_links_the_new_investigation_to_its_parent_with_and_without_a_daemon() {
    let fake = FakeLlm::start(vec![
        tool_calls(&[("call_1", "current_time", "{}")], (10, 1, 0)),
        answer(&finding_json("the clock is right", "call_1"), (10, 1, 0)),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let file = dir.path().join("config.toml");
    std::fs::write(
        &file,
        format!(
            "[server]\nlisten = \"127.0.0.1:{port}\"\ndata_dir = \"data\"\n{}",
            fake.config("")
        ),
    )
    .unwrap();
    let (code, out, err) = cli(dir.path(), &["ask", "what time is it?", "--json"]).await;
    assert_eq!(code, 0, "{out}\n{err}");
    let parent: Value = serde_json::from_str(&out).unwrap();
    let parent_id = parent["id"].as_str().unwrap().to_string();

    let (code, out, err) = cli(
        dir.path(),
        &["ask", "--follow-up", &parent_id, "and in UTC?", "--json"],
    )
    .await;
    assert_eq!(code, 0, "{out}\n{err}");
    let child: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(child["parent_id"], parent_id.as_str());
    let (code, _, err) = cli(dir.path(), &["ask", "--follow-up", "nope", "x"]).await;
    assert_ne!(code, 0);
    assert!(err.contains("no investigation nope"), "{err}");

    let _daemon = Daemon::start(dir.path(), &file, &[]).await;
    let child_id = child["id"].as_str().unwrap().to_string();
    let (code, out, err) = cli(
        dir.path(),
        &["ask", "--follow-up", &child_id, "and tomorrow?", "--json"],
    )
    .await;
    assert_eq!(code, 0, "{out}\n{err}");
    let grandchild: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(grandchild["parent_id"], child_id.as_str());
    let (code, _, err) = cli(dir.path(), &["ask", "--follow-up", "nope", "x"]).await;
    assert_ne!(code, 0);
    assert!(
        err.contains("404") || err.contains("no investigation"),
        "{err}"
    );
}
