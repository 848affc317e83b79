//! The report API (generate, list, render, bearer token), scheduled investigations, and
//! the cron strings shipped in the repository.

use serde_json::Value;
use sre_agent::report::model::{Report, ReportTrigger};
use sre_agent::report::render;
use sre_agent::schedule;

use crate::support::spawn_app;

#[tokio::test]
async fn the_api_generates_lists_and_renders_reports_behind_the_bearer_token() {
    let app = spawn_app("[server]\napi_token = \"t0ken\"\n").await;
    let post = |auth: Option<&str>, body: Value| {
        let mut r = app.http.post(app.url("/api/v1/reports")).json(&body);
        if let Some(a) = auth {
            r = r.bearer_auth(a);
        }
        r.send()
    };
    assert_eq!(
        post(None, serde_json::json!({})).await.unwrap().status(),
        401
    );
    let bad = post(Some("t0ken"), serde_json::json!({"period": "2026-W99"}))
        .await
        .unwrap();
    assert_eq!(bad.status(), 400);
    let created: Report = post(Some("t0ken"), serde_json::json!({"period": "2026-W46"}))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(created.window.period.to_string(), "2026-W46");
    assert_eq!(created.trigger, ReportTrigger::Api);
    assert!(created.data.alerts.notes[0].contains("prometheus.url"));

    let get = |path: String| app.http.get(app.url(&path)).bearer_auth("t0ken").send();
    let list: Value = get("/api/v1/reports".into())
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(list[0]["id"], created.id.as_str());
    let html = get(format!("/api/v1/reports/{}?format=html", created.id))
        .await
        .unwrap();
    assert!(
        html.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/html")
    );
    let html = html.text().await.unwrap();
    assert!(html.contains("<h2 style=") && html.contains("Prometheus is not configured"));
    assert!(
        !html.contains("http://") && !html.contains("https://"),
        "no external resources"
    );
    let md = get(format!("/api/v1/reports/{}?format=markdown", created.id))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert_eq!(md, render::to_markdown(&created));
    assert_eq!(
        get("/api/v1/reports/nope".into()).await.unwrap().status(),
        404
    );
    app.stop().await;
}

#[test]
fn every_cron_string_shipped_in_the_repository_parses() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = vec![root.join("config.toml")];
    for sub in ["deploy", "examples"] {
        let mut stack = vec![root.join(sub)];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
                let p = e.path();
                if p.is_dir() {
                    stack.push(p);
                } else if p
                    .extension()
                    .is_some_and(|x| x == "toml" || x == "j2" || x == "yml" || x == "yaml")
                {
                    files.push(p);
                }
            }
        }
    }
    let re = regex_lite::Regex::new(r#"(?m)^\s*#?\s*(?:schedule|cron|report_schedule|sre_agent_report_schedule)\s*[=:]\s*["']([^"'{}]+)["']"#).unwrap();
    let mut checked = 0;
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap_or_default();
        for c in re.captures_iter(&text) {
            let expr = &c[1];
            sre_agent::config::parse_cron(expr)
                .unwrap_or_else(|e| panic!("{}: {expr:?}{e}", f.display()));
            schedule::CronJob::parse("shipped", expr, chrono_tz::UTC).unwrap();
            checked += 1;
        }
    }
    assert!(checked >= 2, "found only {checked} cron strings");
}

#[tokio::test]
async fn a_schedules_entry_queues_an_investigation_with_the_schedule_trigger() {
    let app = spawn_app(
        "[[schedules]]\nname = \"disk-check\"\ncron = \"0 0 6 * * *\"\ntimezone = \"Europe/Berlin\"\nprompt = \"Are disks filling?\"\n",
    )
    .await;
    let entry = app.state.config.schedules[0].clone();
    let inv = schedule::submit_scheduled(&app.state.dispatcher, &entry)
        .await
        .unwrap();
    assert_eq!(inv.trigger, sre_agent::agent::Trigger::Schedule);
    assert_eq!(
        (inv.title.as_str(), inv.prompt.as_str()),
        (entry.name.as_str(), entry.prompt.as_str())
    );
    assert!(inv.context.is_none() && inv.group_key.is_none());
    app.stop().await;
}

#[tokio::test]
async fn a_running_daemon_fires_a_schedules_entry_and_re_arms_it() {
    let app = spawn_app(
        "[[schedules]]\nname = \"every-second\"\ncron = \"* * * * * *\"\nprompt = \"Anything wrong?\"\n",
    )
    .await;
    let runs = crate::support::eventually(
        std::time::Duration::from_secs(15),
        "two scheduled investigations",
        || async {
            let page = app.state.dispatcher.list(None, 50, None).unwrap();
            let runs: Vec<_> = page
                .items
                .into_iter()
                .filter(|i| i.trigger == sre_agent::agent::Trigger::Schedule)
                .collect();
            (runs.len() >= 2).then_some(runs)
        },
    )
    .await;
    assert!(runs.iter().all(|i| i.title == "every-second"));
    app.stop().await;
}

#[test]
fn the_report_command_prints_a_report_without_a_running_daemon() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("config.toml");
    std::fs::write(&file, "[server]\ndata_dir = \"data\"\n").unwrap();
    let config = file.display().to_string();
    let args = [
        "--config", &config, "report", "--format", "json", "--period", "2026-W46",
    ];
    let (code, stdout, stderr) = crate::support::run_cli(dir.path(), &args, &[]);
    assert_eq!(code, 0, "{stderr}");
    let report: Report = serde_json::from_str(&stdout).unwrap();
    assert_eq!(report.window.period.to_string(), "2026-W46");
    assert_eq!(report.trigger, ReportTrigger::Cli);
    let args = ["--config", &config, "report", "--period", "2026-W60"];
    let (code, _, stderr) = crate::support::run_cli(dir.path(), &args, &[]);
    assert_ne!(code, 0);
    assert!(stderr.contains("invalid report period"), "{stderr}");
}
