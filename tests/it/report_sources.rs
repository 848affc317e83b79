//! The report reads Prometheus, Loki and Grafana through the shared integration clients
//! (and writes its narrative with the dispatcher's LLM client): every upstream failure
//! lands in the section's note naming the service, the URL and what happened, and the
//! typed answers (vector, scalar, matrix, streams) are read as such.

use std::sync::Arc;

use chrono::Utc;
use serde_json::json;
use sre_agent::report::model::{Report, ReportTrigger};
use sre_agent::report::period::PeriodSpec;
use sre_agent::report::{ReportRequest, Reporter};
use sre_agent::store::Store;
use sre_agent::telemetry::Metrics;
use wiremock::matchers::{method, path, query_param};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::support::test_config;

async fn report(toml: &str) -> Report {
    sre_agent::install_crypto_provider();
    let dir = tempfile::tempdir().unwrap();
    let config = test_config(dir.path(), toml);
    let store = Store::open(&config.server.data_dir).unwrap();
    let metrics = Arc::new(Metrics::new(&config.llm.model));
    let reporter = Reporter::new(
        Arc::new(config.clone()),
        sre_agent::integrations::Upstreams::from_config(&config).unwrap(),
        &store,
        metrics,
    )
    .unwrap();
    reporter
        .run(ReportRequest {
            trigger: ReportTrigger::Cli,
            period: PeriodSpec::Last,
            now: Utc::now(),
            send: false,
        })
        .await
        .unwrap()
}

fn has(notes: &[String], want: &str) -> bool {
    notes.iter().any(|n| n.contains(want))
}

#[tokio::test]
async fn upstream_failures_in_a_report_name_the_service_the_url_and_what_happened() {
    let prom = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/api/v1/query"))
        .respond_with(ResponseTemplate::new(400).set_body_json(json!({
            "status": "error", "errorType": "bad_data",
            "error": "invalid parameter \"query\": 1:17: parse error"
        })))
        .mount(&prom)
        .await;
    Mock::given(method("GET"))
        .and(path("/api/v1/query_range"))
        .respond_with(ResponseTemplate::new(503).set_body_string("Service Unavailable"))
        .mount(&prom)
        .await;
    // A Loki that answers every range query with log lines: the error count needs a matrix.
    let loki = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/loki/api/v1/query_range"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "status": "success", "data": {"resultType": "streams", "result": [
                {"stream": {"job": "nas"}, "values": [["1795000000000000000", "level=error x"]]}
            ]}
        })))
        .mount(&loki)
        .await;
    let grafana = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(401).set_body_json(json!({
            "message": "Invalid API key", "messageId": "api-key.invalid", "statusCode": 401
        })))
        .mount(&grafana)
        .await;
    let r = report(&format!(
        "[prometheus]\nurl = \"{}\"\n[loki]\nurl = \"{}\"\n[grafana]\nurl = \"{}\"\ntoken = \"glsa_bad\"\n\
         [[slos]]\nname = \"web\"\nquery = 'avg_over_time(probe_success[$__range])'\nobjective = 0.99\n",
        prom.uri(),
        loki.uri(),
        grafana.uri()
    ))
    .await;
    let d = &r.data;
    let p = prom.uri();
    assert!(
        has(
            &d.slos.notes,
            &format!("Prometheus at {p}/api/v1/query returned 400: bad_data: invalid parameter")
        ),
        "{:?}",
        d.slos.notes
    );
    assert!(
        has(
            &d.alerts.notes,
            &format!("Prometheus at {p}/api/v1/query_range returned 503: Service Unavailable")
        ),
        "{:?}",
        d.alerts.notes
    );
    let grafana_401 = format!("Grafana at {}/api/", grafana.uri());
    assert!(
        d.alerts
            .notes
            .iter()
            .any(|n| n.starts_with(&grafana_401) && n.ends_with("returned 401: Invalid API key")),
        "{:?}",
        d.alerts.notes
    );
    assert!(
        has(
            &d.logs.notes,
            &format!(
                "Loki at {}/loki/api/v1/query_range sent an unexpected response: expected a matrix",
                loki.uri()
            )
        ),
        "{:?}",
        d.logs.notes
    );
    // The log lines query still worked: the section keeps what it could get.
    assert_eq!(d.logs.data.sampled_lines, 1);
    // No secret in any note.
    let all = format!("{:?}", [&d.alerts.notes, &d.slos.notes, &d.logs.notes]);
    assert!(!all.contains("glsa_bad"));
}

#[tokio::test]
async fn a_scalar_slo_answer_and_vector_availability_are_both_read() {
    let prom = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/api/v1/query"))
        .and(query_param(
            "query",
            "scalar(avg_over_time(probe_success[604800s]))",
        ))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "status": "success", "data": {"resultType": "scalar", "result": [1795000000, "0.995"]}
        })))
        .mount(&prom)
        .await;
    Mock::given(method("GET"))
        .and(path("/api/v1/query"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "status": "success", "data": {"resultType": "vector", "result": [
                {"metric": {"job": "node", "instance": "a:9100"}, "value": [1795000000, "0.5"]}
            ]}
        })))
        .mount(&prom)
        .await;
    Mock::given(method("GET"))
        .and(path("/api/v1/query_range"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "status": "success", "data": {"resultType": "matrix", "result": []}
        })))
        .mount(&prom)
        .await;
    let r = report(&format!(
        "[prometheus]\nurl = \"{}\"\n\
         [[slos]]\nname = \"web\"\nquery = 'scalar(avg_over_time(probe_success[$__range]))'\nobjective = 0.99\n",
        prom.uri()
    ))
    .await;
    let s = &r.data.slos;
    assert!(s.notes.is_empty(), "{:?}", s.notes);
    assert_eq!(s.data.slos[0].achieved, Some(0.995));
    assert_eq!(s.data.slos[0].met, Some(true));
    assert_eq!(s.data.targets[0].instance, "a:9100");
    assert_eq!(s.data.targets[0].ratio, 0.5);
}

#[tokio::test]
async fn the_narrative_is_written_with_the_dispatchers_llm_client() {
    use sre_agent::agent::Dispatcher;
    use sre_agent::llm::LlmClient;
    use sre_agent::tools::ToolRegistry;

    use crate::support::fake_llm::{FakeLlm, answer};

    sre_agent::install_crypto_provider();
    let llm = FakeLlm::start(vec![answer("A calm week.", (100, 20, 0))]).await;
    let dir = tempfile::tempdir().unwrap();
    // The report's own config names no LLM: only the dispatcher's client can write it.
    let config = test_config(dir.path(), "[report]\ncollector_timeout = \"2s\"\n");
    let store = Store::open(&config.server.data_dir).unwrap();
    let metrics = Arc::new(Metrics::new(&config.llm.model));
    let mut llm_config = config.llm.clone();
    llm_config.base_url = Some(llm.url.parse().unwrap());
    let client = LlmClient::new(&llm_config, metrics.clone()).unwrap();
    let tools = ToolRegistry::new(metrics.clone(), 4000);
    let dispatcher =
        Dispatcher::with_parts(&config, &store, metrics.clone(), client, tools).unwrap();
    let upstreams = sre_agent::integrations::Upstreams::from_config(&config).unwrap();
    let report = Reporter::new(Arc::new(config), upstreams, &store, metrics)
        .unwrap()
        .with_dispatcher(dispatcher)
        .run(ReportRequest {
            trigger: ReportTrigger::Cli,
            period: PeriodSpec::Last,
            now: Utc::now(),
            send: false,
        })
        .await
        .unwrap();
    assert_eq!(report.summary.fallback_reason, None);
    assert!(
        report.summary.text.contains("A calm week."),
        "{:?}",
        report.summary
    );
    assert_eq!(llm.requests().len(), 1);
}
