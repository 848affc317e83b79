//! The daily budgets hold for every trigger: an ask over budget is answered 429 naming the
//! budget (over HTTP and in the CLI, against the real binary); concurrent asks cannot
//! overshoot the cost limit; a claim is released when the LLM fails; the weekly report over
//! budget is sent with its plain summary saying why; a schedule over budget is skipped and
//! counted; a model without a price is warned about; an investigation interrupted again and
//! again (kill -9) is failed with the reason after a bounded number of retries.

use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use serde_json::{Value, json};

use crate::support::fake_llm::{FakeLlm, answer, error, finding_json, tool_calls};
use crate::support::gated_llm::GatedLlm;
use crate::support::report_external::{mails, start_smtp_sink};
use crate::support::{
    Daemon, eventually, free_port, metric_value, run_cli, spawn_app, test_config,
};

const WAIT: Duration = Duration::from_secs(30);

/// `[llm]` for `url` with the fake model's price (2 $/M in, 8 $/M out), `extra` keys.
fn llm_toml(url: &str, extra: &str) -> String {
    format!(
        "[llm]\nbase_url = \"{url}\"\nmodel = \"fake-model\"\nmax_retries = 0\n{extra}\n\
         [llm.pricing.\"fake-model\"]\ninput_per_million = 2.0\noutput_per_million = 8.0\n"
    )
}

async fn ask(http: &reqwest::Client, base: &str, question: &str) -> (u16, Value) {
    let resp = http
        .post(format!("{base}/api/v1/ask"))
        .json(&json!({ "question": question }))
        .send()
        .await
        .unwrap();
    let status = resp.status().as_u16();
    (status, resp.json().await.unwrap_or(Value::Null))
}

async fn investigation(http: &reqwest::Client, base: &str, id: &str) -> Value {
    http.get(format!("{base}/api/v1/investigations/{id}"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

async fn wait_for(base: &str, id: &str, what: &str, ok: impl Fn(&Value) -> bool) -> Value {
    let http = reqwest::Client::new();
    eventually(WAIT, what, || {
        let http = http.clone();
        let ok = &ok;
        async move { Some(investigation(&http, base, id).await).filter(|i| ok(i)) }
    })
    .await
}

fn daemon_config(dir: &std::path::Path, port: u16, rest: &str) -> std::path::PathBuf {
    let file = dir.join("config.toml");
    std::fs::write(
        &file,
        format!(
            "[server]\nlisten = \"127.0.0.1:{port}\"\ndata_dir = \"{}\"\n\n{rest}",
            dir.join("data").display()
        ),
    )
    .unwrap();
    file
}

#[tokio::test]
async fn an_ask_over_the_daily_count_gets_429_naming_the_budget_over_http_and_in_the_cli() {
    let llm = FakeLlm::start(vec![
        tool_calls(&[("call_1", "current_time", "{}")], (10, 5, 0)),
        answer(&finding_json("fine", "call_1"), (10, 5, 0)),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let rest = format!(
        "[alerts]\nmax_investigations_per_day = 1\n\n{}",
        llm.config("")
    );
    let config = daemon_config(dir.path(), port, &rest);
    let daemon = Daemon::start(dir.path(), &config, &[]).await;
    let http = reqwest::Client::new();
    let (first, body) = ask(&http, &daemon.base, "is the disk full?").await;
    assert_eq!(first, 202, "{body}");
    let resp = http
        .post(format!("{}/api/v1/ask", daemon.base))
        .json(&json!({"question": "and now?"}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 429);
    assert!(resp.headers().contains_key("retry-after"));
    let refused: Value = resp.json().await.unwrap();
    assert_eq!(refused["budget"], "alerts.max_investigations_per_day");
    assert_eq!(refused["investigations_today"], 1);
    let text = refused["error"].as_str().unwrap();
    assert!(
        text.contains("1 of 1 investigations today (alerts.max_investigations_per_day"),
        "{text}"
    );
    // Nothing was stored for the refused ask.
    let list: Value = http
        .get(format!("{}/api/v1/investigations", daemon.base))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(list["items"].as_array().unwrap().len(), 1, "{list}");

    let (code, _out, err) = run_cli(
        dir.path(),
        &["ask", "--config", config.to_str().unwrap(), "one more?"],
        &[],
    );
    assert_ne!(code, 0);
    assert!(
        err.contains("not investigated: the daily investigation budget is used up")
            && err.contains("alerts.max_investigations_per_day"),
        "{err}"
    );
    let metrics = daemon.metrics().await;
    let series = r#"sre_agent_budget_rejections_total{budget="count",trigger="ask"}"#;
    assert_eq!(metric_value(&metrics, series), Some(2.0), "{metrics}");
}

#[tokio::test]
async fn alerts_and_asks_share_one_budget_and_alerts_over_it_are_stored_not_investigated() {
    let llm = GatedLlm::start().await;
    let app = spawn_app(&format!(
        "[alerts]\nmax_investigations_per_day = 2\n\n{}",
        llm_toml(&llm.url, "")
    ))
    .await;
    // Three groups fire: two fit the day's count, the third is stored with outcome budget.
    let resp = app
        .http
        .post(app.url("/webhook/alertmanager"))
        .json(&crate::support::alerts::am_storm(3, 3, "firing"))
        .send()
        .await
        .unwrap();
    assert!(resp.status().is_success());
    let summary: Value = resp.json().await.unwrap();
    assert_eq!(summary["queued"], 2, "{summary}");
    eventually(WAIT, "both alert investigations queued", || async {
        let page = app.state.dispatcher.list(None, 10, None).unwrap();
        (page.items.len() == 2).then_some(())
    })
    .await;
    // The alerts took the day's count: an ask is refused.
    let (status, body) = ask(&app.http, &app.base, "anything else?").await;
    assert_eq!(status, 429, "{body}");
    assert_eq!(body["budget"], "alerts.max_investigations_per_day");
    let m = app.metrics().await;
    for (series, want) in [
        (
            r#"sre_agent_budget_rejections_total{budget="count",trigger="alert"}"#,
            1.0,
        ),
        (
            r#"sre_agent_budget_rejections_total{budget="count",trigger="ask"}"#,
            1.0,
        ),
        (
            r#"sre_agent_alerts_received_total{outcome="budget",source="alertmanager"}"#,
            1.0,
        ),
        ("sre_agent_budget_today_investigations", 2.0),
    ] {
        assert_eq!(metric_value(&m, series), Some(want), "{series}");
    }
    llm.open();
    app.stop().await;
}

#[tokio::test]
async fn five_concurrent_asks_when_the_cost_limit_fits_one_run_exactly_one() {
    let llm = GatedLlm::start().await;
    // Two steps at most: one investigation reserves ~$0.068 of the $0.10 limit.
    let app = spawn_app(&format!(
        "[alerts]\ndaily_cost_limit_usd = 0.1\n\n{}",
        llm_toml(&llm.url, "max_steps = 2")
    ))
    .await;
    let asks = (0..5).map(|i| {
        let http = app.http.clone();
        let base = app.base.clone();
        async move { ask(&http, &base, &format!("question {i}")).await }
    });
    let answers = futures::future::join_all(asks).await;
    let accepted: Vec<&Value> = answers
        .iter()
        .filter(|(s, _)| *s == 202)
        .map(|(_, b)| b)
        .collect();
    let refused: Vec<&Value> = answers
        .iter()
        .filter(|(s, _)| *s == 429)
        .map(|(_, b)| b)
        .collect();
    assert_eq!((accepted.len(), refused.len()), (1, 4), "{answers:?}");
    for r in &refused {
        assert_eq!(r["budget"], "alerts.daily_cost_limit_usd", "{r}");
        let needed = r["needed_usd"].as_f64().unwrap();
        assert!(needed * 2.0 > 0.1 && needed <= 0.1, "{r}");
        assert!(r["reserved_usd"].as_f64().unwrap() > 0.0, "{r}");
    }
    // The one admitted runs; settled at its real cost (cents), it leaves room again.
    llm.open();
    let id = accepted[0]["id"].as_str().unwrap();
    let done = wait_for(&app.base, id, "the admitted ask to finish", |i| {
        i["status"] == "finished"
    })
    .await;
    let cost = done["cost_usd"].as_f64().unwrap();
    assert!(cost > 0.0 && cost < 0.01, "{done}");
    assert_eq!(llm.requests(), 2, "only the admitted ask reached the LLM");
    let (next, body) = ask(&app.http, &app.base, "after it").await;
    assert_eq!(next, 202, "{body}");
    let m = app.metrics().await;
    let series = r#"sre_agent_budget_rejections_total{budget="cost",trigger="ask"}"#;
    assert_eq!(metric_value(&m, series), Some(4.0));
    app.stop().await;
}

#[tokio::test]
async fn a_claim_is_released_when_the_llm_fails_so_the_next_ask_is_admitted() {
    let llm = FakeLlm::start(vec![error(500, "the model crashed", &[])]).await;
    let app = spawn_app(&format!(
        "[alerts]\ndaily_cost_limit_usd = 0.1\n\n{}",
        llm_toml(&llm.url, "max_steps = 2")
    ))
    .await;
    for round in 0..3 {
        let (status, body) = ask(&app.http, &app.base, &format!("round {round}")).await;
        assert_eq!(status, 202, "round {round}: {body}");
        let id = body["id"].as_str().unwrap();
        let failed = wait_for(&app.base, id, "the failed ask", |i| i["status"] == "failed").await;
        assert!(
            failed["error"].as_str().unwrap().contains("500"),
            "{failed}"
        );
    }
    let b = app.state.dispatcher.spend().budget();
    assert_eq!(
        (b.investigations, b.reserved_usd, b.spent_usd),
        (3, 0.0, 0.0)
    );
    let m = app.metrics().await;
    assert_eq!(
        metric_value(&m, "sre_agent_budget_today_dollars"),
        Some(0.0)
    );
    app.stop().await;
}

#[tokio::test]
async fn a_report_over_the_cost_budget_is_sent_with_its_plain_summary_saying_why() {
    use sre_agent::agent::{Dispatcher, Trigger};
    use sre_agent::report::model::{ReportStatus, ReportTrigger};
    use sre_agent::report::period::PeriodSpec;
    use sre_agent::report::{ReportRequest, Reporter};
    use sre_agent::store::Store;
    use sre_agent::telemetry::Metrics;

    let Some(sink) = start_smtp_sink(None, None) else {
        return;
    };
    sre_agent::install_crypto_provider();
    let llm = FakeLlm::start(vec![answer("A calm week.", (1_000, 200, 0))]).await;
    let dir = tempfile::tempdir().unwrap();
    let config = test_config(
        dir.path(),
        &format!(
            "[alerts]\ndaily_cost_limit_usd = 0.5\n\n{}\n[report]\n\
             recipients = [\"ops@example.org\"]\ncollector_timeout = \"2s\"\n[smtp]\n\
             host = \"127.0.0.1\"\nport = {}\nsecurity = \"none\"\n",
            llm_toml(&llm.url, ""),
            sink.port
        ),
    );
    let store = Store::open(&config.server.data_dir).unwrap();
    let metrics = Arc::new(Metrics::new(&config.llm.model));
    let upstreams = sre_agent::integrations::Upstreams::from_config(&config).unwrap();
    let dispatcher = Dispatcher::new(&config, &upstreams, &store, metrics.clone()).unwrap();
    let reports = Reporter::new(Arc::new(config), upstreams, &store, metrics.clone())
        .unwrap()
        .with_dispatcher(dispatcher.clone());
    let request = |now| ReportRequest {
        trigger: ReportTrigger::Cli,
        period: PeriodSpec::Last,
        now,
        send: true,
    };
    let spend = dispatcher.spend();
    let within = reports.run(request(Utc::now())).await.unwrap();
    assert_eq!(within.summary.fallback_reason, None);
    assert_eq!(
        within.status,
        ReportStatus::Sent,
        "{:?}",
        within.delivery_error
    );
    // The narrative call's own cost is counted: 1,000 in + 200 out at 2 and 8 $/M.
    let b = spend.budget();
    assert!((b.spent_usd - 0.0036).abs() < 1e-9, "{b:?}");
    assert_eq!(b.reserved_usd, 0.0);

    // Spend the rest of the day's budget.
    spend
        .admit(Trigger::Ask, Utc::now().date_naive())
        .unwrap()
        .settle(0.5)
        .unwrap();
    let calls = llm.requests().len();
    // The week before: one report email goes out per period.
    let over = reports
        .run(request(Utc::now() - chrono::Duration::days(7)))
        .await
        .unwrap();
    let reason = over
        .summary
        .fallback_reason
        .clone()
        .expect("a plain summary");
    assert!(
        reason.contains("alerts.daily_cost_limit_usd") && reason.contains("spent"),
        "{reason}"
    );
    assert_eq!(over.status, ReportStatus::Sent, "{:?}", over.delivery_error);
    assert_eq!(llm.requests().len(), calls, "no LLM call over budget");
    let last = eventually(
        Duration::from_secs(15),
        "the second report email",
        || async {
            let all = mails(&sink);
            (all.len() == 2).then(|| std::fs::read_to_string(all.last().unwrap()).unwrap())
        },
    )
    .await
    // Quoted-printable soft line breaks may split any word.
    .replace("=\r\n", "")
    .replace("=\n", "");
    assert!(
        last.contains("daily_cost_limit_usd") && last.contains("automatic summary"),
        "{last}"
    );
    let series = r#"sre_agent_budget_rejections_total{budget="cost",trigger="report"}"#;
    assert_eq!(metric_value(&metrics.encode(), series), Some(1.0));
}

#[tokio::test]
async fn a_schedule_over_the_daily_count_is_skipped_and_counted() {
    let llm = FakeLlm::start(vec![
        tool_calls(&[("call_1", "current_time", "{}")], (10, 5, 0)),
        answer(&finding_json("fine", "call_1"), (10, 5, 0)),
    ])
    .await;
    let app = spawn_app(&format!(
        "[alerts]\nmax_investigations_per_day = 1\n\n{}\n\
         [[schedules]]\nname = \"every second\"\ncron = \"* * * * * *\"\nprompt = \"check\"\n",
        llm.config("")
    ))
    .await;
    let series = r#"sre_agent_budget_rejections_total{budget="count",trigger="schedule"}"#;
    eventually(WAIT, "a skipped scheduled investigation", || async {
        let m = app.metrics().await;
        metric_value(&m, series).filter(|n| *n >= 2.0)
    })
    .await;
    let page = app.state.dispatcher.list(None, 50, None).unwrap();
    assert_eq!(page.items.len(), 1, "only the first fire ran");
    assert_eq!(page.items[0].trigger.label(), "schedule");
    app.stop().await;
}

#[tokio::test]
async fn a_model_without_a_price_is_named_at_start_and_in_check_config() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let unpriced = format!(
        "[llm]\nbase_url = \"http://127.0.0.1:{}/v1\"\nmodel = \"mystery-model\"\n",
        free_port()
    );
    let config = daemon_config(dir.path(), port, &unpriced);
    let warning = "cost limits cannot hold for model mystery-model";
    let (code, out, _) = run_cli(
        dir.path(),
        &["check-config", "--config", config.to_str().unwrap()],
        &[],
    );
    assert_eq!(code, 0);
    assert!(out.contains(warning), "{out}");
    let daemon = Daemon::start(dir.path(), &config, &[]).await;
    let log = daemon.log_text();
    assert!(log.contains(warning), "{log}");
    drop(daemon);

    // A built-in price (or a [llm.pricing] entry) silences it.
    let priced = daemon_config(
        dir.path(),
        port,
        &unpriced.replace("mystery-model", "gpt-4.1-mini"),
    );
    let (_, out, _) = run_cli(
        dir.path(),
        &["check-config", "--config", priced.to_str().unwrap()],
        &[],
    );
    assert!(!out.contains("cost limits cannot hold"), "{out}");
}

#[tokio::test]
async fn an_investigation_interrupted_past_the_retry_bound_is_failed_with_the_reason() {
    let llm = GatedLlm::start().await; // never answers: every run is interrupted
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let rest = format!(
        "[alerts]\nmax_interrupted_retries = 1\n\n{}",
        llm_toml(&llm.url, "timeout = \"120s\"")
    );
    let config = daemon_config(dir.path(), port, &rest);
    let mut daemon = Daemon::start(dir.path(), &config, &[]).await;
    let http = reqwest::Client::new();
    let (status, body) = ask(&http, &daemon.base, "why is it slow?").await;
    assert_eq!(status, 202, "{body}");
    let id = body["id"].as_str().unwrap().to_string();
    for attempt in 1..=2u64 {
        wait_for(&daemon.base, &id, "the investigation running", |i| {
            i["status"] == "running" && i["attempts"] == attempt
        })
        .await;
        eventually(WAIT, "its LLM call", || async {
            (llm.requests() >= attempt as usize).then_some(())
        })
        .await;
        daemon.signal("KILL");
        daemon.wait_exit(Duration::from_secs(10));
        drop(daemon);
        daemon = Daemon::start(dir.path(), &config, &[]).await;
    }
    let failed = wait_for(
        &daemon.base,
        &id,
        "the interrupted investigation failed",
        |i| i["status"] == "failed",
    )
    .await;
    let error = failed["error"].as_str().unwrap();
    assert!(
        error.contains("interrupted 2 times")
            && error.contains("alerts.max_interrupted_retries = 1"),
        "{error}"
    );
    assert_eq!(failed["attempts"], 2);
    assert_eq!(llm.requests(), 2, "not run a third time");
}
