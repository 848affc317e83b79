//! Kubernetes tools: pods, one pod in detail, pod logs (compacted), events, nodes and
//! workload rollouts. Env values, envFrom, Secret and ConfigMap contents are never shown.

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use k8s_openapi::api::core::v1::{ContainerStatus, Event, Pod};
use serde_json::{Value, json};

use super::args::{arg_bool, arg_i64, arg_str};
use super::k8s_format::{compact_logs, node_report, pod_line, workload_lines};
use super::{Tool, ToolError};
use crate::integrations::kubernetes::{KubeClient, KubeError, event_time};

/// Which Kubernetes tool.
#[derive(Clone, Copy, Debug)]
pub enum K8sKind {
    ListPods,
    DescribePod,
    PodLogs,
    Events,
    Nodes,
    Workloads,
}

impl K8sKind {
    pub const ALL: [K8sKind; 6] = [
        Self::ListPods,
        Self::DescribePod,
        Self::PodLogs,
        Self::Events,
        Self::Nodes,
        Self::Workloads,
    ];

    /// The name the tool registers under.
    pub const fn name(self) -> &'static str {
        match self {
            Self::ListPods => "k8s_list_pods",
            Self::DescribePod => "k8s_describe_pod",
            Self::PodLogs => "k8s_pod_logs",
            Self::Events => "k8s_events",
            Self::Nodes => "k8s_nodes",
            Self::Workloads => "k8s_workloads",
        }
    }
}

/// One Kubernetes tool over a shared client.
pub struct K8sTool {
    pub kind: K8sKind,
    pub client: Arc<KubeClient>,
    pub max_chars: usize,
}

#[async_trait]
impl Tool for K8sTool {
    fn name(&self) -> &'static str {
        self.kind.name()
    }

    fn description(&self) -> &'static str {
        match self.kind {
            K8sKind::ListPods => {
                "Kubernetes pods: phase, ready containers, restarts, last termination reason and exit code, node. Optional namespace and label selector."
            }
            K8sKind::DescribePod => {
                "One Kubernetes pod in detail: status, conditions, container states (e.g. CrashLoopBackOff, OOMKilled), resource requests/limits and recent events."
            }
            K8sKind::PodLogs => {
                "Recent log lines of a pod container (repeated lines grouped); previous=true for the crashed instance."
            }
            K8sKind::Events => {
                "Recent Kubernetes events, newest last; warnings_only=true for Warning events."
            }
            K8sKind::Nodes => {
                "Kubernetes nodes: conditions and pressure, allocatable vs requested CPU and memory."
            }
            K8sKind::Workloads => {
                "Deployments, StatefulSets and DaemonSets rollout status: desired/ready/updated/available."
            }
        }
    }

    fn parameters(&self) -> Value {
        let ns = json!({"type": "string", "description": "Namespace"});
        match self.kind {
            K8sKind::ListPods => json!({"type": "object", "properties": {
                "namespace": ns,
                "selector": {"type": "string", "description": "Label selector, e.g. app=web"}}}),
            K8sKind::DescribePod => json!({"type": "object", "properties": {
                "namespace": ns, "name": {"type": "string"}}, "required": ["namespace", "name"]}),
            K8sKind::PodLogs => json!({"type": "object", "properties": {
                "namespace": ns, "name": {"type": "string"},
                "container": {"type": "string"},
                "previous": {"type": "boolean", "description": "Logs of the previous (crashed) container"},
                "tail": {"type": "integer", "description": "Lines from the end (default 200, max 2000)"}},
                "required": ["namespace", "name"]}),
            K8sKind::Events => json!({"type": "object", "properties": {
                "namespace": ns, "warnings_only": {"type": "boolean"}}}),
            K8sKind::Nodes => json!({"type": "object", "properties": {}}),
            K8sKind::Workloads => json!({"type": "object", "properties": {"namespace": ns}}),
        }
    }

    async fn call(&self, args: Value) -> Result<String, ToolError> {
        let c = &self.client;
        let ns = arg_str(&args, "namespace");
        let text = match self.kind {
            K8sKind::ListPods => {
                let pods = c
                    .pods(ns.as_deref(), arg_str(&args, "selector").as_deref())
                    .await?;
                if pods.is_empty() {
                    "no pods found".to_string()
                } else {
                    pods.iter().map(pod_line).collect::<Vec<_>>().join("\n")
                }
            }
            K8sKind::DescribePod => {
                let ns = ns.unwrap_or_default();
                let asked = arg_str(&args, "name").unwrap_or_default();
                let (name, pod) = resolve_pod(c, &ns, &asked).await?;
                let events = c.events_for(&ns, "Pod", &name).await?;
                let text = describe_pod(&pod, &events);
                if name == asked {
                    text
                } else {
                    format!("(pod {asked:?} is {name})\n{text}")
                }
            }
            K8sKind::PodLogs => {
                let ns = ns.unwrap_or_default();
                let asked = arg_str(&args, "name").unwrap_or_default();
                let tail = arg_i64(&args, "tail").unwrap_or(200).clamp(1, 2000);
                let (container, previous) =
                    (arg_str(&args, "container"), arg_bool(&args, "previous"));
                let text = match c.logs(&ns, &asked, container.clone(), previous, tail).await {
                    // A workload's name ("worker"): the logs of its one pod.
                    Err(KubeError::Api { code: 404, .. }) => {
                        let (name, _) = resolve_pod(c, &ns, &asked).await?;
                        c.logs(&ns, &name, container, previous, tail).await?
                    }
                    other => other?,
                };
                compact_logs(&text, self.max_chars)
            }
            K8sKind::Events => {
                let events = c
                    .events(ns.as_deref(), arg_bool(&args, "warnings_only"))
                    .await?;
                events_text(&events, 50)
            }
            K8sKind::Nodes => {
                let nodes = c.nodes().await?;
                let pods = c.scheduled_pods().await?;
                node_report(&nodes, &pods)
            }
            K8sKind::Workloads => {
                let (d, s, ds) = c.workloads(ns.as_deref()).await?;
                workload_lines(&d, &s, &ds)
            }
        };
        Ok(text)
    }
}

/// The pod `name` in `ns`, or, when there is none, the one pod whose name starts with
/// `name-` (a model often gives the workload's name: "worker" for "worker-5d8c7b9f6-qz4lm").
async fn resolve_pod(c: &KubeClient, ns: &str, name: &str) -> Result<(String, Pod), ToolError> {
    match c.pod(ns, name).await {
        Ok(pod) => Ok((name.to_string(), pod)),
        Err(KubeError::Api { code: 404, .. }) if !name.is_empty() => {
            let prefix = format!("{name}-");
            let mut found: Vec<Pod> = c
                .pods(Some(ns), None)
                .await?
                .into_iter()
                .filter(|p| {
                    p.metadata
                        .name
                        .as_deref()
                        .is_some_and(|n| n.starts_with(&prefix))
                })
                .collect();
            match found.len() {
                1 => {
                    let pod = found.remove(0);
                    Ok((pod.metadata.name.clone().unwrap_or_default(), pod))
                }
                0 => Err(ToolError::Answer(format!(
                    "no pod {name:?} (nor one named {name}-…) in namespace {ns:?}; list them with k8s_list_pods"
                ))),
                _ => {
                    let names: Vec<String> = found
                        .iter()
                        .filter_map(|p| p.metadata.name.clone())
                        .collect();
                    Err(ToolError::Answer(format!(
                        "{name:?} matches several pods in {ns:?}: {}; give the full name",
                        names.join(", ")
                    )))
                }
            }
        }
        Err(e) => Err(e.into()),
    }
}

fn events_text(events: &[Event], max: usize) -> String {
    if events.is_empty() {
        return "no events".into();
    }
    let skip = events.len().saturating_sub(max);
    let mut out: Vec<String> = Vec::new();
    if skip > 0 {
        out.push(format!("[{skip} older events omitted]"));
    }
    let now = k8s_openapi::jiff::Timestamp::now().as_second();
    for e in &events[skip..] {
        let obj = &e.involved_object;
        let ago = match event_time(e) {
            0 => "?".to_string(),
            t => format!("{}s ago", (now - t).max(0)),
        };
        out.push(format!(
            "{ago} {} {} {}/{}{}: {}{}",
            e.type_.as_deref().unwrap_or("Normal"),
            e.reason.as_deref().unwrap_or("-"),
            obj.kind.as_deref().unwrap_or("?"),
            obj.namespace
                .as_deref()
                .map(|n| format!("{n}/"))
                .unwrap_or_default(),
            obj.name.as_deref().unwrap_or("?"),
            e.message.as_deref().unwrap_or("").trim(),
            e.count
                .filter(|c| *c > 1)
                .map(|c| format!(" (×{c})"))
                .unwrap_or_default(),
        ));
    }
    out.join("\n")
}

fn container_state(cs: &ContainerStatus) -> String {
    let mut parts = vec![format!(
        "container {}: ready={} restarts={}",
        cs.name, cs.ready, cs.restart_count
    )];
    if let Some(state) = &cs.state {
        if let Some(w) = &state.waiting {
            parts.push(format!(
                "state=Waiting reason={} {}",
                w.reason.as_deref().unwrap_or("-"),
                w.message.as_deref().unwrap_or("")
            ));
        } else if state.running.is_some() {
            parts.push("state=Running".into());
        } else if let Some(t) = &state.terminated {
            parts.push(format!(
                "state=Terminated reason={} exitCode={}",
                t.reason.as_deref().unwrap_or("-"),
                t.exit_code
            ));
        }
    }
    if let Some(t) = cs.last_state.as_ref().and_then(|s| s.terminated.as_ref()) {
        parts.push(format!(
            "lastState=Terminated reason={} exitCode={}{}",
            t.reason.as_deref().unwrap_or("-"),
            t.exit_code,
            t.finished_at
                .as_ref()
                .map(|f| format!(" finishedAt={}", f.0))
                .unwrap_or_default()
        ));
    }
    parts.join("; ")
}

/// The pod without env values, envFrom or volume contents.
fn describe_pod(pod: &Pod, events: &[Event]) -> String {
    let meta = &pod.metadata;
    let mut out = vec![format!(
        "pod {}/{}",
        meta.namespace.as_deref().unwrap_or("?"),
        meta.name.as_deref().unwrap_or("?")
    )];
    if let Some(owner) = meta.owner_references.as_ref().and_then(|o| o.first()) {
        out.push(format!("controlled by {} {}", owner.kind, owner.name));
    }
    let spec = pod.spec.as_ref();
    if let Some(node) = spec.and_then(|s| s.node_name.as_ref()) {
        out.push(format!("node: {node}"));
    }
    if let Some(status) = &pod.status {
        out.push(format!(
            "phase: {}{}{}",
            status.phase.as_deref().unwrap_or("?"),
            status
                .reason
                .as_deref()
                .map(|r| format!(" reason={r}"))
                .unwrap_or_default(),
            status
                .message
                .as_deref()
                .map(|m| format!(" message={m}"))
                .unwrap_or_default()
        ));
        if let Some(conds) = &status.conditions {
            let c: Vec<String> = conds
                .iter()
                .map(|c| {
                    format!(
                        "{}={}{}",
                        c.type_,
                        c.status,
                        c.reason
                            .as_deref()
                            .map(|r| format!("({r})"))
                            .unwrap_or_default()
                    )
                })
                .collect();
            out.push(format!("conditions: {}", c.join(", ")));
        }
        for cs in status
            .init_container_statuses
            .iter()
            .flatten()
            .chain(status.container_statuses.iter().flatten())
        {
            out.push(container_state(cs));
        }
    }
    for c in spec.map(|s| s.containers.as_slice()).unwrap_or_default() {
        let res = c.resources.as_ref();
        let fmt = |m: Option<
            &BTreeMap<String, k8s_openapi::apimachinery::pkg::api::resource::Quantity>,
        >| {
            m.map(|m| {
                m.iter()
                    .map(|(k, v)| format!("{k}={}", v.0))
                    .collect::<Vec<_>>()
                    .join(",")
            })
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| "none".into())
        };
        out.push(format!(
            "container {} image={} requests[{}] limits[{}]",
            c.name,
            c.image.as_deref().unwrap_or("?"),
            fmt(res.and_then(|r| r.requests.as_ref())),
            fmt(res.and_then(|r| r.limits.as_ref())),
        ));
    }
    out.push(format!("recent events:\n{}", events_text(events, 15)));
    out.join("\n")
}
