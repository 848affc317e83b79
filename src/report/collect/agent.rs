//! Agent activity: the week's investigations by trigger and status (Prometheus counters when
//! configured, as they outlive store retention; else the store), the top findings from the
//! store, and tool usage (calls and errors per tool) from Prometheus.

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
    let Some(prom) = &ctx.sources.prometheus else {
        match &store {
            Some(list) => {
                for i in list {
                    let key = format!("{}/{}", i.trigger.as_str(), i.status.as_str());
                    *data.by_trigger_status.entry(key).or_default() += 1.0;
                }
                data.investigations = list.len() as f64;
            }
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
    match inv {
        Ok(v) => {
            for Sample {
                metric: l,
                value: n,
                ..
            } in v
            {
                let key = format!(
                    "{}/{}",
                    l.get("trigger").map_or("?", String::as_str),
                    l.get("status").map_or("?", String::as_str)
                );
                *data.by_trigger_status.entry(key).or_default() += n.round();
            }
            data.by_trigger_status.retain(|_, n| *n > 0.0);
            data.investigations = total(data.by_trigger_status.values().copied());
            // Investigations run in-process (`sre-agent ask` without a daemon) or before a
            // counter reset are in the store but not in Prometheus: count the fuller source.
            if let Some(list) = store
                .as_ref()
                .filter(|l| l.len() as f64 > data.investigations)
            {
                data.by_trigger_status.clear();
                for i in list {
                    let key = format!("{}/{}", i.trigger.as_str(), i.status.as_str());
                    *data.by_trigger_status.entry(key).or_default() += 1.0;
                }
                data.investigations = list.len() as f64;
            }
        }
        Err(e) => notes.push(e.to_string()),
    }
    match tools {
        Ok(v) => {
            let mut by_tool: BTreeMap<String, ToolUsage> = BTreeMap::new();
            for Sample {
                metric: l,
                value: n,
                ..
            } in v
            {
                let tool = l.get("tool").cloned().unwrap_or_default();
                let u = by_tool.entry(tool.clone()).or_insert_with(|| ToolUsage {
                    tool,
                    ..ToolUsage::default()
                });
                u.calls += n.round();
                if l.get("status").is_some_and(|s| s != "ok") {
                    u.errors += n.round();
                }
            }
            data.tools = by_tool.into_values().filter(|u| u.calls > 0.0).collect();
            data.tools.sort_by(|a, b| b.calls.total_cmp(&a.calls));
        }
        Err(e) => notes.push(e.to_string()),
    }
    Section { data, notes }
}
