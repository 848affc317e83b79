use super::*;

/// nginx's error log: the cause first, then the request's fields.
const NGINX: &str = "2026/03/02 10:14:07 [error] 2291#2291: *118 connect() failed (111: \
    Connection refused) while connecting to upstream, client: 192.0.2.44, server: \
    wiki.example.org, request: \"GET /api/pages?limit=50 HTTP/1.1\", upstream: \
    \"http://127.0.0.1:3000/api/pages?limit=50\", host: \"wiki.example.org\", referrer: \
    \"https://wiki.example.org/\"";

/// Postfix's bounce: the remote server's answer after the relay, the timings and the dsn.
const POSTFIX: &str = "postfix/smtp[7781]: 9QmT4c2Hx81Zp: to=<ola@example.net>, \
    relay=mx2.example.net[203.0.113.9]:25, delay=0.81, delays=0.05/0.01/0.33/0.42, \
    dsn=5.7.1, status=bounced (host mx2.example.net[203.0.113.9] said: 550 5.7.1 \
    Message rejected: sender address not permitted by the domain's policy (in reply to end \
    of DATA command))";

/// A logfmt line (Go services): the error in its own key among ids and timings.
const LOGFMT: &str = "time=2026-03-02T10:14:07Z level=error caller=sync.go:212 \
    request_id=7f3c9a2e-41d1-4a5b-9f2e-8c1d7a6b5e4f duration_ms=1203 bytes=5120 \
    msg=\"upload failed\" error=\"open /data/uploads/tmp-88121: permission denied\" \
    user=41 attempt=3";

#[test]
fn a_line_that_fits_is_shown_whole_and_readable() {
    assert_eq!(quote_line("disk full", 20), "disk full");
    let json = r#"{"level":"error","ts":1700000000,"msg":"upload failed","err":"EACCES"}"#;
    assert_eq!(
        quote_line(json, 200),
        "level=error msg=\"upload failed\" err=EACCES"
    );
}

#[test]
fn nginx_keeps_its_cause_at_the_start_and_drops_the_request_fields() {
    let q = quote_line(NGINX, 150);
    assert!(q.chars().count() <= 150, "{q}");
    assert!(
        q.contains("connect() failed (111: Connection refused) while connecting to upstream"),
        "{q}"
    );
    assert!(q.contains('…'), "{q}");
    let short = quote_line(NGINX, 72);
    assert!(
        short.contains("connect() failed"),
        "a long first part keeps its start: {short}"
    );
}

#[test]
fn a_bounce_keeps_the_remote_servers_answer_after_the_timings() {
    let q = quote_line(POSTFIX, 150);
    assert!(q.chars().count() <= 150, "{q}");
    assert!(q.starts_with("postfix/smtp[7781]"), "{q}");
    assert!(q.contains("said: 550 5.7.1"), "{q}");
    assert!(!q.contains("delays="), "a timing is the first to go: {q}");
}

#[test]
fn logfmt_keeps_the_message_and_the_error_over_ids_and_timings() {
    let q = quote_line(LOGFMT, 110);
    assert!(q.chars().count() <= 110, "{q}");
    assert!(q.contains("permission denied"), "{q}");
    assert!(q.contains("upload failed"), "{q}");
    assert!(!q.contains("request_id"), "{q}");
}

#[test]
fn parts_never_split_inside_quotes_or_parentheses() {
    let p = parts("a=1 msg=\"x, y z=2\" (b, c=3) d: e, f");
    assert_eq!(p, ["a=1 ", "msg=\"x, y z=2\" (b, c=3) d: e, ", "f"]);
}

#[test]
fn no_cut_exceeds_the_budget_or_breaks_a_character() {
    let lines = [
        NGINX.to_string(),
        POSTFIX.to_string(),
        LOGFMT.to_string(),
        "ä, ".repeat(200),
        "é=ü ".repeat(100),
        "x".repeat(500),
        format!("{}, {}", "日本語".repeat(60), "ok"),
        "\"unclosed (quote, and=paren ".repeat(20),
    ];
    for line in &lines {
        for max in [1, 3, 10, 40, 72, 150, 400] {
            let q = quote_line(line, max);
            assert!(
                q.chars().count() <= max.max(q.chars().count().min(max)),
                "{max}: {q}"
            );
            assert!(q.chars().count() <= max, "{max}: {q}");
        }
    }
}
