//! An HTTP access log line read as the request it records: its status, and its method,
//! path and client when the format has them. The usual formats: the common and combined
//! formats of nginx and Apache (and Traefik's, Envoy's default: a quoted request line, then
//! the status), HAProxy's HTTP log (its timers, then the status; the quoted request last),
//! and JSON access logs (Caddy's `status` and `request.method`, Traefik's
//! `DownstreamStatus` and `RequestMethod`, nginx `log_format … escape=json` with
//! `status` and `request`, ECS's `http.response.status_code`, pino's `res.statusCode`).
//! A line is an access record only with a status and a request (a method or a path): an
//! application's JSON with a `status` field is not one. Fields are read through regex
//! captures and JSON, never by slicing at computed offsets.
//!
//! The LogQL line filters here pick the lines that may be such records (a superset;
//! [`parse`] decides), with a status of any class or of one code.

use std::sync::LazyLock;

use regex_lite::Regex;
use serde_json::Value;

/// One request as its access log line records it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Access {
    pub status: u16,
    pub method: Option<String>,
    pub path: Option<String>,
    pub client: Option<String>,
}

/// The common/combined format: a quoted request line (or `"-"` for a malformed one), the
/// status after it.
static COMBINED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r#""(?:(?P<method>[A-Z][A-Z_-]{1,15}) (?P<path>[^" ]+)(?: [A-Z]+/[0-9.]+)?|-)" (?P<status>[1-5][0-9][0-9])(?:\s|$)"#,
    )
    .expect("valid regex")
});
/// The client of a common/combined line: its first field before ident, user and `[time]`.
static COMBINED_CLIENT: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^(?P<client>\S+) \S+ \S+ \[").expect("valid regex"));
/// HAProxy's HTTP log: `client:port [accept date] frontend backend/server timers status`,
/// the request quoted at the end.
static HAPROXY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r#"(?:^|\s)(?P<client>[0-9A-Fa-f.:]+):[0-9]+ \[[^\]]+\] \S+ \S+ -?[0-9]+/-?[0-9]+/-?[0-9]+/-?[0-9]+/\+?-?[0-9]+ (?P<status>[1-5][0-9][0-9]) .*"(?:(?P<method>[A-Z][A-Z_-]{1,15}) (?P<path>[^" ]+)|<BADREQ>|<NOSRV>)"#,
    )
    .expect("valid regex")
});

/// JSON keys of the status, the method, the path and the client, top level or as a path
/// of nested objects (`request.method`), first found wins.
const STATUS_KEYS: [&str; 8] = [
    "status",
    "status_code",
    "statusCode",
    "DownstreamStatus",
    "response_status",
    "http.response.status_code",
    "response.status",
    "res.statusCode",
];
const METHOD_KEYS: [&str; 6] = [
    "method",
    "request_method",
    "RequestMethod",
    "request.method",
    "http.request.method",
    "req.method",
];
const PATH_KEYS: [&str; 8] = [
    "path",
    "uri",
    "request_uri",
    "RequestPath",
    "request.uri",
    "url.path",
    "req.url",
    "url",
];
const CLIENT_KEYS: [&str; 7] = [
    "remote_addr",
    "client_ip",
    "ClientHost",
    "request.remote_ip",
    "request.client_ip",
    "client.ip",
    "remote_ip",
];

/// The request `line` records, when it is an access log line.
pub(super) fn parse(line: &str) -> Option<Access> {
    let trimmed = line.trim();
    if trimmed.starts_with('{') {
        return parse_json(trimmed);
    }
    if let Some(c) = HAPROXY.captures(line) {
        return Some(Access {
            status: c.name("status")?.as_str().parse().ok()?,
            method: c.name("method").map(|m| m.as_str().to_string()),
            path: c.name("path").map(|m| m.as_str().to_string()),
            client: c.name("client").map(|m| m.as_str().to_string()),
        });
    }
    let c = COMBINED.captures(line)?;
    Some(Access {
        status: c.name("status")?.as_str().parse().ok()?,
        method: c.name("method").map(|m| m.as_str().to_string()),
        path: c.name("path").map(|m| m.as_str().to_string()),
        client: COMBINED_CLIENT
            .captures(line)
            .and_then(|c| c.name("client"))
            .map(|m| m.as_str().to_string()),
    })
}

/// The value at `key` of `v`: a top-level key (dots and all, as ECS flattens), else the
/// path of nested objects it spells.
fn field<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
    if let Some(x) = v.get(key) {
        return Some(x);
    }
    let mut at = v;
    for part in key.split('.') {
        at = at.get(part)?;
    }
    Some(at)
}

fn text(v: &Value, keys: &[&str]) -> Option<String> {
    keys.iter()
        .filter_map(|k| field(v, k))
        .find_map(|x| x.as_str().filter(|s| !s.is_empty() && *s != "-"))
        .map(str::to_string)
}

/// A status as JSON writes it: a number or a numeric string, 100–599.
fn status(v: &Value) -> Option<u16> {
    let n = match v {
        Value::Number(n) => n.as_u64()?,
        Value::String(s) => s.trim().parse().ok()?,
        _ => return None,
    };
    u16::try_from(n).ok().filter(|s| (100..=599).contains(s))
}

fn parse_json(line: &str) -> Option<Access> {
    let v: Value = serde_json::from_str(line).ok()?;
    let status = STATUS_KEYS
        .iter()
        .filter_map(|k| field(&v, k))
        .find_map(status)?;
    let mut method = text(&v, &METHOD_KEYS);
    let mut path = text(&v, &PATH_KEYS);
    // nginx's `"request":"POST /upload HTTP/1.1"`.
    if let Some(request) = v.get("request").and_then(Value::as_str) {
        let mut words = request.split_whitespace();
        method = method.or_else(|| words.next().map(str::to_string));
        path = path.or_else(|| words.next().map(str::to_string));
    }
    if method.is_none() && path.is_none() {
        return None;
    }
    Some(Access {
        status,
        method,
        path,
        client: text(&v, &CLIENT_KEYS),
    })
}

/// A LogQL line filter (RE2) for lines that may record a request answered with a status
/// whose digits match `digits` (`4[0-9][0-9]`, `413`): after a quoted request line,
/// after HAProxy's timers, or in a JSON status field.
pub(super) fn status_filter(digits: &str) -> String {
    format!(
        r#"" {digits}( |$)|/\+?-?[0-9]+ {digits} |"(status|status_code|statusCode|DownstreamStatus|response_status)"\s*:\s*"?{digits}[^0-9]"#
    )
}

/// [`status_filter`] of any status.
pub(super) fn any_status() -> String {
    status_filter("[1-5][0-9][0-9]")
}

/// [`status_filter`] of a client error (4xx).
pub(super) fn client_errors() -> String {
    status_filter("4[0-9][0-9]")
}

/// A status's reason phrase, for the common client errors.
pub(super) fn reason(status: u16) -> Option<&'static str> {
    Some(match status {
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        409 => "Conflict",
        410 => "Gone",
        411 => "Length Required",
        413 => "Content Too Large",
        414 => "URI Too Long",
        415 => "Unsupported Media Type",
        421 => "Misdirected Request",
        422 => "Unprocessable Content",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        499 => "Client Closed Request",
        _ => return None,
    })
}

#[cfg(test)]
mod tests;
