//! A model that calls no tool even when asked: with a real Prometheus whose sweep finds
//! nothing to report, the general tools (no required arguments) run for it, and its answer
//! from their results is stored `finished`, citing them.

use super::{ask, wait_final};
use crate::analyze::world::{World, series};
use crate::support::fake_llm::{FakeLlm, answer, finding_json};
use crate::support::spawn_app;

#[tokio::test]
async fn the_general_tools_run_for_a_model_that_calls_none_and_it_answers_from_them() {
    // A world the sweep has nothing to say about: no scrape targets, no host series.
    let defs = vec![series(
        "lab_temperature_celsius",
        &[("room", "attic")],
        |_| Some(21.5),
    )];
    let Some(world) = World::build(&defs, 3600, 15).await else {
        return;
    };
    let fake = FakeLlm::start(vec![
        answer(&finding_json("All is fine.", "x"), (500, 30, 0)),
        answer(&finding_json("All is fine.", "x"), (600, 30, 0)),
        answer(
            &finding_json("No alert is firing and no target is down.", "general_1"),
            (900, 40, 0),
        ),
    ])
    .await;
    let extra = format!("[prometheus]\nurl = \"{}\"\n", world.prometheus.url);
    let app = spawn_app(&fake.config(&extra)).await;
    let id = ask(&app, "Is anything wrong?").await;
    let inv = wait_final(&app, &id).await;
    assert_eq!(inv["status"], "finished", "{inv:#}");
    assert_eq!(
        inv["finding"]["summary"],
        "No alert is firing and no target is down."
    );
    let reqs = fake.requests();
    assert_eq!(reqs.len(), 3);
    let results = reqs[2].tool_results();
    assert_eq!(results.len(), 3, "{results:?}");
    assert!(
        results[0].ends_with("Cite this result as general_1."),
        "{results:?}"
    );
    let notes = inv["notes"].to_string();
    assert!(
        notes.contains("ran the general tools for it (prometheus_alerts, prometheus_targets, prometheus_metric_names)"),
        "{notes}"
    );
    app.stop().await;
}
