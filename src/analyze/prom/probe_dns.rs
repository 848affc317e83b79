//! `probe_dns`: DNS lookups slow on many blackbox probes at once. blackbox_exporter resolves
//! each probe's target itself and records how long it took (`probe_dns_lookup_time_seconds`);
//! when the first nameserver of the prober's resolver configuration stops answering, every
//! lookup waits for the resolver's timeout (5 s by default in glibc and Go) before the next
//! nameserver answers, so many probes of one prober jump together from milliseconds to about
//! a whole timeout (or several, one per dead nameserver and retry), and those whose module
//! times out sooner fail. One probe slow is its target's domain; many at once, at the same
//! time, is the prober's resolver. Told per prober (its `job`): how many probes, from what
//! to what, when; how many now resolve nothing (`probe_ip_protocol` 0), and a resolver
//! probed directly by a DNS module (its series `probe_dns_answer_rrs`) that fails, named.

use std::collections::{BTreeMap, HashSet};

use super::history::time_of;
use super::{Prom, by_identity, identity, selector};
use crate::analyze::{
    AnalyzeError, Analyzer, Entity, Fact, FactClass, Quantity, Scope, Severity, Source,
    human_seconds,
};
use crate::integrations::prometheus::{Labels, Sample, Series};
use async_trait::async_trait;

const NAME: &str = "probe_dns";
const LOOKUP: &str = "probe_dns_lookup_time_seconds";
/// A lookup this slow is not a cache or a nearby resolver answering.
const SLOW: f64 = 0.5;
/// How many times its usual lookup a slow one must take.
const RATIO: f64 = 10.0;
/// Points a slow run must hold (one slow lookup is a blip).
const MIN_SLOW_POINTS: usize = 2;
/// Probes of one prober that must have become slow together.
const MIN_PROBES: usize = 2;
/// How far apart their onsets may be and still be one change.
const TOGETHER_SECS: f64 = 600.0;
/// The resolver timeout of glibc's and Go's defaults (resolv.conf `options timeout:`).
const RESOLVER_TIMEOUT: f64 = 5.0;
/// Probes named in the detail.
const MAX_NAMED: usize = 4;

pub struct ProbeDns(pub Prom);

#[async_trait]
impl Analyzer for ProbeDns {
    fn name(&self) -> &'static str {
        NAME
    }

    async fn run(&self, scope: &Scope) -> Result<Vec<Fact>, AnalyzeError> {
        // The common case, nothing slow now, costs one instant query.
        if self
            .0
            .vector(&format!("{LOOKUP} >= {SLOW}"))
            .await?
            .is_empty()
        {
            return Ok(Vec::new());
        }
        let series = self.0.range(LOOKUP, scope, 120).await?;
        let unresolved = self
            .0
            .vector("probe_ip_protocol == 0 and probe_success == 0")
            .await
            .map(by_identity)
            .unwrap_or_default();
        let failing_resolvers = self
            .0
            .vector("probe_success == 0 and probe_dns_answer_rrs")
            .await
            .unwrap_or_default();
        let unresolved: HashSet<Labels> = unresolved.into_keys().collect();
        Ok(groups(&series)
            .into_iter()
            .map(|g| fact(&g, &unresolved, &failing_resolvers))
            .collect())
    }
}

/// One probe whose lookups became slow: when, from what, to what.
#[derive(Clone, Debug, PartialEq)]
pub struct Slowed {
    pub labels: Labels,
    /// Unix seconds of the first slow point of the last slow run.
    pub onset: f64,
    pub before: f64,
    pub after: f64,
}

/// The probes of one prober (`job`) that became slow together, and how many it runs.
#[derive(Clone, Debug, PartialEq)]
pub struct Group {
    pub job: String,
    pub probes: Vec<Slowed>,
    pub of: usize,
}

fn median(mut v: Vec<f64>) -> Option<f64> {
    v.retain(|x| x.is_finite());
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied()
}

/// When `values` (a lookup-time history) became slow and stayed so: its last run of slow
/// points, with the usual lookup before it; `None` when it is fast now, or was never fast.
pub fn slowed(labels: &Labels, values: &[(f64, f64)]) -> Option<Slowed> {
    let fast = |v: f64| v.is_finite() && v < SLOW;
    let last_fast = values.iter().rposition(|(_, v)| fast(*v))?;
    let tail = values.get(last_fast + 1..)?;
    if tail.len() < MIN_SLOW_POINTS {
        return None;
    }
    let before = median(values[..=last_fast].iter().map(|(_, v)| *v).collect())?;
    let after = median(tail.iter().map(|(_, v)| *v).collect())?;
    let onset = tail.first()?.0;
    (after >= SLOW && after >= RATIO * before.max(0.0)).then(|| Slowed {
        labels: identity(labels),
        onset,
        before,
        after,
    })
}

/// The probers whose probes' lookups became slow together: per `job`, the probes whose
/// onsets lie within [`TOGETHER_SECS`] of the median onset, when there are enough.
pub fn groups(series: &[Series]) -> Vec<Group> {
    let mut by_job: BTreeMap<String, (Vec<Slowed>, usize)> = BTreeMap::new();
    for s in series {
        let job = s.metric.get("job").cloned().unwrap_or_default();
        let entry = by_job.entry(job).or_default();
        entry.1 += 1;
        entry.0.extend(slowed(&s.metric, &s.values));
    }
    let mut out = Vec::new();
    for (job, (mut slow, of)) in by_job {
        let Some(mid) = median(slow.iter().map(|s| s.onset).collect()) else {
            continue;
        };
        slow.retain(|s| (s.onset - mid).abs() <= TOGETHER_SECS);
        if slow.len() >= MIN_PROBES {
            slow.sort_by(|a, b| a.onset.total_cmp(&b.onset));
            out.push(Group {
                job,
                probes: slow,
                of,
            });
        }
    }
    out
}

/// "about one resolver timeout" when `secs` is near a whole number of 5 s timeouts.
fn timeouts(secs: f64) -> Option<String> {
    let n = (secs / RESOLVER_TIMEOUT).round();
    if n < 1.0 || (secs - n * RESOLVER_TIMEOUT).abs() > 0.1 * RESOLVER_TIMEOUT {
        return None;
    }
    Some(match n as u64 {
        1 => "about one resolver timeout of 5 s".to_string(),
        n => format!("about {n} resolver timeouts of 5 s"),
    })
}

/// A lookup's time as a person compares them: "3 ms", "5.0 s" (a timeout's tenths kept).
fn lookup_text(secs: f64) -> String {
    match secs >= 1.0 {
        true => format!("{secs:.1} s"),
        false => human_seconds(secs),
    }
}

/// The fact of group `g`, with the probes that resolve nothing now and the resolvers a DNS
/// module probes directly that fail.
pub fn fact(g: &Group, unresolved: &HashSet<Labels>, failing_resolvers: &[Sample]) -> Fact {
    let n = g.probes.len();
    let before = median(g.probes.iter().map(|p| p.before).collect()).unwrap_or_default();
    let after = median(g.probes.iter().map(|p| p.after).collect()).unwrap_or_default();
    let onset = g.probes.first().map_or(0.0, |p| p.onset);
    let at = time_of(onset);
    let when = at.map_or_else(
        || "?".into(),
        |t| t.format("%Y-%m-%d %H:%M UTC").to_string(),
    );
    let why = match timeouts(after) {
        Some(t) => format!(
            "{t}: the resolver the prober uses first is not answering (a resolver timeout, \
             then the next one)"
        ),
        None => "all at once: the prober's resolver, not the targets' domains".to_string(),
    };
    let mut detail = format!(
        "DNS lookups on {n} of {} probes of job {} went from {} to {} at {when}; {why}",
        g.of,
        g.job,
        lookup_text(before),
        lookup_text(after),
    );
    let failing = g
        .probes
        .iter()
        .filter(|p| unresolved.contains(&p.labels))
        .count();
    if failing > 0 {
        detail.push_str(&format!(
            "; {failing} of them now resolve no address (probe_ip_protocol 0) and fail"
        ));
    }
    let mut related = Vec::new();
    for r in failing_resolvers {
        let Some(target) = r.metric.get("instance").filter(|t| !t.is_empty()) else {
            continue;
        };
        let module = r
            .metric
            .get("module")
            .map_or(String::new(), |m| format!(" (module {m})"));
        detail.push_str(&format!(
            "; the resolver {target} probed directly{module} fails (probe_success 0)"
        ));
        related.push(
            Entity::new("resolver", target.clone())
                .on_host(Some(crate::analyze::host_of(target)))
                .with_labels(super::labels_map(&r.metric)),
        );
    }
    let names: Vec<String> = g
        .probes
        .iter()
        .take(MAX_NAMED)
        .map(|p| {
            p.labels
                .get("instance")
                .cloned()
                .unwrap_or_else(|| "?".into())
        })
        .collect();
    detail.push_str(&format!("; probes {}", names.join(", ")));
    if n > MAX_NAMED {
        detail.push_str(&format!(" (+{} more)", n - MAX_NAMED));
    }
    let severity = match failing > 0 || !related.is_empty() {
        true => Severity::Critical,
        false => Severity::Warning,
    };
    let query = format!("{LOOKUP}{}", selector([("job", g.job.as_str())]));
    let mut f = Fact::new(
        FactClass::Availability,
        NAME,
        Entity::new("prober", format!("job {}", g.job))
            .with_labels(BTreeMap::from([("job".to_string(), g.job.clone())])),
        "DNS lookups slow on many probes at once",
        severity,
        Source::promql(&query),
    )
    .value(Quantity::seconds(after))
    .since(at)
    .figure("probes_slow", Quantity::count(n as f64))
    .figure("probes_of_prober", Quantity::count(g.of as f64))
    .figure("lookup_before", Quantity::seconds(before))
    .figure("lookup_after", Quantity::seconds(after))
    .detail(detail);
    for e in related {
        f = f.related(e);
    }
    f
}

#[cfg(test)]
mod tests;
