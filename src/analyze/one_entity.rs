//! Two states of one entity, told as one fact. Analyzers each see one side of a thing: a
//! process group's count jumping (runs piling up) and its resident memory growing, a
//! filesystem's step and its being full, a pod's restarts and its OOM kill. Ranked apart,
//! the symptom a small model knows best (memory) wins a slot and the state that began
//! first, its cause, loses it or is read as a separate problem. Told as one, the state that
//! began first leads and the later one follows as what came of it ("then resident memory
//! 3.4 GiB …, since 03:56").
//!
//! Only states found by two analyzers are joined: a warning or worse, not read from logs
//! (those are joined by [`super::logs`]), no context summaries and no changes (a rollout,
//! a reboot: events, told on their own), on the same entity (kind, name, host, and labels
//! that do not disagree). A host or a node has many states that are not one story (its
//! CPU, its clock, its conntrack table): they stay apart. Nothing is read.

use chrono::{DateTime, Utc};

use super::{Fact, FactClass, Severity};
use crate::text::truncate;

/// Characters of a joined state's own words added to the one kept.
const THEN_CHARS: usize = 160;
/// Most states joined to one.
const MAX_JOINED: usize = 2;

/// `facts` with the states of one entity joined into the one that began first, in its place.
pub fn join_same_entity(facts: Vec<Fact>) -> Vec<Fact> {
    let mut out: Vec<Fact> = Vec::with_capacity(facts.len());
    let mut joined: Vec<Vec<Fact>> = Vec::new();
    for f in facts {
        match out.iter().position(|k| one_entity(k, &f)) {
            Some(i) if joined[i].len() < MAX_JOINED => joined[i].push(f),
            _ => {
                out.push(f);
                joined.push(Vec::new());
            }
        }
    }
    out.into_iter()
        .zip(joined)
        .map(|(first, rest)| tell_together(first, rest))
        .collect()
}

/// Whether `a` and `b` are states of one entity.
fn one_entity(a: &Fact, b: &Fact) -> bool {
    let (ea, eb) = (&a.entity, &b.entity);
    is_state(a)
        && is_state(b)
        && a.analyzer != b.analyzer
        && !matches!(ea.kind.as_str(), "host" | "node")
        && ea.kind == eb.kind
        && ea.name == eb.name
        && ea.host == eb.host
        && ea
            .labels
            .iter()
            .all(|(k, v)| eb.labels.get(k).is_none_or(|w| w == v))
}

fn is_state(f: &Fact) -> bool {
    f.severity >= Severity::Warning
        && !matches!(
            f.class,
            FactClass::Logs | FactClass::Context | FactClass::Change
        )
        && f.source.tool != "loki_query"
}

/// The state that began first (one with a start before one without), with the others'
/// figures after it.
fn tell_together(first: Fact, rest: Vec<Fact>) -> Fact {
    if rest.is_empty() {
        return first;
    }
    let mut all = Vec::with_capacity(rest.len() + 1);
    all.push(first);
    all.extend(rest);
    let key = |f: &Fact| (f.since.is_none(), f.since);
    let lead = (0..all.len()).min_by_key(|i| key(&all[*i])).unwrap_or(0);
    let mut kept = all.remove(lead);
    let mut then: Vec<String> = Vec::new();
    for f in &all {
        kept.severity = kept.severity.max(f.severity);
        if kept.eta_seconds.is_none() && f.eta_seconds.is_some() {
            kept.eta_seconds = f.eta_seconds;
            kept.eta_what.clone_from(&f.eta_what);
        }
        for (k, v) in &f.entity.labels {
            kept.entity
                .labels
                .entry(k.clone())
                .or_insert_with(|| v.clone());
        }
        let since = f.since.map(minute).map(|t| format!(" (since {t})"));
        let detail = f.detail.as_deref().map(|d| format!(": {d}"));
        then.push(truncate(
            &format!(
                "then {}{}{}",
                f.headline(),
                since.unwrap_or_default(),
                detail.unwrap_or_default()
            ),
            THEN_CHARS,
        ));
    }
    let own = kept
        .detail
        .take()
        .map(|d| format!("; {d}"))
        .unwrap_or_default();
    // The joined figures go first: the kept detail gives way at its end if it must.
    kept.detail(format!("{}{own}", then.join("; ")))
}

fn minute(t: DateTime<Utc>) -> String {
    t.format("%H:%M UTC").to_string()
}

#[cfg(test)]
mod tests {
    use chrono::TimeDelta;

    use super::*;
    use crate::analyze::{Entity, Quantity, Source};

    fn at(m: i64) -> DateTime<Utc> {
        DateTime::<Utc>::UNIX_EPOCH + TimeDelta::minutes(1000 + m)
    }

    fn state(kind: &str, name: &str, what: &str, since: Option<i64>, sev: Severity) -> Fact {
        Fact::new(
            FactClass::Exhaustion,
            what,
            Entity::new(kind, name).on_host(Some("h1".into())),
            what,
            sev,
            Source::promql("x"),
        )
        .value(Quantity::count(3.0))
        .since(since.map(at))
        .detail(format!("{what} detail"))
    }

    #[test]
    fn the_state_that_began_first_leads_and_the_later_follows() {
        let facts = vec![
            state(
                "process",
                "sync",
                "resident memory",
                Some(140),
                Severity::Warning,
            ),
            state("host", "h1", "memory used", Some(100), Severity::Critical),
            state(
                "process",
                "sync",
                "processes running at once",
                Some(10),
                Severity::Warning,
            ),
            state(
                "process",
                "other",
                "resident memory",
                Some(10),
                Severity::Warning,
            ),
        ];
        let out = join_same_entity(facts);
        assert_eq!(out.len(), 3, "{out:?}");
        let p = &out[0];
        assert_eq!(p.what, "processes running at once");
        assert_eq!(p.since, Some(at(10)));
        let d = p.detail.as_deref().unwrap();
        assert!(
            d.starts_with(
                "then resident memory 3 (since 19:00 UTC): resident memory detail; processes running"
            ),
            "{d}"
        );
        assert_eq!(out[1].entity.name, "h1");
        assert_eq!(out[2].entity.name, "other");
    }

    #[test]
    fn logs_context_infos_disagreeing_labels_hosts_and_one_analyzers_states_stay_apart() {
        let mut log = state("process", "sync", "error lines", Some(5), Severity::Warning);
        log.class = FactClass::Logs;
        let info = state("process", "sync", "cpu", Some(5), Severity::Info);
        let mut a = state(
            "process",
            "sync",
            "resident memory",
            Some(5),
            Severity::Warning,
        );
        a.entity.labels.insert("instance".into(), "h1:9256".into());
        let mut b = state("process", "sync", "count", Some(9), Severity::Warning);
        b.entity.labels.insert("instance".into(), "h1:9999".into());
        let mut cpu = state("host", "h1", "cpu busy", Some(5), Severity::Warning);
        let clock = state("host", "h1", "clock", Some(5), Severity::Warning);
        cpu.entity.name = "h1".into();
        let mut one = state("disk", "sdb", "faulted", Some(5), Severity::Warning);
        let mut two = state("disk", "sdb", "smart failed", Some(6), Severity::Warning);
        (one.analyzer, two.analyzer) = ("pools".into(), "pools".into());
        let out = join_same_entity(vec![log, info, a, b, cpu, clock, one, two]);
        assert_eq!(out.len(), 8);
        assert!(
            out.iter()
                .all(|f| !f.detail.as_deref().unwrap().contains("then"))
        );
    }
}
