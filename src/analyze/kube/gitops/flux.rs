//! A Flux `Kustomization` or `HelmRelease` that cannot apply what is in git: its `Ready`
//! condition `False` with the controller's reason (`BuildFailed`, `ReconciliationFailed`,
//! `HealthCheckFailed`, `ArtifactFailed`, `InstallFailed`, `UpgradeFailed`, …) and
//! message, since the condition turned; the revision attempted and the one last applied.
//! `Ready=Unknown` is a reconciliation in progress, and a suspended object is held on
//! purpose: neither is reported. `DependencyNotReady` is a warning (its cause is the other
//! object, reported on its own).

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::{
    NAME, items, names_secret, namespace_entity, quote, resource_entity, revision, text, time_at,
    token,
};
use crate::analyze::{Entity, Fact, FactClass, Quantity, Scope, Severity, Source};

/// The fact about a Flux object of `kind` (`Kustomization`, `HelmRelease`) `ns/name`, if
/// it is not ready.
pub fn fact(kind: &str, ns: &str, name: &str, obj: &Value, scope: &Scope) -> Option<Fact> {
    if obj.pointer("/spec/suspend").and_then(Value::as_bool) == Some(true) {
        return None;
    }
    let conditions = items(obj, "/status/conditions");
    let ready = conditions
        .iter()
        .find(|c| text(c, "/type") == "Ready" && text(c, "/status") == "False")?;
    let reason = token(text(ready, "/reason")).unwrap_or("Ready=False");
    let stalled = conditions
        .iter()
        .any(|c| text(c, "/type") == "Stalled" && text(c, "/status") == "True");
    let severity = match reason {
        "DependencyNotReady" => Severity::Warning,
        _ => Severity::Critical,
    };
    let attempted = text(obj, "/status/lastAttemptedRevision");
    let mut detail = Vec::new();
    let message = text(ready, "/message");
    if names_secret(message) {
        detail.push("(the message names a Secret and is not quoted)".into());
    } else if !message.trim().is_empty() {
        detail.push(quote(message));
    }
    let applied = text(obj, "/status/lastAppliedRevision");
    match (
        attempted.is_empty(),
        applied.is_empty() || applied == attempted,
    ) {
        (false, false) => detail.push(format!(
            "revision {} not applied (last applied {})",
            revision(attempted),
            revision(applied)
        )),
        (false, true) if kind == "HelmRelease" => {
            detail.push(format!("chart version {}", revision(attempted)))
        }
        (false, true) => detail.push(format!("revision {}", revision(attempted))),
        (true, _) => {}
    }
    if stalled {
        detail.push("stalled: the controller stopped retrying".into());
    }
    let failures = [
        "/status/failures",
        "/status/installFailures",
        "/status/upgradeFailures",
    ]
    .iter()
    .filter_map(|p| obj.pointer(p).and_then(Value::as_i64))
    .max()
    .filter(|n| *n > 0);

    let lower = kind.to_lowercase();
    let entity = Entity::new(&lower, format!("{ns}/{name}")).with_labels(BTreeMap::from([
        ("namespace".to_string(), ns.to_string()),
        (lower.clone(), name.to_string()),
        ("name".to_string(), name.to_string()),
    ]));
    let mut fact = Fact::new(
        FactClass::Kubernetes,
        NAME,
        entity,
        format!("not ready ({reason})"),
        severity,
        Source::new("k8s_events", json!({ "namespace": ns })),
    )
    .since(time_at(ready, "/lastTransitionTime", scope.now))
    .detail(detail.join("; "));
    if let Some(n) = failures {
        fact.what.push_str(", failures");
        fact = fact.value(Quantity::count(n as f64));
    }
    let target = text(obj, "/spec/targetNamespace");
    if !target.is_empty() {
        fact = fact.related(namespace_entity(target));
    }
    if let Some((rkind, rns, rname)) = failed_resource(message) {
        let rns = if rns.is_empty() { target } else { rns };
        fact = fact.related(resource_entity(rkind, rns, rname));
    }
    Some(fact)
}

/// The object a kustomize-controller message begins with (`Deployment/shop/web dry-run
/// failed …`: kind, namespace, name; `Namespace/shop …`: kind and name).
fn failed_resource(message: &str) -> Option<(&str, &str, &str)> {
    let first = message.split_whitespace().next()?;
    let parts: Vec<&str> = first.split('/').collect();
    let (kind, ns, name) = match parts.as_slice() {
        [kind, ns, name] => (*kind, *ns, *name),
        [kind, name] => (*kind, "", *name),
        _ => return None,
    };
    let word = |s: &str| {
        !s.is_empty()
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || "-._".contains(c))
    };
    let is_kind = kind.chars().next().is_some_and(|c| c.is_ascii_uppercase());
    (is_kind && word(kind) && (ns.is_empty() || word(ns)) && word(name)).then_some((kind, ns, name))
}

#[cfg(test)]
mod tests {
    use super::failed_resource;

    #[test]
    fn the_object_a_message_begins_with_is_read_only_when_it_looks_like_one() {
        assert_eq!(
            failed_resource("Deployment/shop/web dry-run failed (Invalid): x"),
            Some(("Deployment", "shop", "web"))
        );
        assert_eq!(
            failed_resource("Namespace/shop created"),
            Some(("Namespace", "", "shop"))
        );
        assert_eq!(
            failed_resource("kustomize build failed: accumulating"),
            None
        );
        assert_eq!(failed_resource("https://x/y/z"), None);
        assert_eq!(failed_resource(""), None);
        assert_eq!(failed_resource("Dëployment/ä/ö x"), None);
    }
}
