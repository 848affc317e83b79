use super::*;
use crate::agent::{Finding, Investigation, InvestigationRequest, InvestigationStatus, Trigger};
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
    };
    let slack: serde_json::Value =
        serde_json::from_str(&render("http://x", WebhookFormat::Slack, &subject).body).unwrap();
    assert!(slack["text"].as_str().unwrap().contains("Bad deploy"));
    assert_eq!(slack["text"], slack["content"]);
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
    }
    .html();
    assert!(html.contains("Bad deploy &lt;script&gt;"));
    assert!(!html.contains("<script>"));
    assert!(html.contains("href=\"https://grafana.example.com/d/sre-sli?"));
}

#[test]
fn only_network_errors_408_429_and_5xx_are_retried() {
    assert!(is_retryable(None));
    assert!(is_retryable(Some(503)));
    assert!(is_retryable(Some(429)));
    assert!(!is_retryable(Some(400)));
    assert!(!is_retryable(Some(404)));
}
