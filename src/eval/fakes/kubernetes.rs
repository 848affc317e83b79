//! A fake Kubernetes API server over a scenario's objects (core, `apps/v1` and
//! `batch/v1` kinds, and the GitOps controllers' custom resources: Argo CD's
//! `Application`, Flux's `Kustomization` and `HelmRelease`, served only when the scenario
//! has one of their group, as a cluster serves them only with their CRD installed): lists
//! (all namespaces or one),
//! gets by name, pod logs (`tailLines`), and the label and field selectors the client
//! sends (`k=v`, `k!=v` on any dotted path), in the API server's JSON with `Status`
//! errors.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use axum::Router;
use axum::extract::{Query, State};
use axum::http::{StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

/// The bearer token the kubeconfig written for this fake carries.
pub const TOKEN: &str = "sre-agent-eval";

struct Cluster {
    objects: Vec<Value>,
    /// `namespace/pod` (or `namespace/pod/previous`) → log text.
    logs: BTreeMap<String, String>,
}

/// (api prefix, plural) of a kind.
fn resource_of(kind: &str) -> Option<(&'static str, &'static str)> {
    Some(match kind {
        "Pod" => ("api/v1", "pods"),
        "Event" => ("api/v1", "events"),
        "Node" => ("api/v1", "nodes"),
        "Namespace" => ("api/v1", "namespaces"),
        "Service" => ("api/v1", "services"),
        "PersistentVolumeClaim" => ("api/v1", "persistentvolumeclaims"),
        "PersistentVolume" => ("api/v1", "persistentvolumes"),
        "Deployment" => ("apis/apps/v1", "deployments"),
        "StatefulSet" => ("apis/apps/v1", "statefulsets"),
        "DaemonSet" => ("apis/apps/v1", "daemonsets"),
        "ReplicaSet" => ("apis/apps/v1", "replicasets"),
        "CronJob" => ("apis/batch/v1", "cronjobs"),
        "Job" => ("apis/batch/v1", "jobs"),
        "Application" => ("apis/argoproj.io/v1alpha1", "applications"),
        "Kustomization" => ("apis/kustomize.toolkit.fluxcd.io/v1", "kustomizations"),
        "HelmRelease" => ("apis/helm.toolkit.fluxcd.io/v2", "helmreleases"),
        _ => return None,
    })
}

/// The API prefixes served, built-in first.
const PREFIXES: [&str; 6] = [
    "api/v1",
    "apis/apps/v1",
    "apis/batch/v1",
    "apis/argoproj.io/v1alpha1",
    "apis/kustomize.toolkit.fluxcd.io/v1",
    "apis/helm.toolkit.fluxcd.io/v2",
];

/// Prefixes served whatever the objects (the rest are custom resources' groups).
const BUILT_IN: usize = 3;

fn api_version(prefix: &str) -> &str {
    prefix.strip_prefix("apis/").unwrap_or("v1")
}

/// A router serving `objects` (each with `kind`) and `logs`.
pub fn kubernetes_router(objects: Vec<Value>, logs: BTreeMap<String, String>) -> Router {
    let objects = objects
        .into_iter()
        .map(|mut o| {
            let kind = o["kind"].as_str().unwrap_or_default().to_string();
            if let Some((prefix, _)) = resource_of(&kind) {
                o["apiVersion"] = json!(api_version(prefix));
            }
            o
        })
        .collect();
    Router::new()
        .fallback(handle)
        .with_state(Arc::new(Cluster { objects, logs }))
}

fn status(code: StatusCode, reason: &str, message: String) -> Response {
    let body = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": message, "reason": reason, "code": code.as_u16()});
    (code, axum::Json(body)).into_response()
}

/// The value at a dotted path (`involvedObject.name`, `status.phase`) as text.
fn field<'a>(o: &'a Value, path: &str) -> Option<&'a str> {
    path.split('.').try_fold(o, |v, k| v.get(k))?.as_str()
}

/// Whether `o` passes a selector such as `a=b,c!=d` read with `get`.
fn passes(selector: Option<&String>, get: impl Fn(&str) -> Option<String>) -> bool {
    let Some(selector) = selector.filter(|s| !s.is_empty()) else {
        return true;
    };
    selector.split(',').all(|term| {
        if let Some((k, v)) = term.split_once("!=") {
            get(k.trim()).as_deref() != Some(v.trim())
        } else if let Some((k, v)) = term.split_once('=') {
            get(k.trim()).as_deref() == Some(v.trim().trim_start_matches('='))
        } else {
            get(term.trim()).is_some()
        }
    })
}

async fn handle(
    State(cluster): State<Arc<Cluster>>,
    uri: Uri,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let path = uri.path().trim_matches('/');
    let served = |(i, p): &(usize, &str)| {
        *i < BUILT_IN
            || cluster.objects.iter().any(|o| {
                resource_of(o["kind"].as_str().unwrap_or_default()).is_some_and(|(x, _)| x == *p)
            })
    };
    let found = PREFIXES
        .iter()
        .copied()
        .enumerate()
        .filter(served)
        .find_map(|(_, p)| Some((p, path.strip_prefix(p)?.strip_prefix('/')?)));
    let Some((prefix, rest)) = found else {
        return status(
            StatusCode::NOT_FOUND,
            "NotFound",
            format!("the server could not find the requested resource ({path})"),
        );
    };
    let parts: Vec<&str> = rest.split('/').collect();
    let (ns, plural, name, sub) = match parts.as_slice() {
        [plural] => (None, *plural, None, None),
        ["namespaces", ns, plural] => (Some(*ns), *plural, None, None),
        ["namespaces", ns, plural, name] => (Some(*ns), *plural, Some(*name), None),
        ["namespaces", ns, plural, name, sub] => (Some(*ns), *plural, Some(*name), Some(*sub)),
        [plural, name] => (None, *plural, Some(*name), None),
        _ => {
            return status(
                StatusCode::NOT_FOUND,
                "NotFound",
                format!("the server could not find {path}"),
            );
        }
    };
    let of_resource = |o: &&Value| {
        resource_of(o["kind"].as_str().unwrap_or_default()) == Some((prefix, plural))
            && ns.is_none_or(|n| o["metadata"]["namespace"].as_str() == Some(n))
    };
    if let Some(name) = name {
        let found = cluster
            .objects
            .iter()
            .filter(of_resource)
            .find(|o| o["metadata"]["name"].as_str() == Some(name));
        let Some(object) = found else {
            return status(
                StatusCode::NOT_FOUND,
                "NotFound",
                format!("{plural} \"{name}\" not found"),
            );
        };
        return match sub {
            None => axum::Json(object.clone()).into_response(),
            Some("log") => pod_log(&cluster, ns.unwrap_or_default(), name, &q),
            Some(other) => status(
                StatusCode::NOT_FOUND,
                "NotFound",
                format!("no subresource {other}"),
            ),
        };
    }
    let items: Vec<Value> = cluster
        .objects
        .iter()
        .filter(of_resource)
        .filter(|o| {
            passes(q.get("labelSelector"), |k| {
                o["metadata"]["labels"][k].as_str().map(str::to_string)
            })
        })
        .filter(|o| passes(q.get("fieldSelector"), |k| field(o, k).map(str::to_string)))
        .cloned()
        .collect();
    let kind = resource_of_plural(plural);
    axum::Json(
        json!({"kind": format!("{kind}List"), "apiVersion": api_version(prefix),
        "metadata": {"resourceVersion": "1"}, "items": items}),
    )
    .into_response()
}

fn resource_of_plural(plural: &str) -> &'static str {
    [
        "Pod",
        "Event",
        "Node",
        "Namespace",
        "Service",
        "PersistentVolumeClaim",
        "PersistentVolume",
        "Deployment",
        "StatefulSet",
        "DaemonSet",
        "ReplicaSet",
        "CronJob",
        "Job",
        "Application",
        "Kustomization",
        "HelmRelease",
    ]
    .into_iter()
    .find(|k| resource_of(k).is_some_and(|(_, p)| p == plural))
    .unwrap_or("")
}

fn pod_log(cluster: &Cluster, ns: &str, pod: &str, q: &HashMap<String, String>) -> Response {
    let previous = q.get("previous").is_some_and(|p| p == "true");
    let key = format!("{ns}/{pod}");
    let text = previous
        .then(|| cluster.logs.get(&format!("{key}/previous")))
        .flatten()
        .or_else(|| cluster.logs.get(&key));
    let Some(text) = text else {
        return status(
            StatusCode::BAD_REQUEST,
            "BadRequest",
            format!("no logs for pod {pod} in {ns}"),
        );
    };
    let lines: Vec<&str> = text.lines().collect();
    let tail = q
        .get("tailLines")
        .and_then(|t| t.parse::<usize>().ok())
        .unwrap_or(lines.len());
    let from = lines.len().saturating_sub(tail);
    let mut out = lines[from..].join("\n");
    out.push('\n');
    out.into_response()
}

/// A kubeconfig for the fake at `url` with [`TOKEN`].
pub fn kubeconfig(url: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: eval\n  cluster:\n    server: {url}\n\
         contexts:\n- name: eval\n  context:\n    cluster: eval\n    user: eval\n    namespace: default\n\
         current-context: eval\nusers:\n- name: eval\n  user:\n    token: {TOKEN}\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selectors_match_labels_and_dotted_fields() {
        let o = json!({"metadata": {"labels": {"app": "web"}}, "involvedObject": {"name": "web-1"}, "type": "Warning"});
        let label = |k: &str| o["metadata"]["labels"][k].as_str().map(str::to_string);
        assert!(passes(Some(&"app=web".into()), label));
        assert!(!passes(Some(&"app!=web".into()), label));
        let f = |k: &str| field(&o, k).map(str::to_string);
        assert!(passes(
            Some(&"involvedObject.name=web-1,type=Warning".into()),
            f
        ));
        assert!(passes(Some(&"status.phase!=Succeeded".into()), f));
        assert_eq!(resource_of_plural("deployments"), "Deployment");
        assert_eq!(resource_of_plural("cronjobs"), "CronJob");
        assert_eq!(api_version("apis/batch/v1"), "batch/v1");
        assert_eq!(api_version("api/v1"), "v1");
        assert_eq!(resource_of_plural("applications"), "Application");
    }
}
