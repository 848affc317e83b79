//! An Argo CD `Application` that cannot apply what is in git, from its status as the
//! application controller writes it: the last sync operation (`operationState`) failed
//! (`Failed`/`Error`, or `Running` after a failed attempt, waiting to retry) with the
//! resources whose apply failed (`syncResult.resources[]` with `status: SyncFailed`, or a
//! hook whose phase failed) and the API server's message; an error condition
//! (`ComparisonError`: the manifests cannot be generated or compared, `SyncError`,
//! `InvalidSpecError`, …); or `OutOfSync` with health `Degraded`/`Missing`. An operation
//! that failed before the window, of an application `Synced` and `Healthy` since, is
//! history and not reported.

use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use super::{
    NAME, items, names_secret, namespace_entity, quote, resource_entity, revision, text, time_at,
    token,
};
use crate::analyze::{Entity, Fact, FactClass, Quantity, Scope, Severity, Source};

/// Failed resources named in one fact.
const MAX_RESOURCES: usize = 3;

/// The fact about Application `ns/name` (its `spec` and `status` in `app`), if it cannot
/// apply what is in git or is unhealthy.
pub fn fact(ns: &str, name: &str, app: &Value, scope: &Scope) -> Option<Fact> {
    let now = scope.now;
    let sync = text(app, "/status/sync/status");
    let health = text(app, "/status/health/status");
    let op = app
        .pointer("/status/operationState")
        .unwrap_or(&Value::Null);
    let phase = text(op, "/phase");
    let started = time_at(op, "/startedAt", now);
    let finished = time_at(op, "/finishedAt", now);
    let retries = op
        .pointer("/retryCount")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let op_failed = matches!(phase, "Failed" | "Error")
        || (phase == "Running" && finished.is_some() && retries > 0);
    let settled =
        sync == "Synced" && health == "Healthy" && finished.is_none_or(|f| f < scope.window_start);
    let op_failed = op_failed && !settled;
    let failed: Vec<&Value> = items(op, "/syncResult/resources")
        .iter()
        .filter(|r| {
            text(r, "/status") == "SyncFailed"
                || matches!(text(r, "/hookPhase"), "Failed" | "Error")
        })
        .collect();
    let errors: Vec<&Value> = items(app, "/status/conditions")
        .iter()
        .filter(|c| text(c, "/type").ends_with("Error"))
        .collect();
    let unhealthy = matches!(health, "Degraded" | "Missing");

    let dest = text(app, "/spec/destination/namespace");
    let mut detail = Vec::new();
    let rev = [
        text(op, "/syncResult/revision"),
        text(app, "/status/sync/revision"),
    ]
    .into_iter()
    .find(|r| !r.is_empty());
    let mut related = Vec::new();
    if op_failed {
        let mut raw = Vec::new();
        for r in failed.iter().take(MAX_RESOURCES) {
            let (kind, rns, rname) = (text(r, "/kind"), text(r, "/namespace"), text(r, "/name"));
            let rns = if rns.is_empty() { dest } else { rns };
            related.push(resource_entity(kind, rns, rname));
            let message = text(r, "/message");
            raw.push(message.trim());
            let said = resource_message(kind, message);
            detail.push(format!("{kind} {rns}/{rname} failed to apply: {said}"));
        }
        let message = text(op, "/message");
        // Argo CD's operation message repeats the resources' ("…, reason: <theirs>").
        let repeated = raw.iter().any(|m| !m.is_empty() && message.contains(m));
        // … and so a Secret's, which is never quoted.
        let of_secret =
            failed.iter().any(|r| text(r, "/kind") == "Secret") || names_secret(message);
        if !message.trim().is_empty() && !repeated && !of_secret {
            detail.push(format!("operation {phase}: {}", quote(message)));
        }
        if retries > 0 {
            detail.push(format!("retried {retries} times"));
        }
    }
    for c in &errors {
        let kind = token(text(c, "/type")).unwrap_or("error");
        let message = text(c, "/message");
        match names_secret(message) {
            true => detail.push(format!(
                "{kind}: (the message names a Secret and is not quoted)"
            )),
            false => detail.push(format!("{kind}: {}", quote(message))),
        }
    }
    if !sync.is_empty() || !health.is_empty() {
        let mut s = format!("sync {sync}, health {health}");
        let m = text(app, "/status/health/message");
        if unhealthy && !m.trim().is_empty() {
            s.push_str(&format!(" ({})", quote(m)));
        }
        detail.push(s);
    }
    if let Some(r) = rev {
        detail.push(format!("revision {}", revision(r)));
    }

    let health_since = time_at(app, "/status/health/lastTransitionTime", now);
    let (what, severity, since, value) = if op_failed {
        let what = match failed.len() {
            0 => format!("sync to git failed (operation {phase})"),
            _ => "sync to git failed, resources not applied".to_string(),
        };
        let value = (!failed.is_empty()).then(|| Quantity::count(failed.len() as f64));
        (what, Severity::Critical, started.or(finished), value)
    } else if let Some(c) = errors.first() {
        let kind = text(c, "/type");
        let what = match kind {
            "ComparisonError" => "cannot compare with git (ComparisonError)".to_string(),
            "SyncError" => "cannot sync (SyncError)".to_string(),
            "InvalidSpecError" => "invalid spec (InvalidSpecError)".to_string(),
            other => token(other).unwrap_or("error condition").to_string(),
        };
        let since = time_at(c, "/lastTransitionTime", now);
        (what, Severity::Critical, since, None)
    } else if unhealthy && sync == "OutOfSync" {
        let what = format!("out of sync with git, health {health}");
        (what, Severity::Warning, health_since, None)
    } else if unhealthy {
        (
            format!("health {health}"),
            Severity::Warning,
            health_since,
            None,
        )
    } else {
        return None;
    };
    Some(build(
        ns, name, app, what, severity, since, value, detail, related,
    ))
}

/// The message of a resource that failed to apply, quoted; a Secret's is not (an API
/// error about a Secret may carry what it holds).
fn resource_message(kind: &str, message: &str) -> String {
    match (kind, message.trim().is_empty()) {
        ("Secret", _) => "(the message about a Secret is not quoted)".to_string(),
        _ if names_secret(message) => "(the message names a Secret and is not quoted)".into(),
        (_, true) => "(no message)".to_string(),
        (_, false) => quote(message),
    }
}

#[allow(clippy::too_many_arguments)]
fn build(
    ns: &str,
    name: &str,
    app: &Value,
    what: String,
    severity: Severity,
    since: Option<DateTime<Utc>>,
    value: Option<Quantity>,
    detail: Vec<String>,
    related: Vec<Entity>,
) -> Fact {
    let dest = text(app, "/spec/destination/namespace");
    let mut labels = std::collections::BTreeMap::from([
        ("namespace".to_string(), ns.to_string()),
        ("application".to_string(), name.to_string()),
        ("name".to_string(), name.to_string()),
    ]);
    if !dest.is_empty() {
        labels.insert("destination_namespace".into(), dest.to_string());
    }
    let project = text(app, "/spec/project");
    if !project.is_empty() {
        labels.insert("project".into(), project.to_string());
    }
    let entity = Entity::new("application", format!("{ns}/{name}")).with_labels(labels);
    let mut fact = Fact::new(
        FactClass::Kubernetes,
        NAME,
        entity,
        what,
        severity,
        Source::new("k8s_events", json!({ "namespace": ns })),
    )
    .since(since)
    .detail(detail.join("; "));
    if let Some(v) = value {
        fact = fact.value(v);
    }
    if !dest.is_empty() {
        fact = fact.related(namespace_entity(dest));
    }
    for e in related {
        fact = fact.related(e);
    }
    fact
}
