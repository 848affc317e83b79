//! MCP both ways, with real peers: the official Python SDK (`mcp`, pinned, installed by
//! tests/support/install_deps.sh into its own virtualenv) as a client of sre-agent's server
//! over Streamable HTTP and stdio (`server.rs`), and real MCP servers from PyPI
//! (`mcp-server-time`) or on the Python SDK (`tests/support/mcp/misbehaving_server.py`) as
//! servers of sre-agent's client (`client.rs`). Without the virtualenv the tests are skipped,
//! or fail when SRE_TEST_REQUIRE_EXTERNAL=1 (tests/run.sh, CI).

mod client;
mod server;

use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

/// The virtualenv with `mcp` and `mcp-server-time`: `$SRE_MCP_VENV`, else
/// ~/.cache/sre-agent/mcp; `None` (test skipped) when it is missing.
pub fn venv() -> Option<PathBuf> {
    let dir = std::env::var_os("SRE_MCP_VENV")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/sre-agent/mcp"))
        })?;
    if dir.join("bin/python").is_file() && dir.join("bin/mcp-server-time").is_file() {
        return Some(dir);
    }
    if std::env::var("SRE_TEST_REQUIRE_EXTERNAL").as_deref() == Ok("1") {
        panic!(
            "the MCP virtualenv is required (SRE_TEST_REQUIRE_EXTERNAL=1) and {} is missing; \
             run tests/support/install_deps.sh",
            dir.display()
        );
    }
    eprintln!(
        "SKIPPED: {} not installed (run tests/support/install_deps.sh)",
        dir.display()
    );
    None
}

/// tests/support/mcp/`name`.
pub fn script(name: &str) -> PathBuf {
    crate::support::external::scripts_dir()
        .join("mcp")
        .join(name)
}

/// Runs tests/support/mcp/client.py with `target` (`--http URL [--token T]` or `--stdio CMD
/// ARGS…`) and `ops`; its results, one per operation.
pub async fn run_client(venv: &std::path::Path, target: Vec<String>, ops: Value) -> Vec<Value> {
    let python = venv.join("bin/python");
    let out = tokio::task::spawn_blocking(move || {
        Command::new(python)
            .arg(script("client.py"))
            .args(target)
            .arg("--")
            .arg(ops.to_string())
            .env_remove("SRE_AGENT_CONFIG")
            .output()
            .expect("client.py runs")
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| {
        panic!(
            "client.py printed no JSON ({e}): {stdout}\nstderr: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    })
}
