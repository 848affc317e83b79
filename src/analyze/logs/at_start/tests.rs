use std::collections::BTreeMap;

use chrono::{DateTime, TimeDelta, Utc};

use super::*;
use crate::analyze::Focus;
use crate::eval::fakes::{FakeServer, loki_router};

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn lines(now: DateTime<Utc>, entries: &[(i64, &str)]) -> Vec<(i64, String)> {
    entries
        .iter()
        .map(|(mins_ago, l)| {
            let t = now - TimeDelta::minutes(*mins_ago);
            (t.timestamp_nanos_opt().unwrap(), l.to_string())
        })
        .collect()
}

async fn facts_for(focus: Focus, started_mins_ago: i64) -> Vec<Fact> {
    crate::install_crypto_provider();
    let now = Utc::now();
    let journal = |host: &str, ident: &str| {
        labels(&[
            ("host", host),
            ("job", "systemd-journal"),
            ("syslog_identifier", ident),
        ])
    };
    let streams = vec![
        (
            journal("vault7", "kernel"),
            lines(
                now,
                &[
                    // Routine before: a warning every night, not news at the start.
                    (300, "usb 1-1: device descriptor read/64, error -71"),
                    (200, "usb 1-1: device descriptor read/64, error -71"),
                    (65, "usb 1-1: device descriptor read/64, error -71"),
                    (
                        62,
                        "ata5.00: exception Emask 0x0 SAct 0x0 SErr 0x0 action 0x0",
                    ),
                    (62, "ata5.00: failed command: WRITE FPDMA QUEUED"),
                    (62, "ata5.00: error: { ICRC ABRT }"),
                    (
                        62,
                        "blk_update_request: I/O error, dev sdd, sector 88 op 0x1:(WRITE)",
                    ),
                    (61, "EXT4-fs (sdd1): Remounting filesystem read-only"),
                    (61, "systemd[1]: Started Session 4 of user root."),
                ],
            ),
        ),
        (
            labels(&[("host", "vault7"), ("container", "syncthing")]),
            lines(
                now,
                &[(
                    58,
                    "level=error msg=\"pull: open /data/x: read-only file system\"",
                )],
            ),
        ),
        (
            journal("other9", "kernel"),
            lines(
                now,
                &[(60, "nfs: server filer not responding, still trying")],
            ),
        ),
    ];
    let started = now - TimeDelta::minutes(started_mins_ago);
    run_over(streams, focus, now, started).await
}

/// Streams as the fake Loki takes them: labels and lines.
type Streams = Vec<(BTreeMap<String, String>, Vec<(i64, String)>)>;

/// The at-start facts of `focus` over `streams` served by a fake Loki, at `now`, for a
/// trigger that began at `started`.
async fn run_over(
    streams: Streams,
    focus: Focus,
    now: DateTime<Utc>,
    started: DateTime<Utc>,
) -> Vec<Fact> {
    crate::install_crypto_provider();
    let server = FakeServer::start(loki_router(streams)).await.unwrap();
    let mut config = crate::config::Config::default();
    config.loki.url = Some(server.url.parse().unwrap());
    let upstreams = crate::integrations::Upstreams::from_config(&config).unwrap();
    let scope = Scope::new(now, Some(started)).with_focus(focus);
    LogsAtStart(upstreams.loki.unwrap())
        .run(&scope)
        .await
        .unwrap()
}

#[tokio::test]
async fn an_alert_gets_its_hosts_new_bad_lines_around_its_start_one_per_family_and_stream() {
    let start = Utc::now() - TimeDelta::minutes(55);
    let focus = Focus::alert(&labels(&[("instance", "vault7:9100")]), Some(start));
    let facts = facts_for(focus, 55).await;
    assert_eq!(facts.len(), 1, "{facts:?}");
    let line = facts[0].line(Utc::now());
    assert!(line.starts_with("logs vault7: "), "{line}");
    // The disk's errors and the service's, not the routine USB warning nor another host's.
    assert!(line.contains("I/O error, dev sdd"), "{line}");
    assert!(line.contains("read-only file system"), "{line}");
    assert!(line.contains("ata5.00"), "{line}");
    assert!(!line.contains("usb 1-1"), "{line}");
    assert!(!line.contains("filer"), "{line}");
    assert_eq!(facts[0].severity, Severity::Warning);
}

#[tokio::test]
async fn a_question_naming_a_service_reads_the_hosts_it_runs_on() {
    // A question looks back six hours (agent::health).
    let focus = Focus::question("why does syncthing fail to sync?");
    let facts = facts_for(focus, 360).await;
    let all: Vec<String> = facts.iter().map(|f| f.line(Utc::now())).collect();
    assert_eq!(facts.len(), 1, "{all:?}");
    assert!(all[0].contains("read-only file system"), "{all:?}");
    assert!(all[0].contains("dev sdd"), "{all:?}");
}

#[tokio::test]
async fn an_alert_about_nothing_loki_knows_reads_nothing() {
    let focus = Focus::alert(&labels(&[("instance", "elsewhere:9100")]), None);
    assert!(facts_for(focus, 30).await.is_empty());
}

#[test]
fn a_family_is_the_first_word_without_digits_or_a_messages_first_word() {
    assert_eq!(family("ata3.00: status: { DRDY ERR }"), "ata.:");
    assert_eq!(family("ata3.01: error"), "ata.:");
    assert_eq!(family("level=error msg=\"upload: failed\""), "upload:");
    assert_eq!(family(""), "");
}

#[tokio::test]
async fn a_go_panic_logged_as_one_entry_is_one_pattern_quoted_by_its_panic_line() {
    crate::install_crypto_provider();
    let now = Utc::now();
    let panic = "panic: runtime error: invalid memory address or nil pointer dereference\n\
                 [signal SIGSEGV: segmentation violation code=0x1 addr=0x0 pc=0x48f3a2]\n\n\
                 goroutine 41 [running]:\n\
                 main.(*Syncer).pull(0x0, {0x5a1e20, 0xc000012345})\n\
                 \t/src/sync.go:88 +0x22\n\
                 created by main.main in goroutine 1\n\
                 \t/src/main.go:17 +0x1d";
    let streams = vec![(
        labels(&[("host", "mirror3"), ("unit", "syncer.service")]),
        lines(
            now,
            &[
                (200, "level=info msg=\"synced\" files=12"),
                (12, "level=info msg=\"synced\" files=3"),
                (11, panic),
                (
                    10,
                    "systemd[1]: syncer.service: Main process exited, code=exited, status=2/INVALIDARGUMENT",
                ),
            ],
        ),
    )];
    let facts = alert_facts(streams, &[("instance", "mirror3:9100")], 10).await;
    assert_eq!(facts.len(), 1, "{facts:?}");
    let line = facts[0].line(now);
    assert!(line.contains("in 1 patterns"), "{line}");
    assert!(
        line.contains("panic: runtime error: invalid memory address"),
        "{line}"
    );
    assert!(!line.contains("goroutine"), "{line}");
    assert_eq!(facts[0].severity, Severity::Warning, "a panic is an error");
}

#[tokio::test]
async fn a_single_bad_pattern_is_quoted_with_the_new_quiet_lines_nearest_it() {
    crate::install_crypto_provider();
    let now = Utc::now();
    let nginx = |ago: i64, client: &str| {
        (
            ago,
            format!(
                "2026/11/27 10:{ago:02}:01 [error] 812#812: *{ago} connect() to unix:/run/php/php8.3-fpm.sock failed (2: No such file or directory) while connecting to upstream, client: {client}, server: shop, request: \"GET / HTTP/1.1\", upstream: \"fastcgi://unix:/run/php/php8.3-fpm.sock:\", host: \"shop\""
            ),
        )
    };
    let owned = |entries: Vec<(i64, String)>| -> Vec<(i64, String)> {
        let refs: Vec<(i64, &str)> = entries.iter().map(|(a, l)| (*a, l.as_str())).collect();
        lines(now, &refs)
    };
    let streams = vec![
        (
            labels(&[("host", "web4"), ("unit", "nginx.service")]),
            owned(vec![
                nginx(10, "10.0.0.5"),
                nginx(8, "10.0.0.9"),
                nginx(6, "10.0.3.7"),
            ]),
        ),
        (
            labels(&[("host", "web4"), ("unit", "init.scope")]),
            lines(
                now,
                &[
                    // Routine: seen in the hours before.
                    (200, "systemd[1]: Started Session 41 of user alice."),
                    (12, "systemd[1]: Started Session 57 of user alice."),
                    (35, "systemd[1]: Reloading finished in 211 ms."),
                    (
                        14,
                        "systemd[1]: Stopping php8.3-fpm.service - The PHP 8.3 FastCGI Process Manager...",
                    ),
                    (
                        13,
                        "systemd[1]: Stopped php8.3-fpm.service - The PHP 8.3 FastCGI Process Manager.",
                    ),
                ],
            ),
        ),
        (
            labels(&[("host", "web4"), ("unit", "session-57.scope")]),
            lines(
                now,
                &[(
                    15,
                    "sudo[4411]:    alice : TTY=pts/0 ; PWD=/home/alice ; USER=root ; COMMAND=/usr/bin/systemctl stop php8.3-fpm.service",
                )],
            ),
        ),
    ];
    let facts = alert_facts(streams, &[("instance", "web4:9100")], 10).await;
    assert_eq!(facts.len(), 1, "{facts:?}");
    let line = facts[0].line(now);
    assert!(line.contains("3 log lines that look bad"), "{line}");
    assert!(line.contains("[error] 812#812"), "{line}");
    // Beside it: the admin's command and the unit stopping, one per stream; not the
    // routine session nor the reload far from it.
    assert!(line.contains("systemctl stop php8.3-fpm"), "{line}");
    assert!(line.contains("Stopped php8.3-fpm.service"), "{line}");
    assert!(!line.contains("Stopping"), "{line}");
    assert!(!line.contains("Session"), "{line}");
    assert!(!line.contains("Reloading"), "{line}");
}

/// The at-start facts of an alert with `alert` labels that began `started` minutes ago,
/// over `streams`.
async fn alert_facts(streams: Streams, alert: &[(&str, &str)], started: i64) -> Vec<Fact> {
    let now = Utc::now();
    let started = now - TimeDelta::minutes(started);
    run_over(
        streams,
        Focus::alert(&labels(alert), Some(started)),
        now,
        started,
    )
    .await
}

#[tokio::test]
async fn when_nothing_looks_bad_the_new_lines_that_recur_on_the_alerts_host_are_told() {
    let now = Utc::now();
    let mut entries: Vec<(i64, &str)> = vec![
        (
            240,
            "r8169 0000:03:00.0 enp3s0: Link is Up - 1Gbps/Full - flow control off",
        ),
        (239, "systemd[1]: Started Daily apt download activities."),
        (
            20,
            "systemd[1]: Starting Cleanup of Temporary Directories...",
        ),
        (19, "CRON[9912]: (root) CMD (test -x /usr/sbin/anacron)"),
    ];
    for ago in [24, 18, 12, 6] {
        entries.push((
            ago,
            "r8169 0000:03:00.0 enp3s0: rtl_rxtx_empty_cond == 0 (loop: 42, delay: 100).",
        ));
        entries.push((ago, "r8169 0000:03:00.0 enp3s0: Link is Down"));
    }
    let streams = vec![(
        labels(&[("host", "tarn5"), ("unit", "kernel")]),
        lines(now, &entries),
    )];
    let facts = alert_facts(streams, &[("instance", "tarn5:9100")], 15).await;
    assert_eq!(facts.len(), 1, "{facts:?}");
    let line = facts[0].line(now);
    assert!(line.contains("8 new log lines"), "{line}");
    assert!(line.contains("rtl_rxtx_empty_cond"), "{line}");
    assert!(line.contains("Link is Down"), "{line}");
    // Once-only lines among many new ones are noise; the routine link-up is old news.
    assert!(!line.contains("CRON"), "{line}");
    assert!(!line.contains("Temporary"), "{line}");
    assert_eq!(facts[0].severity, Severity::Warning);
}

#[tokio::test]
async fn a_quiet_host_the_alerts_labels_name_tells_its_few_new_lines() {
    let now = Utc::now();
    let streams = vec![
        (
            labels(&[("host", "store2"), ("job", "journal")]),
            lines(
                now,
                &[
                    (
                        300,
                        "systemd[1]: Started session-12.scope - Session 12 of User ops.",
                    ),
                    (
                        40,
                        "sudo[7710]:      ops : TTY=pts/1 ; PWD=/root ; USER=root ; COMMAND=/usr/sbin/zfs set sharenfs=off tank/pics",
                    ),
                ],
            ),
        ),
        (
            labels(&[("host", "other4"), ("job", "journal")]),
            lines(now, &[(40, "sudo[1]: ops : COMMAND=/usr/bin/true")]),
        ),
    ];
    let alert = [
        ("instance", "app3:9100"),
        ("device", "store2:/tank/pics"),
        ("mountpoint", "/mnt/pics"),
    ];
    let facts = alert_facts(streams, &alert, 30).await;
    assert_eq!(facts.len(), 1, "{facts:?}");
    let line = facts[0].line(now);
    assert!(line.starts_with("logs store2: 1 new log lines"), "{line}");
    assert!(line.contains("sharenfs=off"), "{line}");
    assert_eq!(facts[0].severity, Severity::Info);
}

#[tokio::test]
async fn an_alert_on_a_remote_target_reads_the_hosts_that_log_about_it() {
    let now = Utc::now();
    let syslog = |host: &str| labels(&[("host", host), ("job", "syslog")]);
    let streams = vec![
        (
            syslog("edge-gw"),
            lines(
                now,
                &[
                    (200, "sshd[1]: Accepted publickey for admin from 10.0.0.5"),
                    (62, "kernel: em0: link state changed to DOWN"),
                    (62, "gw[9]: MONITOR: FIBRE is down, switch to: BACKUP"),
                    (61, "probe[7]: FIBRE 203.0.113.77: sendto error: 50"),
                    (55, "probe[7]: FIBRE 203.0.113.77: sendto error: 50"),
                ],
            ),
        ),
        (
            syslog("printer-box"),
            lines(now, &[(61, "cupsd[3]: job 14 failed: out of paper")]),
        ),
    ];
    let alert = labels(&[("alertname", "Latency"), ("instance", "203.0.113.77")]);
    let started = now - TimeDelta::minutes(60);
    let facts = run_over(streams, Focus::alert(&alert, Some(started)), now, started).await;
    let all: Vec<String> = facts.iter().map(|f| f.line(now)).collect();
    assert_eq!(facts.len(), 1, "{all:?}");
    assert_eq!(facts[0].entity.host.as_deref(), Some("edge-gw"), "{all:?}");
    assert!(all[0].contains("link state changed to DOWN"), "{all:?}");
}
