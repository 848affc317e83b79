//! What an alert or a question is about, read from its words and labels, and the overview
//! calls of the integrations that cover it: a pod's description, a namespace's pods and
//! warning events, backup tasks, ZFS pools and NAS alerts, the hypervisor's guests, recent
//! log errors, the firing alerts. Part of alert-first evidence (`evidence.rs`): the calls
//! run only when their tool is configured.

use std::collections::BTreeMap;

use serde_json::{Value, json};

/// A tool call decided before the loop.
#[derive(Clone, Debug, PartialEq)]
pub struct PlannedCall {
    pub name: &'static str,
    pub arguments: Value,
}

/// The overview calls for `text` (a question, or an alert's labels and annotations) and
/// the alert's `labels` (empty for a question), most specific first.
pub fn calls(text: &str, labels: &BTreeMap<String, String>, question: bool) -> Vec<PlannedCall> {
    // Alert names are CamelCase: "ZfsPoolDegraded" reads as "zfs pool degraded".
    let mut lower = String::with_capacity(text.len() + 8);
    let mut prev_lower = false;
    for c in text.chars() {
        if c.is_uppercase() && prev_lower {
            lower.push(' ');
        }
        prev_lower = c.is_lowercase() || c.is_ascii_digit();
        lower.extend(c.to_lowercase());
    }
    let words: Vec<&str> = lower
        .split(|c: char| !(c.is_alphanumeric() || c == '-' || c == '_'))
        .filter(|w| !w.is_empty())
        .collect();
    let has = |list: &[&str]| words.iter().any(|w| list.contains(w));
    let mut out = Vec::new();
    let namespace = labels
        .get("namespace")
        .cloned()
        .or_else(|| word_next_to(&words, "namespace"));
    match (&namespace, labels.get("pod")) {
        (Some(ns), Some(pod)) => out.push(call(
            "k8s_describe_pod",
            json!({"namespace": ns, "name": pod}),
        )),
        (Some(ns), None) => {
            // "the worker pod": k8s_describe_pod resolves a workload's name to its pod.
            if let Some(pod) = word_before(&words, "pod").filter(|p| p != ns) {
                out.push(call(
                    "k8s_describe_pod",
                    json!({"namespace": ns, "name": pod}),
                ));
                if has(&[
                    "restart",
                    "restarting",
                    "restarts",
                    "crash",
                    "crashing",
                    "crashloop",
                ]) {
                    out.push(call(
                        "k8s_pod_logs",
                        json!({"namespace": ns, "name": pod, "previous": true, "tail": 30}),
                    ));
                }
            }
            out.push(call("k8s_list_pods", json!({"namespace": ns})));
            out.push(call(
                "k8s_events",
                json!({"namespace": ns, "warnings_only": true}),
            ));
        }
        (None, _)
            if has(&[
                "pod",
                "pods",
                "kubernetes",
                "k8s",
                "deployment",
                "crashloop",
            ]) =>
        {
            out.push(call("k8s_list_pods", json!({})));
        }
        _ => {}
    }
    if has(&[
        "zfs", "pool", "zpool", "truenas", "scrub", "degraded", "vdev",
    ]) {
        out.push(call("truenas_pools", json!({})));
        out.push(call("truenas_alerts", json!({})));
    }
    if has(&[
        "backup",
        "backups",
        "pbs",
        "snapshot",
        "snapshots",
        "vzdump",
    ]) {
        out.push(call("pbs_tasks", json!({})));
    }
    if has(&[
        "vm",
        "vms",
        "guest",
        "guests",
        "lxc",
        "proxmox",
        "pve",
        "hypervisor",
    ]) || (question && has(&["unreachable", "down", "offline", "stopped", "reachable"]))
    {
        out.push(call("proxmox_guests", json!({})));
    }
    let log_words = [
        "log",
        "logs",
        "error",
        "errors",
        "5xx",
        "500",
        "502",
        "503",
        "504",
        "dns",
        "resolve",
        "timeout",
        "timeouts",
        "fail",
        "failing",
        "failed",
        "failure",
        "failures",
        "probe",
        "stopped",
        "unreachable",
        "exception",
        "panic",
    ];
    if has(&log_words) || labels.get("job").is_some_and(|j| j == "blackbox") {
        out.push(call("loki_error_summary", json!({"since": "1h"})));
    }
    if question {
        // A quantity the question asks about: which metrics exist for it (none is an answer).
        let quantities: [(&[&str], &str); 4] = [
            (
                &["temperature", "temperatures", "temp", "hot", "heat"],
                "temp",
            ),
            (&["humidity"], "humid"),
            (
                &["power", "watts", "watt", "consumption", "ups"],
                "power|watt|ups",
            ),
            (
                &["bandwidth", "traffic", "throughput"],
                "network|receive|transmit",
            ),
        ];
        if let Some((_, pattern)) = quantities.iter().find(|(w, _)| has(w)) {
            out.push(call("prometheus_metric_names", json!({ "match": pattern })));
        }
    }
    if question
        && has(&[
            "wrong", "healthy", "health", "problem", "problems", "issue", "issues", "status",
            "anything", "ok", "okay", "fine",
        ])
    {
        out.push(call("prometheus_alerts", json!({})));
    }
    out
}

/// The word before or after `anchor` ("the media namespace", "namespace media").
/// The word right before `anchor` ("the worker pod" → worker), unless a filler word.
fn word_before(words: &[&str], anchor: &str) -> Option<String> {
    let i = words.iter().position(|w| *w == anchor)?;
    let w = words.get(i.checked_sub(1)?)?;
    (!FILLERS.contains(w)).then(|| w.to_string())
}

const FILLERS: [&str; 8] = ["the", "a", "in", "of", "my", "our", "this", "that"];

fn word_next_to(words: &[&str], anchor: &str) -> Option<String> {
    let i = words.iter().position(|w| *w == anchor)?;
    let skip = FILLERS;
    let before = i
        .checked_sub(1)
        .map(|j| words[j])
        .filter(|w| !skip.contains(w));
    let after = words.get(i + 1).copied().filter(|w| !skip.contains(w));
    before.or(after).map(str::to_string)
}

fn call(name: &'static str, arguments: Value) -> PlannedCall {
    PlannedCall { name, arguments }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(calls: &[PlannedCall]) -> Vec<String> {
        calls
            .iter()
            .map(|c| format!("{} {}", c.name, c.arguments))
            .collect()
    }

    #[test]
    fn a_question_about_a_pod_in_a_namespace_describes_it_and_lists_pods_and_warnings() {
        let calls = calls(
            "Why does the worker pod in the media namespace keep restarting?",
            &BTreeMap::new(),
            true,
        );
        assert_eq!(
            names(&calls),
            vec![
                r#"k8s_describe_pod {"name":"worker","namespace":"media"}"#,
                r#"k8s_pod_logs {"name":"worker","namespace":"media","previous":true,"tail":30}"#,
                r#"k8s_list_pods {"namespace":"media"}"#,
                r#"k8s_events {"namespace":"media","warnings_only":true}"#
            ]
        );
    }

    #[test]
    fn an_alert_on_a_pod_describes_it_and_a_pool_alert_reads_the_nas() {
        let labels: BTreeMap<String, String> = [("namespace", "shop"), ("pod", "api-1")]
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let c = calls("KubeContainerOOMKilled shop api-1", &labels, false);
        assert_eq!(c[0].name, "k8s_describe_pod");
        assert_eq!(c[0].arguments["name"], "api-1");
        let c = calls("ZfsPoolDegraded tank", &BTreeMap::new(), false);
        assert_eq!(names(&c)[0], "truenas_pools {}");
    }

    #[test]
    fn general_questions_read_backups_guests_logs_and_alerts() {
        let c = calls("Did last night's backups succeed?", &BTreeMap::new(), true);
        assert_eq!(c[0].name, "pbs_tasks");
        let c = calls(
            "Home Assistant has been unreachable since this morning. What happened?",
            &BTreeMap::new(),
            true,
        );
        let n: Vec<&str> = c.iter().map(|c| c.name).collect();
        assert_eq!(n, vec!["proxmox_guests", "loki_error_summary"]);
        let c = calls(
            "Is anything wrong with my homelab right now?",
            &BTreeMap::new(),
            true,
        );
        assert_eq!(c[0].name, "prometheus_alerts");
        assert!(calls("What is the weather?", &BTreeMap::new(), true).is_empty());
        let c = calls(
            "What was the temperature in the server room last Tuesday?",
            &BTreeMap::new(),
            true,
        );
        assert_eq!(
            names(&c),
            vec![r#"prometheus_metric_names {"match":"temp"}"#]
        );
    }
}
