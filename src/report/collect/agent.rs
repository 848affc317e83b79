//! Agent activity: the week's investigations by trigger and status, and tool usage
//! (calls and errors per tool), from sre-agent's own counters in Prometheus.

use std::collections::BTreeMap;

use super::{CollectContext, not_configured};
use crate::report::model::{AgentData, Section, ToolUsage};
use crate::report::sources;

pub async fn collect(ctx: &CollectContext) -> Section<AgentData> {
    let Some(prom) = &ctx.sources.prometheus else {
        return Section::failed(not_configured("Prometheus", "prometheus.url"));
    };
    let r = ctx.range();
    let inv = format!("sum by (trigger, status) (increase(sre_agent_investigations_total[{r}]))");
    let tools = format!("sum by (tool, status) (increase(sre_agent_tool_calls_total[{r}]))");
    let at = ctx.window.end;
    let (inv, tools) = tokio::join!(
        sources::instant(prom, "api/v1", &inv, at),
        sources::instant(prom, "api/v1", &tools, at),
    );
    let mut data = AgentData::default();
    let mut notes = Vec::new();
    match inv {
        Ok(v) => {
            for (l, n) in v {
                let key = format!(
                    "{}/{}",
                    l.get("trigger").map_or("?", String::as_str),
                    l.get("status").map_or("?", String::as_str)
                );
                *data.by_trigger_status.entry(key).or_default() += n.round();
            }
            data.by_trigger_status.retain(|_, n| *n > 0.0);
            data.investigations = data.by_trigger_status.values().sum();
        }
        Err(e) => notes.push(e.to_string()),
    }
    match tools {
        Ok(v) => {
            let mut by_tool: BTreeMap<String, ToolUsage> = BTreeMap::new();
            for (l, n) in v {
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
