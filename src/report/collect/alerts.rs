//! Alerts: firing episodes per alert from Prometheus `ALERTS` over the window, plus
//! Grafana-managed alerting (rules, firing now, state changes) when Grafana is configured.

use crate::report::model::total;
use std::collections::BTreeMap;
use std::sync::OnceLock;
use std::time::Duration;

use super::{CollectContext, day_label, not_configured};
use crate::integrations::prometheus::Series;
use crate::report::model::{AlertStat, AlertsData, GrafanaAlerting, Section};

/// `timestamp()` returns the time of the sample each step used, so repeated steps over
/// one sample (and the 5-minute lookback after a series ends) collapse to real samples.
const QUERY: &str = r#"timestamp(ALERTS{alertstate="firing"})"#;

/// The section; the `ALERTS` series it read (and their step) go to `history` for the
/// alert hygiene collector.
pub async fn collect(
    ctx: &CollectContext,
    history: &OnceLock<(Vec<Series>, Duration)>,
) -> Section<AlertsData> {
    let (prom, grafana) = tokio::join!(from_prometheus(ctx, history), from_grafana(ctx));
    let mut section = prom;
    match grafana {
        Ok(g) => section.data.grafana = g,
        Err(note) => section.notes.push(note),
    }
    section
}

/// A step keeping the query under Prometheus' 11,000 points per series.
pub fn step_for(window: Duration) -> Duration {
    Duration::from_secs((window.as_secs() / 10_000).max(60))
}

async fn from_prometheus(
    ctx: &CollectContext,
    history: &OnceLock<(Vec<Series>, Duration)>,
) -> Section<AlertsData> {
    let Some(prom) = &ctx.upstreams.prometheus else {
        return Section::failed(not_configured("Prometheus", "prometheus.url"));
    };
    let step = step_for(ctx.window.length());
    match prom
        .query_range(QUERY, ctx.window.start, ctx.window.end, step)
        .await
    {
        Ok(series) => {
            let data = summarise(ctx, &series, step);
            let _ = history.set((series, step));
            Section {
                data,
                notes: vec![],
            }
        }
        Err(e) => Section::failed(e.to_string()),
    }
}

/// Episode start and end sample times of one series.
pub(super) fn episodes(series: &Series, step: Duration) -> Vec<(f64, f64)> {
    let mut samples: Vec<f64> = series.values.iter().map(|(_, v)| *v).collect();
    samples.sort_by(f64::total_cmp);
    samples.dedup();
    let gap = 2.0 * step.as_secs_f64();
    let mut out: Vec<(f64, f64)> = Vec::new();
    for t in samples {
        match out.last_mut() {
            Some((_, last)) if t - *last <= gap => *last = t,
            _ => out.push((t, t)),
        }
    }
    out
}

fn summarise(ctx: &CollectContext, series: &[Series], step: Duration) -> AlertsData {
    let mut by_name: BTreeMap<String, AlertStat> = BTreeMap::new();
    let days = ctx.days();
    let mut per_day = vec![0u32; days.len()];
    for s in series {
        let name = s.metric.get("alertname").cloned().unwrap_or_default();
        let stat = by_name.entry(name.clone()).or_insert_with(|| AlertStat {
            alertname: name,
            severity: s.metric.get("severity").cloned().unwrap_or_default(),
            ..AlertStat::default()
        });
        let eps = episodes(s, step);
        for (first, last) in &eps {
            stat.firing_minutes += (last - first + step.as_secs_f64()) / 60.0;
            if let Some(i) = days.iter().position(|d| *d == ctx.day_of(*first)) {
                per_day[i] += 1;
            }
        }
        stat.episodes += eps.len() as u32;
        let instance = s.metric.get("instance").cloned().unwrap_or_default();
        if !instance.is_empty() && !stat.instances.contains(&instance) {
            stat.instances.push(instance);
        }
    }
    let mut alerts: Vec<AlertStat> = by_name.into_values().collect();
    alerts.sort_by(|a, b| {
        b.episodes
            .cmp(&a.episodes)
            .then(b.firing_minutes.total_cmp(&a.firing_minutes))
    });
    AlertsData {
        total_episodes: alerts.iter().map(|a| a.episodes).sum(),
        total_firing_minutes: total(alerts.iter().map(|a| a.firing_minutes)),
        alerts,
        per_day: days.into_iter().map(day_label).zip(per_day).collect(),
        grafana: None,
    }
}

async fn from_grafana(ctx: &CollectContext) -> Result<Option<GrafanaAlerting>, String> {
    let Some(g) = &ctx.upstreams.grafana else {
        return Ok(None);
    };
    let (rules, alerts, annotations) = tokio::join!(
        g.alert_rules(),
        g.alerts(),
        g.annotations(ctx.window.start, ctx.window.end, Some("alert"), 5000),
    );
    let err = |e: crate::integrations::UpstreamError| e.to_string();
    let firing_now = alerts
        .map_err(err)?
        .into_iter()
        .filter(|a| a.status.state != "suppressed")
        .filter_map(|a| a.labels.get("alertname").cloned())
        .collect();
    let state_changes = annotations
        .map_err(err)?
        .iter()
        .filter(|a| !a.new_state.is_empty())
        .count();
    Ok(Some(GrafanaAlerting {
        rules: rules.map_err(err)?.len(),
        firing_now,
        state_changes,
    }))
}
