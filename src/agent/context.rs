//! Which tools a small model is offered. Every tool definition costs prompt tokens on every
//! step (the 29 built-in ones are ~2.5k tokens, a third of an 8k window, and ~1 s each on a
//! CPU), and a 1.5B model picks worse among many. So for a context of
//! [`SMALL_CONTEXT_TOKENS`] or less only the tools relevant to the question are offered:
//!
//! - always the core Prometheus tools (`prometheus_instance_overview`, `prometheus_query`,
//!   `prometheus_query_range`, `prometheus_metric_names`) and `current_time` (for "when
//!   will it be full");
//! - a tool whose name has a word of the alert or question in it (`storage`, `pods`, `logs`);
//! - an integration's tools when the text has one of its words (`pve1` → proxmox, `zfs` →
//!   truenas, `pod` → kubernetes, `backup` → pbs, `log`/`dns`/`5xx` → loki, …);
//!
//! ranked in that order (an integration with a tool named by the text first, then by how
//! many of its words the text has, registration order within), at most [`MAX_SMALL_TOOLS`]. The same tools are offered at every step, so a server's
//! prompt cache stays valid.

use crate::tools::ToolDefinition;

/// Contexts up to this many tokens get the relevant tools only.
pub const SMALL_CONTEXT_TOKENS: u64 = 8192;

/// The most tools offered in a small context.
pub const MAX_SMALL_TOOLS: usize = 8;

const CORE: [&str; 5] = [
    "prometheus_instance_overview",
    "prometheus_query",
    "prometheus_query_range",
    "prometheus_metric_names",
    "current_time",
];

/// Words (prefixes of the text's words) that make an integration's tools relevant, by the
/// prefix of their names.
const FAMILIES: [(&str, &[&str]); 9] = [
    (
        "prometheus_",
        &["target", "scrape", "flapping", "down", "unreachable"],
    ),
    (
        "loki_",
        &[
            "log",
            "loki",
            "error",
            "exception",
            "panic",
            "dns",
            "5xx",
            "502",
            "503",
            "504",
            "timeout",
            "refused",
            "nxdomain",
            "servfail",
            "upstream",
            "probe",
        ],
    ),
    (
        "grafana_",
        &["grafana", "dashboard", "panel", "annotation", "rule"],
    ),
    ("alertmanager_", &["alertmanager", "silence"]),
    (
        "k8s_",
        &[
            "pod",
            "k8s",
            "kube",
            "namespace",
            "deployment",
            "container",
            "crashloop",
            "oom",
            "restart",
            "statefulset",
            "daemonset",
            "workload",
            "cluster",
        ],
    ),
    (
        "proxmox_",
        &[
            "pve",
            "proxmox",
            "vm",
            "qemu",
            "lxc",
            "guest",
            "storage",
            "/var/lib/vz",
        ],
    ),
    (
        "pbs_",
        &[
            "pbs",
            "backup",
            "datastore",
            "verify",
            "snapshot",
            "prune",
            "gc",
        ],
    ),
    (
        "truenas_",
        &[
            "truenas", "zfs", "pool", "zpool", "scrub", "dataset", "smart", "degraded", "nas",
        ],
    ),
    ("runbook_", &["runbook", "procedure", "how do", "how to"]),
];

/// Keys of alert payloads: present in every alert, so they say nothing about it.
const PAYLOAD_KEYS: [&str; 16] = [
    "alertname",
    "alerts",
    "labels",
    "annotations",
    "startsat",
    "endsat",
    "generatorurl",
    "fingerprint",
    "status",
    "severity",
    "summary",
    "description",
    "values",
    "valuestring",
    "dashboardurl",
    "panelurl",
];

/// The tools to offer for an investigation about `text` (question and alert) in a context
/// of `context_tokens`: all of them in a large context, else the relevant ones (see the
/// module docs), in registration order.
pub fn select_tools(
    all: Vec<ToolDefinition>,
    context_tokens: u64,
    text: &str,
) -> Vec<ToolDefinition> {
    if context_tokens > SMALL_CONTEXT_TOKENS || all.len() <= MAX_SMALL_TOOLS {
        return all;
    }
    let lower = text.to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !c.is_alphanumeric() && c != '_')
        .filter(|w| !w.is_empty() && !PAYLOAD_KEYS.contains(w))
        .collect();
    let has_word = |k: &str| {
        if k.contains(|c: char| !c.is_alphanumeric()) {
            lower.contains(k)
        } else {
            words.iter().any(|w| w.starts_with(k))
        }
    };
    let name_hit = |name: &str| {
        name.split('_').filter(|p| p.len() >= 3).skip(1).any(|p| {
            let stem = p.trim_end_matches('s');
            words
                .iter()
                .any(|w| *w == p || w.trim_end_matches('s') == stem)
        })
    };
    let family_of = |name: &str| FAMILIES.iter().find(|(prefix, _)| name.starts_with(prefix));
    // An integration is confirmed when one of its tools is named by a word of the text
    // ("backup" → pbs_backups): its other tools then rank above other integrations'.
    let confirmed: Vec<&str> = all
        .iter()
        .filter(|t| name_hit(t.name))
        .filter_map(|t| family_of(t.name).map(|(prefix, _)| *prefix))
        .collect();
    let score = |name: &str| -> u8 {
        if CORE.contains(&name) {
            return 20;
        }
        if name_hit(name) {
            return 10;
        }
        let Some((prefix, keys)) = family_of(name) else {
            return 0;
        };
        let hits = keys.iter().filter(|k| has_word(k)).count().min(4) as u8;
        match hits {
            0 => 0,
            n if confirmed.contains(prefix) => 5 + n,
            n => n,
        }
    };
    let mut ranked: Vec<(usize, u8)> = all
        .iter()
        .enumerate()
        .map(|(i, t)| (i, score(t.name)))
        .filter(|(_, s)| *s > 0)
        .collect();
    ranked.sort_by_key(|(i, s)| (std::cmp::Reverse(*s), *i));
    ranked.truncate(MAX_SMALL_TOOLS);
    let mut keep: Vec<usize> = ranked.into_iter().map(|(i, _)| i).collect();
    keep.sort_unstable();
    all.into_iter()
        .enumerate()
        .filter(|(i, _)| keep.binary_search(i).is_ok())
        .map(|(_, t)| t)
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::tools::catalog::builtin_names;

    fn every_tool() -> Vec<ToolDefinition> {
        builtin_names()
            .into_iter()
            .map(|name| ToolDefinition {
                name,
                description: "d",
                parameters: json!({"type": "object"}),
            })
            .collect()
    }

    fn names(text: &str, context: u64) -> Vec<&'static str> {
        select_tools(every_tool(), context, text)
            .into_iter()
            .map(|t| t.name)
            .collect()
    }

    #[test]
    fn a_disk_question_on_a_proxmox_host_gets_prometheus_and_proxmox_tools() {
        let got = names(
            "How full is /var/lib/vz on pve1 and when will it be full?",
            8192,
        );
        for want in CORE.iter().chain(&["proxmox_storage", "proxmox_nodes"]) {
            assert!(got.contains(want), "{want} missing from {got:?}");
        }
        assert!(got.len() <= MAX_SMALL_TOOLS);
        assert!(
            !got.iter()
                .any(|n| n.starts_with("k8s_") || n.starts_with("pbs_")),
            "{got:?}"
        );
    }

    #[test]
    fn words_of_an_alert_pick_the_matching_integration() {
        let pod = names(
            r#"{"alertname":"KubePodCrashLooping","pod":"api-7f9","namespace":"shop"}"#,
            8192,
        );
        assert!(
            pod.contains(&"k8s_list_pods") && pod.contains(&"k8s_describe_pod"),
            "{pod:?}"
        );
        let backup = names("Why did last night's backup of vm 101 fail?", 4096);
        assert!(
            backup.contains(&"pbs_backups") && backup.contains(&"pbs_tasks"),
            "{backup:?}"
        );
        let zfs = names("ZFS pool tank is DEGRADED", 8192);
        assert!(zfs.contains(&"truenas_pools"), "{zfs:?}");
        let logs = names("DNS lookups fail with SERVFAIL", 8192);
        assert!(logs.contains(&"loki_query"), "{logs:?}");
    }

    #[test]
    fn a_large_context_gets_every_tool_and_nothing_relevant_gets_the_core() {
        assert_eq!(names("anything", 32768).len(), builtin_names().len());
        let mut core = names("what is up?", 8192);
        core.sort_unstable();
        let mut want = CORE.to_vec();
        want.sort_unstable();
        assert_eq!(core, want);
    }
}
