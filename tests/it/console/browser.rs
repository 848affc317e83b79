//! The console in a real headless Chromium (Debian's chromium + chromium-driver, driven
//! with fantoccini over WebDriver) against the real binary and a fake LLM that answers
//! slowly: ask from the page, watch tool calls arrive before the end, open the finding,
//! give feedback, ask a follow-up, open a report; keyboard navigation and labelled fields;
//! screenshots saved under target/console-screenshots/. Skipped without chromium/chromedriver unless
//! SRE_TEST_REQUIRE_EXTERNAL=1.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use fantoccini::actions::{InputSource, KeyAction, KeyActions};
use fantoccini::key::Key;
use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{Value, json};

use crate::support::external::require_tool;
use crate::support::fake_llm::{FakeLlm, answer, finding_json, tool_calls};
use crate::support::{Daemon, eventually, free_port};

const WAIT: Duration = Duration::from_secs(30);

/// chromedriver on a free port; killed on drop.
struct Driver {
    child: Child,
    url: String,
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

async fn start_driver() -> Driver {
    let port = free_port();
    let child = Command::new("chromedriver")
        .arg(format!("--port={port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("chromedriver starts");
    let driver = Driver {
        child,
        url: format!("http://127.0.0.1:{port}"),
    };
    let status = format!("{}/status", driver.url);
    eventually(Duration::from_secs(20), "chromedriver /status", || {
        let status = status.clone();
        async move {
            let v: Value = reqwest::get(&status).await.ok()?.json().await.ok()?;
            v["value"]["ready"].as_bool().filter(|r| *r)
        }
    })
    .await;
    driver
}

async fn browser(driver: &Driver) -> Client {
    let caps = json!({
        "browserName": "chrome",
        "goog:chromeOptions": {
            "binary": chromium(),
            "args": ["--headless=new", "--no-sandbox", "--disable-gpu",
                     "--disable-dev-shm-usage", "--window-size=1280,1100"],
        }
    });
    let serde_json::Value::Object(caps) = caps else {
        unreachable!()
    };
    let connector = hyper_util::client::legacy::connect::HttpConnector::new();
    ClientBuilder::new(connector)
        .capabilities(caps)
        .connect(&driver.url)
        .await
        .expect("a Chromium session")
}

fn chromium() -> String {
    ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        .into_iter()
        .find(|p| std::path::Path::new(p).exists())
        .unwrap_or("chromium")
        .to_string()
}

fn screenshot_dir() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/console-screenshots");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

async fn save_screenshot(c: &Client, name: &str) {
    let png = c.screenshot().await.unwrap();
    assert!(png.starts_with(b"\x89PNG"), "a PNG screenshot");
    let path = screenshot_dir().join(format!("{name}.png"));
    std::fs::write(&path, png).unwrap();
    println!("screenshot: {}", path.display());
}

async fn path_of(c: &Client) -> String {
    c.current_url().await.unwrap().path().to_string()
}

/// Form fields without a label (none expected).
async fn unlabelled_fields(c: &Client) -> Vec<Value> {
    let v = c
        .execute(
            "return Array.from(document.querySelectorAll('input, select, textarea'))
               .filter(e => e.type !== 'hidden')
               .filter(e => !(e.labels && e.labels.length) && !e.getAttribute('aria-label'))
               .map(e => e.outerHTML);",
            vec![],
        )
        .await
        .unwrap();
    v.as_array().cloned().unwrap_or_default()
}

/// The elements the keyboard reaches, in order, pressing Tab from the top of the freshly
/// loaded page (`tag#id[type]`).
async fn tab_order(c: &Client) -> Vec<String> {
    c.refresh().await.unwrap();
    let mut order = Vec::new();
    for _ in 0..30 {
        let tab = KeyActions::new("keyboard".into())
            .then(KeyAction::Down {
                value: Key::Tab.into(),
            })
            .then(KeyAction::Up {
                value: Key::Tab.into(),
            });
        c.perform_actions(tab).await.unwrap();
        let focused = c
            .execute(
                "const e = document.activeElement;
                 return e.tagName.toLowerCase() + (e.id ? '#' + e.id : '')
                   + (e.getAttribute('type') ? '[' + e.getAttribute('type') + ']' : '');",
                vec![],
            )
            .await
            .unwrap();
        order.push(focused.as_str().unwrap_or_default().to_string());
    }
    order
}

/// Whether the keyboard reaches `field` and, after it, a submit button.
fn reaches_field_then_submit(order: &[String], field: &str) -> bool {
    order
        .iter()
        .position(|e| e == field)
        .is_some_and(|i| order[i + 1..].iter().any(|e| e == "button[submit]"))
}

/// Waits until the page at `/investigations/…` shows its finding (after the script
/// reloads it on the final status).
async fn wait_for_finding(c: &Client) {
    c.wait()
        .at_most(WAIT)
        .for_element(Locator::Css("#finding"))
        .await
        .expect("the finding appears");
}

#[tokio::test]
async fn in_chromium_a_user_asks_watches_tool_calls_arrive_reads_the_finding_follows_up_and_opens_a_report()
 {
    if !require_tool("chromedriver") || !require_tool(&chromium()) {
        return;
    }
    let fake = FakeLlm::start_slow(
        vec![
            tool_calls(&[("call_a", "current_time", "{}")], (400, 20, 0)),
            tool_calls(
                &[("call_b", "current_time", "{\"timezone\": \"UTC\"}")],
                (450, 20, 0),
            ),
            answer(
                &finding_json("pve2 is slow: its clock drifts", "call_a"),
                (500, 60, 0),
            ),
            // The follow-up checks again, then answers (the report's narrative reuses it).
            tool_calls(&[("call_c", "current_time", "{}")], (600, 20, 0)),
            answer(
                &finding_json("the drift started with the last reboot", "call_c"),
                (700, 60, 0),
            ),
        ],
        Duration::from_millis(1500),
    )
    .await;
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let file = dir.path().join("config.toml");
    std::fs::write(
        &file,
        format!(
            "[server]\nlisten = \"127.0.0.1:{port}\"\ndata_dir = \"data\"\n{}",
            fake.config("")
        ),
    )
    .unwrap();
    let daemon = Daemon::start(dir.path(), &file, &[]).await;
    let driver = start_driver().await;
    let c = browser(&driver).await;
    let base = daemon.base.clone();

    // Ask from the page.
    c.goto(&format!("{base}/")).await.unwrap();
    click(&c, Locator::LinkText("Ask")).await;
    assert_eq!(path_of(&c).await, "/ask");
    assert_eq!(unlabelled_fields(&c).await, Vec::<Value>::new());
    let order = tab_order(&c).await;
    assert!(
        reaches_field_then_submit(&order, "textarea#question"),
        "Tab order: {order:?}"
    );
    let field = c.find(Locator::Css("textarea#question")).await.unwrap();
    field.send_keys("why is pve2 slow?").await.unwrap();
    click(&c, Locator::Css("form.question button[type=submit]")).await;

    // Tool calls arrive while it runs: the live box is still there (the script reloads the
    // page when the stream ends) and the stream added the step.
    eventually(WAIT, "a tool call on the live page", || async {
        let live = c.find(Locator::Css("#live")).await.ok()?;
        let steps = c
            .find_all(Locator::Css("#timeline li.ev-tool_call"))
            .await
            .ok()?;
        let text = live.text().await.ok()?;
        (!steps.is_empty() && !text.starts_with("Ended")).then_some(())
    })
    .await;
    save_screenshot(&c, "1-live-timeline").await;
    let first = path_of(&c).await;
    assert!(first.starts_with("/investigations/"), "{first}");
    wait_for_finding(&c).await;

    // The finding, its evidence linked to the call behind it.
    let finding = c
        .find(Locator::Css("#finding"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        finding.contains("pve2 is slow: its clock drifts"),
        "{finding}"
    );
    click(&c, Locator::Css("#finding a[href='#call-call_a']")).await;
    assert_eq!(
        c.current_url().await.unwrap().fragment(),
        Some("call-call_a")
    );
    save_screenshot(&c, "2-finding").await;
    assert_eq!(unlabelled_fields(&c).await, Vec::<Value>::new());

    // A follow-up from the page.
    let order = tab_order(&c).await;
    assert!(
        reaches_field_then_submit(&order, "textarea#follow-up"),
        "Tab order: {order:?}"
    );
    assert!(
        reaches_field_then_submit(&order, "textarea#feedback-note"),
        "Tab order: {order:?}"
    );

    // Feedback from the page: its label picks the verdict; the page shows it after.
    click(&c, Locator::Css("label[for=verdict-right]")).await;
    click(&c, Locator::Css("form.feedback button[type=submit]")).await;
    c.wait()
        .at_most(WAIT)
        .for_element(Locator::Css("#feedback-given"))
        .await
        .expect("the verdict is shown");
    assert_eq!(path_of(&c).await, first);
    c.find(Locator::Css("textarea#follow-up"))
        .await
        .unwrap()
        .send_keys("since when does its clock drift?")
        .await
        .unwrap();
    click(&c, Locator::Css("form.question button[type=submit]")).await;
    eventually(WAIT, "the follow-up's page", || async {
        let p = path_of(&c).await;
        (p != first && p.starts_with("/investigations/")).then_some(())
    })
    .await;
    wait_for_finding(&c).await;
    let thread = c
        .find(Locator::Css("nav[aria-label=Thread]"))
        .await
        .unwrap();
    let parent_link = thread
        .find(Locator::Css(&format!("a[href='{first}']")))
        .await;
    assert!(parent_link.is_ok(), "the thread links the parent");
    let finding = c
        .find(Locator::Css("#finding"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        finding.contains("the drift started with the last reboot"),
        "{finding}"
    );
    let question = c
        .find(Locator::Css("pre.question"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert_eq!(question, "since when does its clock drift?");
    save_screenshot(&c, "3-follow-up").await;

    // Last week's report, as emailed.
    let resp = reqwest::Client::new()
        .post(format!("{base}/api/v1/reports"))
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert!(resp.status().is_success(), "{}", resp.text().await.unwrap());
    click(&c, Locator::LinkText("Reports")).await;
    click(&c, Locator::Css("main table a")).await;
    assert!(path_of(&c).await.starts_with("/reports/"));
    let frame = c.find(Locator::Css("iframe.report")).await.unwrap();
    save_screenshot(&c, "4-report").await;
    frame.enter_frame().await.unwrap();
    let h1 = c
        .find(Locator::Css("h1"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(h1.contains("weekly report"), "{h1}");
    c.enter_parent_frame().await.unwrap();

    c.close().await.unwrap();
    assert!(
        !daemon.log_text().contains("panicked"),
        "{}",
        daemon.log_text()
    );
}

/// Finds the element and clicks it (the test fails if either step fails).
async fn click(c: &Client, locator: Locator<'_>) {
    c.find(locator).await.unwrap().click().await.unwrap();
}
