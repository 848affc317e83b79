use super::*;

/// The first peer of `line` as `host:port` (or `host`), with how it failed.
fn first(line: &str) -> Option<(String, &'static str)> {
    failed_peers(line).map(|(p, how)| (p[0].to_string(), how))
}

fn peer(line: &str) -> String {
    first(line)
        .map(|(p, _)| p)
        .unwrap_or_else(|| panic!("no peer in {line:?}"))
}

#[test]
fn go_dial_and_read_errors_name_the_dialled_address() {
    let l = r#"level=error ts=2026-11-27T20:01:02Z caller=client.go:88 msg="connect failed" err="dial tcp 10.0.0.5:1883: connect: connection refused""#;
    assert_eq!(first(l), Some(("10.0.0.5:1883".into(), "refused")));
    let l =
        r#"Get "http://api.lan:8080/health": dial tcp 10.0.0.7:8080: connect: no route to host"#;
    let (peers, how) = failed_peers(l).unwrap();
    assert_eq!(how, "unreachable");
    // The dialled address first, then what the URL named.
    let shown: Vec<String> = peers.iter().map(|p| p.to_string()).collect();
    assert_eq!(shown, ["10.0.0.7:8080", "api.lan:8080"]);
    assert_eq!(
        first("error=\"dial tcp [fd00::5]:5432: i/o timeout\""),
        Some(("[fd00::5]:5432".into(), "timed out"))
    );
    assert_eq!(
        peer("read tcp 10.0.0.2:51234->10.0.0.5:1883: i/o timeout"),
        "10.0.0.5:1883"
    );
    assert_eq!(
        first("dial tcp: lookup redis on 127.0.0.11:53: no such host"),
        Some(("redis".into(), "not found by name"))
    );
    assert_eq!(
        peer(r#"Post "https://hooks.lan/notify": context deadline exceeded"#),
        "hooks.lan"
    );
    assert_eq!(
        peer("dial tcp [2001:db8::5]:443: connect: network is unreachable"),
        "[2001:db8::5]:443"
    );
}

#[test]
fn nginx_names_its_upstream_not_its_client_or_server() {
    let l = r#"2026/11/27 20:01:02 [error] 31#31: *5678 connect() failed (111: Connection refused) while connecting to upstream, client: 192.168.1.20, server: cloud.example.org, request: "GET / HTTP/1.1", upstream: "http://10.1.2.3:8080/", host: "cloud.example.org", referrer: "https://cloud.example.org/""#;
    let (peers, how) = failed_peers(l).unwrap();
    assert_eq!(how, "refused");
    assert_eq!(peers.len(), 1, "{peers:?}");
    assert_eq!(peers[0].to_string(), "10.1.2.3:8080");
    let l = r#"2026/11/27 20:01:09 [error] 31#31: *99 upstream timed out (110: Connection timed out) while reading response header from upstream, client: 10.0.0.9, server: _, request: "GET /api HTTP/1.1", upstream: "http://app.lan:3000/api", host: "x""#;
    assert_eq!(first(l), Some(("app.lan:3000".into(), "timed out")));
    // A unix socket upstream is no host.
    let l = r#"[error] 7#7: *1 connect() to unix:/run/php/php-fpm.sock failed (2: No such file or directory) while connecting to upstream, client: 10.0.0.9, upstream: "fastcgi://unix:/run/php/php-fpm.sock:""#;
    assert_eq!(first(l), None);
}

#[test]
fn postgres_clients_name_the_server_host_and_port() {
    let l = r#"psycopg2.OperationalError: connection to server at "db1" (10.0.0.8), port 5432 failed: Connection refused"#;
    let (peers, how) = failed_peers(l).unwrap();
    assert_eq!((peers[0].to_string(), how), ("db1:5432".into(), "refused"));
    assert_eq!(peers[0].names(), ["db1", "10.0.0.8"]);
    let l = "could not connect to server: Connection refused\n\tIs the server running on host \"db1.lan\" (10.0.0.8) and accepting\n\tTCP/IP connections on port 5432?";
    assert_eq!(peer(l), "db1.lan:5432");
    let l = "org.postgresql.util.PSQLException: Connection to db1:5432 refused. Check that the hostname and port are correct and that the postmaster is accepting TCP/IP connections.";
    assert_eq!(first(l), Some(("db1:5432".into(), "refused")));
    // The server's own complaints about a client name no peer.
    assert_eq!(
        first(
            r#"FATAL:  no pg_hba.conf entry for host "10.0.0.9", user "app", database "app", no encryption"#
        ),
        None
    );
}

#[test]
fn python_java_node_and_mqtt_clients() {
    let l = "requests.exceptions.ConnectionError: HTTPConnectionPool(host='api.lan', port=8080): Max retries exceeded with url: /v1 (Caused by NewConnectionError('<urllib3.connection.HTTPConnection object at 0x7f2b>: Failed to establish a new connection: [Errno 111] Connection refused'))";
    assert_eq!(peer(l), "api.lan:8080");
    assert_eq!(
        peer("ConnectionRefusedError: [Errno 111] Connect call failed ('10.0.0.5', 1883)"),
        "10.0.0.5:1883"
    );
    let l = "io.netty.channel.AbstractChannel$AnnotatedConnectException: Connection refused: db.lan/10.0.0.8:5432";
    let (peers, _) = failed_peers(l).unwrap();
    assert_eq!(peers[0].to_string(), "db.lan:5432");
    assert_eq!(peers[0].ip.as_deref(), Some("10.0.0.8"));
    assert_eq!(
        first(
            "Zigbee2MQTT:error 2026-11-27 20:01:02: MQTT error: connect ECONNREFUSED 10.0.0.5:1883"
        ),
        Some(("10.0.0.5:1883".into(), "refused"))
    );
    assert_eq!(
        first("Error: getaddrinfo ENOTFOUND broker.lan"),
        Some(("broker.lan".into(), "not found by name"))
    );
    assert_eq!(
        first("Connection to mqtt.lan:1883 refused"),
        Some(("mqtt.lan:1883".into(), "refused"))
    );
    assert_eq!(
        peer("Could not connect to Redis at 10.0.0.4:6379: Connection refused"),
        "10.0.0.4:6379"
    );
    assert_eq!(
        peer(
            "redis.exceptions.ConnectionError: Error 111 connecting to redis.lan:6379. Connection refused."
        ),
        "redis.lan:6379"
    );
}

#[test]
fn free_text_clients_with_a_port_word_or_a_bracketed_address() {
    assert_eq!(
        first("ssh: connect to host backup.lan port 22: Connection timed out"),
        Some(("backup.lan:22".into(), "timed out"))
    );
    assert_eq!(
        peer("curl: (7) Failed to connect to api.lan port 8080 after 3 ms: Connection refused"),
        "api.lan:8080"
    );
    let l = "postfix/smtp[2211]: connect to mx.example.org[203.0.113.5]:25: Connection timed out";
    let (peers, how) = failed_peers(l).unwrap();
    assert_eq!(
        (peers[0].to_string(), how),
        ("mx.example.org:25".into(), "timed out")
    );
    assert_eq!(peers[0].ip.as_deref(), Some("203.0.113.5"));
    assert_eq!(
        peer("smtp: connect to [2001:db8::25]:25: Connection refused"),
        "[2001:db8::25]:25"
    );
    assert_eq!(
        first("Unable to connect to nas.lan: No route to host"),
        Some(("nas.lan".into(), "unreachable"))
    );
}

#[test]
fn lines_that_name_no_peer_give_none() {
    for l in [
        // A failure without a peer.
        "java.net.ConnectException: Connection refused (Connection refused)",
        "Caused by: java.net.ConnectException: Connection refused: connect",
        "Failed to connect to MQTT server due to exception: [Errno 111] Connection refused",
        "Error: Connection refused",
        "com.mysql.cj.jdbc.exceptions.CommunicationsException: Communications link failure",
        // Only this host.
        "Error: connect ECONNREFUSED 127.0.0.1:5432",
        "dial tcp [::1]:9090: connect: connection refused",
        "Could not connect to Redis at localhost:6379: Connection refused",
        "io.netty.channel.AbstractChannel$AnnotatedConnectException: Connection refused: localhost/127.0.0.1:6379",
        // A server about its client.
        "sshd[811]: refused connect from 10.0.0.9 (10.0.0.9)",
        "http: TLS handshake error from 10.0.0.9:55122: read tcp 10.0.0.2:443->10.0.0.9:55122: i/o timeout",
        "read tcp 10.0.0.2:443->10.0.0.9:55122: i/o timeout",
        // No failure.
        "level=info msg=\"connected to broker\" addr=10.0.0.5:1883",
        "Accepted publickey for deploy from 10.0.0.9 port 51515 ssh2",
        "postfix/smtpd[1]: connect from unknown[10.0.0.9]",
        "dial tcp 10.0.0.5:1883 ok",
        // A bare word after "connecting to".
        "[error] connect() failed (111: Connection refused) while connecting to upstream",
    ] {
        assert_eq!(failed_peers(l), None, "{l}");
    }
}

#[test]
fn the_failure_filter_is_one_regex_for_loki_and_here() {
    // Sent in a LogQL raw string: no backticks.
    assert!(!FAILING.contains('`'));
    assert!(FAILING_RE.is_match("Connection REFUSED"));
    assert!(!FAILING_RE.is_match("connected"));
}
