//! schemathesis against the real binary: generated requests to every operation of
//! `/api/v1/openapi.json` (with the API token) never get a 5xx, and every answer matches
//! the documented schema. schemathesis is installed by tests/support/install_deps.sh into
//! its own virtualenv; without it the test is skipped, or fails when
//! SRE_TEST_REQUIRE_EXTERNAL=1 (tests/run.sh, CI).

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::support::fake_llm::{FakeLlm, answer, finding_json, tool_calls};
use crate::support::{Daemon, free_port};

const TOKEN: &str = "schemathesis-t0ken";

/// The schemathesis executable: `$SRE_SCHEMATHESIS`, else the one install_deps.sh puts in
/// `$SRE_SCHEMATHESIS_VENV` (default ~/.cache/sre-agent/schemathesis).
fn schemathesis() -> Option<PathBuf> {
    let exe = match std::env::var_os("SRE_SCHEMATHESIS") {
        Some(p) => PathBuf::from(p),
        None => std::env::var_os("SRE_SCHEMATHESIS_VENV")
            .map(PathBuf::from)
            .or_else(|| {
                std::env::var_os("HOME")
                    .map(|h| PathBuf::from(h).join(".cache/sre-agent/schemathesis"))
            })?
            .join("bin/schemathesis"),
    };
    if exe.is_file() {
        return Some(exe);
    }
    if std::env::var("SRE_TEST_REQUIRE_EXTERNAL").as_deref() == Ok("1") {
        panic!(
            "schemathesis is required (SRE_TEST_REQUIRE_EXTERNAL=1) and {} is missing; \
             run tests/support/install_deps.sh",
            exe.display()
        );
    }
    eprintln!(
        "SKIPPED: {} not installed (run tests/support/install_deps.sh)",
        exe.display()
    );
    None
}

#[tokio::test]
async fn schemathesis_finds_no_server_error_and_no_schema_violation_in_the_live_daemon() {
    let Some(exe) = schemathesis() else {
        return;
    };
    let llm = FakeLlm::start(vec![
        tool_calls(&[("call_1", "current_time", "{}")], (50, 10, 0)),
        answer(
            &finding_json("a generated question", "call_1"),
            (100, 20, 0),
        ),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let config = dir.path().join("config.toml");
    std::fs::write(
        &config,
        format!(
            "[server]\nlisten = \"127.0.0.1:{port}\"\ndata_dir = \"{}\"\napi_token = \"{TOKEN}\"\n{}",
            dir.path().join("data").display(),
            llm.config("")
        ),
    )
    .unwrap();
    let daemon = Daemon::start(dir.path(), &config, &[]).await;
    let start = Instant::now();
    let out = tokio::task::spawn_blocking(move || {
        Command::new(exe)
            .args([
                "run",
                "--checks",
                "not_a_server_error,response_schema_conformance",
            ])
            .args(["--phases", "examples,coverage,fuzzing"])
            // One worker: CPython 3.11's ast.parse is not thread-safe, and hypothesis
            // calls it when describing strategies ("AST constructor recursion depth").
            .args(["--max-examples", "15", "--workers", "1"])
            .args(["--request-timeout", "20", "--suppress-health-check", "all"])
            .args(["--generation-database", "none", "--no-color"])
            .args(["-H", &format!("Authorization: Bearer {TOKEN}")])
            .arg(format!("http://127.0.0.1:{port}/api/v1/openapi.json"))
            .env("NO_COLOR", "1")
            .current_dir(dir.path())
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "schemathesis found problems ({:?}):\n{stdout}\n{stderr}\ndaemon log:\n{}",
        start.elapsed(),
        daemon.log_text()
    );
    eprintln!("{stdout}");
    assert!(stdout.contains("passed"), "{stdout}\n{stderr}");
    assert!(
        start.elapsed() < Duration::from_secs(90),
        "schemathesis took {:?}",
        start.elapsed()
    );
}
