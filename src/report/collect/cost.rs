//! Cost: LLM tokens by type and estimated dollars per model over the window, from
//! sre-agent's own counters in Prometheus.

use super::{CollectContext, not_configured};
use crate::report::model::total;
use crate::report::model::{CostData, Section};

pub async fn collect(ctx: &CollectContext) -> Section<CostData> {
    let Some(prom) = &ctx.upstreams.prometheus else {
        return from_store(ctx);
    };
    let r = ctx.range();
    let tokens = format!("sum by (type) (increase(sre_agent_llm_tokens_total[{r}]))");
    let dollars =
        format!("sum by (model) (increase(sre_agent_llm_estimated_cost_dollars_total[{r}]))");
    let at = ctx.window.end;
    let (tokens, dollars) = tokio::join!(
        prom.query_vector(&tokens, Some(at)),
        prom.query_vector(&dollars, Some(at)),
    );
    let mut data = CostData {
        source: "prometheus".into(),
        ..CostData::default()
    };
    let mut notes = Vec::new();
    match tokens {
        Ok(v) => {
            for s in v {
                let kind = s.metric.get("type").cloned().unwrap_or_default();
                *data.tokens.entry(kind).or_default() += s.value.round();
            }
        }
        Err(e) => notes.push(e.to_string()),
    }
    match dollars {
        Ok(v) => {
            for s in v {
                let model = s.metric.get("model").cloned().unwrap_or_default();
                *data.dollars_by_model.entry(model).or_default() += s.value;
            }
            data.dollars_total = total(data.dollars_by_model.values().copied());
        }
        Err(e) => notes.push(e.to_string()),
    }
    Section { data, notes }
}

/// Tokens and cost of the week's stored investigations (without Prometheus).
fn from_store(ctx: &CollectContext) -> Section<CostData> {
    match super::agent::stored(ctx) {
        Ok(Some(list)) => {
            let mut data = CostData {
                source: "store".into(),
                ..CostData::default()
            };
            for i in &list {
                for (kind, n) in [
                    ("prompt", i.tokens.prompt),
                    ("completion", i.tokens.completion),
                    ("cached", i.tokens.cached),
                ] {
                    *data.tokens.entry(kind.into()).or_default() += n as f64;
                }
                *data.dollars_by_model.entry(i.model.clone()).or_default() += i.cost_usd;
            }
            data.dollars_total = total(data.dollars_by_model.values().copied());
            Section {
                data,
                notes: vec![],
            }
        }
        Ok(None) => Section::failed(not_configured("Prometheus", "prometheus.url")),
        Err(e) => Section::failed(e),
    }
}
