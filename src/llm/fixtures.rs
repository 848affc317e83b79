//! Test fixtures: real answers of Qwen2.5-Coder-1.5B-Instruct (Q4_K_M, llama.cpp b7079, its
//! own chat template) to sre-agent's requests, in `testdata/` (`*-raw` is the text the model
//! wrote before the server's parser touched it), and the seven tools they were offered.

use serde_json::Value;

/// The tools offered in the recorded requests.
pub const SEVEN: &[&str] = &[
    "prometheus_query",
    "prometheus_query_range",
    "prometheus_metric_names",
    "proxmox_storage",
    "loki_query",
    "runbook_search",
    "current_time",
];

/// One recorded answer, by file name.
pub fn sample(name: &str) -> Value {
    let path = format!("{}/src/llm/testdata/{name}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}
