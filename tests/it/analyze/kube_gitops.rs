//! `gitops_sync` through the daemon's sweep (`Sweep::new` over the configured clients):
//! the realistic cluster (`kube_cluster`) with Argo CD and Flux installed, their objects
//! as the controllers write them and served by the fake API server at
//! `/apis/argoproj.io/v1alpha1/applications` and Flux's groups; the same cluster without
//! their CRDs (404) says nothing; and, when the objects cannot be read, Argo CD's metrics
//! in a real Prometheus stand in.

use chrono::{DateTime, TimeDelta, Utc};
use serde_json::{Value, json};
use sre_agent::analyze::{Fact, Scope, Severity, Sweep};
use sre_agent::config::Config;
use sre_agent::eval::fakes::{FakeServer, kubeconfig, kubernetes_router};
use sre_agent::integrations::Upstreams;

use super::kube_cluster::{ago, objects};
use super::world::{World, lines, series};

const SHA: &str = "8f3c2a1be0d94c6f7a2b5e1d3c4f6a7b8c9d0e1f";
const IMMUTABLE: &str = "Deployment.apps \"storefront\" is invalid: spec.selector: Invalid value: \
    v1.LabelSelector{MatchLabels:map[string]string{\"app\":\"storefront\", \"tier\":\"web\"}, \
    MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: field is immutable";

fn application(name: &str, dest: &str, status: Value) -> Value {
    json!({"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
        "metadata": {"name": name, "namespace": "argocd", "uid": format!("uid-app-{name}"),
            "finalizers": ["resources-finalizer.argocd.argoproj.io"]},
        "spec": {"project": "default",
            "source": {"repoURL": "https://github.com/example/homelab.git", "path": format!("apps/{dest}"), "targetRevision": "main"},
            "destination": {"server": "https://kubernetes.default.svc", "namespace": dest},
            "syncPolicy": {"automated": {"prune": true, "selfHeal": true}, "retry": {"limit": 3}}},
        "status": status})
}

/// Argo CD: `shop` could not apply its Deployment (immutable selector) and retried;
/// `media` is synced and healthy. Flux: `infra` cannot build.
fn gitops_objects(now: DateTime<Utc>) -> Vec<Value> {
    let failed = application(
        "shop",
        "shop",
        json!({
            "sync": {"status": "OutOfSync", "revision": SHA},
            "health": {"status": "Healthy", "lastTransitionTime": ago(now, 3000)},
            "operationState": {
                "operation": {"sync": {"revision": SHA}, "initiatedBy": {"automated": true}, "retry": {"limit": 3}},
                "phase": "Failed",
                "message": format!("one or more objects failed to apply, reason: {IMMUTABLE} (retried 3 times)."),
                "retryCount": 3, "startedAt": ago(now, 16), "finishedAt": ago(now, 9),
                "syncResult": {"revision": SHA, "resources": [
                    {"group": "", "version": "v1", "kind": "Service", "namespace": "shop", "name": "storefront",
                        "status": "Synced", "message": "service/storefront unchanged", "syncPhase": "Sync"},
                    {"group": "apps", "version": "v1", "kind": "Deployment", "namespace": "shop", "name": "storefront",
                        "status": "SyncFailed", "message": IMMUTABLE, "hookPhase": "Failed", "syncPhase": "Sync"}]}}
        }),
    );
    let fine = application(
        "media",
        "media",
        json!({
            "sync": {"status": "Synced", "revision": SHA},
            "health": {"status": "Healthy"},
            "operationState": {"phase": "Succeeded", "message": "successfully synced (all tasks run)",
                "startedAt": ago(now, 300), "finishedAt": ago(now, 299),
                "syncResult": {"revision": SHA, "resources": []}}
        }),
    );
    let kustomization = json!({"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
        "metadata": {"name": "infra", "namespace": "flux-system"},
        "spec": {"interval": "10m", "path": "./infrastructure", "prune": true,
            "sourceRef": {"kind": "GitRepository", "name": "flux-system"}},
        "status": {"lastAppliedRevision": "main@sha1:0123456789abcdef0123456789abcdef01234567",
            "lastAttemptedRevision": format!("main@sha1:{SHA}"),
            "conditions": [{"type": "Ready", "status": "False", "reason": "BuildFailed", "lastTransitionTime": ago(now, 12),
                "message": "kustomize build failed: accumulating resources: accumulation err='accumulating resources from 'ingress.yaml': open /tmp/kustomization-1/infrastructure/ingress.yaml: no such file or directory'"}]}});
    vec![failed, fine, kustomization]
}

/// The daemon's sweep over a fake cluster of `objects` (and Prometheus at `prometheus`).
async fn sweep(
    objects: Vec<Value>,
    namespaces: &[&str],
    prometheus: Option<&str>,
) -> (Vec<Fact>, Vec<String>) {
    sre_agent::install_crypto_provider();
    let server = FakeServer::start(kubernetes_router(objects, Default::default()))
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kubeconfig.yaml");
    std::fs::write(&path, kubeconfig(&server.url)).unwrap();
    let mut config = Config::default();
    config.kubernetes.enabled = true;
    config.kubernetes.kubeconfig = Some(path);
    config.kubernetes.namespaces = namespaces.iter().map(|n| n.to_string()).collect();
    config.prometheus.url = prometheus.map(|u| u.parse().unwrap());
    let sweep = Sweep::new(&config, &Upstreams::from_config(&config).unwrap());
    assert!(sweep.names().contains(&"gitops_sync"));
    let now = Utc::now();
    let report = sweep
        .run(Scope::new(now, Some(now - TimeDelta::minutes(10))))
        .await;
    (report.facts, report.notes)
}

fn gitops(facts: &[Fact]) -> Vec<&Fact> {
    facts
        .iter()
        .filter(|f| f.analyzer == "gitops_sync")
        .collect()
}

#[tokio::test]
async fn a_sync_that_cannot_apply_and_a_kustomization_that_cannot_build_are_found_by_the_sweep() {
    let now = Utc::now();
    let mut all = objects(now);
    all.extend(gitops_objects(now));
    let (facts, notes) = sweep(all, &[], None).await;
    let text = lines(&facts);
    assert!(
        !notes.iter().any(|n| n.starts_with("gitops_sync")),
        "{notes:?}"
    );
    let found = gitops(&facts);
    assert_eq!(found.len(), 2, "{text}");

    let app = found
        .iter()
        .find(|f| f.entity.name == "argocd/shop")
        .expect(&text);
    assert_eq!(app.severity, Severity::Critical);
    assert_eq!(
        app.headline(),
        "sync to git failed, resources not applied 1"
    );
    assert_eq!(app.since.map(|s| (now - s).num_minutes()), Some(16));
    let detail = app.detail.as_deref().unwrap();
    assert!(
        detail.starts_with("Deployment shop/storefront failed to apply: \"Deployment.apps"),
        "{detail}"
    );
    assert!(detail.contains("field is immutable"), "{detail}");
    assert!(detail.ends_with("revision 8f3c2a1b"), "{detail}");
    assert!(
        app.related.iter().any(|e| e.kind == "deployment"
            && e.labels.get("deployment").map(String::as_str) == Some("storefront")),
        "{text}"
    );

    let k = found
        .iter()
        .find(|f| f.entity.name == "flux-system/infra")
        .expect(&text);
    assert_eq!(k.what, "not ready (BuildFailed)");
    assert!(
        k.detail
            .as_deref()
            .unwrap()
            .contains("no such file or directory"),
        "{text}"
    );
    assert!(
        found.iter().all(|f| f.entity.name != "argocd/media"),
        "{text}"
    );
}

#[tokio::test]
async fn a_cluster_without_gitops_crds_or_outside_the_allowed_namespaces_says_nothing() {
    let now = Utc::now();
    let (facts, notes) = sweep(objects(now), &[], None).await;
    assert!(gitops(&facts).is_empty(), "{}", lines(&facts));
    assert!(
        !notes.iter().any(|n| n.starts_with("gitops_sync")),
        "a missing CRD is no error: {notes:?}"
    );
    let mut all = objects(now);
    all.extend(gitops_objects(now));
    let (facts, notes) = sweep(all, &["shop"], None).await;
    assert!(gitops(&facts).is_empty(), "{}", lines(&facts));
    assert!(
        !notes.iter().any(|n| n.starts_with("gitops_sync")),
        "{notes:?}"
    );
}

#[tokio::test]
async fn without_the_crds_argo_cds_metrics_tell_a_failing_sync() {
    let base = vec![
        ("job", "argocd-metrics"),
        ("instance", "10.42.0.31:8082"),
        ("namespace", "argocd"),
        ("name", "shop"),
        ("project", "default"),
    ];
    let mut info = base.clone();
    info.extend([
        ("dest_namespace", "shop"),
        ("dest_server", "https://kubernetes.default.svc"),
        ("sync_status", "OutOfSync"),
        ("health_status", "Healthy"),
        ("autosync_enabled", "true"),
        ("repo", "https://github.com/example/homelab.git"),
        ("operation", "sync"),
    ]);
    let mut synced = base;
    synced.extend([
        ("dest_server", "https://kubernetes.default.svc"),
        ("phase", "Failed"),
        ("dry_run", "false"),
    ]);
    let defs = vec![
        series("argocd_app_info", &info, |_| Some(1.0)),
        // No failed sync until twenty minutes ago, then one every five minutes.
        series("argocd_app_sync_total", &synced, |secs_ago| {
            Some(match secs_ago > 1200 {
                true => 0.0,
                false => ((1200 - secs_ago) / 300 + 1) as f64,
            })
        }),
    ];
    let Some(world) = World::build(&defs, 7200, 30).await else {
        return;
    };
    let (facts, notes) = sweep(objects(Utc::now()), &[], Some(&world.prometheus.url)).await;
    let text = lines(&facts);
    assert!(
        !notes.iter().any(|n| n.starts_with("gitops_sync")),
        "{notes:?}"
    );
    let found = gitops(&facts);
    assert_eq!(found.len(), 1, "{text}");
    assert_eq!(found[0].entity.name, "argocd/shop");
    assert_eq!(found[0].severity, Severity::Critical);
    assert!(found[0].what.starts_with("sync to git failed"), "{text}");
    assert_eq!(found[0].source.tool, "prometheus_query");
    let since = found[0].since.map(|s| (Utc::now() - s).num_minutes());
    assert!(
        matches!(since, Some(19..=21)),
        "since the first failed sync: {text}"
    );
}

#[tokio::test]
async fn a_cluster_that_refuses_the_service_account_is_a_note_that_names_the_resource() {
    sre_agent::install_crypto_provider();
    let fake = crate::support::fake_kube::FakeKube::start().await;
    fake.set_forbidden(true);
    let dir = tempfile::tempdir().unwrap();
    let config = sre_agent::config::KubernetesConfig {
        enabled: true,
        kubeconfig: Some(fake.write_kubeconfig(dir.path())),
        ..Default::default()
    };
    let client =
        std::sync::Arc::new(sre_agent::integrations::kubernetes::KubeClient::new(&config).unwrap());
    let analyzer = sre_agent::analyze::kube::GitopsSync::new(Some(client), None);
    let report = Sweep::of(vec![std::sync::Arc::new(analyzer)])
        .run(Scope::new(Utc::now(), None))
        .await;
    assert!(report.facts.is_empty());
    assert_eq!(report.notes.len(), 1, "{:?}", report.notes);
    let note = &report.notes[0];
    assert!(
        note.starts_with("gitops_sync: skipped (Kubernetes API denied list applications"),
        "{note}"
    );
    assert!(
        note.contains("403 Forbidden") && note.contains("kustomizations"),
        "{note}"
    );
    assert!(
        fake.paths()
            .iter()
            .any(|p| p.starts_with("/apis/argoproj.io/v1alpha1/applications")),
        "{:?}",
        fake.paths()
    );
}
