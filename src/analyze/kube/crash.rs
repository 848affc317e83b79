//! Containers that crash: in `CrashLoopBackOff` (with the restart count and how the last
//! run ended), killed by the kernel at their memory limit (`OOMKilled`, against the
//! limit), or restarted in the window after a failing exit. A crash before the window,
//! in a container that runs fine since, is history and not reported.

use k8s_openapi::api::core::v1::{ContainerStateTerminated, ContainerStatus};

use super::PODS as NAME;
use super::view::{PodView, first_seen, waiting_message, waiting_reason};
use super::{describe_source, memory_limit, pod_entity, time};
use crate::analyze::{Fact, FactClass, Quantity, Severity};
use crate::text::truncate;

/// The termination reason of a container the kernel killed for memory.
const OOM: &str = "OOMKilled";

/// The fact about `cs` when it crash-loops or crashed in the window.
pub fn fact(v: &PodView, cs: &ContainerStatus) -> Option<Fact> {
    let last = last_termination(cs);
    let limit = memory_limit(v.pod, &cs.name);
    let entity = pod_entity(v.pod, Some(&cs.name));
    if let Some(reason) = waiting_reason(cs).filter(|r| *r == "CrashLoopBackOff") {
        let mut detail = Vec::new();
        if let Some(t) = last {
            detail.push(exit_text(t, limit));
        }
        let backoff = v
            .event(Some("BackOff"), |m| m.contains(cs.name.as_str()))
            .and_then(|e| e.message.as_deref())
            .or_else(|| waiting_message(cs));
        detail.extend(backoff.map(str::to_string));
        let since = v
            .events
            .iter()
            .filter(|e| e.reason.as_deref() == Some("BackOff"))
            .filter_map(|e| first_seen(e))
            .min()
            .or_else(|| v.condition_since("Ready", "False"))
            .or_else(|| v.created());
        return Some(
            Fact::new(
                FactClass::Kubernetes,
                NAME,
                entity,
                format!("container {} {reason}, restarts", cs.name),
                Severity::Critical,
                describe_source(v.pod),
            )
            .value(Quantity::count(f64::from(cs.restart_count)))
            .since(since)
            .detail(detail.join("; ")),
        );
    }
    let t = last?;
    let finished = t.finished_at.as_ref().and_then(time)?;
    if finished < v.scope.window_start || (t.exit_code == 0 && t.reason.as_deref() != Some(OOM)) {
        return None;
    }
    let severity = match cs.ready {
        true => Severity::Warning,
        false => Severity::Critical,
    };
    let restarts = format!("restarts {}", cs.restart_count);
    let fact = if t.reason.as_deref() == Some(OOM) {
        let mut f = Fact::new(
            FactClass::Kubernetes,
            NAME,
            entity,
            format!("container {} {OOM} at its memory limit", cs.name),
            severity,
            describe_source(v.pod),
        )
        .detail(format!("exit code {}, {restarts}", t.exit_code));
        if let Some(l) = limit {
            f = f.limit(Quantity::bytes(l));
        }
        f
    } else {
        Fact::new(
            FactClass::Kubernetes,
            NAME,
            entity,
            format!("container {} restarted, exit code", cs.name),
            severity,
            describe_source(v.pod),
        )
        .value(Quantity::new(
            f64::from(t.exit_code),
            crate::analyze::Unit::Plain,
        ))
        .detail(
            [exit_text(t, limit), restarts]
                .into_iter()
                .chain(warnings(v))
                .collect::<Vec<_>>()
                .join("; "),
        )
    };
    Some(fact.since(Some(finished)))
}

/// Distinct Warning events shown with a restart: what the kubelet said about the pod is
/// why it restarted a container that exited (a failing liveness probe, an eviction).
const MAX_WARNINGS: usize = 2;

/// The pod's newest distinct Warning events, "Reason: message (N×)", newest first.
fn warnings(v: &PodView) -> Vec<String> {
    let mut seen: Vec<(&str, &str)> = Vec::new();
    let mut out = Vec::new();
    for e in v.events.iter().rev() {
        let reason = e.reason.as_deref().unwrap_or("Warning");
        let message = e.message.as_deref().unwrap_or_default().trim();
        if message.is_empty() || seen.contains(&(reason, message)) {
            continue;
        }
        seen.push((reason, message));
        let times = match e.count {
            Some(n) if n > 1 => format!(" ({n}×)"),
            _ => String::new(),
        };
        out.push(format!("{reason}: {}{times}", truncate(message, 140)));
        if out.len() == MAX_WARNINGS {
            break;
        }
    }
    out
}

/// How the previous run of the container ended (or the current one, when it has ended).
fn last_termination(cs: &ContainerStatus) -> Option<&ContainerStateTerminated> {
    cs.last_state
        .as_ref()
        .and_then(|s| s.terminated.as_ref())
        .or_else(|| cs.state.as_ref().and_then(|s| s.terminated.as_ref()))
}

/// "last exit OOMKilled (code 137) at 06:41 UTC, memory limit 256.0 MiB: <message>".
fn exit_text(t: &ContainerStateTerminated, limit: Option<f64>) -> String {
    let mut s = format!(
        "last exit {} (code {})",
        t.reason.as_deref().unwrap_or("unknown"),
        t.exit_code
    );
    if let Some(at) = t.finished_at.as_ref().and_then(time) {
        s.push_str(&format!(" at {}", at.format("%H:%M UTC")));
    }
    if t.reason.as_deref() == Some(OOM)
        && let Some(l) = limit
    {
        s.push_str(&format!(", memory limit {}", Quantity::bytes(l)));
    }
    if let Some(m) = t.message.as_deref().filter(|m| !m.trim().is_empty()) {
        s.push_str(&format!(": {}", m.trim()));
    }
    s
}

#[cfg(test)]
mod tests {
    use chrono::{TimeDelta, Utc};
    use k8s_openapi::api::core::v1::{Event, Pod};
    use serde_json::json;

    use crate::analyze::Scope;

    #[test]
    fn a_container_restarted_in_the_window_shows_the_warnings_the_kubelet_gave_about_its_pod() {
        let now = Utc::now();
        let ago = |m: i64| (now - TimeDelta::minutes(m)).to_rfc3339();
        let pod: Pod = serde_json::from_value(json!({
            "metadata": {"name": "web-1", "namespace": "docs"},
            "spec": {"nodeName": "n1", "containers": [{"name": "app", "image": "x:1"}]},
            "status": {"phase": "Running", "containerStatuses": [{
                "name": "app", "ready": false, "restartCount": 6, "image": "x:1", "imageID": "",
                "state": {"running": {"startedAt": ago(1)}},
                "lastState": {"terminated": {"exitCode": 137, "reason": "Error",
                    "startedAt": ago(9), "finishedAt": ago(2)}}}]}
        }))
        .unwrap();
        let event = |reason: &str, message: &str, count: i32, at: i64| -> Event {
            serde_json::from_value(json!({
                "metadata": {"name": format!("web-1.{at}"), "namespace": "docs"},
                "involvedObject": {"kind": "Pod", "name": "web-1", "namespace": "docs"},
                "reason": reason, "message": message, "type": "Warning", "count": count,
                "lastTimestamp": ago(at)
            }))
            .unwrap()
        };
        let events = [
            event(
                "Unhealthy",
                "Readiness probe failed: connection refused",
                9,
                5,
            ),
            event(
                "Unhealthy",
                "Liveness probe failed: timeout awaiting headers",
                20,
                3,
            ),
            event(
                "Unhealthy",
                "Liveness probe failed: timeout awaiting headers",
                20,
                2,
            ),
        ];
        let scope = Scope::new(now, Some(now - TimeDelta::minutes(10)));
        let facts = super::super::pods::analyze(&[pod], &events, &scope);
        assert_eq!(facts.len(), 1, "{facts:?}");
        let detail = facts[0].detail.as_deref().unwrap();
        assert_eq!(
            detail,
            "last exit Error (code 137) at ".to_string()
                + &(now - TimeDelta::minutes(2))
                    .format("%H:%M UTC")
                    .to_string()
                + "; restarts 6; Unhealthy: Liveness probe failed: timeout awaiting headers (20×); \
                   Unhealthy: Readiness probe failed: connection refused (9×)"
        );
    }
}
