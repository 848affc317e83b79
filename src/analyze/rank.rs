//! Relevance by entities and time, not keywords: a fact ranks high when its entity shares
//! labels or a host with the trigger, when a name in the question or in the alert's label
//! values matches its entity's name (tolerant of case, separators and one typo), when its
//! state began near the alert's start, and when it is severe. Nothing here decides what
//! runs; it orders what the sweep found.

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, Utc};

use super::{Entity, Fact, FactClass, Severity, host_of};

/// What the trigger is about, as data: labels, hosts, names and when it began.
#[derive(Clone, Debug, Default)]
pub struct Focus {
    labels: BTreeMap<String, String>,
    hosts: BTreeSet<String>,
    /// Normalised names: label values and the question's words.
    names: BTreeSet<String>,
    start: Option<DateTime<Utc>>,
    /// The span a question's trouble began in ("since yesterday": all of yesterday); an
    /// alert's start is exact.
    window: Option<(DateTime<Utc>, DateTime<Utc>)>,
    /// An alert (context facts matter less than under a question, which may compare).
    alert: bool,
    /// The metrics the alert's rule reads: a series of one of them on the trigger's
    /// entity is what fired, restated.
    measured: BTreeSet<String>,
}

/// A fact with its relevance.
#[derive(Clone, Debug)]
pub struct Ranked {
    pub fact: Fact,
    pub score: i32,
    /// Whether the fact's entity matched the trigger (labels, host or a name).
    pub about_trigger: bool,
    /// Whether its state began within the hour around the trigger's start (`None`: no
    /// start or no since to compare).
    pub near_start: Option<bool>,
}

/// What a series the alert's own rule reads loses: it restates the alert.
const RESTATED: i32 = 3;

/// How far from the trigger's start a fact's state may begin and still count as near it.
const NEAR_START_SECS: u64 = 3600;

/// Hosts shorter than this are not looked for in a fact's quoted text.
const MIN_MENTIONED_CHARS: usize = 6;

/// Names shorter than this are not matched (too many false friends: `a`, `is`, `db`).
const MIN_NAME_CHARS: usize = 3;

impl Focus {
    /// The focus of an alert with `labels` that began at `start`.
    pub fn alert(labels: &BTreeMap<String, String>, start: Option<DateTime<Utc>>) -> Self {
        let mut f = Self {
            labels: labels.clone(),
            start,
            alert: true,
            ..Default::default()
        };
        for (k, v) in labels {
            if matches!(
                k.as_str(),
                "instance" | "node" | "host" | "hostname" | "nodename"
            ) {
                f.hosts.insert(normalise(&host_of(v)));
            }
            f.add_names(v);
        }
        f
    }

    /// The focus of a question (and of the text an alert carries, for the names in it).
    pub fn question(text: &str) -> Self {
        let mut f = Self::default();
        f.add_names(text);
        f
    }

    /// Sets when the trouble began (a question's stated time) and the span it may fall in.
    pub fn began(
        mut self,
        start: Option<DateTime<Utc>>,
        window: Option<(DateTime<Utc>, DateTime<Utc>)>,
    ) -> Self {
        self.start = start;
        self.window = window;
        self
    }

    /// Sets the metrics the alert's rule reads.
    pub fn measuring(mut self, metrics: impl IntoIterator<Item = String>) -> Self {
        self.measured.extend(metrics);
        self
    }

    /// Adds the names in `text` to the focus.
    pub fn with_text(mut self, text: &str) -> Self {
        self.add_names(text);
        self
    }

    fn add_names(&mut self, text: &str) {
        let words: Vec<String> = text
            .split(|c: char| c.is_whitespace() || matches!(c, ',' | ';' | '?' | '!' | '"'))
            .map(|w| w.trim_matches(|c: char| !c.is_alphanumeric() && c != '/'))
            .filter(|w| !w.is_empty())
            .map(str::to_string)
            .collect();
        for w in &words {
            let n = normalise(w);
            if n.chars().count() >= MIN_NAME_CHARS {
                self.names.insert(n);
            }
            // `api-7f9c` also names `api`; `pve1:9100` names `pve1`.
            for part in w.split([':', '/', '.', '-', '_']) {
                let p = normalise(part);
                if p.chars().count() >= MIN_NAME_CHARS && p.chars().any(char::is_alphabetic) {
                    self.names.insert(p);
                }
            }
        }
        // "home assistant" names `homeassistant`.
        for pair in words.windows(2) {
            let joined = normalise(&format!("{}{}", pair[0], pair[1]));
            if joined.chars().count() >= 6 {
                self.names.insert(joined);
            }
        }
    }

    /// Whether `host` is one the trigger names: an alert's host label, or a word of a
    /// question or of an alert's other label values and annotations ("osd.4 on pve-yew",
    /// `device="filer:/export/media"`), exactly (normalised): the host an alert is about
    /// is often not the one its metric was scraped from.
    pub fn names_host(&self, host: &str) -> bool {
        let h = normalise(host);
        h.chars().count() >= MIN_NAME_CHARS && (self.hosts.contains(&h) || self.names.contains(&h))
    }

    /// Whether the trigger names a host (an alert's host label).
    pub fn has_hosts(&self) -> bool {
        !self.hosts.is_empty()
    }

    /// Adds `hosts` as hosts the trigger is about (those its named services run on).
    pub fn with_hosts(mut self, hosts: impl IntoIterator<Item = String>) -> Self {
        self.hosts
            .extend(hosts.into_iter().map(|h| normalise(&host_of(&h))));
        self
    }

    /// Whether the trigger is a question (not an alert).
    pub fn is_question(&self) -> bool {
        !self.alert
    }

    /// The trigger's labels (an alert's; a question has none).
    pub fn labels(&self) -> &BTreeMap<String, String> {
        &self.labels
    }

    /// The value of the trigger's label `key` (an alert's `pod`, `node`, `instance`).
    pub fn label(&self, key: &str) -> Option<&str> {
        self.labels.get(key).map(String::as_str)
    }

    pub fn start(&self) -> Option<DateTime<Utc>> {
        self.start
    }

    /// The workload an alert is about, as kube-state-metrics labels it (`statefulset`,
    /// `deployment`, `daemonset`; a `replicaset` stands for its Deployment, a `job_name`
    /// for its Job), as the label a pod's entity names its owner by, and its namespace.
    fn workload(&self) -> Option<(&'static str, String, &str)> {
        if !self.alert {
            return None;
        }
        let ns = self.label("namespace")?;
        for (key, owner) in WORKLOAD_LABELS {
            let Some(v) = self.label(key) else { continue };
            let name = match key {
                "replicaset" => crate::analyze::kube::deployment_of(v).unwrap_or(v),
                _ => v,
            };
            return Some((owner, name.to_string(), ns));
        }
        None
    }

    /// Whether `e` is a pod of the workload the alert is about: a part whose own state
    /// (waiting for a missing Secret key, crash-looping, unschedulable) says why the
    /// whole has fewer replicas than it wants, which the alert only restates.
    fn is_part(&self, e: &Entity) -> bool {
        let Some((owner, name, ns)) = self.workload() else {
            return false;
        };
        e.kind == "pod"
            && e.labels.get("namespace").map(String::as_str) == Some(ns)
            && e.labels.get(owner) == Some(&name)
    }

    /// Whether `fact`'s state began near the trigger's start.
    fn near_start(&self, fact: &Fact) -> Option<bool> {
        let (start, since) = (self.start?, fact.since?);
        Some(self.apart(start, since) <= NEAR_START_SECS)
    }

    /// Seconds between the trouble's start and `since`: from `start`, or from the span a
    /// question's words allow (0 inside it).
    fn apart(&self, start: DateTime<Utc>, since: DateTime<Utc>) -> u64 {
        let secs = |d: chrono::TimeDelta| d.num_seconds().unsigned_abs();
        match self.window {
            Some((from, _)) if since < from => secs(from - since),
            Some((_, to)) if since > to => secs(since - to),
            Some(_) => 0,
            None => secs(since - start),
        }
    }

    /// Whether `entity` is the trigger's: it shares a label with it, or its host or its
    /// name is one the trigger names.
    pub fn is_about(&self, entity: &Entity) -> bool {
        let (shared, host_hit, name_hit) = self.matches(entity);
        shared > 0 || host_hit || name_hit
    }

    /// [`Focus::matches`] over the fact's entity and the entities it names besides
    /// (`Fact::related`): the most labels any of them shares, and whether any host or
    /// name matched.
    fn matches_fact(&self, fact: &Fact) -> (i32, bool, bool) {
        std::iter::once(&fact.entity)
            .chain(&fact.related)
            .map(|e| self.matches(e))
            .fold((0, false, false), |(s, h, n), (s2, h2, n2)| {
                (s.max(s2), h || h2, n || n2)
            })
    }

    /// Whether `e` is another container or process than the one the trigger names, on the
    /// same exporter (cAdvisor's `name`, process-exporter's `groupname`): it shares the
    /// target's `instance` and `job` and the host, which say nothing about it.
    fn is_sibling(&self, e: &Entity) -> bool {
        matches!(e.kind.as_str(), "container" | "process")
            && SIBLING_KEYS.iter().any(
                |k| matches!((e.labels.get(*k), self.labels.get(*k)), (Some(a), Some(b)) if a != b),
            )
    }

    /// Labels `e` shares with the trigger, and whether its host and its name matched (a
    /// sibling of the trigger's container or process: none).
    fn matches(&self, e: &Entity) -> (i32, bool, bool) {
        if self.is_sibling(e) {
            return (0, false, false);
        }
        let shared = e
            .labels
            .iter()
            .filter(|(k, v)| self.labels.get(*k) == Some(*v))
            .count() as i32;
        let host = e.host.as_deref().map(normalise);
        let host_hit = host
            .as_ref()
            .is_some_and(|h| self.hosts.contains(h) || self.names.iter().any(|n| similar(n, h)));
        let name_hit = entity_names(&e.name)
            .iter()
            .any(|n| self.names.iter().any(|m| similar(m, n)));
        (shared, host_hit, name_hit)
    }

    /// Whether a name of the trigger matches one of `e`'s label values among `distinct`.
    fn names_label_of(&self, e: &Entity, distinct: &BTreeSet<String>) -> bool {
        label_names(e)
            .iter()
            .filter(|n| distinct.contains(*n))
            .any(|n| self.names.iter().any(|m| similar(m, n)))
    }

    /// Whether a word of the trigger (four letters or more) is a word of `what`.
    fn describes(&self, what: &str) -> bool {
        what.split(|c: char| !c.is_alphanumeric())
            .map(normalise)
            .filter(|w| w.chars().count() >= 4 && w.chars().any(char::is_alphabetic))
            .any(|w| self.names.iter().any(|n| similar(n, &w)))
    }

    /// Whether `text` names one of the alert's hosts (six characters or more, so that
    /// `db1` or `nas` do not match every line).
    fn mentioned_in(&self, text: Option<&str>) -> bool {
        let Some(text) = text else { return false };
        let text = normalise(text);
        self.hosts
            .iter()
            .any(|h| h.chars().count() >= MIN_MENTIONED_CHARS && text.contains(h.as_str()))
    }

    /// Whether `text` quotes the alert's very instance, port and all (`crowsnest:9090`,
    /// not only its host): a fact about something else that acted on the trigger's
    /// entity (the scrape target whose series filled the alerting Prometheus).
    fn quotes_instance(&self, text: Option<&str>) -> bool {
        let (Some(text), Some(i)) = (text, self.labels.get("instance")) else {
            return false;
        };
        i.contains(':') && i.chars().count() >= MIN_MENTIONED_CHARS && text.contains(i.as_str())
    }

    /// How relevant `fact` is, and whether its entity matched.
    fn score(&self, fact: &Fact) -> (i32, bool) {
        let mut score = 0;
        let (shared, host_hit, name_hit) = self.matches_fact(fact);
        score += 4 * shared.min(3);
        // The entity is the trigger's by its host or its name: counted once (a host's
        // name is its host).
        if host_hit || name_hit {
            score += 6;
        }
        // One event on several hosts, the trigger's among them (a flood on their shared
        // network): above the trigger's own series of it, which only restate it.
        if host_hit && fact.entity.host.is_none() && hosts_named(&fact.related) >= 2 {
            score += 1;
        }
        score += match fact.severity {
            Severity::Critical => 3,
            Severity::Warning => 2,
            Severity::Info => 0,
        };
        if let (Some(start), Some(since)) = (self.start, fact.since) {
            let apart = self.apart(start, since);
            // A state that began with the alert is the strongest sign of its cause,
            // wherever it is (an application's alert, its database's disk).
            score += match apart {
                0..=600 => 4,
                601..=3600 => 1,
                _ => 0,
            };
        }
        if fact.eta_seconds.is_some_and(|s| s < 86400.0) {
            score += 1;
        }
        // The trigger's words in what the fact measures ("which host is the busiest?" and
        // "busiest CPU of 4 hosts"): a tie-breaker among facts no name singles out.
        if self.describes(&fact.what) {
            score += 2;
        }
        // What the fact quotes (a log line, an event) names the alert's host: a proxy's
        // log about the virtual host whose certificate expires, a database's about its
        // client. Weaker than being about it.
        if !(host_hit || shared > 0) && self.mentioned_in(fact.detail.as_deref()) {
            score += 3;
            // Naming the alert's instance itself is as close as being on its host.
            if self.quotes_instance(fact.detail.as_deref()) {
                score += 3;
            }
        }
        if fact.class == FactClass::Context {
            score -= if self.alert { 4 } else { 2 };
        }
        // The very series the rule reads, on the trigger's entity, says what the alert
        // says: below a fact that says more about it (the process behind a load, the pod
        // behind a replica count), still above what is about something else.
        if fact.entity.kind == "series" && self.measured.contains(&fact.entity.name) {
            score -= RESTATED;
        }
        (score, shared > 0 || host_hit || name_hit)
    }
}

/// `facts` ordered by relevance to `focus` (ties: more severe first, then a state that
/// began at a known time before a standing one — a filesystem full since 02:18 before one
/// flat at 97 % for days — then sweep order).
pub fn rank(facts: Vec<Fact>, focus: &Focus) -> Vec<Ranked> {
    let distinct = distinctive_values(&facts);
    let mut ranked: Vec<Ranked> = facts
        .into_iter()
        .map(|fact| {
            let (mut score, mut about_trigger) = focus.score(&fact);
            // A question's name that matches a label value only this entity (or one other)
            // carries names what the fact is about: the replication task, queue or dataset
            // an appliance's alert or a series is of, whatever the entity is called.
            if !about_trigger
                && focus.is_question()
                && focus.names_label_of(&fact.entity, &distinct)
            {
                score += 6;
                about_trigger = true;
            }
            let near_start = focus.near_start(&fact);
            Ranked {
                fact,
                score,
                about_trigger,
                near_start,
            }
        })
        .collect();
    lift_parts(&mut ranked, focus);
    ranked.sort_by(|a, b| {
        b.score
            .cmp(&a.score)
            .then(b.fact.severity.cmp(&a.fact.severity))
            .then(b.fact.since.is_some().cmp(&a.fact.since.is_some()))
    });
    ranked
}

/// How many distinct hosts `entities` are on.
fn hosts_named(entities: &[Entity]) -> usize {
    let hosts: BTreeSet<&str> = entities.iter().filter_map(|e| e.host.as_deref()).collect();
    hosts.len()
}

/// The labels that tell one container or process from another on one exporter (Docker's
/// cAdvisor `name`, process-exporter's `groupname`). Not `pod` nor `container`: under the
/// Prometheus operator an alert carries those of the scrape target (kube-state-metrics'
/// own pod), not of what it is about.
const SIBLING_KEYS: [&str; 2] = ["name", "groupname"];

/// The labels kube-state-metrics names a workload by in an alert, and the label a pod's
/// entity names its owner of that kind by.
const WORKLOAD_LABELS: [(&str, &str); 5] = [
    ("statefulset", "statefulset"),
    ("deployment", "deployment"),
    ("daemonset", "daemonset"),
    ("replicaset", "deployment"),
    ("job_name", "job"),
];

/// An alert on a workload (replicas mismatched, a rollout stuck, a job failed) restates
/// the whole; the cause is in its pods' states. The facts about its pods rank just above
/// the best other fact about the trigger, so the first fact the model reads is the one
/// that explains, not the one that repeats the alert.
fn lift_parts(ranked: &mut [Ranked], focus: &Focus) {
    let is_part = |r: &Ranked| r.fact.class != FactClass::Context && focus.is_part(&r.fact.entity);
    if !ranked.iter().any(is_part) {
        return;
    }
    let Some(best) = ranked
        .iter()
        .filter(|r| r.about_trigger && !is_part(r))
        .map(|r| r.score)
        .max()
    else {
        return;
    };
    for r in ranked.iter_mut() {
        if is_part(r) && r.score <= best {
            r.score = best + 1;
            r.about_trigger = true;
        }
    }
}

/// The names label values give (the whole value and its parts, as `entity_names`) that at
/// most [`MAX_ENTITIES_PER_VALUE`] entities among `facts` carry: a value many entities
/// share (`job=node`, `level=CRITICAL`, `mode=user`) singles none out.
fn distinctive_values(facts: &[Fact]) -> BTreeSet<String> {
    let mut carriers: BTreeMap<String, BTreeSet<EntityId>> = BTreeMap::new();
    for f in facts {
        let e = &f.entity;
        let id = (e.kind.as_str(), e.name.as_str(), e.host.as_deref());
        for n in label_names(e) {
            carriers.entry(n).or_default().insert(id);
        }
    }
    carriers
        .into_iter()
        .filter(|(_, ids)| ids.len() <= MAX_ENTITIES_PER_VALUE)
        .map(|(n, _)| n)
        .collect()
}

/// An entity told apart from others: its kind, name and host.
type EntityId<'a> = (&'a str, &'a str, Option<&'a str>);

/// How many entities may share a label value that still names them.
const MAX_ENTITIES_PER_VALUE: usize = 2;

/// The names an entity's label values give (not its metric name: that is what it measures).
fn label_names(e: &Entity) -> BTreeSet<String> {
    e.labels
        .iter()
        .filter(|(k, _)| k.as_str() != "__name__")
        .flat_map(|(_, v)| entity_names(v))
        .collect()
}

mod names;
#[cfg(test)]
use names::edit_distance;
use names::{entity_names, normalise, similar};

#[cfg(test)]
mod tests;
