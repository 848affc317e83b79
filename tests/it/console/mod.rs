//! The web console over HTTP against the in-process app: pages without JavaScript under a
//! strict policy with attacker-controlled alert labels escaped, the event stream, follow-ups
//! (API and form), login and CSRF. `browser.rs` drives the real binary in Chromium.

mod browser;
mod cli;
mod feedback;
mod live;
mod reports;

use std::time::Duration;

use reqwest::header::{CONTENT_SECURITY_POLICY, COOKIE, LOCATION, SET_COOKIE};
use serde_json::{Value, json};

use crate::agent::{ask, wait_final};
use crate::support::fake_llm::{FakeLlm, answer, finding_json, tool_calls};
use crate::support::{TestApp, eventually, spawn_app};

/// A browser's cookies, kept by hand (the test client has no cookie store).
#[derive(Default)]
pub struct Jar(Vec<(String, String)>);

impl Jar {
    pub fn absorb(&mut self, resp: &reqwest::Response) {
        for v in resp.headers().get_all(SET_COOKIE) {
            let v = v.to_str().unwrap();
            let (pair, _) = v.split_once(';').unwrap_or((v, ""));
            let (k, val) = pair.split_once('=').unwrap();
            self.0.retain(|(n, _)| n != k);
            if !v.contains("Max-Age=0") {
                self.0.push((k.to_string(), val.to_string()));
            }
        }
    }

    pub fn header(&self) -> String {
        self.0
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join("; ")
    }
}

/// A client that does not follow redirects (to see them).
pub(crate) fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap()
}

/// GETs `path` with the jar's cookies; returns (status, body), keeping new cookies.
pub(crate) async fn page(
    app: &TestApp,
    jar: &mut Jar,
    path: &str,
) -> (u16, String, reqwest::header::HeaderMap) {
    let resp = client()
        .get(app.url(path))
        .header(COOKIE, jar.header())
        .send()
        .await
        .unwrap();
    jar.absorb(&resp);
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    (status, resp.text().await.unwrap(), headers)
}

/// POSTs a form with the jar's cookies.
pub(crate) async fn post_form(
    app: &TestApp,
    jar: &mut Jar,
    path: &str,
    form: &[(&str, &str)],
) -> reqwest::Response {
    let resp = client()
        .post(app.url(path))
        .header(COOKIE, jar.header())
        .header("content-type", "application/x-www-form-urlencoded")
        .body(form_body(form))
        .send()
        .await
        .unwrap();
    jar.absorb(&resp);
    resp
}

/// `application/x-www-form-urlencoded` of `pairs`.
pub(crate) fn form_body(pairs: &[(&str, &str)]) -> String {
    url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(pairs)
        .finish()
}

/// The CSRF token of the first form on a page.
pub(crate) fn csrf_of(html: &str) -> String {
    let at = html
        .find("name=\"_csrf\" value=\"")
        .expect("a form with a CSRF token");
    let rest = &html[at + "name=\"_csrf\" value=\"".len()..];
    rest[..rest.find('"').unwrap()].to_string()
}

fn scripted() -> Vec<crate::support::fake_llm::Reply> {
    vec![
        tool_calls(&[("call_a", "current_time", "{}")], (100, 10, 0)),
        answer(&finding_json("pve2 is swapping", "call_a"), (150, 40, 0)),
    ]
}

/// The checks every console document passes: its policy has no inline script or style,
/// it has no inline script or style itself, and it weighs under 100 kB.
fn assert_strict(path: &str, body: &str, headers: &reqwest::header::HeaderMap) {
    let csp = headers[CONTENT_SECURITY_POLICY].to_str().unwrap();
    assert!(
        csp.contains("script-src 'self'") && csp.contains("style-src 'self'"),
        "{csp}"
    );
    assert!(!csp.contains("unsafe-inline"), "{path}: {csp}");
    assert!(body.len() < 100_000, "{path} weighs {} bytes", body.len());
    assert_eq!(
        body.matches("<script").count(),
        body.matches("<script src=\"/static/").count(),
        "{path}: inline script"
    );
    assert!(!body.contains(" style=\""), "{path}: inline style");
    assert!(!body.contains("<style"), "{path}: style element");
}

#[tokio::test]
async fn every_page_renders_without_javascript_under_a_strict_policy_and_escapes_an_alert_label_holding_script()
 {
    let fake = FakeLlm::start(scripted()).await;
    let app = spawn_app(&fake.config("")).await;
    let evil = "<script>alert(1)</script>";
    let payload = json!({"version": "4", "status": "firing", "receiver": "sre",
        "groupKey": "{}:{alertname=\"Evil\"}", "groupLabels": {}, "commonLabels": {},
        "commonAnnotations": {}, "externalURL": "http://am", "truncatedAlerts": 0,
        "alerts": [{"status": "firing",
            "labels": {"alertname": format!("Disk{evil}"), "instance": "pve2", "team": evil},
            "annotations": {"summary": "<img src=x onerror=alert(2)>"},
            "startsAt": "2026-11-22T20:45:24.847Z", "endsAt": "0001-01-01T00:00:00Z",
            "generatorURL": "javascript:alert(3)", "fingerprint": "00000000000000aa"}]});
    let resp = app
        .http
        .post(app.url("/webhook/alertmanager"))
        .json(&payload)
        .send()
        .await
        .unwrap();
    assert!(resp.status().is_success(), "{}", resp.status());
    let alert_inv = eventually(
        Duration::from_secs(20),
        "the alert's investigation",
        || async {
            let v: Value = app.get("/api/v1/investigations").await.json().await.ok()?;
            let id = v["items"].as_array()?.first()?["id"].as_str()?.to_string();
            Some(id)
        },
    )
    .await;
    wait_final(&app, &alert_inv).await;
    let asked = ask(&app, "why is pve2 slow? <b>now</b>").await;
    wait_final(&app, &asked).await;

    let mut jar = Jar::default();
    for path in [
        "/".to_string(),
        "/?status=finished&trigger=alert&q=pve2".to_string(),
        "/alerts".into(),
        format!("/investigations/{alert_inv}"),
        format!("/investigations/{asked}"),
        "/ask".into(),
        "/reports".into(),
        "/status".into(),
    ] {
        let (status, body, headers) = page(&app, &mut jar, &path).await;
        assert_eq!(status, 200, "{path}: {body}");
        assert_strict(&path, &body, &headers);
        assert!(
            !body.contains("<script>alert"),
            "{path} lets a label's script through"
        );
        assert!(!body.contains("<img src=x"), "{path}");
        assert!(!body.contains("<b>now</b>"), "{path}");
        assert!(!body.contains("href=\"javascript:"), "{path}");
    }
    let (_, body, _) = page(&app, &mut jar, &format!("/investigations/{alert_inv}")).await;
    assert!(
        body.contains("Disk&lt;script&gt;alert(1)&lt;/script&gt;"),
        "{body}"
    );
    assert!(body.contains("&lt;img src=x onerror=alert(2)&gt;"));
    assert!(
        body.contains("href=\"#call-call_a\""),
        "evidence links to its call: {body}"
    );
    assert!(body.contains("id=\"call-call_a\""));
    assert!(body.contains("pve2 is swapping"));
    let (_, alerts, _) = page(&app, &mut jar, "/alerts").await;
    assert!(
        alerts.contains("&lt;script&gt;")
            && alerts.contains(&format!("/investigations/{alert_inv}"))
    );
    // Filters and search: the ask matches "pve2" as trigger ask, not as alert.
    let (_, list, _) = page(&app, &mut jar, "/?trigger=ask&q=PVE2").await;
    assert!(
        list.contains(&asked) && !list.contains(&alert_inv),
        "{list}"
    );
    let (status, _, _) = page(&app, &mut jar, "/?status=bogus").await;
    assert_eq!(status, 400);
    let (status, body, headers) = page(&app, &mut jar, "/investigations/nope").await;
    assert_eq!(status, 404);
    assert_strict("404", &body, &headers);
    let (_, status_page, _) = page(&app, &mut jar, "/status").await;
    assert!(status_page.contains("# enabled integrations:") && status_page.contains("[llm]"));
    app.stop().await;
}

#[tokio::test]
async fn a_follow_up_is_a_new_investigation_linked_to_its_parent_with_its_finding_fenced_as_context()
 {
    let fake = FakeLlm::start(scripted()).await;
    let app = spawn_app(&fake.config("")).await;
    let parent = ask(&app, "why is pve2 slow?").await;
    wait_final(&app, &parent).await;
    let http = &app.http;
    let url = app.url(&format!("/api/v1/investigations/{parent}/followup"));
    for (body, status) in [
        (json!({"question": "  "}), 400),
        (json!({}), 400),
        (json!({"question": "x".repeat(9_000)}), 400),
    ] {
        let resp = http.post(&url).json(&body).send().await.unwrap();
        assert_eq!(resp.status().as_u16(), status, "{body}");
    }
    let resp = http
        .post(&url)
        .header("content-type", "application/json")
        .body("not json")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 400);
    let resp = http
        .post(app.url("/api/v1/investigations/nope/followup"))
        .json(&json!({"question": "and now?"}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 404);
    let resp = http
        .post(&url)
        .json(&json!({"question": "since when is it swapping?"}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 202);
    let child: Value = resp.json().await.unwrap();
    let child = child["id"].as_str().unwrap().to_string();
    let detail = wait_final(&app, &child).await;
    assert_eq!(detail["parent_id"], parent.as_str());
    // It cites a call of its parent without calling a tool itself: that is not evidence.
    assert_eq!(detail["status"], "inconclusive");
    let first = fake
        .requests()
        .into_iter()
        .find(|r| r.raw.contains("since when is it swapping?"))
        .expect("the follow-up reached the model");
    let user = first.messages()[1]["content"].as_str().unwrap().to_string();
    let fence = user.find("<data").expect("a fenced context");
    assert!(
        user[..fence].contains("since when is it swapping?"),
        "{user}"
    );
    let fenced = &user[fence..];
    for part in [
        "why is pve2 slow?",
        "pve2 is swapping",
        "call_a current_time",
    ] {
        assert!(fenced.contains(part), "{part} not in {fenced}");
    }
    // The thread shows on both pages.
    let mut jar = Jar::default();
    let (_, body, _) = page(&app, &mut jar, &format!("/investigations/{parent}")).await;
    assert!(body.contains(&format!("/investigations/{child}")), "{body}");
    let (_, body, _) = page(&app, &mut jar, &format!("/investigations/{child}")).await;
    assert!(body.contains(&format!("/investigations/{parent}")));
    // From the page's form, with its CSRF token.
    let token = csrf_of(&body);
    let resp = post_form(
        &app,
        &mut jar,
        &format!("/investigations/{child}/followup"),
        &[("question", "and tomorrow?"), ("_csrf", &token)],
    )
    .await;
    assert_eq!(resp.status(), 303);
    let loc = resp.headers()[LOCATION].to_str().unwrap().to_string();
    let grandchild = loc.strip_prefix("/investigations/").unwrap();
    let detail = wait_final(&app, grandchild).await;
    assert_eq!(detail["parent_id"], child.as_str());
    app.stop().await;
}

#[tokio::test]
async fn forms_without_the_csrf_token_of_their_browser_are_refused_and_store_nothing() {
    let fake = FakeLlm::start(scripted()).await;
    let app = spawn_app(&fake.config("")).await;
    let mut jar = Jar::default();
    let (_, body, _) = page(&app, &mut jar, "/ask").await;
    let token = csrf_of(&body);
    assert!(
        body.contains("<label for=\"question\""),
        "the field has a label"
    );
    for (form, cookies) in [
        (vec![("question", "q")], jar.header()),
        (vec![("question", "q"), ("_csrf", "00")], jar.header()),
        // The right token from another browser (no or another anchor cookie).
        (
            vec![("question", "q"), ("_csrf", token.as_str())],
            String::new(),
        ),
        (
            vec![("question", "q"), ("_csrf", token.as_str())],
            "sre_csrf=0123456789abcdef0123456789abcdef".into(),
        ),
    ] {
        let resp = client()
            .post(app.url("/ask"))
            .header(COOKIE, cookies)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(form_body(&form))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 403);
    }
    assert!(
        app.state
            .dispatcher
            .list(None, 10, None)
            .unwrap()
            .items
            .is_empty()
    );
    let resp = post_form(
        &app,
        &mut jar,
        "/ask",
        &[("question", " "), ("_csrf", &token)],
    )
    .await;
    assert_eq!(resp.status(), 400);
    let resp = post_form(
        &app,
        &mut jar,
        "/ask",
        &[("question", "why is pve2 slow?"), ("_csrf", &token)],
    )
    .await;
    assert_eq!(resp.status(), 303);
    assert!(
        resp.headers()[LOCATION]
            .to_str()
            .unwrap()
            .starts_with("/investigations/")
    );
    assert_eq!(
        app.state
            .dispatcher
            .list(None, 10, None)
            .unwrap()
            .items
            .len(),
        1
    );
    app.stop().await;
}

#[tokio::test]
async fn with_an_api_token_the_console_trades_it_at_a_login_form_for_a_strict_session_cookie() {
    let app = spawn_app("[server]\napi_token = \"s3cret-token\"\n").await;
    let mut jar = Jar::default();
    let (status, _, headers) = page(&app, &mut jar, "/alerts?x=1").await;
    assert_eq!(status, 303);
    assert_eq!(headers[LOCATION], "/login?next=%2Falerts%3Fx%3D1");
    let (status, body, _) = page(&app, &mut jar, "/login?next=%2Falerts").await;
    assert_eq!(status, 200);
    assert!(body.contains("<label for=\"token\""));
    let token = csrf_of(&body);
    let resp = post_form(
        &app,
        &mut jar,
        "/login",
        &[("token", "s3cret-token"), ("next", "/alerts")],
    )
    .await;
    assert_eq!(resp.status(), 403, "no CSRF token");
    let resp = post_form(
        &app,
        &mut jar,
        "/login",
        &[("token", "wrong"), ("next", "/alerts"), ("_csrf", &token)],
    )
    .await;
    assert_eq!(resp.status(), 401);
    let resp = post_form(
        &app,
        &mut jar,
        "/login",
        &[
            ("token", "s3cret-token"),
            ("next", "//evil.example/"),
            ("_csrf", &token),
        ],
    )
    .await;
    assert_eq!(resp.status(), 303);
    assert_eq!(resp.headers()[LOCATION], "/", "no open redirect");
    let cookie = resp.headers()[SET_COOKIE].to_str().unwrap();
    assert!(cookie.starts_with("sre_session="), "{cookie}");
    assert!(
        cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"),
        "{cookie}"
    );
    assert!(!cookie.contains("s3cret"), "the token is not the cookie");
    let (status, body, _) = page(&app, &mut jar, "/alerts").await;
    assert_eq!(status, 200, "{body}");
    // The session reads the API (the page's event stream) but does not change anything.
    let resp = client()
        .get(app.url("/api/v1/investigations"))
        .header(COOKIE, jar.header())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let resp = client()
        .post(app.url("/api/v1/ask"))
        .header(COOKIE, jar.header())
        .json(&json!({"question": "q"}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 401);
    // A bearer token still opens the console; a forged session does not.
    let resp = client()
        .get(app.url("/status"))
        .bearer_auth("s3cret-token")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let body = resp.text().await.unwrap();
    assert!(
        !body.contains("s3cret-token") && body.contains("api_token = &quot;***&quot;"),
        "config is redacted"
    );
    let resp = client()
        .get(app.url("/"))
        .header(COOKIE, "sre_session=4102444800.00.00")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 303);
    // Logging out drops the cookie.
    let (_, body, _) = page(&app, &mut jar, "/").await;
    let resp = post_form(&app, &mut jar, "/logout", &[("_csrf", &csrf_of(&body))]).await;
    assert_eq!(resp.status(), 303);
    let (status, _, _) = page(&app, &mut jar, "/").await;
    assert_eq!(status, 303);
    app.stop().await;
}
