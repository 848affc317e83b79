//! One pod as the failure classes of `kube_pods` see it (the pod, the Warning events about
//! it and about the claims it uses, the window), and what they read from it: events by reason, conditions, waiting
//! states, when things began.

use chrono::{DateTime, Utc};
use k8s_openapi::api::core::v1::{ContainerStatus, Event, Pod};

use super::{time, timestamp};
use crate::analyze::Scope;

/// One pod as the failure classes see it: the pod, the Warning events about it (oldest
/// first), those about the volume claims it mounts, and the window.
pub struct PodView<'a> {
    pub pod: &'a Pod,
    pub events: Vec<&'a Event>,
    /// The Warning events about the claims its volumes use, by claim (oldest first).
    pub claims: Vec<(&'a str, Vec<&'a Event>)>,
    pub scope: &'a Scope,
}

impl PodView<'_> {
    /// The newest Warning event about the pod with `reason` (any reason when `None`)
    /// whose message passes `keep`.
    pub fn event(&self, reason: Option<&str>, keep: impl Fn(&str) -> bool) -> Option<&Event> {
        self.events
            .iter()
            .rev()
            .find(|e| {
                reason.is_none_or(|r| e.reason.as_deref() == Some(r))
                    && keep(e.message.as_deref().unwrap_or_default())
            })
            .copied()
    }

    /// When the pod's condition `kind` last turned to `status`, if it has that status now.
    pub fn condition_since(&self, kind: &str, status: &str) -> Option<DateTime<Utc>> {
        let c = self
            .pod
            .status
            .as_ref()?
            .conditions
            .as_ref()?
            .iter()
            .find(|c| c.type_ == kind && c.status == status)?;
        c.last_transition_time.as_ref().and_then(time)
    }

    /// The claims the pod's volumes use (`persistentVolumeClaim.claimName`).
    pub fn claim_names(pod: &Pod) -> Vec<&str> {
        pod.spec
            .as_ref()
            .and_then(|s| s.volumes.as_ref())
            .into_iter()
            .flatten()
            .filter_map(|v| v.persistent_volume_claim.as_ref())
            .map(|c| c.claim_name.as_str())
            .collect()
    }

    /// When the pod was created.
    pub fn created(&self) -> Option<DateTime<Utc>> {
        self.pod.metadata.creation_timestamp.as_ref().and_then(time)
    }
}

/// When an event was first seen (its series' start, else its own time).
pub fn first_seen(e: &Event) -> Option<DateTime<Utc>> {
    e.first_timestamp
        .as_ref()
        .and_then(time)
        .or_else(|| e.event_time.as_ref().and_then(|t| timestamp(&t.0)))
        .or_else(|| e.last_timestamp.as_ref().and_then(time))
}

/// The reason a container waits, if it does.
pub fn waiting_reason(cs: &ContainerStatus) -> Option<&str> {
    cs.state.as_ref()?.waiting.as_ref()?.reason.as_deref()
}

/// The message of the container's waiting state, if any.
pub fn waiting_message(cs: &ContainerStatus) -> Option<&str> {
    cs.state
        .as_ref()?
        .waiting
        .as_ref()?
        .message
        .as_deref()
        .filter(|m| !m.trim().is_empty())
}
