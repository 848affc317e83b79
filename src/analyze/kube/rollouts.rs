//! `kube_rollouts`: Deployments, StatefulSets and DaemonSets whose rollout is stuck
//! (`Progressing=False`, `ProgressDeadlineExceeded`), still in progress (fewer updated
//! replicas than desired, or a StatefulSet between revisions), or short of available
//! replicas; and, from the Deployments' ReplicaSets, the rollouts done in the window with
//! the images they changed and what their new pods log that looks bad (`changes.rs`).

use std::sync::Arc;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::ROLLOUTS as NAME;
use super::{MAX_FACTS, changes, key, time, upstream, workload};
use crate::analyze::{
    AnalyzeError, Analyzer, Fact, FactClass, Quantity, Scope, Severity, keep_most_severe,
};
use crate::integrations::kubernetes::KubeClient;

pub struct KubeRollouts(pub Arc<KubeClient>);

#[async_trait]
impl Analyzer for KubeRollouts {
    fn name(&self) -> &'static str {
        NAME
    }

    async fn run(&self, scope: &Scope) -> Result<Vec<Fact>, AnalyzeError> {
        let (deploys, sets, daemons) = self.0.workloads(None).await.map_err(upstream)?;
        let replicasets = self.0.replicasets(None).await.map_err(upstream)?;
        let revisions = changes::revisions(&replicasets);
        let mut facts = Vec::new();
        for d in &deploys {
            let s = d.status.clone().unwrap_or_default();
            let progressing = s
                .conditions
                .iter()
                .flatten()
                .find(|c| c.type_.as_deref() == Some("Progressing"));
            let available = s.conditions.iter().flatten().find(|c| {
                c.type_.as_deref() == Some("Available") && c.status.as_deref() == Some("False")
            });
            let stuck = progressing
                .filter(|c| c.status.as_deref() == Some("False"))
                .map(|c| Cond {
                    reason: c.reason.clone(),
                    message: c.message.clone(),
                    since: c.last_transition_time.as_ref().and_then(time),
                });
            let newest = revisions
                .get(&key(&d.metadata))
                .and_then(|r| r.last())
                .and_then(|r| r.created);
            facts.extend(state(
                "deployment",
                &d.metadata,
                Counts {
                    desired: d.spec.replicas.unwrap_or(1),
                    updated: s.updated_replicas.unwrap_or(0),
                    available: s.available_replicas.unwrap_or(0),
                    between_revisions: false,
                },
                stuck,
                progressing.and_then(|c| c.message.clone()),
                newest,
                available.and_then(|c| c.last_transition_time.as_ref().and_then(time)),
            ));
            facts.extend(changes::fact(d, &revisions, scope));
        }
        for ss in &sets {
            let s = ss.status.clone().unwrap_or_default();
            let between = s.update_revision.is_some() && s.update_revision != s.current_revision;
            facts.extend(state(
                "statefulset",
                &ss.metadata,
                Counts {
                    desired: ss.spec.replicas.unwrap_or(1),
                    updated: s.updated_replicas.unwrap_or(0),
                    available: s
                        .available_replicas
                        .unwrap_or(s.ready_replicas.unwrap_or(0)),
                    between_revisions: between,
                },
                None,
                s.update_revision
                    .map(|r| format!("updating to revision {r}")),
                None,
                None,
            ));
        }
        for ds in &daemons {
            let s = ds.status.clone().unwrap_or_default();
            facts.extend(state(
                "daemonset",
                &ds.metadata,
                Counts {
                    desired: s.desired_number_scheduled,
                    updated: s.updated_number_scheduled.unwrap_or(0),
                    available: s.number_available.unwrap_or(0),
                    between_revisions: false,
                },
                None,
                None,
                None,
                None,
            ));
        }
        changes::new_pods_log(&self.0, &mut facts).await;
        keep_most_severe(&mut facts, MAX_FACTS);
        Ok(facts)
    }
}

struct Counts {
    desired: i32,
    updated: i32,
    available: i32,
    between_revisions: bool,
}

struct Cond {
    reason: Option<String>,
    message: Option<String>,
    since: Option<DateTime<Utc>>,
}

/// The fact about one workload's rollout, if it is stuck, in progress or short.
#[allow(clippy::too_many_arguments)]
fn state(
    kind: &str,
    meta: &ObjectMeta,
    n: Counts,
    stuck: Option<Cond>,
    progress: Option<String>,
    rollout_began: Option<DateTime<Utc>>,
    unavailable_since: Option<DateTime<Utc>>,
) -> Option<Fact> {
    if n.desired <= 0 {
        return None;
    }
    let (entity, source) = workload(kind, meta);
    let counts = format!(
        "desired {}, updated {}, available {}",
        n.desired, n.updated, n.available
    );
    let desired = Quantity::count(f64::from(n.desired));
    if let Some(c) = stuck {
        let reason = c.reason.unwrap_or_else(|| "Progressing=False".into());
        let detail = format!("{counts}; {}", c.message.unwrap_or_default());
        return Some(
            Fact::new(
                FactClass::Kubernetes,
                NAME,
                entity,
                format!("rollout stuck ({reason}), available"),
                Severity::Critical,
                source,
            )
            .value(Quantity::count(f64::from(n.available)))
            .limit(desired)
            .since(c.since)
            .detail(detail),
        );
    }
    if n.updated < n.desired || n.between_revisions {
        let detail = match progress {
            Some(p) => format!("{counts}; {p}"),
            None => counts,
        };
        return Some(
            Fact::new(
                FactClass::Kubernetes,
                NAME,
                entity,
                "rollout in progress, updated",
                Severity::Warning,
                source,
            )
            .value(Quantity::count(f64::from(n.updated)))
            .limit(desired)
            .since(rollout_began)
            .detail(detail),
        );
    }
    if n.available < n.desired {
        return Some(
            Fact::new(
                FactClass::Kubernetes,
                NAME,
                entity,
                "replicas available",
                Severity::Warning,
                source,
            )
            .value(Quantity::count(f64::from(n.available)))
            .limit(desired)
            .since(unavailable_since)
            .detail(counts),
        );
    }
    None
}
