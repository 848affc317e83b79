//! How bad a log line looks, from what the usual formats put in it: a level field
//! (logfmt `level=warn`, JSON `"level":"error"`, `"severity":"ERROR"`, `"lvl":"crit"`), a
//! syslog priority (`<3>`), a level token (`ERROR`, `[warn]`, `W1127` of glog/klog), an
//! HTTP access log's 5xx status, and a few words. It only grades severity: whether a
//! service's logs changed is decided from all its lines, not from these.

use std::sync::LazyLock;

use regex_lite::Regex;

/// How bad a line looks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Signal {
    None,
    Warning,
    Error,
}

/// A level field in logfmt or JSON, with or without quotes.
static LEVEL_FIELD: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r#"(?i)"?\b(?:level|lvl|severity|loglevel|log\.level|levelname)"?\s*[:=]\s*"?([a-z]+)"#,
    )
    .expect("valid regex")
});
/// A syslog priority at the start of a line.
static PRIORITY: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^<(\d{1,3})>").expect("valid regex"));
/// A level token as loggers print it: upper case, in brackets in any case, or a lower
/// case level and a colon before the message (`error: …`, `fatal: …`, `notice: …`, as
/// unbound, postfix and git write it).
static LEVEL_TOKEN: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"\b(ERROR|ERR|FATAL|CRIT|CRITICAL|PANIC|SEVERE|EMERG|ALERT|WARN|WARNING)\b|(?i)\[(error|err|crit|alert|emerg|fatal|warn|warning)\]|(?-i)\b(error|fatal|panic|crit|critical|alert|emerg|warning|warn|notice|info|debug):\s",
    )
    .expect("valid regex")
});
/// glog/klog's header: `E1127 08:01:02.123456`.
static GLOG: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^([EFW])\d{4} \d\d:\d\d:\d\d").expect("valid regex"));
/// Redis's level mark after its pid and role: `1:M # …` warning, `*` notice, `-` verbose,
/// `.` debug.
static REDIS: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\b\d+:[XCMS] ([#*.-]) ").expect("valid regex"));
/// The status after an access log's quoted request line.
static HTTP_STATUS: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r#""[A-Z]{3,7} \S+ HTTP/[0-9.]+" (\d{3}) "#).expect("valid regex"));
/// A line that is an exception as runtimes print it: `x.y.SomeError: msg`,
/// `TypeError: msg`, `Exception in thread "main" …`, `Caused by: …`, a Rust panic.
static EXCEPTION: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r#"^(?:Exception in thread "[^"]*" |Caused by: |Uncaught )?(?:[A-Za-z_$][\w$]*\.)*[A-Za-z_$]*(?:Error|Exception|Throwable)(?::\s|$)|^thread '[^']*' panicked at "#,
    )
    .expect("valid regex")
});
/// Words of failure in free text.
static WORDS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)\b(error|errors|failed|failure|fatal|panic|exception|refused|timed out|timeout|denied|unreachable|no route to host|servfail|eai_again|expired|out of memory|oom|killed|deferred|bounced|unable to|cannot|can't|no space left)\b",
    )
    .expect("valid regex")
});

fn from_level(word: &str) -> Option<Signal> {
    match word.to_ascii_lowercase().as_str() {
        "error" | "err" | "fatal" | "crit" | "critical" | "alert" | "emerg" | "emergency"
        | "panic" | "severe" | "e" | "f" => Some(Signal::Error),
        "warn" | "warning" | "w" => Some(Signal::Warning),
        "info" | "debug" | "trace" | "notice" | "i" | "d" | "verbose" => Some(Signal::None),
        _ => None,
    }
}

/// How bad `line` looks. A level the line states wins over its words (`level=info
/// msg="retry after error"` is not an error).
pub fn signal(line: &str) -> Signal {
    if let Some(p) = PRIORITY
        .captures(line)
        .and_then(|c| c[1].parse::<u32>().ok())
    {
        return match p % 8 {
            0..=3 => Signal::Error,
            4 => Signal::Warning,
            _ => Signal::None,
        };
    }
    if let Some(c) = LEVEL_FIELD.captures(line)
        && let Some(s) = from_level(&c[1])
    {
        return s;
    }
    if let Some(c) = GLOG.captures(line) {
        return from_level(&c[1]).unwrap_or(Signal::None);
    }
    if let Some(c) = HTTP_STATUS.captures(line) {
        return match c[1].as_bytes()[0] {
            b'5' => Signal::Error,
            _ => Signal::None,
        };
    }
    if EXCEPTION.is_match(line) {
        return Signal::Error;
    }
    if let Some(c) = REDIS.captures(line) {
        return match &c[1] {
            "#" => Signal::Warning,
            _ => Signal::None,
        };
    }
    if let Some(c) = LEVEL_TOKEN.captures(line) {
        let word = c
            .get(1)
            .or_else(|| c.get(2))
            .or_else(|| c.get(3))
            .map_or("", |m| m.as_str());
        return from_level(word).unwrap_or(Signal::Warning);
    }
    match WORDS
        .find_iter(line)
        .any(|m| !counts(line.get(m.end()..).unwrap_or_default()))
    {
        true => Signal::Warning,
        false => Signal::None,
    }
}

/// Whether the text after a word of failure makes it the name of a count (`keys expired:
/// 214`, `errors=0`, `failed: 3`): a statistic, not a failure.
fn counts(after: &str) -> bool {
    let rest = after.trim_start();
    let Some(rest) = rest.strip_prefix([':', '=']) else {
        return false;
    };
    rest.trim_start().starts_with(|c: char| c.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_priorities_statuses_and_words_of_the_usual_formats_grade_a_line() {
        let cases = [
            (
                r#"{"time":"2026-11-27T01:02:03Z","level":"warn","msg":"slow"}"#,
                Signal::Warning,
            ),
            (
                r#"{"@timestamp":"x","severity":"ERROR","logger":"a.b.C","message":"boom"}"#,
                Signal::Error,
            ),
            (r#"{"lvl":"crit","msg":"disk"}"#, Signal::Error),
            (
                "ts=2026-11-27T01:02:03Z level=info msg=\"retry after error\"",
                Signal::None,
            ),
            ("<3>Nov 27 01:02:03 host app[1]: x", Signal::Error),
            ("<14>Nov 27 01:02:03 host app[1]: x", Signal::None),
            (
                "E1127 01:02:03.123456       1 reflector.go:138] watch failed",
                Signal::Error,
            ),
            (
                r#"10.0.0.5 - - [27/Nov/2026:01:02:03 +0000] "GET /api HTTP/1.1" 502 157 "-" "curl/8.5.0""#,
                Signal::Error,
            ),
            (
                r#"10.0.0.5 - - [27/Nov/2026:01:02:03 +0000] "GET /api HTTP/1.1" 200 157 "-" "curl/8.5.0""#,
                Signal::None,
            ),
            (
                "2026-11-27 01:02:03.456 ERROR 1 --- [main] o.s.Boot : failed",
                Signal::Error,
            ),
            (
                "2026/11/27 01:02:03 [warn] 31#31: *1 upstream response buffered",
                Signal::Warning,
            ),
            (
                "postfix/smtp[2211]: 4F1A: to=<a@b.c>, status=deferred (connect to x[1.2.3.4]:587: Connection timed out)",
                Signal::Warning,
            ),
            ("dnsmasq[512]: reply error is SERVFAIL", Signal::Warning),
            ("systemd[1]: Started Session 42 of user root.", Signal::None),
            (
                "unbound[2214]: [2214:0] error: ssl handshake failed crypto error:0A000086",
                Signal::Error,
            ),
            (
                "postfix/smtpd[88]: fatal: no SASL authentication mechanisms",
                Signal::Error,
            ),
            (
                "unbound[2214]: [2214:0] notice: init module 0: validator",
                Signal::None,
            ),
            // Exceptions as runtimes print them.
            ("ZeroDivisionError: division by zero", Signal::Error),
            (
                "requests.exceptions.ConnectionError: HTTPConnectionPool(host='db', port=80)",
                Signal::Error,
            ),
            (
                "Exception in thread \"main\" java.lang.IllegalStateException: boom",
                Signal::Error,
            ),
            (
                "TypeError: Cannot read properties of undefined (reading 'id')",
                Signal::Error,
            ),
            (
                "thread 'main' panicked at src/main.rs:4:5: index out of bounds",
                Signal::Error,
            ),
            ("ErrorPages: loaded 4 templates", Signal::None),
            // A level word inside the message is no level.
            ("sshd[7]: Received disconnect: 11: Bye Bye", Signal::None),
            // Redis's own marks; a word of failure naming a count is a statistic.
            (
                "docker-redis[1]: 1:S # MASTER aborted replication with an error: NOAUTH",
                Signal::Warning,
            ),
            (
                "redis-server[9]: 9:M * Done loading RDB, keys loaded: 1, keys expired: 214.",
                Signal::None,
            ),
            ("sync done: files=12 errors=0 skipped=1", Signal::None),
            ("sync done: 3 files failed: disk full", Signal::Warning),
        ];
        for (line, want) in cases {
            assert_eq!(signal(line), want, "{line}");
        }
    }
}
