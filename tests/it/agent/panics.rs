//! A panic inside an investigation: the run ends `failed` with the reason, the panic is
//! counted in `sre_agent_panics_total`, and the daemon started again on the same data
//! answers and does not run that investigation again (no crash loop from one input).

use std::sync::Arc;

use serde_json::{Value, json};
use sre_agent::agent::{Dispatcher, InvestigationRequest, InvestigationStatus, Trigger};
use sre_agent::llm::LlmClient;
use sre_agent::store::Store;
use sre_agent::telemetry::Metrics;
use sre_agent::tools::{Tool, ToolError, ToolRegistry};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::{WAIT, wait_final};
use crate::support::fake_llm::{FakeLlm, answer, finding_json, tool_calls};
use crate::support::{eventually, metric_value, test_config};

/// A tool with a bug: it panics on every call.
struct Explode;

#[async_trait::async_trait]
impl Tool for Explode {
    fn name(&self) -> &'static str {
        "explode"
    }
    fn description(&self) -> &'static str {
        "Panics."
    }
    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {}})
    }
    async fn call(&self, _args: Value) -> Result<String, ToolError> {
        let bytes = "é".to_string();
        // The kind of bug this containment is for: a byte slice inside a character.
        Ok(bytes[..1].to_string())
    }
}

#[tokio::test]
async fn an_investigation_whose_tool_panics_fails_with_the_reason_and_is_not_run_again() {
    let fake = FakeLlm::start(vec![
        tool_calls(&[("call_1", "explode", "{}")], (10, 1, 0)),
        answer(&finding_json("never reached", "call_1"), (10, 1, 0)),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let config = test_config(dir.path(), &fake.config(""));
    let id = {
        sre_agent::install_crypto_provider();
        let store = Store::open(&config.server.data_dir).unwrap();
        let metrics = Arc::new(Metrics::new(&config.llm.model));
        let llm = LlmClient::new(&config.llm, metrics.clone()).unwrap();
        let mut tools = ToolRegistry::new(metrics.clone(), 4000);
        tools.register(Arc::new(Explode));
        let d = Dispatcher::with_parts(&config, &store, metrics.clone(), llm, tools).unwrap();
        let (token, tracker) = (CancellationToken::new(), TaskTracker::new());
        d.start(token.clone(), &tracker).unwrap();
        let inv = d
            .submit(InvestigationRequest {
                trigger: Trigger::Ask,
                title: "a tool with a bug".into(),
                prompt: "q".into(),
                context: None,
                group_key: None,
            })
            .await
            .unwrap();
        let done = eventually(WAIT, "a final status", || {
            let inv = d.get(&inv.id).unwrap();
            async move { inv.filter(|i| i.status.is_final()) }
        })
        .await;
        assert_eq!(done.status, InvestigationStatus::Failed);
        let error = done.error.clone().unwrap_or_default();
        assert!(
            error.starts_with("panicked: ") && error.contains("char boundary"),
            "{error}"
        );
        let text = metrics.encode();
        let series = r#"sre_agent_panics_total{task="investigation"}"#;
        assert_eq!(metric_value(&text, series), Some(1.0), "{text}");
        let series = r#"sre_agent_investigations_total{status="failed",trigger="ask"}"#;
        assert_eq!(metric_value(&text, series), Some(1.0));
        // Contained inside the run: the worker loop itself did not panic.
        assert_eq!(
            metric_value(
                &text,
                r#"sre_agent_panics_total{task="investigation_worker"}"#
            ),
            Some(0.0)
        );
        token.cancel();
        tracker.close();
        tracker.wait().await;
        store.flush().await.unwrap();
        done.id
    };
    assert_eq!(fake.requests().len(), 1);

    // The daemon started again on the same data: it answers and leaves the failed one be.
    let app = crate::support::spawn_app_with(config, dir).await;
    assert_eq!(app.get("/healthz").await.status(), 200);
    let inv = wait_final(&app, &id).await;
    assert_eq!(inv["status"], "failed");
    assert_eq!(inv["attempts"], 1);
    // Nothing was resumed: the queue is empty and the model was not asked again.
    let text = app.metrics().await;
    assert_eq!(metric_value(&text, "sre_agent_queue_depth"), Some(0.0));
    assert_eq!(
        fake.requests().len(),
        1,
        "the failed investigation ran again"
    );
    assert_eq!(app.get("/healthz").await.status(), 200);
    app.stop().await;
}
