//! Times and lookbacks the model chooses beyond the calendar are argument errors.

use serde_json::json;

use super::*;

#[tokio::test]
async fn times_the_model_chooses_beyond_the_calendar_are_argument_errors_not_panics() {
    let (reg, ..) = registry(
        r#"
        [prometheus]
        url = "http://127.0.0.1:9"
        [grafana]
        url = "http://127.0.0.1:9"
        token = "glsa_secret"
        "#,
    );
    let first_minute = (chrono::DateTime::<chrono::Utc>::MIN_UTC.timestamp() + 60).to_string();
    let cases = [
        (
            "prometheus_query",
            json!({"query": "up", "time": "300000y"}),
        ),
        (
            "prometheus_query",
            json!({"query": "up", "time": "now-300000y"}),
        ),
        ("prometheus_query", json!({"query": "up", "time": "1e300"})),
        ("prometheus_query", json!({"query": "up", "time": "NaN"})),
        (
            "prometheus_query_range",
            json!({"query": "up", "start": "300000y"}),
        ),
        (
            "prometheus_query_range",
            json!({"query": "up", "end": "300000y"}),
        ),
        (
            // The default start, an hour before an end at the calendar's first minute.
            "prometheus_query_range",
            json!({"query": "up", "end": first_minute}),
        ),
        ("grafana_annotations", json!({"since": "300000y"})),
    ];
    for (tool, args) in &cases {
        let err = call_err(&reg, tool, args.clone()).await;
        assert!(
            err.contains("too far back") || err.contains("invalid Unix time"),
            "{tool} {args}: {err}"
        );
    }
}
