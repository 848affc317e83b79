//! The GitOps controllers as their metrics tell it, when their objects cannot be read:
//! Argo CD's application controller exports `argocd_app_info` (one series per
//! Application: `name`, `namespace`, `dest_namespace`, `sync_status`, `health_status`)
//! and `argocd_app_sync_total{phase}` (sync operations by how they ended); Flux's
//! controllers export `gotk_reconcile_condition{kind,name,namespace,type,status}` (1 on
//! the condition's current status). Scraped through a pod or service monitor, the
//! metric's own `namespace` may arrive as `exported_namespace`: that one is the object's.

use std::collections::{BTreeMap, HashMap};

use chrono::{DateTime, Utc};

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

/// The failed syncs of each Application over time (a counter per phase).
const FAILED_SYNCS: &str = "argocd_app_sync_total{phase=~\"Error|Failed\"}";
/// The Applications unhealthy now and over time.
const UNHEALTHY: &str = "argocd_app_info{health_status=~\"Degraded|Missing\"}";
/// Flux's objects not ready.
const NOT_READY: &str = "gotk_reconcile_condition{type=\"Ready\",status=\"False\"} == 1";
/// Points of the range read for since when.
const SINCE_POINTS: u32 = 120;

/// `namespace/name` of an object's series (`kind/namespace/name` with a kind label).
fn key(l: &Labels) -> String {
    let name = l.get("name").map_or("", String::as_str);
    match l.get("kind") {
        Some(kind) => format!("{kind}/{}/{name}", object_namespace(l)),
        None => format!("{}/{name}", object_namespace(l)),
    }
}

/// Argo CD Applications unhealthy, or whose syncs failed in the window and that are not
/// `Synced` and `Healthy` now.
pub async fn argo(prom: &Prom, scope: &Scope) -> Result<Vec<Fact>, AnalyzeError> {
    let info = prom.vector("argocd_app_info").await?;
    if info.is_empty() {
        return Ok(Vec::new());
    }
    let by = "sum by (namespace, exported_namespace, name)";
    let failed = prom
        .vector(&format!(
            "{by} (increase({FAILED_SYNCS}{})) > 0",
            scope.promql_range()
        ))
        .await?;
    let failures: HashMap<String, f64> = failed
        .iter()
        .filter(|s| s.value.is_finite())
        .map(|s| (key(&s.metric), s.value))
        .collect();
    let mut facts: Vec<(String, Fact)> = info
        .iter()
        .filter_map(|s| Some((key(&s.metric), argo_fact(&s.metric, &failures)?)))
        .collect();
    if !facts.is_empty() {
        let counted = format!("{by} ({FAILED_SYNCS})");
        let (failing, unhealthy) = futures::join!(
            since(prom, &counted, scope, first_rise),
            since(prom, UNHEALTHY, scope, run_began)
        );
        for (k, f) in &mut facts {
            let from = match f.severity {
                Severity::Critical => &failing,
                _ => &unhealthy,
            };
            f.since = from.get(k.as_str()).copied();
        }
    }
    Ok(facts.into_iter().map(|(_, f)| f).collect())
}

/// How a range series' points say since when it has been bad (with the window's start).
type Began = fn(&[(f64, f64)], DateTime<Utc>) -> Option<DateTime<Utc>>;

/// Since when, by [`key`], each series of `expr` over the window has been bad, as `began`
/// reads its points and the window's start (missing: unknown, or before the window).
async fn since(
    prom: &Prom,
    expr: &str,
    scope: &Scope,
    began: Began,
) -> HashMap<String, DateTime<Utc>> {
    let Ok(series) = prom.range(expr, scope, SINCE_POINTS).await else {
        return HashMap::new();
    };
    series
        .iter()
        .filter_map(|s| Some((key(&s.metric), began(&s.values, scope.window_start)?)))
        .collect()
}

/// The largest gap between two points of one unbroken run: half again the smallest step.
fn max_gap(values: &[(f64, f64)]) -> f64 {
    let step = values
        .windows(2)
        .map(|w| w[1].0 - w[0].0)
        .filter(|d| *d > 0.0)
        .fold(f64::INFINITY, f64::min);
    match step.is_finite() {
        true => step * 1.5,
        false => 60.0,
    }
}

fn at(secs: f64) -> Option<DateTime<Utc>> {
    DateTime::from_timestamp_millis((secs * 1000.0) as i64)
}

/// Whether a series' first point is after the window's start (it appeared then).
fn appeared(values: &[(f64, f64)], window_start: DateTime<Utc>) -> Option<f64> {
    let (first, _) = *values.first()?;
    (first - window_start.timestamp() as f64 > max_gap(values)).then_some(first)
}

/// The start of the unbroken run of points that ends the series, when it began in the window.
fn run_began(values: &[(f64, f64)], window_start: DateTime<Utc>) -> Option<DateTime<Utc>> {
    let gap = max_gap(values);
    let mut start = values.last()?.0;
    for w in values.windows(2).rev() {
        if w[1].0 - w[0].0 > gap {
            break;
        }
        start = w[0].0;
    }
    let window = window_start.timestamp() as f64;
    (start - window > gap).then(|| at(start)).flatten()
}

/// When a counter first rose in the window (a counter that appeared in it: when it did).
fn first_rise(values: &[(f64, f64)], window_start: DateTime<Utc>) -> Option<DateTime<Utc>> {
    if let Some(t) = appeared(values, window_start) {
        return at(t);
    }
    let w = values.windows(2).find(|w| w[1].1 > w[0].1)?;
    at(w[1].0)
}

fn argo_fact(l: &Labels, failures: &HashMap<String, f64>) -> Option<Fact> {
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
        .get(&key(l))
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
pub async fn flux(prom: &Prom, scope: &Scope, kinds: &[&str]) -> Result<Vec<Fact>, AnalyzeError> {
    let v = prom.vector(NOT_READY).await?;
    let mut facts: Vec<(String, Fact)> = v
        .iter()
        .filter(|s| {
            let kind = s.metric.get("kind").map_or("", String::as_str);
            kinds.contains(&kind) || FLUX_SOURCES.contains(&kind)
        })
        .filter_map(|s| Some((key(&s.metric), flux_fact(&s.metric)?)))
        .collect();
    if !facts.is_empty() {
        let began = since(prom, NOT_READY, scope, run_began).await;
        for (k, f) in &mut facts {
            f.since = began.get(k.as_str()).copied();
        }
    }
    Ok(facts.into_iter().map(|(_, f)| f).collect())
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
        let failures = HashMap::from([("argocd/shop-web".to_string(), 3.0)]);
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
    fn since_is_where_the_last_unbroken_run_began_or_where_a_counter_first_rose() {
        let start = DateTime::from_timestamp(1_800_000_000, 0).unwrap();
        let t0 = start.timestamp() as f64;
        let points = |from: i64, to: i64, v: &dyn Fn(i64) -> f64| -> Vec<(f64, f64)> {
            (from..=to).map(|i| (t0 + 30.0 * i as f64, v(i))).collect()
        };
        // Present all along: began before the window, unknown.
        assert_eq!(run_began(&points(0, 100, &|_| 1.0), start), None);
        // Present from point 40, with a break before point 70: the run from 70.
        let mut broken = points(40, 50, &|_| 1.0);
        broken.extend(points(70, 100, &|_| 1.0));
        assert_eq!(run_began(&broken, start), at(t0 + 30.0 * 70.0));
        assert_eq!(run_began(&[], start), None);
        // A counter flat at 2 that rises at point 60; one that appeared at point 80.
        let rising = points(0, 100, &|i| if i < 60 { 2.0 } else { 3.0 });
        assert_eq!(first_rise(&rising, start), at(t0 + 30.0 * 60.0));
        assert_eq!(
            first_rise(&points(80, 100, &|_| 1.0), start),
            at(t0 + 30.0 * 80.0)
        );
        assert_eq!(first_rise(&points(0, 100, &|_| 4.0), start), None);
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
