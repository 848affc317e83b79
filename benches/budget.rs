//! The daily budget check with many stored investigations: the spend ledger answers from
//! memory, so the check costs the same with 100 or 100,000 investigations stored (before
//! the ledger, every check decoded every investigation of the store under the intake lock).
//! Run: `cargo bench --bench budget`. Prints `name: value (target …)` lines.

// A panic is how a test or a bench reports a failure.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use sre_agent::agent::store::InvestigationStore;
use sre_agent::agent::{
    Dispatcher, Investigation, InvestigationRequest, InvestigationStatus, Trigger,
};
use sre_agent::config::Config;
use sre_agent::store::Store;
use sre_agent::telemetry::Metrics;
use sre_agent::tools::ToolRegistry;

const SIZES: [usize; 3] = [1_000, 10_000, 100_000];
const CHECKS: usize = 20_000;

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 * p) as usize).min(sorted.len() - 1)]
}

fn stored(store: &Store, n: usize) {
    let invs = InvestigationStore::open(store).unwrap();
    for i in 0..n {
        let mut inv = Investigation::new(
            InvestigationRequest {
                trigger: Trigger::Alert,
                title: format!("HighLoad (instance=host{i})"),
                prompt: "Investigate this alert.".into(),
                context: Some("x".repeat(400).into()),
                group_key: Some(format!("{{alertname=\"HighLoad\", instance=\"host{i}\"}}")),
            },
            "gpt-4o-mini",
        );
        inv.status = InvestigationStatus::Finished;
        inv.cost_usd = 0.0001;
        invs.put(&inv).unwrap();
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    sre_agent::install_crypto_provider();
    for n in SIZES {
        let dir = tempfile::tempdir()?;
        let mut config = Config::default();
        config.alerts.max_investigations_per_day = u32::MAX;
        config.alerts.daily_cost_limit_usd = 1e9;
        let store = Store::open(dir.path())?;
        stored(&store, n);
        store.flush().await?;
        let metrics = Arc::new(Metrics::new(&config.llm.model));
        let t = Instant::now();
        let tools = ToolRegistry::new(metrics.clone(), 4000);
        let d = Dispatcher::with_parts(&config, &store, metrics, None, tools)?;
        let built = t.elapsed();
        let mut checks = Vec::with_capacity(CHECKS);
        for _ in 0..CHECKS {
            let t = Instant::now();
            std::hint::black_box(d.spend().budget());
            checks.push(t.elapsed());
        }
        checks.sort();
        let mut admits = Vec::with_capacity(1_000);
        for _ in 0..1_000 {
            let t = Instant::now();
            let claim = d.spend().admit(Trigger::Ask, Utc::now().date_naive())?;
            claim.settle(0.0001)?;
            admits.push(t.elapsed());
        }
        admits.sort();
        // What each check cost before the ledger: decoding every stored investigation.
        let t = Instant::now();
        let today = Utc::now()
            .date_naive()
            .and_hms_opt(0, 0, 0)
            .unwrap()
            .and_utc();
        let scanned = d.between(today, DateTime::<Utc>::MAX_UTC)?.len();
        let scan = t.elapsed();
        println!(
            "budget check with {n} investigations stored: p50 {:?}, p99 {:?} (target p99 < 20 ms)",
            percentile(&checks, 0.5),
            percentile(&checks, 0.99)
        );
        println!(
            "budget admit + settle with {n} stored: p50 {:?}, p99 {:?}",
            percentile(&admits, 0.5),
            percentile(&admits, 0.99)
        );
        println!(
            "  for comparison, decoding all {scanned} stored investigations once: {scan:?}; \
             ledger open at first start (built from them once): {built:?}"
        );
    }
    Ok(())
}
