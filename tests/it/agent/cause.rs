//! A finding whose probable cause restates its trigger: with a real Prometheus whose sweep
//! finds a full filesystem on the host a question names and, elsewhere, a process started
//! again twenty minutes ago, a model answering with the disk alone is asked once, without
//! tools, which of the facts that began before caused it; its short answer citing a fact
//! becomes the probable cause. An answer naming none leaves the finding as it was.

use chrono::Utc;

use super::{ask, wait_final};
use crate::analyze::world::{World, series};
use crate::support::fake_llm::{FakeLlm, answer};
use crate::support::spawn_app;

const GIB: f64 = 1024.0 * 1024.0 * 1024.0;

/// /srv/photos on kiwi-3: 97 % of 500 GiB used, steady; the backup daemon on vault-9
/// restarted 20 minutes ago.
async fn world() -> Option<World> {
    let fs = [
        ("instance", "kiwi-3:9100"),
        ("job", "node"),
        ("mountpoint", "/srv/photos"),
        ("fstype", "ext4"),
        ("device", "/dev/sdb1"),
    ];
    let now = Utc::now().timestamp() as f64;
    let defs = vec![
        series("node_filesystem_size_bytes", &fs, |_| Some(500.0 * GIB)),
        series("node_filesystem_avail_bytes", &fs, |_| Some(15.0 * GIB)),
        series(
            "process_start_time_seconds",
            &[("instance", "vault-9:9900"), ("job", "vaultd")],
            move |ago| {
                Some(if ago < 1200 {
                    now - 1200.0
                } else {
                    now - 86400.0
                })
            },
        ),
    ];
    World::build(&defs, 3600, 15).await
}

fn restating() -> String {
    serde_json::json!({"summary": "/srv/photos on kiwi-3 is 97 % used.",
        "probable_cause": "/srv/photos on kiwi-3 is almost full", "severity": "warning",
        "confidence": "high", "evidence": [{"claim": "97 % used", "tool_call_ids": ["fact_1"]}],
        "next_steps": ["free space"]})
    .to_string()
}

#[tokio::test]
async fn a_cause_restating_the_trigger_is_asked_once_without_tools_which_earlier_fact_caused_it() {
    let Some(world) = world().await else {
        return;
    };
    let fake = FakeLlm::start(vec![
        answer(&restating(), (900, 60, 0)),
        answer(
            "{\"probable_cause\": \"vaultd on vault-9 restarted 20 min ago\", \
             \"tool_call_ids\": [\"fact_1\", \"fact_2\"]}",
            (1000, 30, 0),
        ),
    ])
    .await;
    // Tools offered from the first call on: the question about the cause still offers none.
    let extra = format!(
        "answer_first = false\n[prometheus]\nurl = \"{}\"\n",
        world.prometheus.url
    );
    let app = spawn_app(&fake.config(&extra)).await;
    let id = ask(&app, "Why do photo uploads to kiwi-3 fail?").await;
    let inv = wait_final(&app, &id).await;
    assert_eq!(inv["status"], "finished", "{inv:#}");
    let requests = fake.requests();
    assert_eq!(requests.len(), 2, "{inv:#}");
    let ask = requests[1].messages().last().unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        ask.starts_with("Your probable cause repeats what the question says. These facts may"),
        "{ask}"
    );
    assert!(ask.contains("vault-9"), "{ask}");
    assert!(
        !ask.contains("/srv/photos"),
        "the cited fact is not offered: {ask}"
    );
    assert!(!requests[1].has_tools(), "the choice is among facts it has");
    let finding = &inv["finding"];
    assert_eq!(
        finding["probable_cause"],
        "vaultd on vault-9 restarted 20 min ago"
    );
    assert_eq!(finding["summary"], "/srv/photos on kiwi-3 is 97 % used.");
    app.stop().await;
}

#[tokio::test]
async fn an_answer_naming_no_fact_as_the_cause_leaves_the_finding_as_it_was() {
    let Some(world) = world().await else {
        return;
    };
    let fake = FakeLlm::start(vec![
        answer(&restating(), (900, 60, 0)),
        answer("{\"probable_cause\": \"\"}", (1000, 10, 0)),
    ])
    .await;
    let extra = format!("[prometheus]\nurl = \"{}\"\n", world.prometheus.url);
    let app = spawn_app(&fake.config(&extra)).await;
    let id = ask(&app, "Why do photo uploads to kiwi-3 fail?").await;
    let inv = wait_final(&app, &id).await;
    assert_eq!(inv["status"], "finished", "{inv:#}");
    assert_eq!(
        inv["finding"]["probable_cause"],
        "/srv/photos on kiwi-3 is almost full"
    );
    let notes = inv["notes"].to_string();
    assert!(notes.contains("the model named none"), "{notes}");
    app.stop().await;
}
