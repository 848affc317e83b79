//! A pod waiting for a volume another pod holds. The attach/detach controller of
//! kube-controller-manager refuses to attach a single-node volume (ReadWriteOnce) to a
//! second node and says so in a `FailedAttachVolume` Warning event on the waiting pod, in
//! one of its fixed formats (`reportMultiAttachError`, the message built by
//! `generateVolumeMsg` as `"<prefix> for volume %q <suffix>"`):
//!
//! - `Multi-Attach error for volume "pvc-…" Volume is already used by pod(s) a, b`
//! - `… Volume is already used by pod(s) a and 2 pod(s) in different namespaces`
//! - `… Volume is already used by 2 pod(s) in different namespaces`
//! - `… Volume is already exclusively attached to one node and can't be attached to another`
//!
//! The kubelet then only says its mount timed out (`FailedMount`), which hides the cause.
//! For each reported pod with such an event this names, first in its fact's detail, the
//! pods that hold the volume, with what the pod list says of each (the workload that owns
//! it and whether it is an older ReplicaSet of the same Deployment, as in a rolling update
//! of a Deployment with a ReadWriteOnce volume; its node; its phase or that it is being
//! deleted), and adds them to the fact's related entities so the ranking treats them as
//! entities of the fact. The message is read by its words, never by byte offsets.

use k8s_openapi::api::core::v1::{Event, Pod};

use super::view::{PodView, first_seen};
use super::{PODS, describe_source, pod_entity, time};
use crate::analyze::{Entity, Fact, FactClass, Severity};

/// What every format begins with.
const PREFIX: &str = "Multi-Attach error for volume ";
/// The suffix naming pods in the waiting pod's namespace.
const USED_BY_PODS: &str = "Volume is already used by pod(s) ";
/// The suffix counting pods in other namespaces only.
const USED_BY: &str = "Volume is already used by ";
/// What ends a count of pods in other namespaces.
const ELSEWHERE: &str = " pod(s) in different namespaces";
/// The suffix when no pod that uses the volume is known.
const EXCLUSIVE: &str = "Volume is already exclusively attached";
/// Most holding pods named (the controller allows one attachment; more is a misuse).
const MAX_HOLDERS: usize = 5;

/// A Multi-Attach error as the controller wrote it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MultiAttach {
    /// The volume's name (the PersistentVolume's, for a claim).
    pub volume: String,
    /// The pods in the waiting pod's namespace that use it.
    pub holders: Vec<String>,
    /// How many pods in other namespaces use it.
    pub elsewhere: u64,
}

/// The Multi-Attach error in `message`, if it is one.
pub fn parse(message: &str) -> Option<MultiAttach> {
    let (_, rest) = message.split_once(PREFIX)?;
    let (volume, rest) = go_quoted(rest)?;
    let rest = rest.trim();
    let mut found = MultiAttach {
        volume,
        holders: Vec::new(),
        elsewhere: 0,
    };
    if let Some(list) = rest.strip_prefix(USED_BY_PODS) {
        let list = list.trim_end_matches(['.', ' ']);
        let (names, others) = match list.rsplit_once(" and ") {
            Some((names, tail)) => match count_elsewhere(tail) {
                Some(n) => (names, n),
                None => (list, 0),
            },
            None => (list, 0),
        };
        found.elsewhere = others;
        found.holders = names
            .split(',')
            .map(str::trim)
            .filter(|n| !n.is_empty() && !n.contains(char::is_whitespace))
            .take(MAX_HOLDERS)
            .map(str::to_string)
            .collect();
        return (!found.holders.is_empty()).then_some(found);
    }
    if let Some(tail) = rest.strip_prefix(USED_BY) {
        found.elsewhere = count_elsewhere(tail.trim_end_matches(['.', ' ']))?;
        return Some(found);
    }
    rest.starts_with(EXCLUSIVE).then_some(found)
}

/// `N` of "N pod(s) in different namespaces".
fn count_elsewhere(text: &str) -> Option<u64> {
    text.trim().strip_suffix(ELSEWHERE)?.trim().parse().ok()
}

/// A string quoted as Go's `%q` writes it, at the start of `text`, and what follows it.
fn go_quoted(text: &str) -> Option<(String, &str)> {
    let body = text.trim_start().strip_prefix('"')?;
    let mut out = String::new();
    let mut chars = body.chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => return Some((out, chars.as_str())),
            '\\' => out.push(chars.next()?),
            c => out.push(c),
        }
    }
    None
}

/// The newest Multi-Attach error among the pod's Warning events, with its event.
fn newest<'a>(v: &PodView<'a>) -> Option<(&'a Event, MultiAttach)> {
    v.events
        .iter()
        .rev()
        .find_map(|e| Some((*e, parse(e.message.as_deref()?)?)))
}

/// Tells, in the facts found about pod `v` (Pending), which pods hold the volume it
/// waits for; when no failure class reported it, the Multi-Attach error is its fact.
pub fn tell(v: &PodView, pods: &[Pod], facts: &mut Vec<Fact>) {
    // A pod past Pending has its volumes: an error about it is history.
    let phase = v.pod.status.as_ref().and_then(|s| s.phase.as_deref());
    if phase != Some("Pending") {
        return;
    }
    let Some((event, error)) = newest(v) else {
        return;
    };
    let ns = v.pod.metadata.namespace.as_deref().unwrap_or_default();
    let holders: Vec<(&str, Option<&Pod>)> = error
        .holders
        .iter()
        .map(|name| {
            let pod = pods.iter().find(|p| {
                p.metadata.namespace.as_deref() == Some(ns)
                    && p.metadata.name.as_deref() == Some(name.as_str())
            });
            (name.as_str(), pod)
        })
        .collect();
    let text = describe(v.pod, &error, &holders);
    if facts.is_empty() {
        facts.push(
            Fact::new(
                FactClass::Kubernetes,
                PODS,
                pod_entity(v.pod, None),
                "cannot attach its volume",
                Severity::Warning,
                describe_source(v.pod),
            )
            .since(first_seen(event)),
        );
    }
    for f in facts.iter_mut() {
        let detail = match f.detail.take() {
            // The event's own text is what `text` says, with the holders described.
            Some(d) if d.contains(PREFIX) => text.clone(),
            Some(d) => format!("{text}; {d}"),
            None => text.clone(),
        };
        *f = f.clone().detail(detail);
        f.entity
            .labels
            .entry("persistentvolume".into())
            .or_insert_with(|| error.volume.clone());
        for (name, pod) in &holders {
            let entity = match pod {
                Some(p) => pod_entity(p, None),
                None => Entity::new("pod", format!("{ns}/{name}")).with_labels(
                    [("namespace", ns), ("pod", name)]
                        .into_iter()
                        .map(|(k, v)| (k.to_string(), v.to_string()))
                        .collect(),
                ),
            };
            *f = f.clone().related(entity);
        }
    }
}

/// "Multi-Attach error for volume "pvc-1": held by pod web-6b7f-x of the older
/// ReplicaSet web-6b7f on node w2, still Running".
fn describe(waiting: &Pod, error: &MultiAttach, holders: &[(&str, Option<&Pod>)]) -> String {
    let mut said: Vec<String> = holders
        .iter()
        .map(|(name, pod)| match pod {
            Some(p) => format!("pod {name}{}", holder(waiting, p)),
            None => format!("pod {name} (no longer listed)"),
        })
        .collect();
    if error.elsewhere > 0 {
        said.push(format!("{} pod(s) in other namespaces", error.elsewhere));
    }
    let volume = format!("{PREFIX}{:?}", error.volume);
    match said.is_empty() {
        true => format!("{volume}: still attached to another node, no pod there uses it"),
        false => format!("{volume}: held by {}", said.join(" and ")),
    }
}

/// " of the older ReplicaSet web-6b7f on node w2, still Running": what the pod list
/// says of `holder` beside `waiting` (or ", being deleted (deadline 14:05 UTC)").
fn holder(waiting: &Pod, holder: &Pod) -> String {
    let mut s = String::new();
    let controller = |p: &Pod| {
        let refs = p.metadata.owner_references.as_ref()?;
        let r = refs
            .iter()
            .find(|r| r.controller == Some(true))
            .or_else(|| refs.first())?;
        Some((r.kind.clone(), r.name.clone()))
    };
    let mine = controller(waiting);
    let older = match (
        holder.metadata.creation_timestamp.as_ref().and_then(time),
        waiting.metadata.creation_timestamp.as_ref().and_then(time),
    ) {
        (Some(h), Some(w)) => h < w,
        _ => false,
    };
    let mut rolled_over = false;
    if let Some((kind, name)) = controller(holder) {
        let same_workload =
            super::owner(holder).is_some() && super::owner(holder) == super::owner(waiting);
        let relation = match &mine {
            Some((k, n)) if *k == kind && *n == name => "the same ",
            _ if kind == "ReplicaSet" && same_workload && older => {
                rolled_over = true;
                "the older "
            }
            _ => "",
        };
        s.push_str(&format!(" of {relation}{kind} {name}"));
        if kind == "ReplicaSet"
            && relation != "the same "
            && let Some((_, deployment)) = super::owner(holder).filter(|(k, _)| k == "deployment")
        {
            s.push_str(&format!(" (Deployment {deployment})"));
        }
    }
    if let Some(node) = holder.spec.as_ref().and_then(|s| s.node_name.as_deref()) {
        s.push_str(&format!(" on node {node}"));
    }
    let deleting = holder.metadata.deletion_timestamp.as_ref().and_then(time);
    let phase = holder.status.as_ref().and_then(|s| s.phase.as_deref());
    match (deleting, phase) {
        // The API's deletion timestamp is the deadline of a graceful deletion.
        (Some(t), _) => s.push_str(&format!(
            ", being deleted (deadline {})",
            t.format("%H:%M UTC")
        )),
        (None, Some(p)) if rolled_over && p == "Running" => s.push_str(", still Running"),
        (None, Some(p)) => s.push_str(&format!(", {p}")),
        (None, None) => {}
    }
    s
}

#[cfg(test)]
mod tests;
