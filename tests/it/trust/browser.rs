//! What a web page the operator visits can make the daemon do: nothing. JSON endpoints take
//! only bodies declared `application/json` (a page's form or `text/plain` post, which needs
//! no CORS preflight, gets 415); a state-changing request from another site's `Origin` is
//! refused (403), console forms included; and on the loopback default (no token) a request
//! naming a host that is not this machine's (DNS rebinding) is refused (421), while a LAN or
//! proxy name keeps working once a token is configured.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::support::alerts::{AM_FIRING, GRAFANA_FIRING};
use crate::support::{TestApp, spawn_app};

/// Everything a page could have stored or started.
fn nothing_stored(app: &TestApp) {
    let queued = app.state.dispatcher.list(None, 10, None).unwrap().items;
    assert!(queued.is_empty(), "{queued:?}");
    assert_eq!(app.state.intake.store().alert_count(), 0);
    assert!(app.state.reports.store().list(10).unwrap().is_empty());
}

/// The state-changing JSON routes, with a body each accepts as JSON.
fn json_routes() -> Vec<(&'static str, String)> {
    vec![
        ("/api/v1/ask", json!({"question": "why?"}).to_string()),
        (
            "/api/v1/investigations/0190f3b4-0000-7000-8000-000000000000/feedback",
            json!({"verdict": "wrong"}).to_string(),
        ),
        (
            "/api/v1/investigations/0190f3b4-0000-7000-8000-000000000000/followup",
            json!({"question": "and now?"}).to_string(),
        ),
        ("/api/v1/reports", json!({"send": true}).to_string()),
        ("/webhook/alertmanager", AM_FIRING.to_string()),
        ("/webhook/grafana", GRAFANA_FIRING.to_string()),
    ]
}

#[tokio::test]
async fn a_json_endpoint_refuses_a_body_not_declared_json_with_415_and_stores_nothing() {
    let app = spawn_app("").await;
    for (path, body) in json_routes() {
        for content_type in [
            Some("text/plain"),
            Some("text/plain;charset=UTF-8"),
            Some("application/x-www-form-urlencoded"),
            Some("multipart/form-data; boundary=x"),
            Some("application/jsonp"),
            None,
        ] {
            let mut req = app.http.post(app.url(path)).body(body.clone());
            if let Some(ct) = content_type {
                req = req.header("content-type", ct);
            }
            let resp = req.send().await.unwrap();
            assert_eq!(
                resp.status(),
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "{path} with {content_type:?}"
            );
            let err: Value = resp.json().await.unwrap();
            let msg = err["error"].as_str().unwrap_or_default();
            assert!(
                msg.contains("Content-Type: application/json"),
                "{path}: {err}"
            );
        }
    }
    nothing_stored(&app);
    // Declared JSON, with a charset, as Grafana 12 lets people set it, is read.
    let resp = app
        .http
        .post(app.url("/webhook/alertmanager"))
        .header("content-type", "application/json; charset=utf-8")
        .body(AM_FIRING)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    // An empty POST declares nothing and reads nothing: still a (not sent) report.
    let resp = app
        .http
        .post(app.url("/api/v1/reports"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    app.stop().await;
}

#[tokio::test]
async fn a_state_changing_request_from_another_sites_origin_is_refused_and_the_own_origin_passes() {
    let app = spawn_app("").await;
    let own = app.base.clone();
    for (path, body) in json_routes() {
        for (origin, fetch_site) in [
            (Some("https://evil.example"), None),
            (Some("http://127.0.0.1.evil.example"), None),
            (
                Some(&*format!("http://localhost:{}", app.addr.port() + 1)),
                None,
            ),
            (Some("null"), None),
            (None, Some("cross-site")),
        ] {
            let mut req = app
                .http
                .post(app.url(path))
                .header("content-type", "application/json")
                .body(body.clone());
            if let Some(o) = origin {
                req = req.header("origin", o);
            }
            if let Some(s) = fetch_site {
                req = req.header("sec-fetch-site", s);
            }
            let resp = req.send().await.unwrap();
            assert_eq!(
                resp.status(),
                StatusCode::FORBIDDEN,
                "{path} from {origin:?} {fetch_site:?}"
            );
            let err: Value = resp.json().await.unwrap();
            assert!(
                err["error"].as_str().unwrap_or_default().contains("origin"),
                "{err}"
            );
        }
    }
    // The console's own forms from another site: refused before the CSRF check.
    let resp = app
        .http
        .post(app.url("/ask"))
        .header("origin", "https://evil.example")
        .header("content-type", "application/x-www-form-urlencoded")
        .body("question=q&_csrf=x")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::FORBIDDEN);
    let resp = app
        .http
        .delete(app.url("/api/v1/investigations/0190f3b4-0000-7000-8000-000000000000"))
        .header("origin", "https://evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::FORBIDDEN);
    nothing_stored(&app);
    // Reading is not refused (a cross-site page cannot read the answer without CORS).
    let resp = app
        .http
        .get(app.url("/api/v1/investigations"))
        .header("origin", "https://evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    // The console's own origin, and same-origin fetches, pass.
    for (origin, site) in [(Some(own.as_str()), None), (None, Some("same-origin"))] {
        let mut req = app
            .http
            .post(app.url("/api/v1/ask"))
            .header("content-type", "application/json")
            .body(json!({"question": "why?"}).to_string());
        if let Some(o) = origin {
            req = req.header("origin", o);
        }
        if let Some(s) = site {
            req = req.header("sec-fetch-site", s);
        }
        let resp = req.send().await.unwrap();
        assert_eq!(resp.status(), StatusCode::ACCEPTED, "{origin:?} {site:?}");
    }
    app.stop().await;
}

/// GET `path` naming `host` in the Host header.
async fn get_as(app: &TestApp, path: &str, host: &str) -> reqwest::Response {
    app.http
        .get(app.url(path))
        .header("host", host)
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn without_a_token_a_request_naming_a_host_that_is_not_loopback_is_refused_as_dns_rebinding()
{
    let app = spawn_app("[server]\npublic_url = \"https://sre.example.com/\"\n").await;
    let port = app.addr.port();
    for host in [
        "evil.example".to_string(),
        format!("evil.example:{port}"),
        format!("localhost.evil.example:{port}"),
        format!("127.0.0.1.nip.io:{port}"),
        "sre.example.com.evil.example".to_string(),
        "192.168.1.10:8787".to_string(),
    ] {
        for path in ["/api/v1/investigations", "/", "/healthz"] {
            let resp = get_as(&app, path, &host).await;
            assert_eq!(
                resp.status(),
                StatusCode::MISDIRECTED_REQUEST,
                "{path} as {host}"
            );
        }
        let resp = app
            .http
            .post(app.url("/webhook/alertmanager"))
            .header("host", &host)
            .header("content-type", "application/json")
            .body(AM_FIRING)
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), StatusCode::MISDIRECTED_REQUEST, "{host}");
        let err: Value = resp.json().await.unwrap();
        assert!(
            err["error"].as_str().unwrap_or_default().contains("Host"),
            "{err}"
        );
    }
    nothing_stored(&app);
    for host in [
        format!("localhost:{port}"),
        "localhost".into(),
        "LOCALHOST".into(),
        format!("127.0.0.1:{port}"),
        format!("[::1]:{port}"),
        "sre.example.com".into(),
        "sre.example.com:443".into(),
    ] {
        let resp = get_as(&app, "/api/v1/investigations", &host).await;
        assert_eq!(resp.status(), StatusCode::OK, "{host}");
    }
    app.stop().await;
}

#[tokio::test]
async fn with_a_token_a_lan_or_reverse_proxy_host_keeps_working() {
    let app = spawn_app("[server]\napi_token = \"t0ken-for-the-lan\"\n").await;
    for host in ["sre-agent.lan:8787", "192.168.1.10:8787", "sre.example.com"] {
        let resp = app
            .http
            .get(app.url("/api/v1/investigations"))
            .header("host", host)
            .bearer_auth("t0ken-for-the-lan")
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), StatusCode::OK, "{host}");
        // A proxy that keeps the browser's host: the page's own origin is that host.
        let resp = app
            .http
            .post(app.url("/api/v1/ask"))
            .header("host", host)
            .header("origin", format!("https://{host}"))
            .header("content-type", "application/json")
            .bearer_auth("t0ken-for-the-lan")
            .body(json!({"question": "why?"}).to_string())
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), StatusCode::ACCEPTED, "{host}");
    }
    app.stop().await;
}
