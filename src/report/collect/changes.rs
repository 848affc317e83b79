//! Changes since last week: this report's headline numbers against the previous stored
//! report's.

use crate::report::model::total;
use crate::report::model::{ChangesData, Delta, Report, ReportData, Section};

/// The headline numbers of a report, by name.
pub fn headline(data: &ReportData) -> Vec<(&'static str, Option<f64>)> {
    let mean = |v: &[crate::report::model::Availability]| {
        (!v.is_empty()).then(|| v.iter().map(|a| a.ratio).sum::<f64>() / v.len() as f64)
    };
    let ok = |notes: &Vec<String>| notes.is_empty();
    vec![
        (
            "alert episodes",
            ok(&data.alerts.notes).then_some(data.alerts.data.total_episodes as f64),
        ),
        (
            "alert firing minutes",
            ok(&data.alerts.notes).then_some(data.alerts.data.total_firing_minutes),
        ),
        ("mean probe availability", mean(&data.slos.data.probes)),
        ("mean target availability", mean(&data.slos.data.targets)),
        (
            "investigations",
            ok(&data.agent.notes).then_some(data.agent.data.investigations),
        ),
        (
            "LLM cost (USD)",
            ok(&data.cost.notes).then_some(data.cost.data.dollars_total),
        ),
        (
            "log error lines",
            ok(&data.logs.notes).then(|| total(data.logs.data.jobs.iter().map(|j| j.this_week))),
        ),
    ]
}

pub fn collect(previous: Option<&Report>, current: &ReportData) -> Section<ChangesData> {
    let Some(prev) = previous else {
        return Section {
            data: ChangesData::default(),
            notes: vec![],
        };
    };
    let before = headline(&prev.data);
    let deltas = headline(current)
        .into_iter()
        .zip(before)
        .filter_map(|((metric, now), (_, then))| {
            Some(Delta {
                metric: metric.to_string(),
                previous: then?,
                current: now?,
            })
        })
        .collect();
    Section {
        data: ChangesData {
            previous_period: Some(prev.window.period.to_string()),
            deltas,
        },
        notes: vec![],
    }
}
