//! The daemon's ground: config validation, health endpoints, metrics, the store lock,
//! graceful shutdown, and secrets kept out of output.

use std::time::Duration;

use crate::support::{Daemon, free_port, metric_value, run_cli, spawn_app};

#[tokio::test]
async fn healthz_readyz_and_metrics_answer_on_defaults() {
    let app = spawn_app("").await;
    let r = app.get("/healthz").await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.text().await.unwrap(), "ok");

    let ready: serde_json::Value = app.get("/readyz").await.json().await.unwrap();
    assert_eq!(ready["status"], "ready");
    assert_eq!(ready["store"], "ok");

    let r = app.get("/metrics").await;
    assert_eq!(r.status(), 200);
    assert!(
        r.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/plain; version=0.0.4")
    );
    let text = r.text().await.unwrap();
    for family in [
        "sre_agent_http_request_duration_seconds",
        "sre_agent_http_requests_total",
        "sre_agent_http_requests_in_progress",
        "sre_agent_tool_call_duration_seconds",
        "sre_agent_tool_calls_total",
        "sre_agent_llm_calls_total",
        "sre_agent_llm_call_duration_seconds",
        "sre_agent_llm_tokens_total",
        "sre_agent_llm_estimated_cost_dollars_total",
        "sre_agent_component_healthy",
        "sre_agent_build_info",
        "sre_agent_investigations_total",
        "sre_agent_investigation_duration_seconds",
        "sre_agent_alerts_received_total",
        "sre_agent_queue_depth",
        "sre_agent_reports_total",
        "sre_agent_report_duration_seconds",
        "sre_agent_notifications_total",
    ] {
        assert!(
            text.contains(&format!("# TYPE {family} ")),
            "{family} missing from /metrics"
        );
    }
    app.stop().await;
}

#[tokio::test]
async fn request_metrics_use_route_templates_and_count_unknown_paths_as_other() {
    let app = spawn_app("").await;
    for path in ["/healthz", "/does-not-exist", "/another/random/path"] {
        app.get(path).await;
    }
    let r = app.get("/no-such-route").await;
    assert_eq!(r.status(), 404);
    let body: serde_json::Value = r.json().await.unwrap();
    assert!(body["error"].as_str().unwrap().contains("/no-such-route"));

    let text = app.metrics().await;
    assert_eq!(
        metric_value(
            &text,
            r#"sre_agent_http_requests_total{endpoint="/healthz",status="200"}"#
        ),
        Some(1.0)
    );
    assert_eq!(
        metric_value(
            &text,
            r#"sre_agent_http_requests_total{endpoint="other",status="404"}"#
        ),
        Some(3.0)
    );
    assert!(
        !text.contains("does-not-exist"),
        "raw paths must never become labels"
    );
    app.stop().await;
}

#[tokio::test]
async fn metrics_token_protects_metrics_but_not_health() {
    let app = spawn_app("[server]\nmetrics_token = \"scrape-secret\"\n").await;
    assert_eq!(app.get("/metrics").await.status(), 401);
    let wrong = app
        .http
        .get(app.url("/metrics"))
        .bearer_auth("nope")
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status(), 401);
    let ok = app
        .http
        .get(app.url("/metrics"))
        .bearer_auth("scrape-secret")
        .send()
        .await
        .unwrap();
    assert_eq!(ok.status(), 200);
    assert_eq!(app.get("/healthz").await.status(), 200);
    app.stop().await;
}

#[tokio::test]
async fn a_configured_upstream_that_is_down_is_reported_unhealthy_with_its_url() {
    let port = free_port();
    let app = spawn_app(&format!(
        "[server]\nhealth_interval = \"1h\"\n[prometheus]\nurl = \"http://127.0.0.1:{port}\"\n"
    ))
    .await;
    let ready = crate::support::eventually(
        Duration::from_secs(10),
        "prometheus health result",
        || async {
            let v: serde_json::Value = app.get("/readyz").await.json().await.ok()?;
            v["components"].get("prometheus").cloned()
        },
    )
    .await;
    assert_eq!(ready["healthy"], false);
    let error = ready["error"].as_str().unwrap();
    assert!(
        error.contains("Prometheus") && error.contains(&format!("127.0.0.1:{port}")),
        "{error}"
    );
    let text = app.metrics().await;
    assert_eq!(
        metric_value(
            &text,
            r#"sre_agent_component_healthy{component="prometheus"}"#
        ),
        Some(0.0)
    );
    app.stop().await;
}

#[test]
fn bad_config_values_exit_2_naming_the_key_and_value() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            "[llm]\ntimeout = \"banana\"\n",
            r#"llm.timeout: invalid duration "banana""#,
        ),
        (
            "[llm]\nbase_url = \"not a url\"\n",
            "llm.base_url: invalid URL \"not a url\"",
        ),
        (
            "[report]\nschedule = \"0 8 * * Mon\"\n",
            "report.schedule: invalid cron expression",
        ),
        (
            "[report]\ntimezone = \"Mars/Olympus\"\n",
            "report.timezone: invalid time zone \"Mars/Olympus\"",
        ),
        (
            "[report]\nrecipients = [\"nobody\"]\n",
            "report.recipients.0: invalid email address \"nobody\"",
        ),
        (
            "[server]\nlisten = \"localhost\"\n",
            "server.listen: invalid address \"localhost\"",
        ),
        ("[llm]\ntimeuot = \"1s\"\n", "llm.timeuot: unknown key"),
        (
            "[llm]\ncontext_tokens = 512\n",
            "llm.context_tokens: 512 is too small",
        ),
        ("[smtp]\nsecurity = \"ssl\"\n", "smtp.security"),
        (
            "[alerts]\nignore = [\"severity\"]\n",
            "alerts.ignore[0]: invalid label matcher",
        ),
        (
            "[alerts]\nstorm_threshold = 1\n",
            "alerts.storm_threshold: must be at least 2 groups",
        ),
        ("[alerts]\nstorm_window = \"0s\"\n", "alerts.storm_window"),
        (
            "[alerts]\nstorm_hold = \"1h\"\n",
            "alerts.storm_hold: must be at most 5m",
        ),
        (
            "[alerts]\nstorm_by = []\n",
            "alerts.storm_by: must name at least one label",
        ),
        (
            "[[slos]]\nname = \"x\"\nquery = \"up\"\nobjective = 99.9\n",
            "slos[0].objective",
        ),
        // Values `serve` would overflow on (dates, clocks, semaphores, worker pools).
        (
            "[store]\nretention_days = 100000000\n",
            "store.retention_days: 100000000 is too large (at most 36500",
        ),
        (
            "[store]\ncache_mib = 0\n",
            "store.cache_mib: must be at least 1",
        ),
        (
            "[store]\ncache_mib = 100000000\n",
            "store.cache_mib: 100000000 is too large (at most 65536",
        ),
        (
            "[notify]\nretry_backoff = \"300000y\"\n",
            r#"notify.retry_backoff: invalid duration "300000y" (at most 100 years)"#,
        ),
        (
            "[llm]\ntimeout = \"300000y\"\n",
            r#"llm.timeout: invalid duration "300000y" (at most 100 years)"#,
        ),
        (
            "[llm]\nmax_retries = 4294967295\n",
            "llm.max_retries: 4294967295 is too large (at most 100",
        ),
        (
            "[server]\nmax_connections = 4611686018427387904\n",
            "server.max_connections: 4611686018427387904 is too large",
        ),
        (
            "[alerts]\nconcurrency = 100000000\n",
            "alerts.concurrency: 100000000 is too large",
        ),
        (
            "[[tools.http]]\nname = \"x\"\nurl = \"http://127.0.0.1:9/\"\ntimeout = \"1000000y\"\n",
            "tools.http.0.timeout: invalid duration",
        ),
    ];
    for (toml, want) in cases {
        let file = dir.path().join("bad.toml");
        std::fs::write(&file, toml).unwrap();
        let (code, _out, err) = run_cli(
            dir.path(),
            &["check-config", "--config", file.to_str().unwrap()],
            &[],
        );
        assert_eq!(code, 2, "{toml}: {err}");
        assert!(
            err.contains(want),
            "for {toml:?} expected {want:?} in {err:?}"
        );
        assert!(
            !err.contains("panicked") && !err.contains("backtrace"),
            "{err}"
        );
    }
    let (code, _, err) = run_cli(
        dir.path(),
        &["check-config"],
        &[("SRE_AGENT_LLM__MAX_STEPS", "many")],
    );
    assert_eq!(code, 2);
    assert!(err.contains("llm.max_steps"), "{err}");
}

#[test]
fn repo_config_example_passes_check_config() {
    let dir = tempfile::tempdir().unwrap();
    let example = concat!(env!("CARGO_MANIFEST_DIR"), "/config.toml");
    let (code, out, err) = run_cli(dir.path(), &["check-config", "--config", example], &[]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("configuration is valid"));
}

#[test]
fn secrets_from_env_and_files_never_appear_in_check_config() {
    let dir = tempfile::tempdir().unwrap();
    let key_file = dir.path().join("llm.key");
    std::fs::write(&key_file, "sk-file-secret-123\n").unwrap();
    let env = [
        ("SRE_AGENT_LLM__API_KEY_FILE", key_file.to_str().unwrap()),
        ("SRE_AGENT_WEBHOOK__TOKEN", "env-webhook-secret-456"),
        ("SRE_AGENT_SMTP__HOST", "mail.example.org"),
        ("SRE_AGENT_SMTP__PASSWORD", "env-smtp-secret-789"),
        ("SRE_AGENT_GRAFANA__URL", "http://grafana:3000"),
        ("SRE_AGENT_GRAFANA__TOKEN", "glsa_secret_000"),
    ];
    let (code, out, err) = run_cli(dir.path(), &["check-config"], &env);
    assert_eq!(code, 0, "{err}");
    for secret in [
        "sk-file-secret-123",
        "env-webhook-secret-456",
        "env-smtp-secret-789",
        "glsa_secret_000",
    ] {
        assert!(
            !out.contains(secret) && !err.contains(secret),
            "{secret} leaked"
        );
    }
    assert!(out.contains("api_key = \"***\""), "{out}");
    assert!(out.contains("enabled integrations: grafana, smtp"), "{out}");
}

#[test]
fn a_missing_secret_file_names_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let (code, _, err) = run_cli(
        dir.path(),
        &["check-config"],
        &[("SRE_AGENT_SMTP__PASSWORD_FILE", "/nonexistent/pw")],
    );
    assert_eq!(code, 2);
    assert!(
        err.contains("smtp.password_file: cannot read \"/nonexistent/pw\""),
        "{err}"
    );
}

#[tokio::test]
async fn daemon_on_defaults_is_healthy_refuses_a_second_instance_and_stops_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let config = dir.path().join("config.toml");
    std::fs::write(
        &config,
        format!("[server]\nlisten = \"127.0.0.1:{port}\"\n"),
    )
    .unwrap();
    let env = [("SRE_AGENT_WEBHOOK__TOKEN", "daemon-secret-token")];
    let mut daemon = Daemon::start(dir.path(), &config, &env).await;
    assert!(
        dir.path().join("data").is_dir(),
        "data lives in ./data by default"
    );

    let (code, out, _) = run_cli(
        dir.path(),
        &["healthcheck", "--config", config.to_str().unwrap()],
        &[],
    );
    assert_eq!(code, 0, "{out}");

    let (code, _, err) = run_cli(
        dir.path(),
        &["serve", "--config", config.to_str().unwrap()],
        &[],
    );
    assert_eq!(code, 1);
    assert!(err.contains("locked by another running sre-agent"), "{err}");

    daemon.signal("TERM");
    assert_eq!(
        daemon.wait_exit(Duration::from_secs(10)),
        Some(0),
        "{}",
        daemon.log_text()
    );
    let log = daemon.log_text();
    assert!(
        log.contains("integrations are off until configured"),
        "{log}"
    );
    assert!(!log.contains("daemon-secret-token"));

    let (code, _, _) = run_cli(
        dir.path(),
        &["healthcheck", "--config", config.to_str().unwrap()],
        &[],
    );
    assert_eq!(code, 1, "healthcheck fails when nothing answers");
}

#[test]
fn env_variables_outside_the_config_sections_are_ignored_and_listed_but_bad_keys_inside_fail() {
    let dir = tempfile::tempdir().unwrap();
    let (code, out, err) = run_cli(
        dir.path(),
        &["check-config"],
        &[("SRE_AGENT_BIN", "/usr/bin/x")],
    );
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("ignored environment variables (not a config section): SRE_AGENT_BIN"),
        "{out}"
    );
    let (code, _, err) = run_cli(
        dir.path(),
        &["check-config"],
        &[("SRE_AGENT_LLM__BASE_ULR", "http://x")],
    );
    assert_eq!(code, 2);
    assert!(err.contains("llm.base_ulr: unknown key"), "{err}");
}
