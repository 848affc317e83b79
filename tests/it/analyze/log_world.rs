//! A homelab's logs for hours, in the formats real services write (nginx's combined access
//! log, postfix, systemd/journald, logfmt from a Go service, JSON from Python structlog and
//! from Java logback, sshd, dnsmasq, the kernel), with varying ids, addresses, paths,
//! durations and jitter from a seeded generator, served by the fake Loki in Loki's wire
//! format. A test writes its incident into one service on top.

use std::collections::BTreeMap;

use chrono::{DateTime, TimeDelta, Utc};
use sre_agent::eval::fakes::LogLine;

pub type Stream = (BTreeMap<String, String>, Vec<LogLine>);

/// A small deterministic generator (xorshift), so a failing test fails the same way.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    pub fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
        xs[self.below(xs.len() as u64) as usize]
    }
    pub fn ip(&mut self) -> String {
        format!("10.0.{}.{}", self.below(4), 2 + self.below(250))
    }
    pub fn hex(&mut self, len: usize) -> String {
        let s = format!("{:016X}", self.next());
        s[..len.min(16)].to_string()
    }
}

/// Lines from `from` before now until `to` before now, one about every `every` (±50 %).
pub fn lines(
    seed: u64,
    from: TimeDelta,
    to: TimeDelta,
    every: TimeDelta,
    mut write: impl FnMut(&mut Rng, DateTime<Utc>) -> String,
) -> Vec<LogLine> {
    let now = Utc::now();
    let mut rng = Rng::new(seed);
    let every_ms = every.num_milliseconds().max(1) as u64;
    let mut t = now - from;
    let mut out = Vec::new();
    while t < now - to {
        out.push((t.timestamp_nanos_opt().unwrap(), write(&mut rng, t)));
        let gap = every_ms / 2 + rng.below(every_ms);
        t += TimeDelta::milliseconds(gap as i64);
    }
    out
}

pub fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// Labels of a journald stream as Grafana Alloy / promtail relabel them.
pub fn journal(host: &str, unit: &str) -> BTreeMap<String, String> {
    labels(&[("job", "systemd-journal"), ("host", host), ("unit", unit)])
}

const UAS: [&str; 4] = [
    "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0",
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15",
    "curl/8.5.0",
    "Prometheus/2.53.0",
];

/// nginx's combined access log in front of a few apps.
pub fn nginx(rng: &mut Rng, t: DateTime<Utc>) -> String {
    let paths = [
        "/",
        "/api/v1/items/",
        "/static/app.",
        "/api/v1/users/",
        "/login",
    ];
    let path = rng.pick(&paths);
    let path = match path {
        "/api/v1/items/" | "/api/v1/users/" => format!("{path}{}", rng.below(5000)),
        "/static/app." => format!("{path}{}.js", rng.hex(8).to_lowercase()),
        p => p.to_string(),
    };
    let status = rng.pick(&["200", "200", "200", "200", "304", "404"]);
    let method = rng.pick(&["GET", "GET", "GET", "POST"]);
    format!(
        "{} - - [{}] \"{method} {path} HTTP/1.1\" {status} {} \"-\" \"{}\"",
        rng.ip(),
        t.format("%d/%b/%Y:%H:%M:%S +0000"),
        200 + rng.below(40000),
        UAS[rng.below(UAS.len() as u64) as usize]
    )
}

/// postfix relaying mail that is delivered.
pub fn postfix(rng: &mut Rng, _: DateTime<Utc>) -> String {
    let id = rng.hex(10);
    let pid = 1000 + rng.below(9000);
    match rng.below(5) {
        0 => format!("postfix/smtpd[{pid}]: connect from unknown[{}]", rng.ip()),
        1 => format!(
            "postfix/cleanup[{pid}]: {id}: message-id=<{}@nas.lan>",
            rng.hex(12)
        ),
        2 => format!(
            "postfix/qmgr[{pid}]: {id}: from=<backup@nas.lan>, size={}, nrcpt=1 (queue active)",
            900 + rng.below(90000)
        ),
        3 => format!(
            "postfix/smtpd[{pid}]: disconnect from unknown[{}] ehlo=1 mail=1 rcpt=1 data=1 quit=1 commands=5",
            rng.ip()
        ),
        _ => format!(
            "postfix/smtp[{pid}]: {id}: to=<ops@example.org>, relay=smtp.provider.example[203.0.113.25]:587, delay={}.{}, delays=0.01/0/0.3/0.4, dsn=2.0.0, status=sent (250 2.0.0 Ok: queued as {})",
            rng.below(3),
            rng.below(10),
            rng.hex(10)
        ),
    }
}

/// systemd on a host: sessions, timers.
pub fn systemd(rng: &mut Rng, _: DateTime<Utc>) -> String {
    match rng.below(4) {
        0 => format!("Started Session {} of User deploy.", 100 + rng.below(900)),
        1 => "Starting Cleanup of Temporary Directories...".to_string(),
        2 => "Finished Cleanup of Temporary Directories.".to_string(),
        _ => format!(
            "session-{}.scope: Deactivated successfully.",
            100 + rng.below(900)
        ),
    }
}

/// A Go service logging logfmt (gitea-like).
pub fn logfmt(rng: &mut Rng, t: DateTime<Utc>) -> String {
    let path = rng.pick(&[
        "/api/v1/repos/search",
        "/user/login",
        "/explore/repos",
        "/api/healthz",
    ]);
    format!(
        "ts={} level=info caller=router.go:{} msg=\"request completed\" method=GET path={path} status=200 duration={}.{}ms",
        t.format("%Y-%m-%dT%H:%M:%S%.3fZ"),
        100 + rng.below(50),
        rng.below(90),
        rng.below(10)
    )
}

/// A Python worker logging JSON through structlog.
pub fn structlog(rng: &mut Rng, t: DateTime<Utc>) -> String {
    let event = rng.pick(&["job started", "job finished", "thumbnail generated"]);
    format!(
        "{{\"event\": \"{event}\", \"level\": \"info\", \"timestamp\": \"{}\", \"job_id\": \"{}-{}\", \"duration\": {}.{}}}",
        t.format("%Y-%m-%dT%H:%M:%S%.6fZ"),
        rng.hex(8).to_lowercase(),
        rng.hex(4).to_lowercase(),
        rng.below(5),
        rng.below(1000)
    )
}

/// A Java service logging JSON through logback.
pub fn logback(rng: &mut Rng, t: DateTime<Utc>) -> String {
    let (logger, msg) = match rng.below(3) {
        0 => (
            "com.example.shop.OrderService",
            format!("Order {} placed", 10000 + rng.below(90000)),
        ),
        1 => (
            "org.hibernate.SQL",
            "select o1_0.id from orders o1_0 where o1_0.status=?".to_string(),
        ),
        _ => (
            "com.example.shop.PaymentClient",
            format!("Payment {} authorised", rng.hex(12)),
        ),
    };
    format!(
        "{{\"@timestamp\":\"{}\",\"@version\":\"1\",\"message\":\"{msg}\",\"logger_name\":\"{logger}\",\"thread_name\":\"http-nio-8080-exec-{}\",\"level\":\"INFO\",\"level_value\":20000}}",
        t.format("%Y-%m-%dT%H:%M:%S%.3f+00:00"),
        1 + rng.below(10)
    )
}

/// sshd accepting the deploy user's keys.
pub fn sshd(rng: &mut Rng, _: DateTime<Utc>) -> String {
    let (ip, port) = (rng.ip(), 40000 + rng.below(20000));
    match rng.below(3) {
        0 => format!(
            "Accepted publickey for deploy from {ip} port {port} ssh2: ED25519 SHA256:Xw3kP0q9yE2b7mZt1c4vN8rL6sH5jG0fD2aQ9uR1eTc"
        ),
        1 => "pam_unix(sshd:session): session opened for user deploy(uid=1000) by (uid=0)"
            .to_string(),
        _ => format!("Disconnected from user deploy {ip} port {port}"),
    }
}

/// dnsmasq (Pi-hole's FTL) answering queries.
pub fn dnsmasq(rng: &mut Rng, _: DateTime<Utc>) -> String {
    let name = rng.pick(&[
        "api.github.com",
        "deb.debian.org",
        "time.cloudflare.com",
        "registry-1.docker.io",
    ]);
    match rng.below(4) {
        0 => format!("query[A] {name} from {}", rng.ip()),
        1 => format!("forwarded {name} to 1.1.1.1"),
        2 => format!(
            "reply {name} is 140.82.{}.{}",
            rng.below(255),
            rng.below(255)
        ),
        _ => format!("cached {name} is <CNAME>"),
    }
}

/// The kernel: now and then a device or a firewall line.
pub fn kernel(rng: &mut Rng, _: DateTime<Utc>) -> String {
    let up = format!(
        "[{:>5}.{:06}]",
        100000 + rng.below(50000),
        rng.below(1000000)
    );
    match rng.below(3) {
        0 => format!(
            "{up} [UFW BLOCK] IN=eth0 OUT= MAC=aa:bb SRC={} DST=10.0.0.1 LEN=40 PROTO=TCP SPT={} DPT=23",
            rng.ip(),
            rng.below(60000)
        ),
        1 => format!("{up} veth{}: renamed from eth0", rng.hex(7).to_lowercase()),
        _ => format!(
            "{up} br-{}: port 2(veth{}) entered forwarding state",
            rng.hex(12).to_lowercase(),
            rng.hex(7).to_lowercase()
        ),
    }
}

/// The background: nine services on four hosts for `hours`, each at its own pace.
pub fn homelab(hours: i64) -> Vec<Stream> {
    let h = TimeDelta::hours(hours);
    let z = TimeDelta::zero();
    let s = TimeDelta::seconds;
    vec![
        (
            journal("proxy1", "nginx.service"),
            lines(1, h, z, s(3), nginx),
        ),
        (
            journal("relay1", "postfix.service"),
            lines(2, h, z, s(30), postfix),
        ),
        (journal("relay1", "systemd"), lines(3, h, z, s(90), systemd)),
        (
            journal("git1", "gitea.service"),
            lines(4, h, z, s(8), logfmt),
        ),
        (
            journal("docker1", "worker.service"),
            lines(5, h, z, s(20), structlog),
        ),
        (
            journal("docker1", "shop.service"),
            lines(6, h, z, s(6), logback),
        ),
        (journal("git1", "ssh.service"), lines(7, h, z, s(120), sshd)),
        (
            journal("pihole", "pihole-FTL.service"),
            lines(8, h, z, s(2), dnsmasq),
        ),
        (journal("docker1", "kernel"), lines(9, h, z, s(45), kernel)),
    ]
}

/// The stream of `unit` in `world`.
pub fn stream<'a>(world: &'a mut [Stream], unit: &str) -> &'a mut Vec<LogLine> {
    &mut world
        .iter_mut()
        .find(|(l, _)| l.get("unit").is_some_and(|u| u == unit))
        .expect("a stream of that unit")
        .1
}

/// Drops `unit`'s lines newer than `ago`.
pub fn cut(world: &mut [Stream], unit: &str, ago: TimeDelta) {
    let end = (Utc::now() - ago).timestamp_nanos_opt().unwrap();
    stream(world, unit).retain(|(t, _)| *t < end);
}
