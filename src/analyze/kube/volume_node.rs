//! Pods held by their volume's node: a volume that lives on one node (local-path, local
//! PVs, OpenEBS hostpath, TopoLVM) carries a required node affinity
//! (`spec.nodeAffinity.required.nodeSelectorTerms`), so its pod can only run there. When
//! every node the affinity admits is NotReady, cordoned or gone, the pod stays Pending
//! ("volume node affinity conflict") or stranded on the dead node, and its own fact only
//! says "unschedulable" or "not ready". For the pods `kube_pods` already reports, this
//! reads their claims' bound volumes (or, for a claim not bound yet, the node the
//! scheduler selected for it) and puts in front of the pod's fact's detail the claim,
//! the volume, the node and its state (the fact keeps its severity, so a single-replica
//! database pod stays above a replica of a healthy workload), with the claim and volume
//! as labels and the node as its host when the pod has none.
//!
//! Bounded: nothing is listed unless a reported pod mounts a claim; then the claims, the
//! persistent volumes and the nodes are listed once each. A list that fails leaves the
//! facts as they were.

use std::collections::HashMap;

use k8s_openapi::api::core::v1::{
    Node, NodeSelectorRequirement, NodeSelectorTerm, PersistentVolume, PersistentVolumeClaim, Pod,
};

use super::view::PodView;
use super::{PODS, key, time};
use crate::analyze::Fact;
use crate::integrations::kubernetes::KubeClient;

/// The label every kubelet sets to its node's name.
const HOSTNAME: &str = "kubernetes.io/hostname";
/// The annotation the scheduler sets on a claim waiting for its first consumer.
const SELECTED_NODE: &str = "volume.kubernetes.io/selected-node";

/// Tells in the facts of each reported pod whose volume is pinned to nodes that are all
/// unavailable which volume and which node hold it.
pub async fn attach(client: &KubeClient, pods: &[Pod], facts: &mut [Fact]) {
    let reported = reported_pods(pods, facts);
    if reported.is_empty() {
        return;
    }
    let (claims, volumes, nodes) = tokio::join!(
        client.claims(None),
        client.persistent_volumes(),
        client.nodes()
    );
    let (Ok(claims), Ok(volumes), Ok(nodes)) = (claims, volumes, nodes) else {
        return;
    };
    for h in held(&reported, &claims, &volumes, &nodes) {
        for f in facts.iter_mut().filter(|f| is_about(f, &h.pod)) {
            add(f, &h);
        }
    }
}

/// Whether `f` is a `kube_pods` fact about the pod `(namespace, name)`.
fn is_about(f: &Fact, (ns, name): &(String, String)) -> bool {
    f.analyzer == PODS
        && f.entity.labels.get("namespace") == Some(ns)
        && f.entity.labels.get("pod") == Some(name)
}

/// The pods with a fact of `kube_pods` that mount a claim.
fn reported_pods<'a>(pods: &'a [Pod], facts: &[Fact]) -> Vec<&'a Pod> {
    pods.iter()
        .filter(|p| !PodView::claim_names(p).is_empty())
        .filter(|p| {
            let pod = key(&p.metadata);
            facts.iter().any(|f| is_about(f, &pod))
        })
        .collect()
}

/// A pod held by one of its volumes.
pub struct Held {
    /// `(namespace, name)` of the pod.
    pub pod: (String, String),
    pub claim: String,
    pub volume: Option<String>,
    /// "claim data (PV pvc-1, local-path) is pinned to node n2 (NotReady since 14:02 UTC)".
    pub text: String,
    /// The one node it is pinned to, when one.
    pub node: Option<String>,
}

/// The pods of `pods` held by a volume whose nodes are all unavailable.
pub fn held(
    pods: &[&Pod],
    claims: &[PersistentVolumeClaim],
    volumes: &[PersistentVolume],
    nodes: &[Node],
) -> Vec<Held> {
    let claims: HashMap<(String, String), &PersistentVolumeClaim> =
        claims.iter().map(|c| (key(&c.metadata), c)).collect();
    let volumes: HashMap<&str, &PersistentVolume> = volumes
        .iter()
        .filter_map(|v| Some((v.metadata.name.as_deref()?, v)))
        .collect();
    let mut out = Vec::new();
    for pod in pods {
        let (ns, _) = key(&pod.metadata);
        for claim_name in PodView::claim_names(pod) {
            let Some(claim) = claims.get(&(ns.clone(), claim_name.to_string())) else {
                continue;
            };
            let bound = claim
                .spec
                .as_ref()
                .and_then(|s| s.volume_name.as_deref())
                .and_then(|v| volumes.get(v));
            let pin = match bound {
                Some(pv) => pinned_by_volume(pv, nodes),
                None => pinned_by_selection(claim, nodes),
            };
            if let Some(pin) = pin {
                out.push(describe(pod, claim_name, bound.copied(), &pin));
            }
        }
    }
    out
}

/// The nodes a volume or claim is pinned to, all unavailable.
struct Pin {
    /// Each node named (or admitted) with its state: "NotReady", "cordoned", "gone".
    nodes: Vec<(String, String)>,
    /// When the first of them stopped being ready, when known.
    since: Option<chrono::DateTime<chrono::Utc>>,
}

/// The pin of `pv` when its required node affinity admits only unavailable nodes (`None`
/// without an affinity, or when one node it admits is available).
fn pinned_by_volume(pv: &PersistentVolume, nodes: &[Node]) -> Option<Pin> {
    let terms = &pv
        .spec
        .as_ref()?
        .node_affinity
        .as_ref()?
        .required
        .as_ref()?
        .node_selector_terms;
    if terms.is_empty() {
        return None;
    }
    let admitted: Vec<&Node> = nodes
        .iter()
        .filter(|n| terms.iter().any(|t| term_matches(t, n)))
        .collect();
    if admitted.is_empty() {
        let named = named_nodes(terms);
        if named.is_empty() {
            return None;
        }
        let nodes = named.into_iter().map(|n| (n, "gone".to_string())).collect();
        return Some(Pin { nodes, since: None });
    }
    unavailable(&admitted)
}

/// The pin of a claim not bound yet whose selected node is unavailable.
fn pinned_by_selection(claim: &PersistentVolumeClaim, nodes: &[Node]) -> Option<Pin> {
    let selected = claim.metadata.annotations.as_ref()?.get(SELECTED_NODE)?;
    match nodes
        .iter()
        .find(|n| n.metadata.name.as_deref() == Some(selected))
    {
        Some(n) => unavailable(&[n]),
        None => Some(Pin {
            nodes: vec![(selected.clone(), "gone".into())],
            since: None,
        }),
    }
}

/// The pin of `admitted` when every one of them is unavailable.
fn unavailable(admitted: &[&Node]) -> Option<Pin> {
    let mut out = Vec::new();
    let mut since = None;
    for n in admitted {
        let (state, went) = node_state(n)?;
        since = match (since, went) {
            (Some(a), Some(b)) => Some(std::cmp::min(a, b)),
            (a, b) => a.or(b),
        };
        out.push((n.metadata.name.clone().unwrap_or_default(), state));
    }
    Some(Pin { nodes: out, since })
}

/// Why `node` cannot run a pod, and since when it is not ready (`None`: it can).
fn node_state(node: &Node) -> Option<(String, Option<chrono::DateTime<chrono::Utc>>)> {
    let ready = node
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|c| c.iter().find(|c| c.type_ == "Ready"));
    let not_ready = ready.is_none_or(|c| c.status != "True");
    let cordoned = node
        .spec
        .as_ref()
        .and_then(|s| s.unschedulable)
        .unwrap_or(false);
    let since = ready
        .filter(|_| not_ready)
        .and_then(|c| c.last_transition_time.as_ref())
        .and_then(time);
    match (not_ready, cordoned) {
        (false, false) => None,
        (true, false) => Some(("NotReady".into(), since)),
        (false, true) => Some(("cordoned".into(), None)),
        (true, true) => Some(("NotReady and cordoned".into(), since)),
    }
}

/// Whether `node` passes a node selector term (its expressions on labels and fields all
/// hold; a term with neither admits no node, as the API defines it).
fn term_matches(term: &NodeSelectorTerm, node: &Node) -> bool {
    let exprs = term.match_expressions.as_deref().unwrap_or_default();
    let fields = term.match_fields.as_deref().unwrap_or_default();
    if exprs.is_empty() && fields.is_empty() {
        return false;
    }
    let labels = node.metadata.labels.clone().unwrap_or_default();
    let name = node.metadata.name.clone().unwrap_or_default();
    exprs
        .iter()
        .all(|r| requirement_holds(r, labels.get(&r.key).map(String::as_str)))
        && fields.iter().all(|r| {
            let value = (r.key == "metadata.name").then_some(name.as_str());
            requirement_holds(r, value)
        })
}

/// Whether one requirement holds for a label's `value` (`None`: the node lacks it).
fn requirement_holds(r: &NodeSelectorRequirement, value: Option<&str>) -> bool {
    let values = r.values.as_deref().unwrap_or_default();
    let number = |v: &str| v.parse::<i64>().ok();
    match r.operator.as_str() {
        "In" => value.is_some_and(|v| values.iter().any(|x| x == v)),
        "NotIn" => value.is_none_or(|v| values.iter().all(|x| x != v)),
        "Exists" => value.is_some(),
        "DoesNotExist" => value.is_none(),
        "Gt" | "Lt" => {
            let (Some(v), Some(bound)) = (
                value.and_then(number),
                values.first().and_then(|b| number(b)),
            ) else {
                return false;
            };
            if r.operator == "Gt" {
                v > bound
            } else {
                v < bound
            }
        }
        _ => false,
    }
}

/// The node names the terms pin to by name (`kubernetes.io/hostname In`, `metadata.name
/// In`): what a volume whose nodes are all gone was pinned to.
fn named_nodes(terms: &[NodeSelectorTerm]) -> Vec<String> {
    let mut out: Vec<String> = terms
        .iter()
        .flat_map(|t| {
            let exprs = t.match_expressions.iter().flatten();
            let fields = t.match_fields.iter().flatten();
            exprs
                .filter(|r| r.key == HOSTNAME)
                .chain(fields.filter(|r| r.key == "metadata.name"))
                .filter(|r| r.operator == "In")
                .flat_map(|r| r.values.iter().flatten().cloned())
        })
        .collect();
    out.sort();
    out.dedup();
    out
}

/// How a volume is provided: its storage class, else its CSI driver, else its source.
fn provider(pv: &PersistentVolume) -> String {
    let Some(spec) = pv.spec.as_ref() else {
        return "?".into();
    };
    if let Some(c) = spec.storage_class_name.as_deref().filter(|c| !c.is_empty()) {
        return c.to_string();
    }
    if let Some(csi) = &spec.csi {
        return csi.driver.clone();
    }
    match (&spec.local, &spec.host_path) {
        (Some(_), _) => "local".into(),
        (_, Some(_)) => "hostPath".into(),
        _ => "?".into(),
    }
}

/// What holds `pod`: its claim `claim` (bound to `pv`) pinned to `pin`'s nodes.
fn describe(pod: &Pod, claim: &str, pv: Option<&PersistentVolume>, pin: &Pin) -> Held {
    let nodes: Vec<String> = pin
        .nodes
        .iter()
        .map(|(n, state)| match pin.since {
            Some(t) if state.starts_with("NotReady") => {
                format!("{n} ({state} since {})", t.format("%H:%M UTC"))
            }
            _ => format!("{n} ({state})"),
        })
        .collect();
    let volume = match pv {
        Some(pv) => format!(
            "claim {claim} (PV {}, {})",
            pv.metadata.name.as_deref().unwrap_or("?"),
            provider(pv)
        ),
        None => format!("claim {claim} (not bound, its node selected by the scheduler)"),
    };
    let plural = if nodes.len() == 1 { "" } else { "s" };
    Held {
        pod: key(&pod.metadata),
        claim: claim.to_string(),
        volume: pv.and_then(|p| p.metadata.name.clone()),
        text: format!("{volume} is pinned to node{plural} {}", nodes.join(", ")),
        node: match pin.nodes.as_slice() {
            [(n, _)] => Some(n.clone()),
            _ => None,
        },
    }
}

/// The pod's fact with what holds it: first in its detail (so no truncation loses it),
/// the claim and volume in its labels, and the node as its host when it has none (a pod
/// waiting for its volume's node is about that node).
fn add(f: &mut Fact, h: &Held) {
    let detail = match f.detail.take() {
        Some(d) => format!("{}; {d}", h.text),
        None => h.text.clone(),
    };
    *f = f.clone().detail(detail);
    f.entity
        .labels
        .insert("persistentvolumeclaim".into(), h.claim.clone());
    if let Some(v) = &h.volume {
        f.entity.labels.insert("persistentvolume".into(), v.clone());
    }
    if f.entity.host.is_none() {
        f.entity.host = h.node.clone();
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn node(name: &str, zone: &str) -> Node {
        serde_json::from_value(json!({"metadata": {"name": name,
            "labels": {HOSTNAME: name, "topology.kubernetes.io/zone": zone, "disk-gen": "3"}}}))
        .unwrap()
    }

    fn term(v: serde_json::Value) -> NodeSelectorTerm {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn node_selector_terms_follow_the_api_operators() {
        let n = node("w2", "a");
        let t = |v| term_matches(&term(v), &n);
        assert!(t(
            json!({"matchExpressions": [{"key": HOSTNAME, "operator": "In", "values": ["w2"]}]})
        ));
        assert!(!t(
            json!({"matchExpressions": [{"key": HOSTNAME, "operator": "In", "values": ["w1"]}]})
        ));
        assert!(t(
            json!({"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["w2"]}]})
        ));
        assert!(t(json!({"matchExpressions": [
            {"key": "topology.kubernetes.io/zone", "operator": "NotIn", "values": ["b"]},
            {"key": "disk-gen", "operator": "Gt", "values": ["2"]},
            {"key": "gpu", "operator": "DoesNotExist"}]})));
        assert!(!t(
            json!({"matchExpressions": [{"key": "disk-gen", "operator": "Lt", "values": ["3"]}]})
        ));
        assert!(!t(json!({})), "an empty term admits no node");
        let named = named_nodes(&[term(
            json!({"matchExpressions": [{"key": HOSTNAME, "operator": "In", "values": ["w9", "w8"]}]}),
        )]);
        assert_eq!(named, ["w8", "w9"]);
    }
}
