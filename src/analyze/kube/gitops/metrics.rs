//! The GitOps controllers as their metrics tell it, when their objects cannot be read:
//! Argo CD's application controller exports `argocd_app_info` (one series per
//! Application: `name`, `namespace`, `dest_namespace`, `sync_status`, `health_status`)
//! and `argocd_app_sync_total{phase}` (sync operations by how they ended); Flux's
//! controllers export `gotk_reconcile_condition{kind,name,namespace,type,status}` (1 on
//! the condition's current status). Scraped through a pod or service monitor, the
//! metric's own `namespace` may arrive as `exported_namespace`: that one is the object's.

use std::collections::{BTreeMap, HashMap};

use crate::analyze::prom::{Prom, selector};
use crate::analyze::{AnalyzeError, Entity, Fact, FactClass, Quantity, Scope, Severity, Source};
use crate::integrations::prometheus::Labels;

use super::{NAME, namespace_entity};

/// Flux's source kinds: an artifact that cannot be fetched from git is not applied either.
const FLUX_SOURCES: [&str; 5] = [
    "GitRepository",
    "OCIRepository",
    "HelmRepository",
    "HelmChart",
    "Bucket",
];

/// The object's namespace: the metric's own (`exported_namespace` when the scrape's
/// target label took its name), else `namespace`.
fn object_namespace(l: &Labels) -> &str {
    l.get("exported_namespace")
        .or_else(|| l.get("namespace"))
        .map_or("", String::as_str)
}

/// The selector of one object's series: its name and namespace labels as the series has them.
fn object_selector(metric: &str, l: &Labels) -> String {
    let keys = ["name", "namespace", "exported_namespace", "kind"];
    let pairs = keys
        .iter()
        .filter_map(|k| l.get(*k).map(|v| (*k, v.as_str())));
    format!("{metric}{}", selector(pairs))
}

/// Argo CD Applications unhealthy, or whose syncs failed in the window and that are not
/// `Synced` and `Healthy` now.
pub async fn argo(prom: &Prom, scope: &Scope) -> Result<Vec<Fact>, AnalyzeError> {
    let info = prom.vector("argocd_app_info").await?;
    if info.is_empty() {
        return Ok(Vec::new());
    }
    let failed = prom
        .vector(&format!(
            "sum by (namespace, exported_namespace, name) (increase(argocd_app_sync_total{{phase=~\"Error|Failed\"}}{})) > 0",
            scope.promql_range()
        ))
        .await?;
    let failures: HashMap<(String, String), f64> = failed
        .iter()
        .filter(|s| s.value.is_finite())
        .map(|s| {
            let name = s.metric.get("name").cloned().unwrap_or_default();
            ((object_namespace(&s.metric).to_string(), name), s.value)
        })
        .collect();
    Ok(info
        .iter()
        .filter_map(|s| argo_fact(&s.metric, &failures))
        .collect())
}

fn argo_fact(l: &Labels, failures: &HashMap<(String, String), f64>) -> Option<Fact> {
    let ns = object_namespace(l);
    let name = l.get("name")?;
    let get = |k: &str| l.get(k).map_or("", String::as_str);
    let (sync, health, dest) = (
        get("sync_status"),
        get("health_status"),
        get("dest_namespace"),
    );
    let unhealthy = matches!(health, "Degraded" | "Missing");
    let failed = failures
        .get(&(ns.to_string(), name.clone()))
        .copied()
        .filter(|_| sync != "Synced" || health != "Healthy");
    let (what, severity, value) = match failed {
        Some(n) => (
            "sync to git failed, failed syncs in the window".to_string(),
            Severity::Critical,
            Some(Quantity::count(n.round())),
        ),
        None if unhealthy && sync == "OutOfSync" => (
            format!("out of sync with git, health {health}"),
            Severity::Warning,
            None,
        ),
        None if unhealthy => (format!("health {health}"), Severity::Warning, None),
        None => return None,
    };
    let mut labels = BTreeMap::from([
        ("namespace".to_string(), ns.to_string()),
        ("application".to_string(), name.clone()),
        ("name".to_string(), name.clone()),
    ]);
    if !dest.is_empty() {
        labels.insert("destination_namespace".into(), dest.to_string());
    }
    let entity = Entity::new("application", format!("{ns}/{name}")).with_labels(labels);
    let mut fact = Fact::new(
        FactClass::Kubernetes,
        NAME,
        entity,
        what,
        severity,
        Source::promql(&object_selector("argocd_app_info", l)),
    )
    .detail(format!(
        "from Argo CD's metrics (the Application could not be read): sync {sync}, health {health}"
    ));
    if let Some(v) = value {
        fact = fact.value(v);
    }
    if !dest.is_empty() {
        fact = fact.related(namespace_entity(dest));
    }
    Some(fact)
}

/// Flux objects of `kinds` (and Flux's sources) whose `Ready` condition is `False`.
pub async fn flux(prom: &Prom, _scope: &Scope, kinds: &[&str]) -> Result<Vec<Fact>, AnalyzeError> {
    let v = prom
        .vector("gotk_reconcile_condition{type=\"Ready\",status=\"False\"} == 1")
        .await?;
    Ok(v.iter()
        .filter(|s| {
            let kind = s.metric.get("kind").map_or("", String::as_str);
            kinds.contains(&kind) || FLUX_SOURCES.contains(&kind)
        })
        .filter_map(|s| flux_fact(&s.metric))
        .collect())
}

fn flux_fact(l: &Labels) -> Option<Fact> {
    let kind = l.get("kind")?;
    let name = l.get("name")?;
    let ns = object_namespace(l);
    let lower = kind.to_lowercase();
    let entity = Entity::new(&lower, format!("{ns}/{name}")).with_labels(BTreeMap::from([
        ("namespace".to_string(), ns.to_string()),
        (lower.clone(), name.clone()),
        ("name".to_string(), name.clone()),
    ]));
    Some(
        Fact::new(
            FactClass::Kubernetes,
            NAME,
            entity,
            "not ready (Ready=False)",
            Severity::Critical,
            Source::promql(&object_selector("gotk_reconcile_condition", l)),
        )
        .detail(format!(
            "from Flux's metrics (the {kind} could not be read): condition Ready is False"
        )),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> Labels {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn an_application_whose_syncs_failed_and_is_out_of_sync_is_critical_and_a_healthy_one_is_not_told()
     {
        // As Argo CD's controller exports it (controller/metrics/metrics_test.go).
        let info = labels(&[
            ("autosync_enabled", "true"),
            ("dest_namespace", "shop"),
            ("dest_server", "https://kubernetes.default.svc"),
            ("health_status", "Healthy"),
            ("name", "shop-web"),
            ("exported_namespace", "argocd"),
            ("namespace", "argocd"),
            ("operation", ""),
            ("project", "default"),
            ("repo", "https://github.com/example/deploy"),
            ("sync_status", "OutOfSync"),
        ]);
        let failures = HashMap::from([(("argocd".to_string(), "shop-web".to_string()), 3.0)]);
        let f = argo_fact(&info, &failures).unwrap();
        assert_eq!(f.entity.name, "argocd/shop-web");
        assert_eq!(f.severity, Severity::Critical);
        assert_eq!(
            f.headline(),
            "sync to git failed, failed syncs in the window 3"
        );
        assert_eq!(f.related[0].labels["namespace"], "shop");
        assert!(
            f.source.arguments["query"]
                .as_str()
                .unwrap()
                .starts_with("argocd_app_info{name=\"shop-web\",namespace=\"argocd\"")
        );
        let mut fine = info.clone();
        fine.insert("sync_status".into(), "Synced".into());
        assert!(argo_fact(&fine, &failures).is_none(), "recovered since");
        let mut degraded = fine.clone();
        degraded.insert("health_status".into(), "Degraded".into());
        let f = argo_fact(&degraded, &HashMap::new()).unwrap();
        assert_eq!(
            (f.what.as_str(), f.severity),
            ("health Degraded", Severity::Warning)
        );
    }

    #[test]
    fn a_flux_object_not_ready_is_named_by_its_own_namespace() {
        let l = labels(&[
            ("kind", "Kustomization"),
            ("name", "apps"),
            ("exported_namespace", "flux-system"),
            ("namespace", "monitoring"),
            ("type", "Ready"),
            ("status", "False"),
        ]);
        let f = flux_fact(&l).unwrap();
        assert_eq!(f.entity.name, "flux-system/apps");
        assert_eq!(f.entity.labels["kustomization"], "apps");
        assert_eq!(f.what, "not ready (Ready=False)");
    }
}
