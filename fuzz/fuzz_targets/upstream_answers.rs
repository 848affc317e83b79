//! An upstream's answer (Prometheus, Loki, Grafana, Alertmanager, Kubernetes, Proxmox VE,
//! PBS, TrueNAS) through the daemon's own client and the tool that reads it: HTTP status,
//! size cap, envelope, decoder, formatting and compaction for the model.
//!
//! Input: a first line `TOOL STATUS [ARGUMENTS-JSON]`, then the body every request of
//! the call is answered with. Seeds: `fuzz/seeds/upstream_answers/`.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use serde_json::{Value, json};
use sre_agent::tools::ToolRegistry;
use sre_agent_fuzz::{Answer, config, fake, header_and_body, metrics, runtime, status, upstreams};

fn registry() -> &'static ToolRegistry {
    static REGISTRY: OnceLock<ToolRegistry> = OnceLock::new();
    REGISTRY.get_or_init(|| {
        let _rt = runtime().enter();
        sre_agent::agent::build_tools(config(), &upstreams(config()), metrics())
            .expect("the tools build")
    })
}

fuzz_target!(|data: &[u8]| {
    let registry = registry();
    let (head, body) = header_and_body(data);
    let mut words = head.trim().splitn(3, ' ');
    let tool = words.next().unwrap_or_default();
    let code = words.next().unwrap_or_default();
    let args = words
        .next()
        .and_then(|a| serde_json::from_str::<Value>(a).ok())
        .filter(Value::is_object)
        .unwrap_or_else(|| json!({}));
    if registry.get(tool).is_none() {
        return;
    }
    fake().set(Answer {
        status: status(code),
        body,
        ..Answer::default()
    });
    let outcome = runtime().block_on(registry.call(tool, args));
    assert!(
        outcome.text.chars().count() <= registry.max_output_chars() + 200,
        "{tool} answered {} characters",
        outcome.text.chars().count()
    );
});
