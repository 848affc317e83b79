//! `gitops_sync`: a GitOps controller that cannot apply what is in git. The cluster then
//! runs something else than the repository says (the old version, or nothing), and the
//! controller's own status is the only place that says why: Argo CD's `Application`
//! (`argoproj.io/v1alpha1`: a sync operation `Failed`/`Error`, or retrying, with the
//! resources that failed to apply and the API server's message, `ComparisonError` and
//! other error conditions, `OutOfSync` with health `Degraded`/`Missing`) in `argo.rs`,
//! Flux's `Kustomization` (`kustomize.toolkit.fluxcd.io/v1`) and `HelmRelease`
//! (`helm.toolkit.fluxcd.io/v2`) with `Ready=False`, its reason and message, in `flux.rs`.
//! A cluster without the CRD (404) has no such controller: nothing is said. When the
//! objects cannot be read (no Kubernetes integration, a 403) the controllers' metrics in
//! Prometheus stand in (`metrics.rs`: `argocd_app_info`, `argocd_app_sync_total`,
//! `gotk_reconcile_condition`).
//!
//! The controllers' messages are upstream text: quoted in the fact's detail (fenced
//! downstream), on one line, URLs without credentials, cut on character boundaries; a
//! Secret's message is never quoted.

mod argo;
mod flux;
mod metrics;

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use kube::api::DynamicObject;
use serde_json::Value;

use crate::analyze::prom::{Prom, redact_word};
use crate::analyze::{AnalyzeError, Analyzer, Entity, Fact, Scope};
use crate::integrations::PrometheusClient;
use crate::integrations::kubernetes::{CustomKind, KubeClient};
use crate::text::{first_chars, truncate, truncate_middle};

const NAME: &str = "gitops_sync";
/// Most objects of one kind listed per namespace.
const MAX_LISTED: u32 = 500;
/// Facts reported: those the trigger is about first, then the most severe, the newest.
const MAX_FACTS: usize = 12;
/// Longest message quoted.
const MAX_QUOTE_CHARS: usize = 200;

pub const APPLICATIONS: CustomKind = CustomKind {
    group: "argoproj.io",
    version: "v1alpha1",
    kind: "Application",
    plural: "applications",
};
pub const KUSTOMIZATIONS: CustomKind = CustomKind {
    group: "kustomize.toolkit.fluxcd.io",
    version: "v1",
    kind: "Kustomization",
    plural: "kustomizations",
};
pub const HELM_RELEASES: CustomKind = CustomKind {
    group: "helm.toolkit.fluxcd.io",
    version: "v2",
    kind: "HelmRelease",
    plural: "helmreleases",
};

/// The analyzer over the cluster's GitOps objects, with Prometheus as the fallback.
pub struct GitopsSync {
    kube: Option<Arc<KubeClient>>,
    prom: Option<Prom>,
}

impl GitopsSync {
    pub fn new(kube: Option<Arc<KubeClient>>, prom: Option<Arc<PrometheusClient>>) -> Self {
        Self {
            kube,
            prom: prom.map(Prom::new),
        }
    }
}

/// What reading one kind gave.
enum Read {
    Objects(Vec<DynamicObject>),
    /// The cluster does not serve the kind: no such controller.
    Absent,
    Failed(String),
    /// No Kubernetes integration.
    Unread,
}

impl Read {
    fn was_read(&self) -> bool {
        matches!(self, Read::Objects(_))
    }
}

async fn read(kube: Option<&KubeClient>, kind: &CustomKind) -> Read {
    let Some(kube) = kube else {
        return Read::Unread;
    };
    match kube.custom_objects(kind, MAX_LISTED).await {
        Ok(Some(objects)) => Read::Objects(objects),
        Ok(None) => Read::Absent,
        Err(e) => Read::Failed(e.to_string()),
    }
}

#[async_trait]
impl Analyzer for GitopsSync {
    fn name(&self) -> &'static str {
        NAME
    }

    async fn run(&self, scope: &Scope) -> Result<Vec<Fact>, AnalyzeError> {
        let kube = self.kube.as_deref();
        let (apps, kustomizations, releases) = futures::join!(
            read(kube, &APPLICATIONS),
            read(kube, &KUSTOMIZATIONS),
            read(kube, &HELM_RELEASES)
        );
        let mut facts = Vec::new();
        let mut errors = Vec::new();
        for (kind, got) in [
            (APPLICATIONS.kind, &apps),
            (KUSTOMIZATIONS.kind, &kustomizations),
            (HELM_RELEASES.kind, &releases),
        ] {
            match got {
                Read::Objects(objects) => facts.extend(objects.iter().filter_map(|o| {
                    let (ns, name) = super::key(&o.metadata);
                    match kind {
                        "Application" => argo::fact(&ns, &name, &o.data, scope),
                        _ => flux::fact(kind, &ns, &name, &o.data, scope),
                    }
                })),
                Read::Failed(e) => errors.push(e.clone()),
                Read::Absent | Read::Unread => {}
            }
        }
        if let Some(prom) = &self.prom {
            let flux_unread: Vec<&str> = [
                (&kustomizations, "Kustomization"),
                (&releases, "HelmRelease"),
            ]
            .into_iter()
            .filter(|(r, _)| !r.was_read())
            .map(|(_, k)| k)
            .collect();
            let (argo, flux) = futures::join!(
                async {
                    match apps.was_read() {
                        true => Ok(Vec::new()),
                        false => metrics::argo(prom, scope).await,
                    }
                },
                async {
                    match flux_unread.is_empty() {
                        true => Ok(Vec::new()),
                        false => metrics::flux(prom, scope, &flux_unread).await,
                    }
                }
            );
            for got in [argo, flux] {
                match got {
                    Ok(found) => facts.extend(found),
                    Err(e) => errors.push(e.to_string()),
                }
            }
        }
        if facts.is_empty() && !errors.is_empty() {
            return Err(AnalyzeError::Other(errors.join("; ")));
        }
        Ok(keep(facts, scope))
    }
}

/// The [`MAX_FACTS`] facts shown: those the trigger is about first, then the most severe,
/// then the newest.
fn keep(facts: Vec<Fact>, scope: &Scope) -> Vec<Fact> {
    let about = |f: &Fact| scope.is_about(&f.entity) || f.related.iter().any(|e| scope.is_about(e));
    let mut ranked: Vec<(bool, Fact)> = facts.into_iter().map(|f| (about(&f), f)).collect();
    ranked.sort_by(|(a, x), (b, y)| {
        b.cmp(a)
            .then(y.severity.cmp(&x.severity))
            .then(y.since.cmp(&x.since))
    });
    ranked.into_iter().take(MAX_FACTS).map(|(_, f)| f).collect()
}

/// The text at JSON pointer `path` of `v` ("" when absent or not text).
fn text<'a>(v: &'a Value, path: &str) -> &'a str {
    v.pointer(path).and_then(Value::as_str).unwrap_or_default()
}

/// The array at JSON pointer `path` of `v` (empty when absent).
fn items<'a>(v: &'a Value, path: &str) -> &'a [Value] {
    v.pointer(path)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// The RFC 3339 time at `path` of `v`, when it is one and not after now.
fn time_at(v: &Value, path: &str, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(text(v, path))
        .ok()
        .map(|t| t.with_timezone(&Utc))
        .filter(|t| *t <= now)
}

/// An upstream message as quoted in a fact: on one line, URLs without credentials, query
/// or fragment, at most [`MAX_QUOTE_CHARS`] (its start and its end, where the cause often is).
fn quote(message: &str) -> String {
    let line: Vec<String> = message.split_whitespace().map(redact_word).collect();
    format!("\"{}\"", truncate_middle(&line.join(" "), MAX_QUOTE_CHARS))
}

/// A condition's type or reason as the API defines them (`^[A-Za-z][A-Za-z0-9_,:]*$`, at
/// most 64 characters): shown outside the quoted detail, so anything else is not.
fn token(s: &str) -> Option<&str> {
    let mut chars = s.chars();
    let ok = chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || "_,:".contains(c))
        && s.len() <= 64;
    ok.then_some(s)
}

/// Whether an upstream message names a Secret (`Secret/ns/name`, `Secret "name"`): an
/// API error about one may carry what it holds, so it is not quoted.
fn names_secret(message: &str) -> bool {
    message
        .split_whitespace()
        .any(|w| w.starts_with("Secret/") || w == "Secret")
}

/// A revision as shown: a git commit's hash (alone or after `branch@sha1:`) cut to 8
/// characters, anything else at most 40.
fn revision(rev: &str) -> String {
    let is_hash = |h: &str| matches!(h.len(), 40 | 64) && h.chars().all(|c| c.is_ascii_hexdigit());
    if is_hash(rev) {
        return first_chars(rev, 8).to_string();
    }
    if let Some((head, hash)) = rev.rsplit_once(':')
        && is_hash(hash)
    {
        return format!("{}:{}", truncate(head, 32), first_chars(hash, 8));
    }
    truncate(rev, 40)
}

/// The entity of a resource a controller failed to apply (`Deployment`, `shop`, `web`):
/// labelled as the other analyzers label that kind, so the ranking matches it to an alert
/// about it.
fn resource_entity(kind: &str, ns: &str, name: &str) -> Entity {
    let kind = kind.to_lowercase();
    let mut labels = BTreeMap::from([(kind.clone(), name.to_string())]);
    if matches!(
        kind.as_str(),
        "deployment" | "statefulset" | "daemonset" | "cronjob" | "job"
    ) {
        labels.insert("workload".into(), name.to_string());
    }
    let full = match ns.is_empty() {
        true => name.to_string(),
        false => {
            labels.insert("namespace".into(), ns.to_string());
            format!("{ns}/{name}")
        }
    };
    Entity::new(&kind, full).with_labels(labels)
}

/// The entity of the namespace a controller deploys to.
fn namespace_entity(ns: &str) -> Entity {
    Entity::new("namespace", ns)
        .with_labels(BTreeMap::from([("namespace".to_string(), ns.to_string())]))
}

#[cfg(test)]
mod tests;
