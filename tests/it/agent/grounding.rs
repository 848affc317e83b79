//! A finding grounded in the sweep's facts: with a real Prometheus whose sweep finds a full
//! filesystem, a model answering "the disk is almost full" names none of the facts; its
//! probable cause is replaced, with no further call, by the top-ranked fact, marked as
//! computed and cited. A model that names the filesystem keeps its answer.

use super::{ask, wait_final};
use crate::analyze::world::{World, series};
use crate::support::fake_llm::{FakeLlm, answer, finding_json};
use crate::support::spawn_app;

const GIB: f64 = 1024.0 * 1024.0 * 1024.0;

/// /srv/photos on kiwi-3: 97 % of 500 GiB used, steady.
async fn full_disk_world() -> Option<World> {
    let labels = [
        ("instance", "kiwi-3:9100"),
        ("job", "node"),
        ("mountpoint", "/srv/photos"),
        ("fstype", "ext4"),
        ("device", "/dev/sdb1"),
    ];
    let defs = vec![
        series("node_filesystem_size_bytes", &labels, |_| Some(500.0 * GIB)),
        series("node_filesystem_avail_bytes", &labels, |_| Some(15.0 * GIB)),
    ];
    World::build(&defs, 3600, 15).await
}

#[tokio::test]
async fn an_answer_naming_no_fact_gets_the_top_ranked_fact_as_its_cause_without_another_call() {
    let Some(world) = full_disk_world().await else {
        return;
    };
    let fake = FakeLlm::start(vec![answer(
        &finding_json("The disk is almost full.", "fact_1"),
        (900, 60, 0),
    )])
    .await;
    let extra = format!("[prometheus]\nurl = \"{}\"\n", world.prometheus.url);
    let app = spawn_app(&fake.config(&extra)).await;
    let id = ask(&app, "Why do photo uploads fail?").await;
    let inv = wait_final(&app, &id).await;
    assert_eq!(inv["status"], "finished", "{inv:#}");
    assert_eq!(fake.requests().len(), 1, "no further call");
    let finding = &inv["finding"];
    assert_eq!(finding["summary"], "The disk is almost full.");
    let cause = finding["probable_cause"].as_str().unwrap();
    assert!(
        cause.starts_with("From the top-ranked facts (computed;"),
        "{cause}"
    );
    assert!(
        cause.contains("fact_1: filesystem /srv/photos on kiwi-3"),
        "{cause}"
    );
    assert!(cause.contains("97"), "{cause}");
    assert_eq!(
        finding["evidence"][0]["tool_call_ids"][0], "fact_1",
        "{finding:#}"
    );
    let notes = inv["notes"].to_string();
    assert!(
        notes.contains("was replaced by the top-ranked ones: fact_1"),
        "{notes}"
    );
    app.stop().await;
}

#[tokio::test]
async fn an_answer_naming_the_fact_keeps_its_own_cause() {
    let Some(world) = full_disk_world().await else {
        return;
    };
    let fake = FakeLlm::start(vec![answer(
        &finding_json("/srv/photos on kiwi-3 is 97 % used.", "fact_1"),
        (900, 60, 0),
    )])
    .await;
    let extra = format!("[prometheus]\nurl = \"{}\"\n", world.prometheus.url);
    let app = spawn_app(&fake.config(&extra)).await;
    let id = ask(&app, "Why do photo uploads fail?").await;
    let inv = wait_final(&app, &id).await;
    assert_eq!(inv["status"], "finished", "{inv:#}");
    let cause = inv["finding"]["probable_cause"].as_str().unwrap();
    assert!(!cause.contains("computed"), "{cause}");
    app.stop().await;
}
