//! Webhook notifications: the body and headers for each `[[notify.webhooks]]` format, and
//! one POST attempt. `json` = the investigation with its finding; `slack` = `{"text"}`
//! (Slack, Mattermost: `&`, `<`, `>` escaped) plus `content` (Discord: mentions broken,
//! `allowed_mentions` empty); `ntfy` = markdown text with Title/Priority/Tags. Every link
//! in them is a web URL (`markup::safe_url`).

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::NotifyError;
use super::markup::{break_mentions, inert_links, slack_text};
use super::templates::Subject;
use crate::config::{WebhookFormat, redact_secret_url};
use crate::integrations::read_capped;
use crate::text::truncate;

/// A rendered webhook request, stored in the outbox.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WebhookRequest {
    pub url: String,
    pub content_type: String,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

/// Renders `subject` for `url` in `format`.
pub fn render(url: &str, format: WebhookFormat, subject: &Subject) -> WebhookRequest {
    let (content_type, headers, body) = match format {
        WebhookFormat::Json => {
            let body = serde_json::json!({
                "event": "investigation.completed",
                "investigation": subject.inv,
                "finding": subject.inv.finding,
                "alert": subject.alert,
                "text": subject.markdown(),
            });
            ("application/json", Vec::new(), body.to_string())
        }
        WebhookFormat::Slack => {
            let md = subject.markdown();
            // `text` is Slack's (and Mattermost's), `content` Discord's: each escaped its
            // own way, and Discord told to notify no one whatever the text says.
            let body = serde_json::json!({
                "text": slack_text(&inert_links(&truncate(&md, 3_500))),
                "content": break_mentions(&inert_links(&truncate(&md, 2_000))),
                "allowed_mentions": {"parse": []},
            });
            ("application/json", Vec::new(), body.to_string())
        }
        WebhookFormat::Ntfy => {
            let headers = vec![
                ("Title".to_string(), header_safe(&subject.title())),
                ("Priority".to_string(), subject.ntfy_priority().to_string()),
                ("Tags".to_string(), header_safe(&subject.ntfy_tags())),
                ("Markdown".to_string(), "yes".to_string()),
            ];
            (
                "text/plain; charset=utf-8",
                headers,
                inert_links(&truncate(&subject.markdown(), 4_000)),
            )
        }
    };
    WebhookRequest {
        url: url.to_string(),
        content_type: content_type.to_string(),
        headers,
        body,
    }
}

/// Header values must be visible ASCII: other characters become '?'.
fn header_safe(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c == ' ' || c.is_ascii_graphic() {
                c
            } else {
                '?'
            }
        })
        .collect()
}

/// Whether a failed POST is worth retrying: network errors, 408, 429 and 5xx.
pub fn is_retryable(status: Option<u16>) -> bool {
    match status {
        None => true,
        Some(s) => s == 408 || s == 429 || s >= 500,
    }
}

/// One POST; error carries the status (if any) for `is_retryable`.
pub async fn send(
    client: &reqwest::Client,
    req: &WebhookRequest,
    timeout: Duration,
) -> Result<(), (Option<u16>, NotifyError)> {
    let mut builder = client
        .post(&req.url)
        .timeout(timeout)
        .header(reqwest::header::CONTENT_TYPE, &req.content_type)
        .body(req.body.clone());
    for (k, v) in &req.headers {
        builder = builder.header(k, v);
    }
    // The URL of a Slack, Mattermost or ntfy hook is its credential: errors (logged and
    // stored as the entry's last error) name only its scheme and host.
    let err = |status: Option<u16>, reason: String| {
        (
            status,
            NotifyError::Webhook {
                url: redact_secret_url(&req.url),
                reason,
            },
        )
    };
    let resp = builder
        .send()
        .await
        .map_err(|e| err(None, format!("request failed: {}", e.without_url())))?;
    let status = resp.status();
    if status.is_success() {
        return Ok(());
    }
    if status.is_redirection() {
        return Err(err(
            Some(status.as_u16()),
            format!("status {status}: redirects are not followed"),
        ));
    }
    // Only an excerpt is shown; the rest of a large answer is never read.
    let body = read_capped(resp, MAX_ERROR_BODY)
        .await
        .map(|(body, _)| body)
        .unwrap_or_default();
    let text = String::from_utf8_lossy(&body);
    Err(err(
        Some(status.as_u16()),
        format!("status {status}: {}", truncate(&text, 300)),
    ))
}

/// Bytes of an error answer read for its excerpt.
const MAX_ERROR_BODY: usize = 4096;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::{
        Finding, Investigation, InvestigationRequest, InvestigationStatus, Trigger,
    };
    use crate::alerts::parse_webhook;

    fn investigation() -> Investigation {
        let mut inv = Investigation::new(
            InvestigationRequest {
                trigger: Trigger::Alert,
                title: "HighErrorRate (job=checkout)".into(),
                prompt: "p".into(),
                context: None,
                group_key: Some("k".into()),
            },
            "m",
        );
        inv.status = InvestigationStatus::Finished;
        inv.finding = Some(Finding {
            summary: "Bad deploy <script>".into(),
            probable_cause: "v2 rollout".into(),
            severity: "critical".into(),
            confidence: "high".into(),
            evidence: Vec::new(),
            next_steps: vec!["roll back".into()],
            ..Default::default()
        });
        inv
    }

    fn alert() -> crate::alerts::Alert {
        let body = include_bytes!("../../tests/it/fixtures/grafana-webhook-firing.json");
        parse_webhook(crate::alerts::AlertSource::Grafana, body)
            .unwrap()
            .alerts
            .remove(0)
    }

    #[test]
    fn ntfy_gets_plain_text_with_title_priority_and_tags() {
        let (inv, a) = (investigation(), alert());
        let subject = Subject {
            inv: &inv,
            alert: Some(&a),
            public_url: None,
        };
        let req = render("http://ntfy/topic", WebhookFormat::Ntfy, &subject);
        assert!(req.content_type.starts_with("text/plain"));
        let header = |n: &str| {
            req.headers
                .iter()
                .find(|(k, _)| k == n)
                .map(|(_, v)| v.as_str())
        };
        assert_eq!(header("Priority"), Some("5"));
        assert!(header("Title").unwrap().contains("HighErrorRate"));
        assert!(header("Tags").unwrap().contains("rotating_light"));
        assert!(req.body.contains("roll back"));
        assert!(req.body.contains("viewPanel=4"), "links back to Grafana");
    }

    #[test]
    fn slack_and_json_carry_the_finding() {
        let (inv, a) = (investigation(), alert());
        let subject = Subject {
            inv: &inv,
            alert: Some(&a),
            public_url: None,
        };
        let slack: serde_json::Value =
            serde_json::from_str(&render("http://x", WebhookFormat::Slack, &subject).body).unwrap();
        assert!(slack["text"].as_str().unwrap().contains("Bad deploy"));
        // The same message, escaped for Slack in `text` and left as written for Discord.
        assert!(
            slack["text"]
                .as_str()
                .unwrap()
                .contains("Bad deploy &lt;script&gt;")
        );
        assert!(
            slack["content"]
                .as_str()
                .unwrap()
                .contains("Bad deploy <script>")
        );
        let json: serde_json::Value =
            serde_json::from_str(&render("http://x", WebhookFormat::Json, &subject).body).unwrap();
        assert_eq!(json["investigation"]["id"], inv.id.as_str());
        assert_eq!(json["finding"]["probable_cause"], "v2 rollout");
        assert_eq!(json["alert"]["fingerprint"], "a3c2f1e0d9b8c7a6");
    }

    #[test]
    fn html_escapes_untrusted_text() {
        let (inv, a) = (investigation(), alert());
        let html = Subject {
            inv: &inv,
            alert: Some(&a),
            public_url: None,
        }
        .html();
        assert!(html.contains("Bad deploy &lt;script&gt;"));
        assert!(!html.contains("<script>"));
        assert!(html.contains("href=\"https://grafana.example.com/d/sre-sli?"));
    }

    #[test]
    fn with_a_public_url_notifications_link_the_investigation_and_its_feedback() {
        let (inv, a) = (investigation(), alert());
        let mut subject = Subject {
            inv: &inv,
            alert: Some(&a),
            public_url: Some("https://sre.example.com/"),
        };
        let url = format!("https://sre.example.com/investigations/{}", inv.id);
        let md = subject.markdown();
        assert!(md.contains(&format!("- [Investigation]({url})")), "{md}");
        assert!(md.contains(&format!("Say so on {url}#feedback")), "{md}");
        assert!(
            md.contains(&format!(
                "to https://sre.example.com/api/v1/investigations/{}/feedback",
                inv.id
            )),
            "{md}"
        );
        assert!(md.contains(&format!(
            "sre-agent investigations feedback {} right|wrong",
            inv.id
        )));
        let html = subject.html();
        assert!(
            html.contains(&format!("<a href=\"{url}\">Investigation</a>")),
            "{html}"
        );
        subject.public_url = None;
        let md = subject.markdown();
        assert!(!md.contains("/investigations/") && md.contains("Was this right?"));
    }

    /// An alert whose text carries chat markup and whose links are scripts.
    fn hostile() -> (Investigation, crate::alerts::Alert) {
        let mut inv = investigation();
        inv.title = "Disk <!channel> @everyone".into();
        if let Some(f) = inv.finding.as_mut() {
            f.summary = "see <https://evil.example|your bank> & <@U024BE7LH> @here".into();
        }
        let mut a = alert();
        a.labels
            .insert("team".into(), "<!here> @everyone <@&1234> @channel".into());
        a.annotations.insert(
            "summary".into(),
            "<https://evil.example|click here> @here [reset](javascript:alert(4))".into(),
        );
        a.generator_url = Some("javascript:alert(1)".into());
        a.dashboard_url = Some(" JaVaScRiPt:alert(2)".into());
        a.panel_url = Some("data:text/html,<script>alert(3)</script>".into());
        a.silence_url = Some("https://am.example.com/#/silences/new".into());
        (inv, a)
    }

    #[test]
    fn slack_text_escapes_its_markup_and_discord_content_pings_nobody() {
        let (inv, a) = hostile();
        let subject = Subject {
            inv: &inv,
            alert: Some(&a),
            public_url: None,
        };
        let body: serde_json::Value =
            serde_json::from_str(&render("http://x", WebhookFormat::Slack, &subject).body).unwrap();
        let text = body["text"].as_str().unwrap();
        for raw in [
            "<!channel>",
            "<!here>",
            "<https://evil.example|",
            "<@U024BE7LH>",
            "<@&1234>",
            "@everyone",
            "@here",
            "@channel",
            " & ",
        ] {
            assert!(!text.contains(raw), "Slack text holds {raw:?}: {text}");
        }
        assert!(text.contains("&lt;!channel&gt;"), "{text}");
        assert!(text.contains("&lt;https://evil.example|your bank&gt;"));
        assert!(text.contains(" &amp; "));
        let content = body["content"].as_str().unwrap();
        for raw in ["@everyone", "@here", "<@U024BE7LH>", "<@&1234>"] {
            assert!(
                !content.contains(raw),
                "Discord content holds {raw:?}: {content}"
            );
        }
        assert!(content.contains("@\u{200B}everyone"), "{content}");
        assert_eq!(
            body["allowed_mentions"],
            serde_json::json!({"parse": []}),
            "{body}"
        );
        // Mail addresses are not mentions.
        let mut inv = inv.clone();
        inv.title = "mail ops@example.org".into();
        let subject = Subject {
            inv: &inv,
            alert: None,
            public_url: None,
        };
        let body: serde_json::Value =
            serde_json::from_str(&render("http://x", WebhookFormat::Slack, &subject).body).unwrap();
        assert!(
            body["content"]
                .as_str()
                .unwrap()
                .contains("ops@example.org")
        );
    }

    #[test]
    fn ntfy_and_email_links_are_only_web_links() {
        let (inv, a) = hostile();
        let subject = Subject {
            inv: &inv,
            alert: Some(&a),
            public_url: None,
        };
        let ntfy = render("http://ntfy/topic", WebhookFormat::Ntfy, &subject).body;
        let html = subject.html();
        let slack: serde_json::Value =
            serde_json::from_str(&render("http://x", WebhookFormat::Slack, &subject).body).unwrap();
        for text in [
            slack["text"].as_str().unwrap(),
            slack["content"].as_str().unwrap(),
            &ntfy,
        ] {
            assert!(
                !text.contains("](javascript:"),
                "a live markdown link: {text}"
            );
            assert!(text.contains("[reset]\\(javascript:"), "{text}");
        }
        for text in [&ntfy, &subject.markdown(), &html] {
            // The only `javascript:` left is the annotation's text, never a link.
            let lower = text
                .to_ascii_lowercase()
                .replace("(javascript:alert(4))", "");
            assert!(!lower.contains("javascript:"), "{text}");
            assert!(!lower.contains("data:text"), "{text}");
            assert!(
                text.contains("https://am.example.com/#/silences/new"),
                "{text}"
            );
        }
        assert!(
            !html.contains("<script>") && !html.contains("<!here>"),
            "{html}"
        );
        assert!(html.contains("&lt;!here&gt;"), "{html}");
    }

    #[test]
    fn only_network_errors_408_429_and_5xx_are_retried() {
        assert!(is_retryable(None));
        assert!(is_retryable(Some(503)));
        assert!(is_retryable(Some(429)));
        assert!(!is_retryable(Some(400)));
        assert!(!is_retryable(Some(404)));
    }
}
