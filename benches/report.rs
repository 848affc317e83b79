//! Weekly report benchmark: wall time with every source (Prometheus, Loki, Grafana, LLM)
//! answering after 1 s — collectors run concurrently, so the target is about the slowest
//! collector plus the LLM call, not their sum — and peak RSS while rendering a large report.
//! Prints `name: value (target …)` lines.
//!
//! Peak RSS is the whole process's (VmHWM): the fake upstreams, the store, the report run
//! and the rendering. Where it goes is printed as RSS at each stage. In a debug build sled's
//! global metric histograms alone were 20 MiB (hence `opt-level` for sled in Cargo.toml).

// A panic is how a test or a bench reports a failure.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::Query;
use axum::routing::{get, post};
use serde_json::{Value, json};
use sre_agent::config::{Config, ConfigSource};
use sre_agent::report::model::{
    AlertStat, Availability, HygieneFinding, HygieneIssue, ReportTrigger,
};
use sre_agent::report::period::PeriodSpec;
use sre_agent::report::{ReportRequest, Reporter, render};
use sre_agent::store::Store;
use sre_agent::telemetry::Metrics;

const DELAY: Duration = Duration::from_secs(1);

async fn serve(router: Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await });
    format!("http://{addr}")
}

async fn slow(v: Value) -> axum::Json<Value> {
    tokio::time::sleep(DELAY).await;
    axum::Json(v)
}

fn matrix(metric: Value) -> Value {
    let values: Vec<Value> = (0..200)
        .map(|i| json!([1_795_000_000 + i * 300, "1"]))
        .collect();
    json!({"status": "success", "data": {"resultType": "matrix", "result": [{"metric": metric, "values": values}]}})
}

async fn prom_query(Query(_q): Query<Vec<(String, String)>>) -> axum::Json<Value> {
    slow(json!({"status": "success", "data": {"resultType": "vector", "result": [
        {"metric": {"job": "node", "instance": "a:9100", "trigger": "alert", "status": "ok", "tool": "prometheus_query", "type": "prompt", "model": "m"}, "value": [1_795_000_000, "0.99"]}
    ]}}))
    .await
}

async fn prom_range() -> axum::Json<Value> {
    slow(matrix(
        json!({"alertname": "NodeDown", "instance": "a:9100", "severity": "critical"}),
    ))
    .await
}

async fn loki_range(Query(q): Query<Vec<(String, String)>>) -> axum::Json<Value> {
    let metric = q
        .iter()
        .any(|(k, v)| k == "query" && v.contains("count_over_time"));
    if metric {
        return slow(matrix(json!({"job": "nas"}))).await;
    }
    slow(json!({"status": "success", "data": {"resultType": "streams", "result": [
        {"stream": {"job": "nas"}, "values": [["1795000000000000000", "level=error msg=\"x\" n=1"]]}
    ]}}))
    .await
}

async fn llm() -> axum::Json<Value> {
    slow(json!({"id": "c", "object": "chat.completion", "model": "m",
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "All good."}}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}))
    .await
}

fn config(dir: &std::path::Path, prom: &str, loki: &str, grafana: &str, llm: &str) -> Config {
    let file = dir.join("config.toml");
    let toml = format!(
        "[server]\ndata_dir = \"{}\"\n[prometheus]\nurl = \"{prom}\"\n[loki]\nurl = \"{loki}\"\n\
         [grafana]\nurl = \"{grafana}\"\n[llm]\nbase_url = \"{llm}\"\n\
         [[slos]]\nname = \"web\"\nquery = 'avg_over_time(probe_success[$__range])'\nobjective = 0.99\n",
        dir.join("data").display()
    );
    std::fs::write(&file, toml).unwrap();
    Config::load(&ConfigSource { file: Some(file) }).unwrap()
}

/// A `/proc/self/status` figure in MiB: `VmHWM` (peak RSS) or `VmRSS` (now).
fn status_mib(field: &str) -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

fn peak_rss_mib() -> f64 {
    status_mib("VmHWM")
}

#[tokio::main]
async fn main() {
    sre_agent::install_crypto_provider();
    let prom = serve(
        Router::new()
            .route("/api/v1/query", get(prom_query))
            .route("/api/v1/query_range", get(prom_range)),
    )
    .await;
    let loki = serve(Router::new().route("/loki/api/v1/query_range", get(loki_range))).await;
    let grafana = serve(
        Router::new()
            .route("/api/v1/provisioning/alert-rules", get(|| slow(json!([]))))
            .route(
                "/api/alertmanager/grafana/api/v2/alerts",
                get(|| slow(json!([]))),
            )
            .route("/api/annotations", get(|| slow(json!([])))),
    )
    .await;
    let llm_url = serve(Router::new().route("/v1/chat/completions", post(llm))).await;

    let with_fakes = status_mib("VmRSS");
    let dir = tempfile::tempdir().unwrap();
    let config = config(dir.path(), &prom, &loki, &grafana, &format!("{llm_url}/v1"));
    let store = Store::open(&config.server.data_dir).unwrap();
    let metrics = Arc::new(Metrics::new(&config.llm.model));
    let reporter = Reporter::new(
        Arc::new(config.clone()),
        sre_agent::integrations::Upstreams::from_config(&config).unwrap(),
        &store,
        metrics,
    )
    .unwrap();
    let with_store = status_mib("VmRSS");
    let req = ReportRequest {
        trigger: ReportTrigger::Cli,
        period: PeriodSpec::Last,
        now: chrono::Utc::now(),
        send: false,
    };
    let started = Instant::now();
    let mut report = reporter.run(req).await.unwrap();
    let wall = started.elapsed().as_secs_f64();
    assert!(
        report.summary.fallback_reason.is_none(),
        "{:?}",
        report.summary.fallback_reason
    );
    println!(
        "report wall time, every source 1 s slow: {wall:.2} s (target ≈ 2 s: slowest collector 1 s + LLM 1 s; sequential would be ≥ 9 s)"
    );

    // A large report: 500 alerts, 2,000 targets and probes, 31 days of charts.
    let d = &mut report.data;
    d.alerts.data.alerts = (0..500)
        .map(|i| AlertStat {
            alertname: format!("Alert{i}"),
            severity: "warning".into(),
            episodes: i,
            firing_minutes: i as f64 * 3.0,
            instances: (0..5).map(|j| format!("host{j}:9100")).collect(),
        })
        .collect();
    let avail = |n: usize| -> Vec<Availability> {
        (0..n)
            .map(|i| Availability {
                job: "node".into(),
                instance: format!("host{i}.home.lab:9100"),
                ratio: 0.99,
                downtime_minutes: 100.0,
            })
            .collect()
    };
    d.slos.data.targets = avail(2_000);
    d.slos.data.probes = avail(2_000);
    d.alerts.data.per_day = (1..=31).map(|i| (format!("Day {i}"), i)).collect();
    d.slos.data.per_day = (1..=31)
        .map(|i| (format!("Day {i}"), 0.98 + i as f64 / 2000.0))
        .collect();
    // A markdown narrative (rendered to HTML and text) and a full alert hygiene table.
    report.summary.text = (0..20)
        .map(|i| format!("## Part {i}\n\nA **busy** day with `Alert{i}`.\n\n- one\n- two\n"))
        .collect();
    report.data.hygiene.data.findings = (0..25)
        .map(|i| HygieneFinding {
            alertname: format!("Alert{i}"),
            issue: HygieneIssue::Flapping,
            evidence: format!("{i} of 30 episodes on host{i}:9100 were shorter than 10m"),
            suggestion: "Raise for: from 1m to 5m.".into(),
        })
        .collect();
    let before = peak_rss_mib();
    println!(
        "RSS by stage: fake upstreams {with_fakes:.1} MiB, + store {with_store:.1} MiB, \
         + report run {:.1} MiB",
        status_mib("VmRSS")
    );
    let started = Instant::now();
    let mut bytes = 0;
    for _ in 0..20 {
        let r = render::for_email(&report);
        bytes = r.html.len()
            + r.markdown.len()
            + r.text.len()
            + r.charts.iter().map(|c| c.png.len()).sum::<usize>();
        bytes += render::to_html(&report).len();
    }
    let per = started.elapsed().as_secs_f64() / 20.0 * 1000.0;
    println!(
        "render large report (email text + HTML + charts, and data-URI HTML): {per:.1} ms each, {} KiB output",
        bytes / 1024
    );
    println!(
        "peak RSS while rendering: {:.1} MiB (before rendering {before:.1} MiB) (target < 50 MiB)",
        peak_rss_mib()
    );
}
