//! SLOs: each `[[slos]]` query's achieved ratio over the window and its error budget, the
//! availability of scrape targets (`up`) and probes (`probe_success`), and availability per
//! day for the chart.

use std::time::Duration;

use super::{CollectContext, day_label, not_configured};
use crate::integrations::prometheus::Sample;
use crate::integrations::{PrometheusClient, UpstreamError};
use crate::report::model::{Availability, Section, SloStatus, SlosData};

pub async fn collect(ctx: &CollectContext) -> Section<SlosData> {
    let Some(prom) = &ctx.upstreams.prometheus else {
        return Section::failed(not_configured("Prometheus", "prometheus.url"));
    };
    let range = ctx.range();
    let at = ctx.window.end;
    let slo_futs = ctx.config.slos.iter().map(|slo| {
        let expr = slo.query.replace("$__range", &range);
        async move { (slo, prom.query_vector(&expr, Some(at)).await) }
    });
    let up_expr = format!("avg_over_time(up[{range}])");
    let probe_expr = format!("avg_over_time(probe_success[{range}])");
    let (slo_results, targets, probes, per_day) = tokio::join!(
        futures::future::join_all(slo_futs),
        prom.query_vector(&up_expr, Some(at)),
        prom.query_vector(&probe_expr, Some(at)),
        per_day(ctx, prom),
    );
    let mut notes = Vec::new();
    let mut slos = Vec::new();
    for (slo, result) in slo_results {
        let achieved = match result {
            Ok(v) if !v.is_empty() => Some(v.iter().map(|s| s.value).sum::<f64>() / v.len() as f64),
            Ok(_) => {
                notes.push(format!("SLO {:?}: the query returned no data", slo.name));
                None
            }
            Err(e) => {
                notes.push(format!("SLO {:?}: {e}", slo.name));
                None
            }
        };
        slos.push(SloStatus {
            name: slo.name.clone(),
            objective: slo.objective,
            achieved,
            met: achieved.map(|a| a >= slo.objective),
            budget_left: achieved.map(|a| budget_left(a, slo.objective)),
        });
    }
    let minutes = ctx.window.length().as_secs_f64() / 60.0;
    let mut table = |r: Result<Vec<Sample>, UpstreamError>| match r {
        Ok(v) => availability(v, minutes),
        Err(e) => {
            notes.push(e.to_string());
            vec![]
        }
    };
    let targets = table(targets);
    let probes = table(probes);
    let per_day = per_day.unwrap_or_else(|e| {
        notes.push(e);
        vec![]
    });
    Section {
        data: SlosData {
            slos,
            targets,
            probes,
            per_day,
        },
        notes,
    }
}

/// The share of the error budget left: 1 - (1 - achieved) / (1 - objective).
pub fn budget_left(achieved: f64, objective: f64) -> f64 {
    if objective >= 1.0 {
        // No failure is allowed: the budget is whole or gone.
        return if achieved >= 1.0 { 1.0 } else { 0.0 };
    }
    1.0 - (1.0 - achieved) / (1.0 - objective)
}

fn availability(v: Vec<Sample>, window_minutes: f64) -> Vec<Availability> {
    let mut out: Vec<Availability> = v
        .into_iter()
        .map(|s| Availability {
            job: s.metric.get("job").cloned().unwrap_or_default(),
            instance: s.metric.get("instance").cloned().unwrap_or_default(),
            ratio: s.value,
            downtime_minutes: ((1.0 - s.value) * window_minutes * 10.0).round() / 10.0,
        })
        .collect();
    out.sort_by(|a, b| {
        a.ratio
            .total_cmp(&b.ratio)
            .then(a.instance.cmp(&b.instance))
    });
    out
}

/// Mean probe availability per local day (scrape targets when there are no probes).
async fn per_day(
    ctx: &CollectContext,
    prom: &PrometheusClient,
) -> Result<Vec<(String, f64)>, String> {
    let step = Duration::from_secs(300);
    let (start, end) = (ctx.window.start, ctx.window.end);
    let mut series = prom
        .query_range("avg(probe_success)", start, end, step)
        .await
        .map_err(|e| e.to_string())?;
    if series.is_empty() {
        series = prom
            .query_range("avg(up)", start, end, step)
            .await
            .map_err(|e| e.to_string())?;
    }
    let days = ctx.days();
    let mut sums = vec![(0.0, 0u32); days.len()];
    for (t, v) in series.iter().flat_map(|s| s.values.iter()) {
        if let Some(i) = days.iter().position(|d| *d == ctx.day_of(*t)) {
            sums[i].0 += v;
            sums[i].1 += 1;
        }
    }
    Ok(days
        .into_iter()
        .zip(sums)
        .filter(|(_, (_, n))| *n > 0)
        .map(|(d, (s, n))| (day_label(d), s / n as f64))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::budget_left;

    #[test]
    fn error_budget_left_is_the_unspent_share_of_allowed_failure() {
        assert!((budget_left(0.995, 0.99) - 0.5).abs() < 1e-9);
        assert!((budget_left(0.99, 0.99)).abs() < 1e-9);
        assert!(budget_left(0.98, 0.99) < 0.0);
        assert_eq!(budget_left(1.0, 1.0), 1.0);
    }
}
