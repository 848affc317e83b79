//! Containers not ready for a reason the other classes do not claim (a readiness probe
//! failing, a missing ConfigMap, a container that cannot be created), with the reason it
//! waits and the newest Warning event about it; and pods that failed in the window (an
//! eviction, a deadline), with the kubelet's reason and message; and pods stranded on a
//! node that stopped answering: not ready while their containers last read ready (the
//! node controller marks them, the kubelet that would say why is gone), or deleted and
//! still there past their grace. A pod that is starting (not ready for less than
//! [`STARTING_GRACE_SECS`] with no Warning event) is left alone.

use k8s_openapi::api::core::v1::ContainerStatus;

use super::PODS as NAME;
use super::view::{PodView, waiting_message, waiting_reason};
use super::{describe_source, pod_entity, time};
use crate::analyze::{Fact, FactClass, Severity};
use chrono::{DateTime, Utc};

/// How long a container may be not ready, without a Warning event, before it counts.
pub const STARTING_GRACE_SECS: i64 = 120;

/// The fact about `cs` when it is not ready.
pub fn container(v: &PodView, cs: &ContainerStatus) -> Option<Fact> {
    if cs.ready {
        return None;
    }
    let state = cs.state.as_ref();
    // An init container that finished did its job.
    if state
        .and_then(|s| s.terminated.as_ref())
        .is_some_and(|t| t.exit_code == 0)
    {
        return None;
    }
    let since = v.condition_since("Ready", "False").or_else(|| v.created());
    let field = format!("{{{}}}", cs.name);
    let event = v
        .events
        .iter()
        .rev()
        .find(|e| {
            e.involved_object
                .field_path
                .as_deref()
                .is_some_and(|f| f.ends_with(&field))
        })
        .or_else(|| v.events.last());
    let starting = since.is_none_or(|s| (v.scope.now - s).num_seconds() < STARTING_GRACE_SECS);
    if starting && event.is_none() {
        return None;
    }
    let what = match waiting_reason(cs) {
        Some(r) => format!("container {} not ready, waiting: {r}", cs.name),
        None => format!("container {} not ready", cs.name),
    };
    let detail = event
        .and_then(|e| {
            let m = e.message.as_deref()?;
            Some(match e.reason.as_deref() {
                Some(r) => format!("{r}: {m}"),
                None => m.to_string(),
            })
        })
        .or_else(|| waiting_message(cs).map(str::to_string))
        .unwrap_or_default();
    Some(warning(v, Some(cs.name.as_str()), what, since, detail))
}

/// The fact about a pod in phase `Failed` that ended in the window.
pub fn failed_pod(v: &PodView) -> Option<Fact> {
    let status = v.pod.status.as_ref()?;
    let ended = status
        .container_statuses
        .iter()
        .flatten()
        .filter_map(|cs| cs.state.as_ref()?.terminated.as_ref()?.finished_at.as_ref())
        .filter_map(time)
        .max()
        .or_else(|| v.condition_since("Ready", "False"))
        .or_else(|| v.created());
    if ended.is_none_or(|t| t < v.scope.window_start) {
        return None;
    }
    let what = match status.reason.as_deref() {
        Some(r) => format!("pod failed: {r}"),
        None => "pod failed".to_string(),
    };
    Some(warning(v, None, what, ended, failed_detail(status)))
}

/// "container dump exited 1 (Error); <the pod's message>".
fn failed_detail(status: &k8s_openapi::api::core::v1::PodStatus) -> String {
    let mut parts: Vec<String> = status
        .container_statuses
        .iter()
        .flatten()
        .filter_map(|cs| {
            let t = cs.state.as_ref()?.terminated.as_ref()?;
            (t.exit_code != 0).then(|| {
                format!(
                    "container {} exited {} ({})",
                    cs.name,
                    t.exit_code,
                    t.reason.as_deref().unwrap_or("no reason")
                )
            })
        })
        .collect();
    parts.extend(status.message.clone().filter(|m| !m.trim().is_empty()));
    parts.join("; ")
}

/// The fact about a pod no container fact explains: not ready while its containers last
/// read ready, or deleted before `deleted` and still listed (the caller has left alone a
/// pod within its deletion grace).
pub fn stranded(v: &PodView, deleted: Option<DateTime<Utc>>) -> Option<Fact> {
    let status = v.pod.status.as_ref()?;
    let (what, since) = match deleted {
        Some(t) => ("stuck terminating".to_string(), Some(t)),
        None => {
            let since = v.condition_since("Ready", "False")?;
            if (v.scope.now - since).num_seconds() < STARTING_GRACE_SECS {
                return None;
            }
            (
                "not ready, containers last reported ready".to_string(),
                Some(since),
            )
        }
    };
    let detail = [status.reason.as_deref(), status.message.as_deref()]
        .into_iter()
        .flatten()
        .filter(|s| !s.trim().is_empty())
        .collect::<Vec<_>>()
        .join(": ");
    Some(warning(v, None, what, since, detail))
}

/// A warning about pod `v` (or its container `container`): the three facts above differ
/// only in what they say, since when and why.
fn warning(
    v: &PodView,
    container: Option<&str>,
    what: String,
    since: Option<DateTime<Utc>>,
    detail: String,
) -> Fact {
    Fact::new(
        FactClass::Kubernetes,
        NAME,
        pod_entity(v.pod, container),
        what,
        Severity::Warning,
        describe_source(v.pod),
    )
    .since(since)
    .detail(detail)
}
