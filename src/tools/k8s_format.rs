//! Compact text for Kubernetes objects: one line per pod or workload, node capacity
//! against requests, and log compaction that groups repeated lines.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, StatefulSet};
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

use super::format::human_bytes;
use crate::analyze::kube::quantity;

/// `ns/name phase=… ready=x/y restarts=n node=… [waiting=…] [last=Reason(exit n)]`.
pub fn pod_line(pod: &Pod) -> String {
    let meta = &pod.metadata;
    let status = pod.status.as_ref();
    let statuses = status
        .and_then(|s| s.container_statuses.as_deref())
        .unwrap_or_default();
    let total = pod
        .spec
        .as_ref()
        .map(|s| s.containers.len())
        .unwrap_or(statuses.len());
    let ready = statuses.iter().filter(|c| c.ready).count();
    let restarts: i32 = statuses.iter().map(|c| c.restart_count).sum();
    let mut line = format!(
        "{}/{} phase={} ready={ready}/{total} restarts={restarts} node={}",
        meta.namespace.as_deref().unwrap_or("?"),
        meta.name.as_deref().unwrap_or("?"),
        status.and_then(|s| s.phase.as_deref()).unwrap_or("?"),
        pod.spec
            .as_ref()
            .and_then(|s| s.node_name.as_deref())
            .unwrap_or("-"),
    );
    for c in statuses {
        if let Some(w) = c.state.as_ref().and_then(|s| s.waiting.as_ref()) {
            line.push_str(&format!(
                " waiting[{}]={}",
                c.name,
                w.reason.as_deref().unwrap_or("?")
            ));
        }
        if let Some(t) = c.last_state.as_ref().and_then(|s| s.terminated.as_ref()) {
            line.push_str(&format!(
                " last[{}]={}(exit {})",
                c.name,
                t.reason.as_deref().unwrap_or("?"),
                t.exit_code
            ));
        }
    }
    line
}

/// Millicores from a CPU quantity ("250m", "2", "1.5"); 0 when it is not one.
pub fn cpu_millis(q: &Quantity) -> i64 {
    (quantity(q).unwrap_or(0.0) * 1000.0).round() as i64
}

/// Bytes from a memory quantity ("128Mi", "1G", "1e9", "512"); 0 when it is not one.
pub fn mem_bytes(q: &Quantity) -> i64 {
    quantity(q).unwrap_or(0.0).round() as i64
}

/// Each node: Ready, pressure conditions, allocatable vs requested CPU and memory.
pub fn node_report(nodes: &[Node], pods: &[Pod]) -> String {
    let mut requested: BTreeMap<&str, (i64, i64)> = BTreeMap::new();
    for pod in pods {
        let Some(spec) = &pod.spec else { continue };
        let Some(node) = spec.node_name.as_deref() else {
            continue;
        };
        let entry = requested.entry(node).or_default();
        for c in &spec.containers {
            if let Some(req) = c.resources.as_ref().and_then(|r| r.requests.as_ref()) {
                entry.0 += req.get("cpu").map(cpu_millis).unwrap_or(0);
                entry.1 += req.get("memory").map(mem_bytes).unwrap_or(0);
            }
        }
    }
    if nodes.is_empty() {
        return "no nodes".into();
    }
    let mut out = Vec::new();
    for node in nodes {
        let name = node.metadata.name.as_deref().unwrap_or("?");
        let status = node.status.as_ref();
        let mut ready = "Unknown".to_string();
        let mut problems = Vec::new();
        for c in status
            .and_then(|s| s.conditions.as_deref())
            .unwrap_or_default()
        {
            if c.type_ == "Ready" {
                ready = c.status.clone();
            } else if c.status == "True" {
                problems.push(c.type_.clone());
            }
        }
        let alloc = status.and_then(|s| s.allocatable.as_ref());
        let cpu = alloc
            .and_then(|a| a.get("cpu"))
            .map(cpu_millis)
            .unwrap_or(0);
        let mem = alloc
            .and_then(|a| a.get("memory"))
            .map(mem_bytes)
            .unwrap_or(0);
        let (rc, rm) = requested.get(name).copied().unwrap_or_default();
        let pct = |a: i64, b: i64| if b > 0 { a * 100 / b } else { 0 };
        let unschedulable = node
            .spec
            .as_ref()
            .and_then(|s| s.unschedulable)
            .unwrap_or(false);
        out.push(format!(
            "{name} Ready={ready}{} pressure=[{}] cpu requested {rc}m/{cpu}m ({}%) memory requested {}/{} ({}%){}",
            if unschedulable { " (cordoned)" } else { "" },
            if problems.is_empty() { "none".into() } else { problems.join(",") },
            pct(rc, cpu),
            human_bytes(rm.max(0) as u64),
            human_bytes(mem.max(0) as u64),
            pct(rm, mem),
            status
                .and_then(|s| s.node_info.as_ref())
                .map(|i| format!(" kubelet={}", i.kubelet_version))
                .unwrap_or_default(),
        ));
    }
    out.join("\n")
}

/// One line per workload: `kind ns/name desired=… ready=… updated=… available=…`.
pub fn workload_lines(
    deploys: &[Deployment],
    sets: &[StatefulSet],
    daemons: &[DaemonSet],
) -> String {
    let mut out = Vec::new();
    let name = |m: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta| {
        format!(
            "{}/{}",
            m.namespace.as_deref().unwrap_or("?"),
            m.name.as_deref().unwrap_or("?")
        )
    };
    let flag = |desired: i32, ready: i32| if ready < desired { " NOT READY" } else { "" };
    for d in deploys {
        let want = d.spec.replicas.unwrap_or(1);
        let s = d.status.clone().unwrap_or_default();
        let ready = s.ready_replicas.unwrap_or(0);
        out.push(format!(
            "deployment {} desired={want} ready={ready} updated={} available={}{}",
            name(&d.metadata),
            s.updated_replicas.unwrap_or(0),
            s.available_replicas.unwrap_or(0),
            flag(want, ready)
        ));
    }
    for d in sets {
        let want = d.spec.replicas.unwrap_or(1);
        let s = d.status.clone().unwrap_or_default();
        let ready = s.ready_replicas.unwrap_or(0);
        out.push(format!(
            "statefulset {} desired={want} ready={ready} updated={} available={}{}",
            name(&d.metadata),
            s.updated_replicas.unwrap_or(0),
            s.available_replicas.unwrap_or(0),
            flag(want, ready)
        ));
    }
    for d in daemons {
        let s = d.status.clone().unwrap_or_default();
        out.push(format!(
            "daemonset {} desired={} ready={} updated={} available={}{}",
            name(&d.metadata),
            s.desired_number_scheduled,
            s.number_ready,
            s.updated_number_scheduled.unwrap_or(0),
            s.number_available.unwrap_or(0),
            flag(s.desired_number_scheduled, s.number_ready)
        ));
    }
    if out.is_empty() {
        "no workloads found".into()
    } else {
        out.join("\n")
    }
}

/// Lines equal once digits are ignored (timestamps, counters) group together.
fn shape(line: &str) -> String {
    let mut s = String::with_capacity(line.len());
    let mut in_digits = false;
    for ch in line.chars() {
        if ch.is_ascii_digit() {
            if !in_digits {
                s.push('#');
            }
            in_digits = true;
        } else {
            in_digits = false;
            s.push(ch);
        }
    }
    s
}

/// Groups runs of repeated lines (`… [×N similar]`) and keeps the newest lines within
/// `max_chars`, saying how many earlier lines were dropped.
pub fn compact_logs(text: &str, max_chars: usize) -> String {
    let mut groups: Vec<(String, String, usize)> = Vec::new();
    for line in text.lines() {
        let line = line.trim_end();
        let key = shape(line);
        match groups.last_mut() {
            Some((_, k, n)) if *k == key => *n += 1,
            _ => groups.push((line.to_string(), key, 1)),
        }
    }
    if groups.is_empty() {
        return "(no log lines)".into();
    }
    let rendered: Vec<String> = groups
        .into_iter()
        .map(|(line, _, n)| {
            if n > 1 {
                format!("{line} [×{n} similar]")
            } else {
                line
            }
        })
        .collect();
    let room = max_chars.saturating_sub(50);
    let mut kept: Vec<&str> = Vec::new();
    let mut used = 0;
    for line in rendered.iter().rev() {
        let len = line.chars().count() + 1;
        if used + len > room {
            break;
        }
        used += len;
        kept.push(line);
    }
    kept.reverse();
    let dropped = rendered.len() - kept.len();
    let mut out = String::new();
    if dropped > 0 {
        out.push_str(&format!("[{dropped} earlier line groups omitted]\n"));
    }
    out.push_str(&kept.join("\n"));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities_parse_to_millicores_and_bytes() {
        assert_eq!(cpu_millis(&Quantity("250m".into())), 250);
        assert_eq!(cpu_millis(&Quantity("2".into())), 2000);
        assert_eq!(mem_bytes(&Quantity("128Mi".into())), 134_217_728);
        assert_eq!(mem_bytes(&Quantity("1G".into())), 1_000_000_000);
    }

    #[test]
    fn repeated_log_lines_are_grouped_and_the_newest_lines_kept() {
        let text = "start\nretry 1 failed\nretry 2 failed\nretry 3 failed\ndone\n";
        assert_eq!(
            compact_logs(text, 1000),
            "start\nretry 1 failed [×3 similar]\ndone"
        );
        let long: String = (0..500)
            .map(|i| format!("line-{i}-{}\n", "x".repeat(i % 7)))
            .collect();
        let out = compact_logs(&long, 400);
        assert!(out.chars().count() <= 400, "{out}");
        assert!(out.starts_with('['), "{out}");
        assert!(out.ends_with("line-499-xx"), "{out}");
    }
}
