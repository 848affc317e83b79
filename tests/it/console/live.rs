//! `GET /api/v1/investigations/{id}/events`: every stored event once and in order while
//! the investigation runs, resumable with Last-Event-ID, ending with the final status.

use std::time::Duration;

use futures::StreamExt;
use serde_json::Value;

use crate::agent::{ask, wait_final};
use crate::support::fake_llm::{FakeLlm, answer, finding_json, tool_calls};
use crate::support::{TestApp, spawn_app};

/// One received server-sent event.
#[derive(Debug)]
struct Received {
    event: String,
    id: Option<String>,
    data: Value,
    /// Whether the investigation was still running when it arrived.
    while_running: bool,
}

/// Reads the stream of `id` to its end (after `last` when given).
async fn follow(app: &TestApp, id: &str, last: Option<&str>) -> Vec<Received> {
    let mut req = app
        .http
        .get(app.url(&format!("/api/v1/investigations/{id}/events")));
    if let Some(l) = last {
        req = req.header("last-event-id", l);
    }
    let resp = req.send().await.unwrap();
    assert_eq!(resp.status(), 200);
    assert!(
        resp.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream")
    );
    let mut body = resp.bytes_stream();
    let mut buf = String::new();
    let mut out = Vec::new();
    let read = async {
        while let Some(chunk) = body.next().await {
            buf.push_str(&String::from_utf8_lossy(&chunk.unwrap()));
            while let Some(end) = buf.find("\n\n") {
                let block: String = buf.drain(..end + 2).collect();
                let (mut event, mut ident, mut data) = (String::new(), None, String::new());
                for line in block.lines() {
                    if let Some(v) = line.strip_prefix("event: ") {
                        event = v.into()
                    }
                    if let Some(v) = line.strip_prefix("id: ") {
                        ident = Some(v.to_string())
                    }
                    if let Some(v) = line.strip_prefix("data: ") {
                        data.push_str(v)
                    }
                }
                if event.is_empty() {
                    continue;
                } // keep-alive comment
                let running = !app
                    .state
                    .dispatcher
                    .get(id)
                    .unwrap()
                    .unwrap()
                    .status
                    .is_final();
                out.push(Received {
                    event,
                    id: ident,
                    data: serde_json::from_str(&data).unwrap(),
                    while_running: running,
                });
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(30), read)
        .await
        .expect("the stream ends");
    out
}

#[tokio::test]
async fn the_event_stream_sends_each_step_once_in_order_while_it_runs_and_resumes_after_last_event_id()
 {
    let fake = FakeLlm::start_slow(
        vec![
            tool_calls(&[("call_a", "current_time", "{}")], (100, 10, 0)),
            tool_calls(
                &[("call_b", "current_time", "{\"timezone\": \"UTC\"}")],
                (120, 10, 0),
            ),
            answer(&finding_json("pve2 is swapping", "call_a"), (150, 40, 0)),
        ],
        Duration::from_millis(400),
    )
    .await;
    let app = spawn_app(&fake.config("")).await;
    let id = ask(&app, "why is pve2 slow?").await;
    let early = app
        .http
        .post(app.url(&format!("/api/v1/investigations/{id}/followup")))
        .json(&serde_json::json!({"question": "and now?"}))
        .send()
        .await
        .unwrap();
    assert_eq!(early.status(), 409, "no follow-up before the end");
    let got = follow(&app, &id, None).await;
    let detail = wait_final(&app, &id).await;
    let stored = detail["events"].as_array().unwrap();
    let (last, steps) = got.split_last().unwrap();
    assert_eq!(last.event, "status");
    assert_eq!(last.data["status"], "finished");
    assert_eq!(steps.len(), stored.len(), "{got:#?}");
    for (i, (s, e)) in steps.iter().zip(stored).enumerate() {
        assert_eq!(s.event, "step");
        assert_eq!(s.id.as_deref(), Some(i.to_string().as_str()));
        assert_eq!(&s.data, e);
    }
    assert!(
        steps
            .iter()
            .any(|s| s.data["kind"] == "tool_call" && s.while_running),
        "a tool call arrived before the end: {got:#?}"
    );
    // Resuming after event 1 sends 2.. and the status again.
    let resumed = follow(&app, &id, Some("1")).await;
    let ids: Vec<_> = resumed.iter().filter_map(|r| r.id.clone()).collect();
    let expected: Vec<String> = (2..stored.len()).map(|i| i.to_string()).collect();
    assert_eq!(ids, expected);
    assert_eq!(resumed.last().unwrap().event, "status");
    // Bad input.
    let resp = app.get("/api/v1/investigations/nope/events").await;
    assert_eq!(resp.status(), 404);
    let resp = app
        .http
        .get(app.url(&format!("/api/v1/investigations/{id}/events")))
        .header("last-event-id", "x")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 400);
    assert!(resp.text().await.unwrap().contains("Last-Event-ID"));
    app.stop().await;
}
