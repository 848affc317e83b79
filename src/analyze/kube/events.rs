//! `kube_events`: what the controllers complained about in the window — Warning events
//! about objects other than pods (those come with their pod's fact from `kube_pods`): a
//! ReplicaSet that cannot create pods (a quota, an admission webhook), a claim that cannot
//! be provisioned, a Job past its backoff limit, an autoscaler that cannot read metrics, a
//! node's kubelet. Whatever the reason is called: one fact per object and reason, with the
//! newest message, how many times and since when.

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use k8s_openapi::api::core::v1::Event;
use serde_json::json;

use super::{time, timestamp, upstream};
use crate::analyze::{AnalyzeError, Analyzer, Entity, Fact, FactClass, Scope, Severity, Source};
use crate::integrations::kubernetes::KubeClient;
use crate::text::truncate_middle;

/// Objects reported (each costs the model tokens): those the trigger is about first, then
/// the newest.
const MAX_FACTS: usize = 6;
/// Longest message quoted.
const MAX_MESSAGE_CHARS: usize = 240;

pub struct KubeEvents(pub Arc<KubeClient>);

#[async_trait]
impl Analyzer for KubeEvents {
    fn name(&self) -> &'static str {
        "kube_events"
    }

    async fn run(&self, scope: &Scope) -> Result<Vec<Fact>, AnalyzeError> {
        let events = self.0.events(None, true).await.map_err(upstream)?;
        Ok(facts(&events, scope))
    }
}

/// One object's complaints of one reason.
struct Complaint {
    kind: String,
    namespace: String,
    name: String,
    reason: String,
    message: String,
    count: i64,
    first: Option<DateTime<Utc>>,
    last: Option<DateTime<Utc>>,
}

/// The facts about the Warning `events` (oldest first) in `scope`'s window.
pub fn facts(events: &[Event], scope: &Scope) -> Vec<Fact> {
    let mut by: BTreeMap<(String, String, String, String), Complaint> = BTreeMap::new();
    for e in events {
        let o = &e.involved_object;
        let kind = o.kind.clone().unwrap_or_default();
        if kind.is_empty() || kind == "Pod" {
            continue;
        }
        let last = last_seen(e);
        if last.is_some_and(|t| t < scope.window_start) {
            continue;
        }
        let first = e
            .first_timestamp
            .as_ref()
            .and_then(time)
            .or(last)
            .filter(|t| *t <= scope.now);
        let namespace = o.namespace.clone().unwrap_or_default();
        let name = o.name.clone().unwrap_or_default();
        let reason = e.reason.clone().unwrap_or_default();
        let c = by
            .entry((
                namespace.clone(),
                kind.clone(),
                name.clone(),
                reason.clone(),
            ))
            .or_insert_with(|| Complaint {
                kind,
                namespace,
                name,
                reason,
                message: String::new(),
                count: 0,
                first,
                last,
            });
        c.count = c
            .count
            .saturating_add(i64::from(e.count.unwrap_or(1).max(1)));
        c.message = e.message.clone().unwrap_or_default();
        c.first = match (c.first, first) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        c.last = c.last.max(last);
    }
    let mut found: Vec<(bool, Option<DateTime<Utc>>, Fact)> = by
        .into_values()
        .map(|c| {
            let fact = fact(&c);
            (scope.is_about(&fact.entity), c.last, fact)
        })
        .collect();
    found.sort_by(|a, b| b.0.cmp(&a.0).then(b.1.cmp(&a.1)));
    found
        .into_iter()
        .take(MAX_FACTS)
        .map(|(_, _, f)| f)
        .collect()
}

fn last_seen(e: &Event) -> Option<DateTime<Utc>> {
    e.last_timestamp
        .as_ref()
        .and_then(time)
        .or_else(|| e.event_time.as_ref().and_then(|t| timestamp(&t.0)))
        .or_else(|| e.first_timestamp.as_ref().and_then(time))
}

fn fact(c: &Complaint) -> Fact {
    let kind = c.kind.to_lowercase();
    let mut labels = BTreeMap::from([(kind.clone(), c.name.clone())]);
    if !c.namespace.is_empty() {
        labels.insert("namespace".to_string(), c.namespace.clone());
    }
    // A ReplicaSet is named `<deployment>-<pod template hash>`: the Deployment is what
    // a person and the trigger know.
    if c.kind == "ReplicaSet"
        && let Some((deployment, _)) = c.name.rsplit_once('-')
    {
        labels.insert("deployment".to_string(), deployment.to_string());
        labels.insert("workload".to_string(), deployment.to_string());
    }
    let name = match c.namespace.is_empty() {
        true => c.name.clone(),
        false => format!("{}/{}", c.namespace, c.name),
    };
    let mut entity = Entity::new(&kind, name).with_labels(labels);
    if c.kind == "Node" {
        entity = entity.on_host(Some(c.name.clone()));
    }
    let args = match c.namespace.is_empty() {
        true => json!({ "warnings_only": true }),
        false => json!({ "namespace": c.namespace, "warnings_only": true }),
    };
    Fact::new(
        FactClass::Availability,
        "kube_events",
        entity,
        format!(
            "{} ({}×): {}",
            c.reason,
            c.count,
            truncate_middle(&c.message, MAX_MESSAGE_CHARS)
        ),
        Severity::Warning,
        Source::new("k8s_events", args),
    )
    .since(c.first)
}
