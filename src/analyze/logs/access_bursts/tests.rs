use super::*;

fn at(mins_ago: i64) -> DateTime<Utc> {
    DateTime::from_timestamp(1_800_000_000, 0).unwrap() - TimeDelta::minutes(mins_ago)
}

/// A tally of `since` answers to `requests` (method, path, client) and `before` earlier.
fn tally(before: f64, requests: &[(&str, &str, &str)], first: &str) -> Tally {
    let mut t = Tally {
        before,
        since: requests.len() as f64,
        first: Some((at(12).timestamp_nanos_opt().unwrap(), first.to_string())),
        ..Tally::default()
    };
    for (m, p, c) in requests {
        *t.requests
            .entry((m.to_string(), p.to_string()))
            .or_default() += 1;
        t.paths.insert(p.to_string());
        t.clients.insert(c.to_string());
    }
    t
}

#[test]
fn a_status_rare_before_and_frequent_since_is_a_burst_and_a_routine_or_scanned_one_is_not() {
    let uploads: Vec<(&str, &str, &str)> = (0..37)
        .map(|i| {
            (
                "POST",
                "/api/upload",
                ["10.0.0.5", "10.0.0.9", "10.0.0.12"][i % 3],
            )
        })
        .collect();
    // Rare before (none in 50 min), 37 in 22 min: a burst.
    assert!(is_burst(&tally(0.0, &uploads, "x"), 900.0, 50.0, 22.0));
    // Two before among 900 requests: still rare.
    assert!(is_burst(&tally(2.0, &uploads, "x"), 900.0, 50.0, 22.0));
    // Common before (a public site's 404s: 120 of 900): routine.
    assert!(!is_burst(&tally(120.0, &uploads, "x"), 900.0, 50.0, 22.0));
    // Three where there were none (a homelab's few uploads) are a burst; two are not.
    assert!(is_burst(&tally(0.0, &uploads[..3], "x"), 900.0, 50.0, 22.0));
    assert!(!is_burst(
        &tally(0.0, &uploads[..2], "x"),
        900.0,
        50.0,
        22.0
    ));
    // Uploads to a new path each, from one or two clients, are refused writes, no scan.
    let files: Vec<String> = (0..12).map(|i| format!("/dav/uploads/u/{i}/1")).collect();
    let refused: Vec<(&str, &str, &str)> = files
        .iter()
        .map(|p| ("PUT", p.as_str(), "192.168.1.52"))
        .collect();
    assert!(is_burst(&tally(0.0, &refused, "x"), 900.0, 50.0, 22.0));
    // A scanner: one client, a different path each time.
    let paths: Vec<String> = (0..40).map(|i| format!("/wp-admin/{i}.php")).collect();
    let scan: Vec<(&str, &str, &str)> = paths
        .iter()
        .map(|p| ("GET", p.as_str(), "198.51.100.66"))
        .collect();
    assert!(!is_burst(&tally(0.0, &scan, "x"), 900.0, 50.0, 22.0));
    // The same paths from many clients (assets gone after a deploy) are no scan.
    let clients: Vec<String> = (0..40).map(|i| format!("10.1.0.{i}")).collect();
    let gone: Vec<(&str, &str, &str)> = paths
        .iter()
        .zip(&clients)
        .map(|(p, c)| ("GET", p.as_str(), c.as_str()))
        .collect();
    assert!(is_burst(&tally(0.0, &gone, "x"), 900.0, 50.0, 22.0));
}

#[test]
fn the_fact_names_the_status_counts_request_first_line_and_its_query() {
    let line = r#"10.0.0.5 - - [27/Nov/2026:20:14:07 +0000] "POST /api/upload HTTP/1.1" 413 585 "-" "curl/8.5.0""#;
    let mut requests: Vec<(&str, &str, &str)> = (0..34)
        .map(|_| ("POST", "/api/upload", "10.0.0.5"))
        .collect();
    requests.extend([("PUT", "/api/avatar", "10.0.0.7"); 3]);
    let mut tallies = BTreeMap::new();
    tallies.insert(413, tally(0.0, &requests, line));
    // 404s as always: routine, not the burst.
    tallies.insert(404, tally(60.0, &requests[..20], line));
    let g = Group {
        labels: vec![
            ("host".into(), "web-1".into()),
            ("service_name".into(), "nginx".into()),
        ],
        requests: (900.0, 400.0),
        errors: (60.0, 57.0),
    };
    let spans = Spans {
        start: at(72),
        around: at(22),
        now: at(0),
    };
    let f = burst(&g, &tallies, &spans, "service_name", Some("host")).expect("a burst");
    assert_eq!(
        f.what,
        "HTTP 413 (Content Too Large) answers rose from rare to"
    );
    assert_eq!(f.value.unwrap().to_string(), "37");
    assert_eq!(f.severity, Severity::Warning);
    assert_eq!(f.entity.name, "nginx");
    assert_eq!(f.entity.host.as_deref(), Some("web-1"));
    assert_eq!(f.since, Some(at(12)));
    let detail = f.detail.as_deref().unwrap();
    assert!(
        detail.starts_with("0 in the 50 min before 07:38 UTC → 37 since (9.25 % of 400 requests)"),
        "{detail}"
    );
    assert!(
        detail.contains("34 of 37 read were POST /api/upload"),
        "{detail}"
    );
    assert!(
        detail.contains("first at 07:48:00 UTC: 10.0.0.5 - -"),
        "{detail}"
    );
    assert_eq!(f.source.tool, "loki_query");
    let query = f.source.arguments["query"].as_str().unwrap();
    assert!(
        query.starts_with(r#"{service_name="nginx", host="web-1"} |~ `" 413( |$)"#),
        "{query}"
    );
    // Most of the requests refused: critical.
    let few = Group {
        requests: (900.0, 40.0),
        ..g
    };
    let f = burst(&few, &tallies, &spans, "service_name", Some("host")).unwrap();
    assert_eq!(f.severity, Severity::Critical);
}
