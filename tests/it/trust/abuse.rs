//! Slow and abusive clients: connections trickling their headers are cut off after
//! `server.header_timeout` while well-formed traffic is answered at once, no more than
//! `server.max_connections` are served at a time, a request slower than
//! `server.request_timeout` gets 408, and a client hanging up mid-request does not leave
//! the in-progress gauge counting it.

use std::time::{Duration, Instant};

use reqwest::StatusCode;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;

use crate::support::alerts::GRAFANA_FIRING;
use crate::support::{TestApp, eventually, metric_value, spawn_app};

/// A connection that sends a request head one header at a time, never finishing it; the
/// task ends when the server closes the connection.
fn trickle(app: &TestApp) -> tokio::task::JoinHandle<Duration> {
    let addr = app.addr;
    tokio::spawn(async move {
        let start = Instant::now();
        let mut s = TcpStream::connect(addr).await.unwrap();
        let _ = s
            .write_all(b"POST /webhook/grafana HTTP/1.1\r\nHost: x\r\n")
            .await;
        let mut buf = [0u8; 256];
        loop {
            tokio::select! {
                read = s.read(&mut buf) => match read {
                    Ok(0) | Err(_) => return start.elapsed(),
                    Ok(_) => {}
                },
                _ = tokio::time::sleep(Duration::from_millis(300)) => {
                    if s.write_all(b"X-Slow: 1\r\n").await.is_err() {
                        return start.elapsed();
                    }
                }
            }
        }
    })
}

async fn webhook(app: &TestApp) -> StatusCode {
    app.http
        .post(app.url("/webhook/grafana"))
        .header("content-type", "application/json")
        .body(GRAFANA_FIRING)
        .send()
        .await
        .unwrap()
        .status()
}

#[tokio::test]
async fn three_hundred_clients_trickling_headers_are_cut_off_while_a_webhook_is_answered_at_once() {
    let app = spawn_app("[server]\nheader_timeout = \"2s\"\n").await;
    let slow: Vec<_> = (0..300).map(|_| trickle(&app)).collect();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let start = Instant::now();
    assert_eq!(webhook(&app).await, StatusCode::OK);
    assert!(
        start.elapsed() < Duration::from_secs(1),
        "a webhook took {:?} among slow clients",
        start.elapsed()
    );
    for (i, conn) in slow.into_iter().enumerate() {
        let open_for = tokio::time::timeout(Duration::from_secs(15), conn)
            .await
            .unwrap_or_else(|_| panic!("slow client {i} is still connected after 15s"))
            .unwrap();
        assert!(
            open_for < Duration::from_secs(8),
            "client {i}: {open_for:?}"
        );
    }
    assert_eq!(webhook(&app).await, StatusCode::OK);
}

#[tokio::test]
async fn no_more_than_max_connections_are_served_at_once() {
    let app = spawn_app("[server]\nmax_connections = 3\nheader_timeout = \"1s\"\n").await;
    let idle: Vec<_> = (0..3).map(|_| trickle(&app)).collect();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let start = Instant::now();
    // Waits until the server cuts the idle ones off and takes this connection.
    assert_eq!(webhook(&app).await, StatusCode::OK);
    assert!(
        start.elapsed() >= Duration::from_millis(500),
        "served at once past the cap ({:?})",
        start.elapsed()
    );
    for conn in idle {
        conn.await.unwrap();
    }
}

#[tokio::test]
async fn a_request_body_slower_than_the_request_timeout_gets_408() {
    let app = spawn_app("[server]\nrequest_timeout = \"1s\"\n").await;
    let mut s = TcpStream::connect(app.addr).await.unwrap();
    s.write_all(
        b"POST /webhook/grafana HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{",
    )
    .await
    .unwrap();
    let start = Instant::now();
    let mut answer = Vec::new();
    let mut buf = [0u8; 1024];
    while !answer.ends_with(b"}") {
        let n = tokio::time::timeout(Duration::from_secs(10), s.read(&mut buf))
            .await
            .expect("an answer within the request timeout")
            .unwrap();
        if n == 0 {
            break;
        }
        answer.extend_from_slice(&buf[..n]);
    }
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("server.request_timeout"), "{answer}");
    assert!(start.elapsed() < Duration::from_secs(5));
    assert_eq!(app.state.intake.store().alert_count(), 0);
}

#[tokio::test]
async fn a_client_hanging_up_mid_request_does_not_leave_the_in_progress_gauge_counting_it() {
    // A Prometheus that accepts and never answers keeps report generation busy.
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let silent_addr = silent.local_addr().unwrap();
    let _hold = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((s, _)) = silent.accept().await {
            held.push(s);
        }
    });
    let app = spawn_app(&format!(
        "[prometheus]\nurl = \"http://{silent_addr}\"\ntimeout = \"60s\"\n[report]\ncollector_timeout = \"60s\"\n"
    ))
    .await;
    let gauge = r#"sre_agent_http_requests_in_progress{endpoint="/api/v1/reports"}"#;
    let impatient = reqwest::Client::builder()
        .timeout(Duration::from_millis(500))
        .build()
        .unwrap();
    let err = impatient
        .post(app.url("/api/v1/reports"))
        .json(&serde_json::json!({}))
        .send()
        .await
        .expect_err("the report is still being generated");
    assert!(err.is_timeout(), "{err}");
    eventually(Duration::from_secs(10), "the gauge back at 0", || async {
        let m = app.metrics().await;
        (metric_value(&m, gauge) == Some(0.0)).then_some(())
    })
    .await;
}
