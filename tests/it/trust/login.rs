//! The console login cannot be turned against its users or guessed: where it sends the
//! browser afterwards is always a path of this site (whatever encoding, tab or backslash the
//! `next` parameter hides a second slash in), wrong tokens are throttled per client (429
//! with Retry-After), and logging out ends the session on the server, so a copy of the
//! cookie opens nothing afterwards.

use std::net::{IpAddr, Ipv4Addr};
use std::time::Duration;

use reqwest::StatusCode;
use reqwest::header::{COOKIE, LOCATION, RETRY_AFTER, SET_COOKIE};

use crate::console::{Jar, client, csrf_of, form_body, page, post_form};
use crate::support::{TestApp, spawn_app};

const TOKEN: &str = "s3cret-console-token";

async fn app_with_token() -> TestApp {
    spawn_app(&format!("[server]\napi_token = \"{TOKEN}\"\n")).await
}

/// A browser with its CSRF anchor and the login form's token.
async fn login_form(app: &TestApp) -> (Jar, String) {
    let mut jar = Jar::default();
    let (status, body, _) = page(app, &mut jar, "/login").await;
    assert_eq!(status, 200);
    let csrf = csrf_of(&body);
    (jar, csrf)
}

#[tokio::test]
async fn after_login_next_never_sends_the_browser_to_another_site() {
    let app = app_with_token().await;
    let (mut jar, csrf) = login_form(&app).await;
    for next in [
        "/\t/evil.example",
        "/%09/evil.example",
        "/%2F/evil.example",
        "/%2f%2fevil.example",
        "%2F%2Fevil.example",
        "/%5Cevil.example",
        "/%5cevil.example",
        "//evil.example",
        "/\\evil.example",
        "\\\\evil.example",
        "/\n/evil.example",
        "/%0A/evil.example",
        "/%0d%0aSet-Cookie:%20x=y",
        "https://evil.example/",
        "javascript:alert(1)",
        " //evil.example",
    ] {
        let resp = post_form(
            &app,
            &mut jar,
            "/login",
            &[("token", TOKEN), ("next", next), ("_csrf", &csrf)],
        )
        .await;
        assert_eq!(resp.status(), StatusCode::SEE_OTHER, "{next:?}");
        assert_eq!(resp.headers()[LOCATION], "/", "{next:?}");
        // The login page never puts it in its form either.
        let query = form_body(&[("next", next)]);
        let (_, body, _) = page(&app, &mut Jar::default(), &format!("/login?{query}")).await;
        assert!(
            body.contains("name=\"next\" value=\"/\""),
            "{next:?}: {body}"
        );
    }
    for next in ["/alerts?x=1", "/investigations/abc#feedback", "/"] {
        let resp = post_form(
            &app,
            &mut jar,
            "/login",
            &[("token", TOKEN), ("next", next), ("_csrf", &csrf)],
        )
        .await;
        assert_eq!(resp.headers()[LOCATION], next);
    }
    app.stop().await;
}

/// A login attempt from `client` (bound to its own loopback address).
async fn try_login(
    app: &TestApp,
    client: &reqwest::Client,
    jar: &Jar,
    csrf: &str,
    token: &str,
) -> reqwest::Response {
    client
        .post(app.url("/login"))
        .header(COOKIE, jar.header())
        .header("content-type", "application/x-www-form-urlencoded")
        .body(form_body(&[
            ("token", token),
            ("next", "/"),
            ("_csrf", csrf),
        ]))
        .send()
        .await
        .unwrap()
}

fn client_from(ip: Ipv4Addr) -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .local_address(IpAddr::V4(ip))
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap()
}

#[tokio::test]
async fn wrong_tokens_are_throttled_per_client_with_429_and_retry_after() {
    let app = app_with_token().await;
    let (jar, csrf) = login_form(&app).await;
    let guesser = client_from(Ipv4Addr::LOCALHOST);
    for i in 0..5 {
        let resp = try_login(&app, &guesser, &jar, &csrf, &format!("guess-{i}")).await;
        assert_eq!(resp.status(), StatusCode::UNAUTHORIZED, "guess {i}");
    }
    for token in ["guess-5", TOKEN] {
        let resp = try_login(&app, &guesser, &jar, &csrf, token).await;
        assert_eq!(resp.status(), StatusCode::TOO_MANY_REQUESTS, "{token}");
        let wait: u64 = resp.headers()[RETRY_AFTER]
            .to_str()
            .unwrap()
            .parse()
            .unwrap();
        assert!((1..=60).contains(&wait), "Retry-After {wait}");
        assert!(
            resp.headers()
                .get(SET_COOKIE)
                .is_none_or(|c| { !c.to_str().unwrap().starts_with("sre_session=") })
        );
    }
    // Another client is not held back by the guesser.
    let other = client_from(Ipv4Addr::new(127, 0, 0, 2));
    let resp = try_login(&app, &other, &jar, &csrf, TOKEN).await;
    assert_eq!(resp.status(), StatusCode::SEE_OTHER);
    app.stop().await;
}

#[tokio::test]
async fn after_logout_a_copy_of_the_session_cookie_opens_nothing() {
    let app = app_with_token().await;
    let (mut jar, csrf) = login_form(&app).await;
    let resp = post_form(
        &app,
        &mut jar,
        "/login",
        &[("token", TOKEN), ("next", "/"), ("_csrf", &csrf)],
    )
    .await;
    assert_eq!(resp.status(), StatusCode::SEE_OTHER);
    let copy = jar.header();
    assert!(copy.contains("sre_session="), "{copy}");
    let (status, body, _) = page(&app, &mut jar, "/").await;
    assert_eq!(status, 200);
    let resp = post_form(&app, &mut jar, "/logout", &[("_csrf", &csrf_of(&body))]).await;
    assert_eq!(resp.status(), StatusCode::SEE_OTHER);

    let resp = client()
        .get(app.url("/"))
        .header(COOKIE, &copy)
        .send()
        .await
        .unwrap();
    assert_eq!(
        resp.status(),
        StatusCode::SEE_OTHER,
        "the console asks for a login"
    );
    let resp = client()
        .get(app.url("/api/v1/investigations"))
        .header(COOKIE, &copy)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::UNAUTHORIZED);
    // Across a restart too.
    let dir = app.stop().await;
    let config =
        crate::support::test_config(dir.path(), &format!("[server]\napi_token = \"{TOKEN}\"\n"));
    let app = crate::support::spawn_app_with(config, dir).await;
    let resp = client()
        .get(app.url("/api/v1/investigations"))
        .header(COOKIE, &copy)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::UNAUTHORIZED);
    app.stop().await;
}

#[tokio::test]
async fn wrong_api_tokens_count_like_wrong_logins_and_a_client_past_the_limit_gets_429() {
    let app = app_with_token().await;
    let guesser = client_from(Ipv4Addr::LOCALHOST);
    let get = |client: &reqwest::Client, path: &str, token: &str| {
        client.get(app.url(path)).bearer_auth(token).send()
    };
    // A missing token is not a guess.
    for _ in 0..10 {
        let resp = guesser
            .get(app.url("/api/v1/investigations"))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), StatusCode::UNAUTHORIZED);
    }
    for i in 0..5 {
        let resp = get(&guesser, "/api/v1/investigations", &format!("guess-{i}"))
            .await
            .unwrap();
        assert_eq!(resp.status(), StatusCode::UNAUTHORIZED, "guess {i}");
    }
    for path in ["/api/v1/investigations", "/status"] {
        let resp = get(&guesser, path, TOKEN).await.unwrap();
        assert_eq!(resp.status(), StatusCode::TOO_MANY_REQUESTS, "{path}");
        let wait: u64 = resp.headers()[RETRY_AFTER]
            .to_str()
            .unwrap()
            .parse()
            .unwrap();
        assert!((1..=60).contains(&wait), "Retry-After {wait}");
    }
    let other = client_from(Ipv4Addr::new(127, 0, 0, 3));
    let resp = get(&other, "/api/v1/investigations", TOKEN).await.unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    app.stop().await;
}
