//! Agent activity: the week's investigations by trigger and status (the fuller count of
//! sre-agent's Prometheus counters and the store, and which one it was), the top findings
//! from the store, and tool usage (calls and errors per tool) from Prometheus.

use crate::report::model::total;
use std::collections::BTreeMap;

use super::{CollectContext, not_configured};
use crate::agent::Investigation;
use crate::integrations::prometheus::Sample;
use crate::report::model::{AgentData, Section, ToolUsage};

/// The week's investigations from the store, or a note.
pub fn stored(ctx: &CollectContext) -> Result<Option<Vec<Investigation>>, String> {
    let Some(d) = &ctx.dispatcher else {
        return Ok(None);
    };
    d.between(ctx.window.start, ctx.window.end)
        .map(Some)
        .map_err(|e| format!("investigations store: {e}"))
}

fn top_findings(list: &[Investigation], n: usize) -> Vec<String> {
    let rank = |s: &str| match s.to_ascii_lowercase().as_str() {
        "critical" => 0,
        "warning" => 1,
        _ => 2,
    };
    let mut with: Vec<&Investigation> = list.iter().filter(|i| i.finding.is_some()).collect();
    with.sort_by_key(|i| {
        rank(
            &i.finding
                .as_ref()
                .map(|f| f.severity.clone())
                .unwrap_or_default(),
        )
    });
    with.iter()
        .take(n)
        .filter_map(|i| {
            let f = i.finding.as_ref()?;
            Some(format!("{} [{}]: {}", i.title, f.severity, f.summary))
        })
        .collect()
}

/// Investigations by "trigger/status", their total, and what counted them.
#[derive(Debug, PartialEq)]
struct Counted {
    by_trigger_status: BTreeMap<String, f64>,
    total: f64,
    source: &'static str,
}

impl Counted {
    fn from_store(list: &[Investigation]) -> Self {
        let mut by_trigger_status = BTreeMap::new();
        for i in list {
            let key = format!("{}/{}", i.trigger.label(), i.status.as_str());
            *by_trigger_status.entry(key).or_default() += 1.0;
        }
        Self {
            by_trigger_status,
            total: list.len() as f64,
            source: "store",
        }
    }

    /// From `sum by (trigger, status) (increase(sre_agent_investigations_total[…]))`.
    fn from_counters(samples: &[Sample]) -> Self {
        let mut by_trigger_status: BTreeMap<String, f64> = BTreeMap::new();
        for s in samples {
            let label = |name| s.metric.get(name).map_or("?", String::as_str);
            let key = format!("{}/{}", label("trigger"), label("status"));
            *by_trigger_status.entry(key).or_default() += s.value.round();
        }
        by_trigger_status.retain(|_, n| *n > 0.0);
        Self {
            total: total(by_trigger_status.values().copied()),
            by_trigger_status,
            source: "prometheus",
        }
    }

    /// The fuller count. Prometheus counters outlive store retention, but investigations
    /// run in-process (`sre-agent ask` without a daemon) or before a counter reset are
    /// only in the store.
    fn fuller(prometheus: Option<Self>, store: Option<Self>) -> Option<Self> {
        match (prometheus, store) {
            (Some(p), Some(s)) if s.total > p.total => Some(s),
            (Some(p), _) => Some(p),
            (None, s) => s,
        }
    }

    fn apply(self, data: &mut AgentData) {
        data.by_trigger_status = self.by_trigger_status;
        data.investigations = self.total;
        data.investigations_source = self.source.to_string();
    }
}

pub async fn collect(ctx: &CollectContext) -> Section<AgentData> {
    let mut data = AgentData::default();
    let mut notes = Vec::new();
    let store = match stored(ctx) {
        Ok(s) => s,
        Err(e) => {
            notes.push(e);
            None
        }
    };
    if let Some(list) = &store {
        data.top_findings = top_findings(list, 5);
    }
    let from_store = store.as_deref().map(Counted::from_store);
    let Some(prom) = &ctx.upstreams.prometheus else {
        match from_store {
            Some(c) => c.apply(&mut data),
            None => notes.push(not_configured("Prometheus", "prometheus.url")),
        }
        return Section { data, notes };
    };
    let r = ctx.range();
    let inv = format!("sum by (trigger, status) (increase(sre_agent_investigations_total[{r}]))");
    let tools = format!("sum by (tool, status) (increase(sre_agent_tool_calls_total[{r}]))");
    let at = ctx.window.end;
    let (inv, tools) = tokio::join!(
        prom.query_vector(&inv, Some(at)),
        prom.query_vector(&tools, Some(at)),
    );
    let from_counters = match inv {
        Ok(v) => Some(Counted::from_counters(&v)),
        Err(e) => {
            notes.push(e.to_string());
            None
        }
    };
    if let Some(c) = Counted::fuller(from_counters, from_store) {
        c.apply(&mut data);
    }
    match tools {
        Ok(v) => {
            let mut by_tool: BTreeMap<String, ToolUsage> = BTreeMap::new();
            for s in v {
                let tool = s.metric.get("tool").cloned().unwrap_or_default();
                let u = by_tool.entry(tool.clone()).or_insert_with(|| ToolUsage {
                    tool,
                    ..ToolUsage::default()
                });
                u.calls += s.value.round();
                if s.metric.get("status").is_some_and(|st| st != "ok") {
                    u.errors += s.value.round();
                }
            }
            data.tools = by_tool.into_values().filter(|u| u.calls > 0.0).collect();
            data.tools.sort_by(|a, b| b.calls.total_cmp(&a.calls));
        }
        Err(e) => notes.push(e.to_string()),
    }
    Section { data, notes }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::{InvestigationRequest, InvestigationStatus, Trigger};

    fn investigation(trigger: Trigger, status: InvestigationStatus) -> Investigation {
        let req = InvestigationRequest {
            trigger,
            title: "t".into(),
            prompt: "p".into(),
            context: None,
            group_key: None,
        };
        let mut i = Investigation::new(req, "m");
        i.status = status;
        i
    }

    fn sample(trigger: &str, status: &str, value: f64) -> Sample {
        Sample {
            metric: [("trigger", trigger), ("status", status)]
                .into_iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            value,
            ts: 0.0,
        }
    }

    #[test]
    fn counters_are_rounded_zero_series_dropped_and_the_source_named() {
        let c = Counted::from_counters(&[
            sample("alert", "finished", 2.9999),
            sample("ask", "failed", 0.0001),
        ]);
        assert_eq!(
            c.by_trigger_status,
            BTreeMap::from([("alert/finished".into(), 3.0)])
        );
        assert_eq!((c.total, c.source), (3.0, "prometheus"));
    }

    #[test]
    fn the_store_counts_when_it_saw_more_than_prometheus_and_says_so() {
        let list = [
            investigation(Trigger::Ask, InvestigationStatus::Finished),
            investigation(Trigger::Ask, InvestigationStatus::Finished),
        ];
        let prom = || Some(Counted::from_counters(&[sample("ask", "finished", 1.0)]));
        let store = || Some(Counted::from_store(&list));
        let c = Counted::fuller(prom(), store()).unwrap();
        assert_eq!((c.total, c.source), (2.0, "store"));
        assert_eq!(c.by_trigger_status["ask/finished"], 2.0);
        let c = Counted::fuller(prom(), Some(Counted::from_store(&list[..1]))).unwrap();
        assert_eq!(c.source, "prometheus");
        assert_eq!(Counted::fuller(None, store()).unwrap().source, "store");
        assert_eq!(Counted::fuller(None, None), None);
    }

    #[test]
    fn no_investigations_total_a_positive_zero() {
        for c in [Counted::from_counters(&[]), Counted::from_store(&[])] {
            assert!(c.total == 0.0 && c.total.is_sign_positive(), "{c:?}");
        }
    }
}
