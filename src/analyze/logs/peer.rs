//! The other end of a failing connection, read from the line that reports it: Go's
//! `dial tcp 10.0.0.5:1883: connect: connection refused`, nginx's `connect() failed (111:
//! Connection refused) while connecting to upstream, …, upstream: "http://10.1.2.3:8080/"`,
//! libpq's `connection to server at "db1" (10.0.0.8), port 5432 failed`, urllib3's
//! `HTTPConnectionPool(host='api.lan', port=8080)`, Node's `connect ECONNREFUSED
//! 10.0.0.5:1883`, a JVM's `Connection refused: db.lan/10.0.0.8:5432`, and the free-text
//! `Connection to mqtt.lan:1883 refused`, `Failed to connect to api.lan port 8080`,
//! `ssh: connect to host backup.lan port 22`, postfix's `connect to mx[203.0.113.5]:25`.
//!
//! Data only: a peer is a host name or an address and maybe a port, never text to paste
//! into a query. A line that says no failure, or names only the client that connected
//! (`refused connect from 10.0.0.9`, nginx's `client:`), or only this host (`127.0.0.1`,
//! `localhost`), gives none.

use std::fmt;
use std::sync::LazyLock;

use regex_lite::Regex;

/// Lines that report a failure to connect (or a connection failing), as a LogQL line
/// filter and to check a line before reading a peer from it. No backticks (it is sent in
/// a raw LogQL string).
pub(crate) const FAILING: &str = r"(?i)(refused|no route to host|i/o timeout|timed out|timeout|unreachable|could not connect|couldn't connect|can't connect|cannot connect|unable to connect|failed to connect|connect\(\) failed|connect call failed|error connecting|no such host|econnrefused|etimedout|ehostunreach|enetunreach|enotfound|name or service not known|deadline exceeded)";

/// A host name, an IPv4 address, or an IPv6 address in brackets, with an optional port.
const ADDR: &str =
    r"\[[0-9A-Fa-f:.]+\](?::\d+)?|[A-Za-z0-9][A-Za-z0-9._-]*(?:\[[0-9A-Fa-f:.]+\])?(?::\d+)?";

static FAILING_RE: LazyLock<Regex> = LazyLock::new(|| Regex::new(FAILING).expect("valid regex"));
/// Phrases of a server about a client: the address in them is not a peer it failed to reach.
static INBOUND: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)refused connect from|connection from \S+ refused|rejected connection from|handshake error from",
    )
        .expect("valid regex")
});

/// How a pattern's captures make a peer.
#[derive(Clone, Copy)]
enum Shape {
    /// Group 1 is an address (`host:port`, `[v6]:port`, `name[ip]:port`), group 2 an
    /// optional port (`… port 22`).
    Addr,
    /// Group 1 a name, group 2 an optional address, group 3 an optional port.
    NameIpPort,
    /// Group 1 this end, group 2 the far end of an open connection (Go's `read tcp
    /// a->b`): a peer when the far end's port is the lower (this end a client's
    /// ephemeral port), not when a server timed out reading from its client.
    Flow,
}

/// The index of Go's `dial tcp` form in [`FORMS`].
const DIAL: usize = 1;

/// The forms, most specific first.
static FORMS: LazyLock<Vec<(Regex, Shape)>> = LazyLock::new(|| {
    let re = |s: &str| Regex::new(&s.replace("{ADDR}", ADDR)).expect("valid regex");
    vec![
        // nginx: the upstream, not the client or the server name.
        (
            re(r#"upstream: "[a-z][a-z0-9+.-]*://({ADDR})()"#),
            Shape::Addr,
        ),
        // Go.
        (re(r"\bdial (?:tcp|udp)[46]? ({ADDR})()"), Shape::Addr),
        (
            re(r"\b(?:read|write) (?:tcp|udp)[46]? ({ADDR})->({ADDR})"),
            Shape::Flow,
        ),
        (
            re(r"\blookup ([A-Za-z0-9][A-Za-z0-9._-]*)(?: on \S+)?: ()()"),
            Shape::NameIpPort,
        ),
        // libpq 14+, and before.
        (
            re(r#"connection to server at "([^"\s]+)"(?: \(([0-9A-Fa-f:.]+)\))?, port (\d+)"#),
            Shape::NameIpPort,
        ),
        (
            re(r#"(?s)running on host "([^"\s]+)"(?: \(([0-9A-Fa-f:.]+)\))?.*?on port (\d+)"#),
            Shape::NameIpPort,
        ),
        // urllib3 / requests, asyncio.
        (re(r"host='([^'\s]+)', port=()(\d+)"), Shape::NameIpPort),
        (
            re(r"(?i)connect call failed \('([^'\s]+)', ()(\d+)"),
            Shape::NameIpPort,
        ),
        // Node.
        (
            re(r"\b(?:ECONNREFUSED|ETIMEDOUT|EHOSTUNREACH|ENETUNREACH|ECONNRESET) ({ADDR})()"),
            Shape::Addr,
        ),
        (
            re(r"\bgetaddrinfo (?:ENOTFOUND|EAI_AGAIN) ([A-Za-z0-9][A-Za-z0-9._-]*)()()"),
            Shape::NameIpPort,
        ),
        // netty / the JDK: `name/ip:port`.
        (
            re(r"(?i)connection (?:refused|timed out): ([A-Za-z0-9._-]*)/([0-9A-Fa-f:.]+):(\d+)"),
            Shape::NameIpPort,
        ),
        // Free text: "connect to host x port 22", "Connection to x:5432 refused", "Could
        // not connect to Redis at x:6379", "Error connecting to x:6379".
        (
            re(
                r"(?i)\b(?:connect(?:ing)?|connection) to (?:host |server )?(?:[A-Za-z][\w-]* at )?({ADDR})(?: port (\d+))?",
            ),
            Shape::Addr,
        ),
    ]
});

/// A URL's host, the last resort when no form names a peer (`Get "http://api:8080/x":
/// context deadline exceeded`).
static URL: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(&format!(r"\b[a-z][a-z0-9+.-]*://({ADDR})")).expect("valid regex"));

/// The far end of a connection: a name or an address, the address too when the line gives
/// both, and the port when it says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Peer {
    pub host: String,
    pub ip: Option<String>,
    pub port: Option<u16>,
}

impl fmt::Display for Peer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let host = match self.host.contains(':') {
            true => format!("[{}]", self.host),
            false => self.host.clone(),
        };
        match self.port {
            Some(p) => write!(f, "{host}:{p}"),
            None => f.write_str(&host),
        }
    }
}

impl Peer {
    /// Its name and its address (lower case).
    pub fn names(&self) -> Vec<String> {
        std::iter::once(self.host.clone())
            .chain(self.ip.clone())
            .collect()
    }
}

/// The peers `line` failed to connect to (most specific first: Go's dialled address
/// before the URL it fetched) and how the connection failed ("refused", "timed out", …);
/// `None` when the line reports no such failure or names no peer but this host.
pub(crate) fn failed_peers(line: &str) -> Option<(Vec<Peer>, &'static str)> {
    if !FAILING_RE.is_match(line) || INBOUND.is_match(line) {
        return None;
    }
    let mut peers: Vec<Peer> = Vec::new();
    let mut dialled = false;
    for (i, (re, shape)) in FORMS.iter().enumerate() {
        if let Some(p) = re
            .captures_iter(line)
            .find_map(|c| from_captures(&c, *shape))
        {
            dialled |= i == DIAL;
            if !peers.iter().any(|q| q.host == p.host && q.port == p.port) {
                peers.push(p);
            }
        }
    }
    // Go names the URL it fetched before the address it dialled (a container's name, then
    // its address on a bridge network the logs know nothing of).
    if peers.is_empty() || dialled {
        let url = URL
            .captures_iter(line)
            .find_map(|c| from_captures(&c, Shape::Addr));
        peers.extend(url.filter(|p| !peers.iter().any(|q| q.host == p.host)));
    }
    (!peers.is_empty()).then(|| (peers, how(line)))
}

/// The peer of one match of a form.
fn from_captures(c: &regex_lite::Captures<'_>, shape: Shape) -> Option<Peer> {
    let group = |i: usize| c.get(i).map(|m| m.as_str()).filter(|s| !s.is_empty());
    let port = |i: usize| group(i).and_then(|p| p.parse::<u16>().ok());
    let peer = match shape {
        Shape::Addr => {
            let mut p = parse_addr(group(1)?)?;
            p.port = p.port.or(port(2));
            // A bare word ("connecting to upstream") is no host.
            if p.port.is_none() && p.ip.is_none() && !p.host.contains(['.', ':']) {
                return None;
            }
            p
        }
        Shape::Flow => {
            let here = parse_addr(group(1)?)?;
            let there = parse_addr(group(2)?)?;
            if there.port? >= here.port? {
                return None;
            }
            there
        }
        Shape::NameIpPort => {
            let ip = group(2).map(str::to_ascii_lowercase);
            let name = group(1).map(str::to_ascii_lowercase);
            let host = name.or(ip.clone())?;
            let host = host.trim_end_matches('.').to_string();
            Peer {
                ip: ip.filter(|i| *i != host),
                host,
                port: port(3),
            }
        }
    };
    (!is_local(&peer.host) && valid_host(&peer.host)).then_some(peer)
}

/// How the line says the connection failed.
fn how(line: &str) -> &'static str {
    let l = line.to_ascii_lowercase();
    let has = |words: &[&str]| words.iter().any(|w| l.contains(w));
    if has(&["refused", "econnrefused"]) {
        "refused"
    } else if has(&[
        "no route to host",
        "ehostunreach",
        "unreachable",
        "enetunreach",
    ]) {
        "unreachable"
    } else if has(&["no such host", "enotfound", "not known", "eai_again"]) {
        "not found by name"
    } else if has(&["timeout", "timed out", "etimedout", "deadline exceeded"]) {
        "timed out"
    } else {
        "failed"
    }
}

/// `host:port`, `[v6]:port`, `name[ip]:port`, `host` as a peer.
fn parse_addr(s: &str) -> Option<Peer> {
    let (host, ip, port) = if let Some(inner) = s.strip_prefix('[') {
        let (ip, rest) = inner.split_once(']')?;
        (ip, None, rest.strip_prefix(':'))
    } else if let Some((name, more)) = s.split_once('[') {
        let (ip, rest) = more.split_once(']')?;
        (name, Some(ip.to_ascii_lowercase()), rest.strip_prefix(':'))
    } else {
        match s.split_once(':') {
            Some((h, p)) => (h, None, Some(p)),
            None => (s, None, None),
        }
    };
    let port = match port {
        Some(p) => Some(p.parse::<u16>().ok()?),
        None => None,
    };
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    Some(Peer {
        ip: ip.filter(|i| *i != host),
        host,
        port,
    })
}

fn valid_host(h: &str) -> bool {
    !h.is_empty()
        && h != "unix"
        && h.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | ':'))
}

/// This host: loopback, unspecified, `localhost`.
fn is_local(h: &str) -> bool {
    match h.parse::<std::net::IpAddr>() {
        Ok(ip) => ip.is_loopback() || ip.is_unspecified(),
        Err(_) => h == "localhost" || h.ends_with(".localhost") || h == "localhost.localdomain",
    }
}

#[cfg(test)]
mod tests;
