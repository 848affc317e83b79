use super::*;

fn access(status: u16, method: &str, path: &str, client: Option<&str>) -> Option<Access> {
    Some(Access {
        status,
        method: Some(method.to_string()),
        path: Some(path.to_string()),
        client: client.map(str::to_string),
    })
}

#[test]
fn the_usual_access_log_formats_give_their_status_request_and_client() {
    let cases = [
        // nginx combined.
        (
            r#"203.0.113.7 - - [27/Nov/2026:20:14:07 +0000] "POST /api/v2/uploads HTTP/1.1" 413 585 "https://files.example.org/" "Mozilla/5.0 (X11; Linux x86_64) Gecko/20100101 Firefox/133.0""#,
            access(413, "POST", "/api/v2/uploads", Some("203.0.113.7")),
        ),
        // Apache common, HTTP/2, a user.
        (
            r#"192.0.2.44 - alice [27/Nov/2026:20:14:09 +0100] "GET /private/report.pdf HTTP/2.0" 403 199"#,
            access(403, "GET", "/private/report.pdf", Some("192.0.2.44")),
        ),
        // Traefik's common log format (its router and service names, the duration after).
        (
            r#"10.42.0.1 - - [27/Nov/2026:20:15:01 +0000] "GET /api/search?q=x HTTP/1.1" 429 17 "-" "python-requests/2.32.3" 8812 "search@kubernetes" "http://10.42.1.9:8080" 0ms"#,
            access(429, "GET", "/api/search?q=x", Some("10.42.0.1")),
        ),
        // Behind Docker's log driver: a time prefix before the record.
        (
            r#"2026-11-27T20:14:07.120394Z stdout F 172.18.0.1 - - [27/Nov/2026:20:14:07 +0000] "PUT /v2/blobs HTTP/1.1" 401 0 "-" "docker/27.3.1""#,
            access(401, "PUT", "/v2/blobs", None),
        ),
        // HAProxy's HTTP log through syslog.
        (
            r#"Nov 27 20:14:07 lb1 haproxy[14389]: 198.51.100.23:33317 [27/Nov/2026:20:14:07.655] http-in~ api/srv1 10/0/30/69/109 429 2750 - - ---- 1/1/1/1/0 0/0 "POST /api/orders HTTP/1.1""#,
            access(429, "POST", "/api/orders", Some("198.51.100.23")),
        ),
        // Caddy's JSON access log.
        (
            r#"{"level":"error","ts":1795810447.12,"logger":"http.log.access.log0","msg":"handled request","request":{"remote_ip":"203.0.113.9","remote_port":"51234","client_ip":"203.0.113.9","proto":"HTTP/2.0","method":"POST","host":"files.example.org","uri":"/upload","headers":{"User-Agent":["curl/8.5.0"]}},"bytes_read":0,"user_id":"","duration":0.000301,"size":0,"status":413,"resp_headers":{"Server":["Caddy"]}}"#,
            access(413, "POST", "/upload", Some("203.0.113.9")),
        ),
        // Traefik's JSON access log.
        (
            r#"{"ClientAddr":"10.42.0.1:40112","ClientHost":"10.42.0.1","DownstreamContentSize":17,"DownstreamStatus":429,"Duration":120000,"RequestMethod":"GET","RequestPath":"/api/search","RequestProtocol":"HTTP/1.1","RouterName":"search@kubernetes","level":"info","msg":"","time":"2026-11-27T20:15:01Z"}"#,
            access(429, "GET", "/api/search", Some("10.42.0.1")),
        ),
        // nginx `log_format json escape=json`, the status as a string.
        (
            r#"{"time_local":"27/Nov/2026:20:14:07 +0000","remote_addr":"203.0.113.7","request":"POST /upload HTTP/1.1","status":"413","body_bytes_sent":"585","http_user_agent":"curl/8.5.0"}"#,
            access(413, "POST", "/upload", Some("203.0.113.7")),
        ),
        // ECS (nested).
        (
            r#"{"@timestamp":"2026-11-27T20:14:07Z","http":{"request":{"method":"DELETE"},"response":{"status_code":404}},"url":{"path":"/items/9"},"client":{"ip":"192.0.2.1"}}"#,
            access(404, "DELETE", "/items/9", Some("192.0.2.1")),
        ),
    ];
    for (line, want) in cases {
        assert_eq!(parse(line), want, "{line}");
    }
    // A malformed request: a status, no method or path.
    let bad = parse(r#"198.51.100.4 - - [27/Nov/2026:20:14:07 +0000] "-" 400 0 "-" "-""#).unwrap();
    assert_eq!((bad.status, bad.method, bad.path), (400, None, None));
}

#[test]
fn lines_that_are_not_access_records_have_no_status() {
    for line in [
        // An application's JSON with a status but no request.
        r#"{"level":"info","msg":"job finished","status":"200"}"#,
        r#"{"level":"error","msg":"upstream said","status":502,"attempt":3}"#,
        // nginx's error log, a number after a quote that is no status.
        r#"2026/11/27 20:14:07 [error] 31#31: *1 client intended to send too large body: 10485761 bytes, client: 203.0.113.7, server: files, request: "POST /upload HTTP/1.1", host: "files.example.org""#,
        "level=info msg=\"served 413 files\"",
        "Nov 27 20:14:07 host kernel: [ 1234.5678] eth0: link up",
        "{not json",
        r#"{"status": 999, "method": "GET"}"#,
    ] {
        assert_eq!(parse(line), None, "{line}");
    }
}

#[test]
fn the_line_filters_keep_the_records_of_their_status_and_drop_the_others() {
    let re = |digits: &str| Regex::new(&status_filter(digits)).unwrap();
    let any = Regex::new(&any_status()).unwrap();
    let client = Regex::new(&client_errors()).unwrap();
    let lines = [
        (
            r#"203.0.113.7 - - [27/Nov/2026:20:14:07 +0000] "POST /upload HTTP/1.1" 413 585 "-" "curl/8.5.0""#,
            Some(413),
        ),
        (
            r#"lb1 haproxy[1]: 198.51.100.23:33317 [27/Nov/2026:20:14:07.655] http-in api/srv1 10/0/30/69/109 429 2750 - - ---- 1/1/1/1/0 0/0 "GET / HTTP/1.1""#,
            Some(429),
        ),
        (
            r#"{"DownstreamStatus":403,"RequestMethod":"GET","RequestPath":"/admin"}"#,
            Some(403),
        ),
        (
            r#"{"status":"413","request":"POST /x HTTP/1.1"}"#,
            Some(413),
        ),
        (
            r#"10.0.0.5 - - [27/Nov/2026:20:14:07 +0000] "GET /ok HTTP/1.1" 200 413 "-" "curl""#,
            Some(200),
        ),
        ("level=info msg=\"served 413 files\"", None),
    ];
    for (line, status) in lines {
        assert_eq!(any.is_match(line), status.is_some(), "{line}");
        let is_4xx = status.is_some_and(|s| (400..500).contains(&s));
        assert_eq!(client.is_match(line), is_4xx, "{line}");
        assert_eq!(re("413").is_match(line), status == Some(413), "{line}");
        assert_eq!(parse(line).map(|a| a.status), status, "{line}");
    }
    assert_eq!(reason(413), Some("Content Too Large"));
    assert_eq!(reason(460), None);
}
