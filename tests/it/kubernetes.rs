//! Kubernetes tools against the fake API server, and the shipped RBAC.

use serde_json::json;

use crate::support::tool_registry::{call, call_err, kube_registry};

#[tokio::test]
async fn every_kubernetes_tool_answers_from_real_json_and_never_requests_secrets_or_configmaps() {
    let (fake, r, _dir) = kube_registry("").await;
    assert_eq!(
        r.names(),
        [
            "k8s_list_pods",
            "k8s_describe_pod",
            "k8s_pod_logs",
            "k8s_events",
            "k8s_nodes",
            "k8s_workloads"
        ]
    );

    let pods = call(
        &r,
        "k8s_list_pods",
        json!({"namespace": "apps", "selector": "app=web"}),
    )
    .await;
    assert!(
        pods.contains("apps/web-7d4b9c-x2x9q phase=Running ready=0/1 restarts=7 node=k3s-node-1"),
        "{pods}"
    );
    assert!(
        pods.contains("waiting[web]=CrashLoopBackOff last[web]=OOMKilled(exit 137)"),
        "{pods}"
    );
    assert!(
        pods.contains("apps/db-0 phase=Running ready=1/1 restarts=0"),
        "{pods}"
    );

    let pod = call(
        &r,
        "k8s_describe_pod",
        json!({"namespace": "apps", "name": "web-7d4b9c-x2x9q"}),
    )
    .await;
    for want in [
        "state=Waiting reason=CrashLoopBackOff",
        "lastState=Terminated reason=OOMKilled exitCode=137",
        "requests[cpu=250m,memory=128Mi] limits[memory=256Mi]",
        "conditions: Ready=False(ContainersNotReady)",
        "Warning BackOff Pod/apps/web-7d4b9c-x2x9q",
        "controlled by ReplicaSet web-7d4b9c",
    ] {
        assert!(pod.contains(want), "missing {want:?} in:\n{pod}");
    }
    for secret in [
        "hunter2",
        "DB_PASSWORD",
        "API_KEY",
        "web-secrets",
        "web-config",
    ] {
        assert!(!pod.contains(secret), "{secret:?} leaked:\n{pod}");
    }

    let logs = call(
        &r,
        "k8s_pod_logs",
        json!({"namespace": "apps", "name": "web-7d4b9c-x2x9q", "previous": true, "tail": 100}),
    )
    .await;
    assert!(
        logs.contains("WARN upstream db timeout after 5000ms (attempt 0) [×40 similar]"),
        "{logs}"
    );
    assert!(
        logs.ends_with("fatal: out of memory allocating 268435456 bytes"),
        "{logs}"
    );

    let events = call(
        &r,
        "k8s_events",
        json!({"namespace": "apps", "warnings_only": true}),
    )
    .await;
    assert!(
        events.contains(
            "Warning BackOff Pod/apps/web-7d4b9c-x2x9q: Back-off restarting failed container web"
        ),
        "{events}"
    );
    assert!(events.contains("(×31)"), "{events}");

    let nodes = call(&r, "k8s_nodes", json!({})).await;
    assert!(
        nodes.contains("k3s-node-1 Ready=True pressure=[MemoryPressure]"),
        "{nodes}"
    );
    assert!(nodes.contains("cpu requested 1250m/4000m (31%)"), "{nodes}");

    let workloads = call(&r, "k8s_workloads", json!({"namespace": "apps"})).await;
    assert!(
        workloads.contains("deployment apps/web desired=2 ready=1 updated=2 available=1 NOT READY"),
        "{workloads}"
    );
    assert!(
        workloads.contains("statefulset apps/db desired=1 ready=1"),
        "{workloads}"
    );
    assert!(
        workloads.contains("daemonset apps/node-exporter desired=1 ready=1"),
        "{workloads}"
    );

    let paths = fake.paths();
    assert!(
        paths
            .iter()
            .any(|p| p.contains("/log?") && p.contains("previous=true")),
        "{paths:?}"
    );
    assert!(
        paths.iter().any(|p| p.contains("labelSelector=app%3Dweb")),
        "{paths:?}"
    );
    let touched: Vec<_> = paths
        .iter()
        .filter(|p| p.contains("/secrets") || p.contains("/configmaps"))
        .collect();
    assert!(touched.is_empty(), "requested {touched:?}");
}

#[tokio::test]
async fn a_namespace_outside_the_allow_list_is_refused_without_asking_the_api() {
    let (fake, r, _dir) = kube_registry("namespaces = [\"apps\"]\n").await;
    for (tool, args) in [
        ("k8s_list_pods", json!({"namespace": "kube-system"})),
        (
            "k8s_describe_pod",
            json!({"namespace": "kube-system", "name": "coredns"}),
        ),
        (
            "k8s_pod_logs",
            json!({"namespace": "kube-system", "name": "coredns"}),
        ),
        ("k8s_events", json!({"namespace": "kube-system"})),
        ("k8s_workloads", json!({"namespace": "kube-system"})),
    ] {
        let err = call_err(&r, tool, args).await;
        assert!(
            err.contains("namespace \"kube-system\" is not allowed"),
            "{tool}: {err}"
        );
    }
    assert!(fake.paths().is_empty(), "{:?}", fake.paths());
    call(&r, "k8s_list_pods", json!({})).await;
    assert_eq!(fake.paths(), ["/api/v1/namespaces/apps/pods?"]);
}

#[tokio::test]
async fn a_kubernetes_403_names_the_missing_verb_resource_and_namespace() {
    let (fake, r, _dir) = kube_registry("").await;
    fake.set_forbidden(true);
    let err = call_err(&r, "k8s_list_pods", json!({"namespace": "apps"})).await;
    assert!(
        err.contains("needs verb \"list\" on resource \"pods\" in namespace \"apps\""),
        "{err}"
    );
    assert!(err.contains("rbac.yaml"), "{err}");
    let err = call_err(
        &r,
        "k8s_pod_logs",
        json!({"namespace": "apps", "name": "web"}),
    )
    .await;
    assert!(
        err.contains("verb \"get\" on resource \"pods/log\" in namespace \"apps\""),
        "{err}"
    );
    let err = call_err(&r, "k8s_nodes", json!({})).await;
    assert!(
        err.contains("verb \"list\" on resource \"nodes\" (all namespaces)"),
        "{err}"
    );
    for tool in ["k8s_describe_pod", "k8s_events", "k8s_workloads"] {
        let args = json!({"namespace": "apps", "name": "web"});
        let args = if tool == "k8s_describe_pod" {
            args
        } else {
            json!({"namespace": "apps"})
        };
        let err = call_err(&r, tool, args).await;
        assert!(err.contains("403 Forbidden"), "{tool}: {err}");
    }
}

#[tokio::test]
async fn pod_logs_are_capped_by_the_tool_output_limit_keeping_the_newest_lines() {
    let (_fake, r, _dir) = kube_registry("[llm]\nmax_tool_output_chars = 200\n").await;
    let logs = call(
        &r,
        "k8s_pod_logs",
        json!({"namespace": "apps", "name": "web-7d4b9c-x2x9q"}),
    )
    .await;
    assert!(logs.chars().count() <= 200, "{logs}");
    assert!(
        logs.starts_with("[1 earlier line groups omitted]"),
        "{logs}"
    );
    assert!(logs.contains("[×40 similar]"), "{logs}");
    assert!(
        logs.ends_with("fatal: out of memory allocating 268435456 bytes"),
        "{logs}"
    );
}

#[test]
fn the_shipped_rbac_grants_only_read_verbs_and_never_secrets_or_configmaps() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/deploy/kubernetes/rbac.yaml"
    ))
    .unwrap();
    let rules: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.starts_with('#'))
        .collect();
    for l in rules.iter().filter(|l| l.starts_with("verbs:")) {
        assert_eq!(*l, "verbs: [\"get\", \"list\", \"watch\"]");
    }
    let resources: String = rules
        .iter()
        .filter(|l| l.starts_with("resources:"))
        .copied()
        .collect();
    for needed in [
        "\"pods\"",
        "\"pods/log\"",
        "\"events\"",
        "\"nodes\"",
        "\"namespaces\"",
        "\"deployments\"",
        "\"statefulsets\"",
        "\"daemonsets\"",
        "\"replicasets\"",
        "\"applications\"",
        "\"kustomizations\"",
        "\"helmreleases\"",
    ] {
        assert!(resources.contains(needed), "{needed} missing");
    }
    assert!(!resources.contains("secrets") && !resources.contains("configmaps"));
    assert!(text.contains("kind: ServiceAccount") && text.contains("kind: ClusterRoleBinding"));
}
