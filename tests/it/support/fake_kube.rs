//! A fake Kubernetes API server speaking real Kubernetes JSON (PodList, Pod, pod log,
//! EventList, NodeList, Deployment/StatefulSet/DaemonSet lists) that records every path
//! requested, and can answer every request with a 403 Status.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

pub const TOKEN: &str = "fake-kube-token";

#[derive(Default)]
pub struct KubeState {
    pub paths: Mutex<Vec<String>>,
    pub forbidden: AtomicBool,
}

pub struct FakeKube {
    pub addr: SocketAddr,
    pub state: Arc<KubeState>,
}

impl FakeKube {
    pub async fn start() -> FakeKube {
        let state = Arc::new(KubeState::default());
        let app = Router::new().fallback(handle).with_state(state.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        FakeKube { addr, state }
    }

    /// Paths (with query) requested so far.
    pub fn paths(&self) -> Vec<String> {
        self.state.paths.lock().unwrap().clone()
    }

    pub fn set_forbidden(&self, on: bool) {
        self.state.forbidden.store(on, Ordering::SeqCst);
    }

    /// Writes a kubeconfig for this server with a bearer token; returns its path.
    pub fn write_kubeconfig(&self, dir: &Path) -> PathBuf {
        let path = dir.join("kubeconfig.yaml");
        let text = format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: fake\n  cluster:\n    server: http://{}\ncontexts:\n- name: fake\n  context:\n    cluster: fake\n    user: fake\n    namespace: default\ncurrent-context: fake\nusers:\n- name: fake\n  user:\n    token: {TOKEN}\n",
            self.addr
        );
        std::fs::write(&path, text).unwrap();
        path
    }
}

fn status(code: u16, reason: &str, message: &str, kind: &str) -> Response {
    let body = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": message, "reason": reason, "details": {"kind": kind}, "code": code});
    (StatusCode::from_u16(code).unwrap(), axum::Json(body)).into_response()
}

async fn handle(State(state): State<Arc<KubeState>>, headers: HeaderMap, uri: Uri) -> Response {
    let path = uri.path().to_string();
    state.paths.lock().unwrap().push(
        uri.path_and_query()
            .map(|p| p.to_string())
            .unwrap_or(path.clone()),
    );
    let auth = headers.get("authorization").and_then(|v| v.to_str().ok());
    if auth != Some(&format!("Bearer {TOKEN}")) {
        return status(401, "Unauthorized", "Unauthorized", "");
    }
    let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
    if state.forbidden.load(Ordering::SeqCst) {
        let (resource, ns) = match parts.as_slice() {
            ["api", "v1", "namespaces", ns, r, ..] => (r.to_string(), Some(*ns)),
            ["apis", _, _, "namespaces", ns, r, ..] => (r.to_string(), Some(*ns)),
            [.., r] => (r.to_string(), None),
            [] => (String::new(), None),
        };
        let scope = ns
            .map(|n| format!(" in the namespace \"{n}\""))
            .unwrap_or_else(|| " at the cluster scope".into());
        let msg = format!(
            "{resource} is forbidden: User \"system:serviceaccount:monitoring:sre-agent\" cannot list resource \"{resource}\" in API group \"\"{scope}"
        );
        return status(403, "Forbidden", &msg, &resource);
    }
    match parts.as_slice() {
        ["api", "v1", "pods"] | ["api", "v1", "namespaces", _, "pods"] => {
            list("PodList", "v1", vec![crashing_pod(), healthy_pod()])
        }
        [
            "api",
            "v1",
            "namespaces",
            "apps",
            "pods",
            "web-7d4b9c-x2x9q",
        ] => axum::Json(crashing_pod()).into_response(),
        [
            "api",
            "v1",
            "namespaces",
            "apps",
            "pods",
            "web-7d4b9c-x2x9q",
            "log",
        ] => {
            let mut text = String::from("starting web v1.4.2\nloading cache\n");
            for i in 0..40 {
                text.push_str(&format!(
                    "2026-11-23T06:0{}:{:02}Z WARN upstream db timeout after 5000ms (attempt {i})\n",
                    i / 60,
                    i % 60
                ));
            }
            text.push_str("fatal: out of memory allocating 268435456 bytes\n");
            text.into_response()
        }
        ["api", "v1", "events"] | ["api", "v1", "namespaces", _, "events"] => {
            list("EventList", "v1", vec![backoff_event(), normal_event()])
        }
        ["api", "v1", "nodes"] => list("NodeList", "v1", vec![node()]),
        ["apis", "apps", "v1", "deployments"]
        | ["apis", "apps", "v1", "namespaces", _, "deployments"] => {
            list("DeploymentList", "apps/v1", vec![deployment()])
        }
        ["apis", "apps", "v1", "statefulsets"]
        | ["apis", "apps", "v1", "namespaces", _, "statefulsets"] => {
            list("StatefulSetList", "apps/v1", vec![statefulset()])
        }
        ["apis", "apps", "v1", "daemonsets"]
        | ["apis", "apps", "v1", "namespaces", _, "daemonsets"] => {
            list("DaemonSetList", "apps/v1", vec![daemonset()])
        }
        _ => status(
            404,
            "NotFound",
            &format!("the server could not find {path}"),
            "",
        ),
    }
}

fn list(kind: &str, api_version: &str, items: Vec<Value>) -> Response {
    axum::Json(json!({"kind": kind, "apiVersion": api_version,
        "metadata": {"resourceVersion": "123456"}, "items": items}))
    .into_response()
}

fn crashing_pod() -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "web-7d4b9c-x2x9q", "namespace": "apps", "uid": "5f1c2d3e-0000-4000-8000-000000000001",
            "labels": {"app": "web"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-7d4b9c", "uid": "5f1c2d3e-0000-4000-8000-000000000002", "controller": true}]},
        "spec": {"nodeName": "k3s-node-1", "containers": [{
            "name": "web", "image": "ghcr.io/example/web:1.4.2",
            "env": [{"name": "DB_PASSWORD", "value": "hunter2-env-secret"},
                    {"name": "API_KEY", "valueFrom": {"secretKeyRef": {"name": "web-secrets", "key": "api-key"}}}],
            "envFrom": [{"configMapRef": {"name": "web-config"}}],
            "resources": {"requests": {"cpu": "250m", "memory": "128Mi"}, "limits": {"memory": "256Mi"}}}]},
        "status": {"phase": "Running", "podIP": "10.42.0.17",
            "conditions": [{"type": "Ready", "status": "False", "reason": "ContainersNotReady"},
                           {"type": "PodScheduled", "status": "True"}],
            "containerStatuses": [{"name": "web", "ready": false, "restartCount": 7,
                "image": "ghcr.io/example/web:1.4.2", "imageID": "ghcr.io/example/web@sha256:abc",
                "state": {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 5m0s restarting failed container=web pod=web-7d4b9c-x2x9q_apps"}},
                "lastState": {"terminated": {"exitCode": 137, "reason": "OOMKilled",
                    "startedAt": "2026-11-23T06:40:01Z", "finishedAt": "2026-11-23T06:41:12Z"}}}]}
    })
}

fn healthy_pod() -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "db-0", "namespace": "apps", "uid": "5f1c2d3e-0000-4000-8000-000000000003"},
        "spec": {"nodeName": "k3s-node-1", "containers": [{"name": "postgres", "image": "postgres:16",
            "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]},
        "status": {"phase": "Running", "containerStatuses": [{"name": "postgres", "ready": true, "restartCount": 0,
            "image": "postgres:16", "imageID": "postgres@sha256:def", "state": {"running": {"startedAt": "2026-11-20T10:00:00Z"}}}]}
    })
}

fn backoff_event() -> Value {
    json!({"apiVersion": "v1", "kind": "Event",
        "metadata": {"name": "web-7d4b9c-x2x9q.17a", "namespace": "apps"},
        "involvedObject": {"kind": "Pod", "namespace": "apps", "name": "web-7d4b9c-x2x9q", "apiVersion": "v1"},
        "reason": "BackOff", "message": "Back-off restarting failed container web in pod web-7d4b9c-x2x9q_apps(5f1c2d3e)",
        "source": {"component": "kubelet", "host": "k3s-node-1"},
        "firstTimestamp": "2026-11-23T06:00:00Z", "lastTimestamp": "2026-11-23T06:41:30Z",
        "count": 31, "type": "Warning"})
}

fn normal_event() -> Value {
    json!({"apiVersion": "v1", "kind": "Event",
        "metadata": {"name": "web-7d4b9c-x2x9q.17b", "namespace": "apps"},
        "involvedObject": {"kind": "Pod", "namespace": "apps", "name": "web-7d4b9c-x2x9q"},
        "reason": "Pulled", "message": "Container image \"ghcr.io/example/web:1.4.2\" already present on machine",
        "firstTimestamp": "2026-11-23T06:00:00Z", "lastTimestamp": "2026-11-23T06:40:00Z",
        "count": 8, "type": "Normal"})
}

fn node() -> Value {
    json!({"apiVersion": "v1", "kind": "Node",
        "metadata": {"name": "k3s-node-1", "labels": {"kubernetes.io/hostname": "k3s-node-1"}},
        "spec": {"podCIDR": "10.42.0.0/24"},
        "status": {
            "capacity": {"cpu": "4", "memory": "8148056Ki", "pods": "110"},
            "allocatable": {"cpu": "4", "memory": "8148056Ki", "pods": "110"},
            "conditions": [
                {"type": "MemoryPressure", "status": "True", "reason": "KubeletHasInsufficientMemory"},
                {"type": "DiskPressure", "status": "False", "reason": "KubeletHasNoDiskPressure"},
                {"type": "PIDPressure", "status": "False", "reason": "KubeletHasSufficientPID"},
                {"type": "Ready", "status": "True", "reason": "KubeletReady"}],
            "nodeInfo": {"machineID": "m", "systemUUID": "s", "bootID": "b", "kernelVersion": "6.8.0",
                "osImage": "Ubuntu 24.04", "containerRuntimeVersion": "containerd://1.7", "kubeletVersion": "v1.31.4+k3s1",
                "kubeProxyVersion": "v1.31.4+k3s1", "operatingSystem": "linux", "architecture": "amd64"}}})
}

fn deployment() -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "apps", "generation": 4},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "web", "image": "ghcr.io/example/web:1.4.2"}]}}},
        "status": {"observedGeneration": 4, "replicas": 2, "updatedReplicas": 2, "readyReplicas": 1, "availableReplicas": 1, "unavailableReplicas": 1}})
}

fn statefulset() -> Value {
    json!({"apiVersion": "apps/v1", "kind": "StatefulSet",
        "metadata": {"name": "db", "namespace": "apps"},
        "spec": {"replicas": 1, "serviceName": "db", "selector": {"matchLabels": {"app": "db"}},
            "template": {"metadata": {"labels": {"app": "db"}}, "spec": {"containers": [{"name": "postgres", "image": "postgres:16"}]}}},
        "status": {"replicas": 1, "readyReplicas": 1, "currentReplicas": 1, "updatedReplicas": 1, "availableReplicas": 1}})
}

fn daemonset() -> Value {
    json!({"apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": {"name": "node-exporter", "namespace": "apps"},
        "spec": {"selector": {"matchLabels": {"app": "node-exporter"}},
            "template": {"metadata": {"labels": {"app": "node-exporter"}}, "spec": {"containers": [{"name": "ne", "image": "prom/node-exporter"}]}}},
        "status": {"currentNumberScheduled": 1, "desiredNumberScheduled": 1, "numberMisscheduled": 0, "numberReady": 1, "updatedNumberScheduled": 1, "numberAvailable": 1}})
}
