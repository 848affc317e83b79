//! Read-only Kubernetes client (kube): pods, pod logs, events, nodes, workloads, Services,
//! CronJobs and their Jobs, volume claims and the (cluster-wide) persistent volumes they
//! are bound to, and custom resources as dynamic objects (a GitOps controller's), limited
//! to the `kubernetes.namespaces` allow-list. Secrets and ConfigMaps are never requested.
//! A 403 names the verb, resource and namespace the ServiceAccount lacks.

use std::fmt::Debug;

use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::api::core::v1::{
    Event, Node, PersistentVolume, PersistentVolumeClaim, Pod, Service,
};
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, ListParams, LogParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Resource};
use serde::de::DeserializeOwned;
use tokio::sync::OnceCell;

use crate::config::KubernetesConfig;

/// A Kubernetes failure the model can act on.
#[derive(Debug, thiserror::Error)]
pub enum KubeError {
    #[error("{what} {value:?} is not a valid Kubernetes name ({rule})")]
    InvalidName {
        what: &'static str,
        value: String,
        rule: &'static str,
    },
    #[error("namespace {namespace:?} is not allowed (kubernetes.namespaces = [{allowed}])")]
    NotAllowed { namespace: String, allowed: String },
    #[error(
        "Kubernetes API denied {verb} {resource}{scope} (403 Forbidden): the ServiceAccount needs verb \"{verb}\" on resource \"{resource}\"{scope} (see deploy/kubernetes/rbac.yaml); API said: {message}"
    )]
    Forbidden {
        verb: &'static str,
        resource: String,
        scope: String,
        message: String,
    },
    #[error("Kubernetes API: {verb} {resource}{scope} returned {code} {reason}: {message}")]
    Api {
        verb: &'static str,
        resource: String,
        scope: String,
        code: u16,
        reason: String,
        message: String,
    },
    #[error("Kubernetes API: {verb} {resource}{scope} failed: {reason}")]
    Transport {
        verb: &'static str,
        resource: String,
        scope: String,
        reason: String,
    },
    #[error("Kubernetes client setup: {0}")]
    Setup(String),
}

enum Source {
    InCluster,
    Kubeconfig(Box<Kubeconfig>, KubeConfigOptions),
    Default(KubeConfigOptions),
}

/// The cluster, reached lazily on first use so an unreachable cluster does not stop the start.
pub struct KubeClient {
    source: Source,
    config: KubernetesConfig,
    client: OnceCell<Client>,
}

fn scope(ns: Option<&str>) -> String {
    ns.map(|n| format!(" in namespace \"{n}\""))
        .unwrap_or_else(|| " (all namespaces)".into())
}

fn map_err(verb: &'static str, resource: &str, ns: Option<&str>, e: kube::Error) -> KubeError {
    let resource = resource.to_string();
    let scope = scope(ns);
    match e {
        kube::Error::Api(s) if s.code == 403 => KubeError::Forbidden {
            verb,
            resource,
            scope,
            message: s.message,
        },
        kube::Error::Api(s) => KubeError::Api {
            verb,
            resource,
            scope,
            code: s.code,
            reason: s.reason,
            message: s.message,
        },
        other => KubeError::Transport {
            verb,
            resource,
            scope,
            reason: other.to_string(),
        },
    }
}

impl KubeClient {
    /// Reads the kubeconfig now (so a bad file fails at start); connects on first call.
    pub fn new(config: &KubernetesConfig) -> Result<Self, KubeError> {
        let options = KubeConfigOptions {
            context: config.context.clone(),
            ..Default::default()
        };
        let source = if config.in_cluster {
            Source::InCluster
        } else if let Some(path) = &config.kubeconfig {
            let kc = Kubeconfig::read_from(path).map_err(|e| {
                KubeError::Setup(format!("kubernetes.kubeconfig {}: {e}", path.display()))
            })?;
            Source::Kubeconfig(Box::new(kc), options)
        } else {
            Source::Default(options)
        };
        Ok(Self {
            source,
            config: config.clone(),
            client: OnceCell::new(),
        })
    }

    async fn client(&self) -> Result<Client, KubeError> {
        self.client
            .get_or_try_init(|| async {
                let mut cfg = match &self.source {
                    Source::InCluster => kube::Config::incluster()
                        .map_err(|e| KubeError::Setup(format!("in-cluster config: {e}")))?,
                    Source::Kubeconfig(kc, opts) => {
                        kube::Config::from_custom_kubeconfig((**kc).clone(), opts)
                            .await
                            .map_err(|e| KubeError::Setup(format!("kubeconfig: {e}")))?
                    }
                    Source::Default(opts) => kube::Config::from_kubeconfig(opts)
                        .await
                        .map_err(|e| KubeError::Setup(format!("default kubeconfig: {e}")))?,
                };
                let timeout = self.config.timeout.get();
                cfg.read_timeout = Some(timeout);
                cfg.connect_timeout = Some(timeout);
                Client::try_from(cfg).map_err(|e| KubeError::Setup(e.to_string()))
            })
            .await
            .cloned()
    }

    /// Fails unless `namespace` is a valid name in the allow-list.
    pub fn check_namespace(&self, namespace: &str) -> Result<(), KubeError> {
        check_label("namespace", namespace)?;
        if self.config.allows(namespace) {
            Ok(())
        } else {
            Err(KubeError::NotAllowed {
                namespace: namespace.into(),
                allowed: self.config.namespaces.join(", "),
            })
        }
    }

    /// Lists a namespaced kind in `ns`, or in every allowed namespace when `None`.
    pub async fn list<K>(&self, ns: Option<&str>, lp: &ListParams) -> Result<Vec<K>, KubeError>
    where
        K: Resource<Scope = NamespaceResourceScope> + Clone + DeserializeOwned + Debug,
        K::DynamicType: Default,
    {
        let client = self.client().await?;
        let plural = K::plural(&K::DynamicType::default()).to_string();
        let namespaces: Vec<Option<String>> = match ns {
            Some(n) => {
                self.check_namespace(n)?;
                vec![Some(n.to_string())]
            }
            None if self.config.namespaces.is_empty() => vec![None],
            None => self.config.namespaces.iter().cloned().map(Some).collect(),
        };
        let mut out = Vec::new();
        for n in namespaces {
            let api: Api<K> = match &n {
                Some(n) => Api::namespaced(client.clone(), n),
                None => Api::all(client.clone()),
            };
            let list = api
                .list(lp)
                .await
                .map_err(|e| map_err("list", &plural, n.as_deref(), e))?;
            out.extend(list.items);
        }
        Ok(out)
    }

    pub async fn pods(
        &self,
        ns: Option<&str>,
        selector: Option<&str>,
    ) -> Result<Vec<Pod>, KubeError> {
        let mut lp = ListParams::default();
        if let Some(s) = selector {
            lp = lp.labels(s);
        }
        self.list(ns, &lp).await
    }

    pub async fn pod(&self, ns: &str, name: &str) -> Result<Pod, KubeError> {
        self.check_namespace(ns)?;
        check_subdomain("pod name", name)?;
        let api: Api<Pod> = Api::namespaced(self.client().await?, ns);
        api.get(name)
            .await
            .map_err(|e| map_err("get", "pods", Some(ns), e))
    }

    /// Events about one object, oldest first.
    pub async fn events_for(
        &self,
        ns: &str,
        kind: &str,
        name: &str,
    ) -> Result<Vec<Event>, KubeError> {
        check_subdomain("object name", name)?;
        let lp = ListParams::default().fields(&format!(
            "involvedObject.kind={kind},involvedObject.name={name}"
        ));
        let mut events: Vec<Event> = self.list(Some(ns), &lp).await?;
        events.sort_by_key(event_time);
        Ok(events)
    }

    /// Events in `ns` (or every allowed namespace), oldest first.
    pub async fn events(
        &self,
        ns: Option<&str>,
        warnings_only: bool,
    ) -> Result<Vec<Event>, KubeError> {
        let mut lp = ListParams::default();
        if warnings_only {
            lp = lp.fields("type=Warning");
        }
        let mut events: Vec<Event> = self.list(ns, &lp).await?;
        events.sort_by_key(event_time);
        Ok(events)
    }

    pub async fn logs(
        &self,
        ns: &str,
        name: &str,
        container: Option<String>,
        previous: bool,
        tail: i64,
    ) -> Result<String, KubeError> {
        self.check_namespace(ns)?;
        check_subdomain("pod name", name)?;
        if let Some(c) = &container {
            check_label("container", c)?;
        }
        let api: Api<Pod> = Api::namespaced(self.client().await?, ns);
        let lp = LogParams {
            container,
            previous,
            tail_lines: Some(tail),
            ..Default::default()
        };
        api.logs(name, &lp)
            .await
            .map_err(|e| map_err("get", "pods/log", Some(ns), e))
    }

    pub async fn nodes(&self) -> Result<Vec<Node>, KubeError> {
        let api: Api<Node> = Api::all(self.client().await?);
        api.list(&ListParams::default())
            .await
            .map(|l| l.items)
            .map_err(|e| map_err("list", "nodes", None, e))
    }

    /// The persistent volumes (cluster-scoped: a volume belongs to no namespace; what is
    /// read of one is its binding, class and node affinity).
    pub async fn persistent_volumes(&self) -> Result<Vec<PersistentVolume>, KubeError> {
        let api: Api<PersistentVolume> = Api::all(self.client().await?);
        api.list(&ListParams::default())
            .await
            .map(|l| l.items)
            .map_err(|e| map_err("list", "persistentvolumes", None, e))
    }

    /// The volume claims in `ns` (or every allowed namespace).
    pub async fn claims(&self, ns: Option<&str>) -> Result<Vec<PersistentVolumeClaim>, KubeError> {
        self.list(ns, &ListParams::default()).await
    }

    /// Running and pending pods in every namespace, for per-node requests.
    pub async fn scheduled_pods(&self) -> Result<Vec<Pod>, KubeError> {
        let api: Api<Pod> = Api::all(self.client().await?);
        let lp = ListParams::default().fields("status.phase!=Succeeded,status.phase!=Failed");
        api.list(&lp)
            .await
            .map(|l| l.items)
            .map_err(|e| map_err("list", "pods", None, e))
    }

    pub async fn workloads(
        &self,
        ns: Option<&str>,
    ) -> Result<(Vec<Deployment>, Vec<StatefulSet>, Vec<DaemonSet>), KubeError> {
        let lp = ListParams::default();
        Ok((
            self.list(ns, &lp).await?,
            self.list(ns, &lp).await?,
            self.list(ns, &lp).await?,
        ))
    }

    /// Services in `ns` (or every allowed namespace): their selectors and types.
    pub async fn services(&self, ns: Option<&str>) -> Result<Vec<Service>, KubeError> {
        self.list(ns, &ListParams::default()).await
    }

    /// CronJobs and Jobs in `ns` (or every allowed namespace): schedules, concurrency
    /// policies, and which Jobs run and since when.
    pub async fn cronjobs(&self, ns: Option<&str>) -> Result<(Vec<CronJob>, Vec<Job>), KubeError> {
        let lp = ListParams::default();
        Ok((self.list(ns, &lp).await?, self.list(ns, &lp).await?))
    }

    /// Events in `ns` (or every allowed namespace) with `reason` (a constant of the
    /// caller's, never alert text), oldest first.
    pub async fn events_with_reason(
        &self,
        ns: Option<&str>,
        reason: &'static str,
    ) -> Result<Vec<Event>, KubeError> {
        let lp = ListParams::default().fields(&format!("reason={reason}"));
        let mut events: Vec<Event> = self.list(ns, &lp).await?;
        events.sort_by_key(event_time);
        Ok(events)
    }

    /// ReplicaSets in `ns` (or every allowed namespace): a Deployment's revisions, each
    /// with its pod template and creation time.
    pub async fn replicasets(&self, ns: Option<&str>) -> Result<Vec<ReplicaSet>, KubeError> {
        self.list(ns, &ListParams::default()).await
    }

    /// The objects of a custom resource kind (a GitOps controller's Applications,
    /// Kustomizations) in every allowed namespace, at most `limit` per namespace listed;
    /// `None` when the cluster does not serve the kind (its CRD is not installed: 404).
    pub async fn custom_objects(
        &self,
        kind: &CustomKind,
        limit: u32,
    ) -> Result<Option<Vec<DynamicObject>>, KubeError> {
        let client = self.client().await?;
        let gvk = GroupVersionKind::gvk(kind.group, kind.version, kind.kind);
        let resource = ApiResource::from_gvk_with_plural(&gvk, kind.plural);
        let namespaces: Vec<Option<String>> = match self.config.namespaces.is_empty() {
            true => vec![None],
            false => self.config.namespaces.iter().cloned().map(Some).collect(),
        };
        let lp = ListParams::default().limit(limit);
        let mut out = Vec::new();
        for n in namespaces {
            let api: Api<DynamicObject> = match &n {
                Some(n) => Api::namespaced_with(client.clone(), n, &resource),
                None => Api::all_with(client.clone(), &resource),
            };
            match api.list(&lp).await {
                Ok(list) => out.extend(list.items),
                Err(kube::Error::Api(s)) if s.code == 404 => return Ok(None),
                Err(e) => return Err(map_err("list", kind.plural, n.as_deref(), e)),
            }
        }
        Ok(Some(out))
    }
}

/// A custom resource kind as the API serves it: `/apis/{group}/{version}/{plural}`.
#[derive(Clone, Copy, Debug)]
pub struct CustomKind {
    pub group: &'static str,
    pub version: &'static str,
    pub kind: &'static str,
    pub plural: &'static str,
}

/// Fails unless `value` is a DNS-1123 label (namespaces, container names): 1–63 of
/// `a-z0-9-`, starting and ending alphanumeric. Names become path segments and field
/// selectors, so `web-0/proxy` or `a,b=c` must never reach the API.
pub fn check_label(what: &'static str, value: &str) -> Result<(), KubeError> {
    if is_label(value) {
        Ok(())
    } else {
        Err(KubeError::InvalidName {
            what,
            value: value.to_string(),
            rule: "a DNS-1123 label: at most 63 of a-z, 0-9 and '-', alphanumeric at both ends",
        })
    }
}

/// Fails unless `value` is a DNS-1123 subdomain (pod names): at most 253 characters of
/// labels joined by `.`.
pub fn check_subdomain(what: &'static str, value: &str) -> Result<(), KubeError> {
    if value.len() <= 253 && value.split('.').all(is_label) {
        Ok(())
    } else {
        Err(KubeError::InvalidName {
            what,
            value: value.to_string(),
            rule: "a DNS-1123 subdomain: at most 253 of a-z, 0-9, '-' and '.', alphanumeric at both ends of each part",
        })
    }
}

fn is_label(s: &str) -> bool {
    let alnum = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    let bytes = s.as_bytes();
    (1..=63).contains(&bytes.len())
        && alnum(bytes[0])
        && alnum(bytes[bytes.len() - 1])
        && bytes.iter().all(|&b| alnum(b) || b == b'-')
}

/// When an event last happened (seconds since epoch; 0 when unknown).
pub fn event_time(e: &Event) -> i64 {
    e.last_timestamp
        .as_ref()
        .map(|t| t.0.as_second())
        .or_else(|| e.event_time.as_ref().map(|t| t.0.as_second()))
        .or_else(|| e.first_timestamp.as_ref().map(|t| t.0.as_second()))
        .unwrap_or(0)
}
