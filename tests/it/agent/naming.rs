//! A finding that names nothing of the problem it rests on: with a real Prometheus whose
//! sweep finds a full filesystem, a model answering "the disk is almost full" is asked once
//! to name it (the fact quoted back), and its better answer is stored; when that second
//! answer is unusable, the first one stands.

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

fn last_user_message(fake: &FakeLlm, request: usize) -> String {
    fake.requests()[request].messages().last().unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string()
}

#[tokio::test]
async fn an_answer_naming_nothing_is_asked_once_to_name_the_entity_and_the_better_one_is_stored() {
    let Some(world) = full_disk_world().await else {
        return;
    };
    let fake = FakeLlm::start(vec![
        answer(
            &finding_json("The disk is almost full.", "fact_1"),
            (900, 60, 0),
        ),
        answer(
            &finding_json("/srv/photos on kiwi-3 is 97 % used.", "fact_1"),
            (1000, 60, 0),
        ),
    ])
    .await;
    let extra = format!("[prometheus]\nurl = \"{}\"\n", world.prometheus.url);
    let app = spawn_app(&fake.config(&extra)).await;
    let id = ask(&app, "Why do photo uploads fail?").await;
    let inv = wait_final(&app, &id).await;
    assert_eq!(inv["status"], "finished", "{inv:#}");
    assert_eq!(
        inv["finding"]["summary"],
        "/srv/photos on kiwi-3 is 97 % used."
    );
    assert_eq!(fake.requests().len(), 2);
    let ask = last_user_message(&fake, 1);
    assert!(
        ask.starts_with("Your answer does not say which one is affected, nor its figures."),
        "{ask}"
    );
    assert!(
        ask.contains("fact_1: filesystem /srv/photos on kiwi-3"),
        "{ask}"
    );
    app.stop().await;
}

#[tokio::test]
async fn when_the_answer_asked_for_is_unusable_the_first_one_stands() {
    let Some(world) = full_disk_world().await else {
        return;
    };
    let fake = FakeLlm::start(vec![
        answer(
            &finding_json("The disk is almost full.", "fact_1"),
            (900, 60, 0),
        ),
        answer("", (1000, 1, 0)),
    ])
    .await;
    let extra = format!("[prometheus]\nurl = \"{}\"\n", world.prometheus.url);
    let app = spawn_app(&fake.config(&extra)).await;
    let id = ask(&app, "Why do photo uploads fail?").await;
    let inv = wait_final(&app, &id).await;
    assert_eq!(inv["status"], "finished", "{inv:#}");
    assert_eq!(inv["finding"]["summary"], "The disk is almost full.");
    let notes = inv["notes"].to_string();
    assert!(notes.contains("the one before stands"), "{notes}");
    app.stop().await;
}
