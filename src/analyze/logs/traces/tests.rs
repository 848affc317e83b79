use super::*;

/// Flask's log of an unhandled exception (its logger's header, then the traceback).
const PYTHON: &str = r#"[2026-11-27 10:00:01,123] ERROR in app: Exception on /api/orders [POST]
Traceback (most recent call last):
  File "/usr/lib/python3/dist-packages/flask/app.py", line 1473, in wsgi_app
    response = self.full_dispatch_request()
  File "/srv/shop/app.py", line 42, in create_order
    db.execute(sql)
psycopg2.OperationalError: connection to server at "10.0.0.7", port 5432 failed: Connection refused"#;

const PYTHON_CHAINED: &str = r#"Traceback (most recent call last):
  File "/app/settings.py", line 3, in load
    return json.loads(raw)
json.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)

The above exception was the direct cause of the following exception:

Traceback (most recent call last):
  File "/app/main.py", line 9, in <module>
    load()
  File "/app/settings.py", line 5, in load
    raise ConfigError("bad config") from e
settings.ConfigError: bad config"#;

const JVM: &str = "Exception in thread \"main\" java.lang.RuntimeException: job failed
\tat com.example.Job.run(Job.java:20)
\tat com.example.Main.main(Main.java:5)
Caused by: java.sql.SQLTransientConnectionException: HikariPool-1 - Connection is not available, request timed out after 30000ms.
\tat com.zaxxer.hikari.pool.HikariPool.createTimeoutException(HikariPool.java:696)
\t... 2 more
Caused by: org.postgresql.util.PSQLException: Connection to db:5432 refused.
\tat org.postgresql.core.v3.ConnectionFactoryImpl.openConnectionImpl(ConnectionFactoryImpl.java:342)
\t... 5 more";

const GO: &str = "panic: runtime error: invalid memory address or nil pointer dereference
[signal SIGSEGV: segmentation violation code=0x1 addr=0x0 pc=0x48f3a2]

goroutine 1 [running]:
main.(*Server).handle(0x0, {0x5a1e20, 0xc000012345})
\t/src/server.go:42 +0x22
main.main()
\t/src/main.go:17 +0x1d
exit status 2";

const RUST: &str = "thread 'main' panicked at src/main.rs:12:38:
called `Result::unwrap()` on an `Err` value: Os { code: 2, kind: NotFound, message: \"No such file or directory\" }
note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace";

const NODE: &str = "Error: connect ECONNREFUSED 127.0.0.1:6379
    at TCPConnectWrap.afterConnect [as oncomplete] (node:net:1555:16)
    at TCPConnectWrap.callbackTrampoline (node:internal/async_hooks:130:17)";

/// Each trace and the line it is quoted by.
const CASES: [(&str, &str); 6] = [
    (
        PYTHON,
        "psycopg2.OperationalError: connection to server at \"10.0.0.7\", port 5432 failed: Connection refused",
    ),
    (PYTHON_CHAINED, "settings.ConfigError: bad config"),
    (
        JVM,
        "org.postgresql.util.PSQLException: Connection to db:5432 refused.",
    ),
    (
        GO,
        "panic: runtime error: invalid memory address or nil pointer dereference",
    ),
    (
        RUST,
        "thread 'main' panicked at src/main.rs:12:38: called `Result::unwrap()` on an `Err` value: Os { code: 2, kind: NotFound, message: \"No such file or directory\" }",
    ),
    (NODE, "Error: connect ECONNREFUSED 127.0.0.1:6379"),
];

#[test]
fn a_trace_in_one_multi_line_entry_is_one_error_quoting_its_exception() {
    for (trace, quote) in CASES {
        let entries = vec![
            (1_000, "level=info msg=\"request\"".to_string()),
            (2_000, trace.to_string()),
            (3_000, "level=info msg=\"next\"".to_string()),
        ];
        let folded = fold_entries(&entries);
        let lines: Vec<&str> = folded.iter().map(|(_, l, _)| l.as_str()).collect();
        assert_eq!(
            lines,
            vec![
                "level=info msg=\"request\"",
                quote,
                "level=info msg=\"next\""
            ],
            "{trace}"
        );
        assert_eq!(folded[1].2, Signal::Error, "{trace}");
    }
}

#[test]
fn a_trace_logged_one_line_per_entry_newest_first_is_folded_the_same() {
    for (trace, quote) in CASES {
        // One millisecond apart, as a shipper reads them; Loki answers newest first.
        let mut entries: Vec<(i64, String)> = trace
            .lines()
            .enumerate()
            .map(|(i, l)| (5_000_000_000 + i as i64 * 1_000_000, l.to_string()))
            .collect();
        entries.insert(0, (1_000, "GET /health 200".to_string()));
        entries.reverse();
        let folded = fold_entries(&entries);
        let lines: Vec<&str> = folded.iter().map(|(_, l, _)| l.as_str()).collect();
        assert_eq!(lines, vec!["GET /health 200", quote], "{trace}");
        assert_eq!(folded[1].0, 5_000_000_000);
    }
}

#[test]
fn lines_far_apart_in_time_are_no_trace_and_plain_logs_are_untouched() {
    // The frame came a minute later: not the same event.
    let entries = vec![
        (0, "Error: boom".to_string()),
        (60_000_000_000, "    at f (/app/x.js:1:1)".to_string()),
    ];
    assert_eq!(
        fold_entries(&entries)[0],
        (0, "Error: boom".to_string(), Signal::Error)
    );
    let log = "starting\nlistening on :8080\nlevel=error msg=\"db down\"\n";
    assert_eq!(
        fold_log(log),
        vec![
            ("starting".to_string(), Signal::None),
            ("listening on :8080".to_string(), Signal::None),
            ("level=error msg=\"db down\"".to_string(), Signal::Error),
        ]
    );
    // A multi-line entry without a trace stays whole.
    let entries = vec![(0, "config:\n  a: 1\n  b: 2".to_string())];
    assert_eq!(fold_entries(&entries)[0].1, "config:\n  a: 1\n  b: 2");
    assert!(fold_entries(&[]).is_empty());
    // The frames of a trace whose start the read cut off are dropped; its cause stays.
    let cut: Vec<(i64, String)> = JVM
        .lines()
        .skip(5)
        .enumerate()
        .map(|(i, l)| (i as i64, l.to_string()))
        .collect();
    let folded = fold_entries(&cut);
    assert_eq!(folded.len(), 1, "{folded:?}");
    assert_eq!(
        folded[0].1,
        "org.postgresql.util.PSQLException: Connection to db:5432 refused."
    );
}

#[test]
fn node_s_uncaught_exception_keeps_its_source_lines_apart_and_quotes_the_error() {
    let log = "/app/server.js:14\n    throw err;\n    ^\n\nTypeError: Cannot read properties of undefined (reading 'id')\n    at handler (/app/server.js:12:20)\n    at Layer.handle [as handle_request] (/app/node_modules/express/lib/router/layer.js:95:5)\n\nNode.js v20.11.0\n";
    let folded = fold_log(log);
    let errors: Vec<&str> = folded
        .iter()
        .filter(|(_, s)| *s == Signal::Error)
        .map(|(l, _)| l.as_str())
        .collect();
    assert_eq!(
        errors,
        vec!["TypeError: Cannot read properties of undefined (reading 'id')"]
    );
    assert!(!folded.iter().any(|(l, _)| l.contains("at handler")));
}
