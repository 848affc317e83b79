//! `kube_services`: a Service whose selector matches no ready pod of its namespace, so it
//! has no endpoint and the ingress and every client get 503 "no endpoints": a chart
//! upgrade that relabelled the pods, a typo in the selector, or every backend unready.
//! The pods whose labels nearly match are quoted as data: the selector's value under
//! another key (`app=web` wanted, `app.kubernetes.io/name=web` carried), or the
//! selector's key with a value that contains the wanted one or is contained in it.
//! Critical when no pod matches while nearly matching pods are ready (something meant to
//! serve it runs), or when pods match and none is ready; a warning when nothing matches
//! or nearly matches (scaled to zero, or not deployed). Services without a selector
//! (endpoints kept by hand) and `ExternalName` ones are left out.

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use k8s_openapi::api::core::v1::{Pod, Service};
use serde_json::json;

use super::{MAX_FACTS, key, time, upstream};
use crate::analyze::{
    AnalyzeError, Analyzer, Entity, Fact, FactClass, Quantity, Scope, Severity, Source,
    keep_most_severe,
};
use crate::integrations::kubernetes::KubeClient;

const NAME: &str = "kube_services";
/// Most nearly matching label sets quoted per Service.
const MAX_NEAR: usize = 3;

pub struct KubeServices(pub Arc<KubeClient>);

#[async_trait]
impl Analyzer for KubeServices {
    fn name(&self) -> &'static str {
        NAME
    }

    async fn run(&self, _: &Scope) -> Result<Vec<Fact>, AnalyzeError> {
        let services = self.0.services(None).await.map_err(upstream)?;
        if services.is_empty() {
            return Ok(Vec::new());
        }
        let pods = self.0.pods(None, None).await.map_err(upstream)?;
        let mut facts = analyze(&services, &pods);
        keep_most_severe(&mut facts, MAX_FACTS);
        Ok(facts)
    }
}

type Labels = BTreeMap<String, String>;

fn labels(pod: &Pod) -> Labels {
    pod.metadata.labels.clone().unwrap_or_default()
}

/// Whether `pod` is Ready and not being deleted.
pub fn ready(pod: &Pod) -> bool {
    pod.metadata.deletion_timestamp.is_none()
        && pod
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// Whether `pod` still runs or is to (not Succeeded or Failed).
fn live(pod: &Pod) -> bool {
    !matches!(
        pod.status.as_ref().and_then(|s| s.phase.as_deref()),
        Some("Succeeded" | "Failed")
    )
}

/// The labels of `pod` that nearly match `selector` (it does not match it), and whether
/// any is the wanted value under another key (a strong match: a relabelling); else the
/// same key with a value containing the wanted one or contained in it (a weak one: a typo,
/// or only a sibling such as `web-db` for `web`). Empty when nothing is near.
pub fn near(selector: &Labels, pod: &Labels) -> (Labels, bool) {
    let mut out = Labels::new();
    let mut strong = false;
    for (k, v) in selector {
        if pod.get(k) == Some(v) {
            continue;
        }
        for (pk, pv) in pod {
            let same_value = pk != k && pv == v;
            let similar = pk == k
                && !v.is_empty()
                && !pv.is_empty()
                && (pv.contains(v.as_str()) || v.contains(pv.as_str()));
            if same_value || similar {
                out.insert(pk.clone(), pv.clone());
            }
            strong |= same_value;
        }
    }
    (out, strong)
}

fn terms(l: &Labels) -> String {
    l.iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// The facts of the `services` whose selector matches no ready pod among `pods`.
pub fn analyze(services: &[Service], pods: &[Pod]) -> Vec<Fact> {
    let mut facts = Vec::new();
    for svc in services {
        let Some(spec) = &svc.spec else { continue };
        let selector: Labels = spec.selector.clone().unwrap_or_default();
        if selector.is_empty() || spec.type_.as_deref() == Some("ExternalName") {
            continue;
        }
        let (ns, name) = key(&svc.metadata);
        let in_ns: Vec<&Pod> = pods
            .iter()
            .filter(|p| p.metadata.namespace.as_deref() == Some(ns.as_str()) && live(p))
            .collect();
        let matching: Vec<&Pod> = in_ns
            .iter()
            .copied()
            .filter(|p| {
                let l = labels(p);
                selector.iter().all(|(k, v)| l.get(k) == Some(v))
            })
            .collect();
        let ready_count = matching.iter().filter(|p| ready(p)).count();
        let publishes_unready = spec.publish_not_ready_addresses == Some(true);
        if ready_count > 0 || (publishes_unready && !matching.is_empty()) {
            continue;
        }
        // Nearly matching pods, grouped by the labels that nearly match; the strong
        // matches alone when there are any.
        let mut groups: BTreeMap<String, (Vec<&Pod>, usize)> = BTreeMap::new();
        let mut weak: BTreeMap<String, (Vec<&Pod>, usize)> = BTreeMap::new();
        if matching.is_empty() {
            for p in &in_ns {
                let (n, strong) = near(&selector, &labels(p));
                if !n.is_empty() {
                    let into = if strong { &mut groups } else { &mut weak };
                    let g = into.entry(terms(&n)).or_default();
                    g.0.push(p);
                    g.1 += usize::from(ready(p));
                }
            }
        }
        if groups.is_empty() {
            groups = weak;
        }
        let near_ready: usize = groups.values().map(|(_, r)| r).sum();
        let created = svc.metadata.creation_timestamp.as_ref().and_then(time);
        facts.push(fact(
            &ns, &name, &selector, &matching, &groups, near_ready, created,
        ));
    }
    facts
}

fn pod_names(pods: &[&Pod]) -> String {
    let names: Vec<&str> = pods
        .iter()
        .filter_map(|p| p.metadata.name.as_deref())
        .collect();
    match names.len() {
        0..=3 => names.join(", "),
        n => format!("{}, … ({n} pods)", names[..3].join(", ")),
    }
}

fn fact(
    ns: &str,
    name: &str,
    selector: &Labels,
    matching: &[&Pod],
    groups: &BTreeMap<String, (Vec<&Pod>, usize)>,
    near_ready: usize,
    created: Option<DateTime<Utc>>,
) -> Fact {
    let wanted = terms(selector);
    let (what, severity, mut detail) = if matching.is_empty() {
        let severity = match near_ready > 0 {
            true => Severity::Critical,
            false => Severity::Warning,
        };
        let detail = format!(
            "selector {wanted} matches no pod in namespace {ns}, so the Service has no endpoints (clients and the ingress get 503 \"no endpoints available\")"
        );
        ("selector matches no pod: pods", severity, detail)
    } else {
        let detail = format!(
            "selector {wanted} matches {} pod(s), none ready ({}), so the Service has no ready endpoint",
            matching.len(),
            pod_names(matching)
        );
        (
            "no ready pod behind it: ready pods",
            Severity::Critical,
            detail,
        )
    };
    for (terms, (pods, ready)) in groups.iter().take(MAX_NEAR) {
        detail.push_str(&format!(
            "; nearly matching: {} pod(s) ({}, {ready} ready) labelled {terms}",
            pods.len(),
            pod_names(pods)
        ));
    }
    if groups.len() > MAX_NEAR {
        detail.push_str(&format!(
            "; {} more label sets nearly match",
            groups.len() - MAX_NEAR
        ));
    }
    // The mismatch began when the nearly matching pods appeared, or the Service did,
    // whichever came last.
    let near_since = groups
        .values()
        .flat_map(|(pods, _)| pods.iter())
        .filter_map(|p| p.metadata.creation_timestamp.as_ref().and_then(time))
        .min();
    let since = match (near_since, created) {
        (Some(n), Some(c)) => Some(n.max(c)),
        (n, _) => n,
    };
    let labels = BTreeMap::from([
        ("namespace".to_string(), ns.to_string()),
        ("service".to_string(), name.to_string()),
    ]);
    Fact::new(
        FactClass::Kubernetes,
        NAME,
        Entity::new("service", format!("{ns}/{name}")).with_labels(labels),
        what,
        severity,
        Source::new(
            "k8s_list_pods",
            json!({"namespace": ns, "selector": wanted}),
        ),
    )
    .value(Quantity::count(0.0))
    .since(since)
    .detail(detail)
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    fn pod(ns: &str, name: &str, labels: Value, ready: bool, created: &str) -> Pod {
        serde_json::from_value(json!({
            "metadata": {"name": name, "namespace": ns, "labels": labels, "creationTimestamp": created},
            "status": {"phase": "Running", "conditions": [
                {"type": "Ready", "status": if ready { "True" } else { "False" }}]}
        }))
        .unwrap()
    }

    fn service(ns: &str, name: &str, selector: Value) -> Service {
        serde_json::from_value(json!({
            "metadata": {"name": name, "namespace": ns, "creationTimestamp": "2026-01-05T10:00:00Z"},
            "spec": {"type": "ClusterIP", "selector": selector, "ports": [{"port": 8080}]}
        }))
        .unwrap()
    }

    #[test]
    fn a_selector_no_pod_carries_any_more_names_the_pods_that_nearly_match() {
        let pods = [
            pod(
                "books",
                "calibre-web-5c7f9-abcde",
                json!({"app.kubernetes.io/name": "calibre-web", "app.kubernetes.io/instance": "shelf"}),
                true,
                "2026-03-01T08:10:00Z",
            ),
            pod(
                "books",
                "calibre-web-5c7f9-fghjk",
                json!({"app.kubernetes.io/name": "calibre-web", "app.kubernetes.io/instance": "shelf"}),
                true,
                "2026-03-01T08:11:00Z",
            ),
            pod(
                "books",
                "postgres-0",
                json!({"app.kubernetes.io/name": "postgres"}),
                true,
                "2026-01-01T00:00:00Z",
            ),
            // A sibling whose value only contains the wanted one: not quoted beside a relabelling.
            pod(
                "books",
                "calibre-web-db-0",
                json!({"component": "calibre-web-db"}),
                true,
                "2025-06-01T00:00:00Z",
            ),
            // Same labels in another namespace: not this Service's.
            pod(
                "other",
                "calibre-web-x",
                json!({"component": "calibre-web"}),
                true,
                "2026-01-01T00:00:00Z",
            ),
        ];
        let services = [
            service("books", "calibre-web", json!({"component": "calibre-web"})),
            service("books", "postgres", json!({"app.kubernetes.io/name": "postgres"})),
            // Endpoints kept by hand: no selector, not judged.
            serde_json::from_value(json!({"metadata": {"name": "nas", "namespace": "books"}, "spec": {"ports": [{"port": 445}]}})).unwrap(),
        ];
        let facts = analyze(&services, &pods);
        assert_eq!(facts.len(), 1, "{facts:?}");
        let f = &facts[0];
        assert_eq!(f.entity.kind, "service");
        assert_eq!(f.entity.name, "books/calibre-web");
        assert_eq!(f.severity, Severity::Critical);
        assert_eq!(f.what, "selector matches no pod: pods");
        let d = f.detail.as_deref().unwrap();
        assert!(
            d.starts_with("selector component=calibre-web matches no pod in namespace books"),
            "{d}"
        );
        assert!(d.contains("nearly matching: 2 pod(s) (calibre-web-5c7f9-abcde, calibre-web-5c7f9-fghjk, 2 ready) labelled app.kubernetes.io/name=calibre-web"), "{d}");
        assert!(
            !d.contains("postgres") && !d.contains("calibre-web-db"),
            "{d}"
        );
        assert_eq!(f.since.unwrap().to_rfc3339(), "2026-03-01T08:10:00+00:00");
        assert_eq!(f.source.arguments["selector"], "component=calibre-web");
    }

    #[test]
    fn pods_that_match_but_are_all_unready_and_a_selector_nothing_resembles() {
        let pods = [
            pod(
                "chat",
                "synapse-0",
                json!({"app": "synapse", "tier": "api"}),
                false,
                "2026-03-01T08:00:00Z",
            ),
            pod(
                "chat",
                "element-1",
                json!({"app": "element"}),
                true,
                "2026-03-01T08:00:00Z",
            ),
        ];
        let services = [
            service("chat", "synapse", json!({"app": "synapse"})),
            service("chat", "coturn", json!({"app": "coturn"})),
            service("chat", "element", json!({"app": "element"})),
        ];
        let facts = analyze(&services, &pods);
        assert_eq!(facts.len(), 2, "{facts:?}");
        let synapse = facts
            .iter()
            .find(|f| f.entity.name == "chat/synapse")
            .unwrap();
        assert_eq!(synapse.severity, Severity::Critical);
        assert!(
            synapse
                .detail
                .as_deref()
                .unwrap()
                .contains("matches 1 pod(s), none ready (synapse-0)")
        );
        let coturn = facts
            .iter()
            .find(|f| f.entity.name == "chat/coturn")
            .unwrap();
        assert_eq!(coturn.severity, Severity::Warning);
        assert!(!coturn.detail.as_deref().unwrap().contains("nearly"));
    }

    #[test]
    fn near_labels_are_the_value_under_another_key_or_a_similar_value() {
        let l = |p: &[(&str, &str)]| -> Labels {
            p.iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        let sel = l(&[("app", "grafana")]);
        assert_eq!(
            near(&sel, &l(&[("k8s-app", "grafana")])),
            (l(&[("k8s-app", "grafana")]), true)
        );
        assert_eq!(
            near(&sel, &l(&[("app", "grafana-server")])),
            (l(&[("app", "grafana-server")]), false)
        );
        assert!(near(&sel, &l(&[("app", "loki")])).0.is_empty());
        assert!(near(&sel, &l(&[("app", "grafana")])).0.is_empty());
    }
}
