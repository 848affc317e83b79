//! What an entity logged around a time, for a fact about it that another analyzer found:
//! the labels Loki has (read once per sweep: which label names hosts, which name services,
//! and their values), an entity's streams found among them (a host tolerant of a domain
//! suffix, a service tolerant of case and of a systemd unit's `.service`), and the lines
//! of those streams in a range around the time that look worst, or that are rare there
//! (an upgrade, a listener bound to 127.0.0.1, a config error at info level).
//!
//! Queries are built from label values found in Loki, escaped ([`super::selector`]).

use std::collections::HashMap;

use chrono::{DateTime, TimeDelta, Utc};

use super::signal::Signal;
use super::traces::fold_entries;
use super::{HOST_LABELS, SERVICE_LABELS, selector};
use crate::analyze::{host_of, line_pattern, quote_line, readable_line};
use crate::integrations::{LokiClient, UpstreamError};

/// Labels a Kubernetes pod's streams carry besides the service labels.
const POD_LABEL: &str = "pod";
/// Lines read around a time.
const LINES: u32 = 1000;
/// How often a line that does not look bad may occur in the range and still be rare.
const RARE: usize = 2;
/// Lines this close to each other are one burst (a restart's banner and settings).
const BURST: TimeDelta = TimeDelta::seconds(60);

/// The labels Loki has over a window: the one naming hosts and its values, and each label
/// naming services (or pods) with its values.
#[derive(Clone, Debug, Default)]
pub(crate) struct Catalog {
    pub host: Option<(&'static str, Vec<String>)>,
    pub services: Vec<(&'static str, Vec<String>)>,
}

impl Catalog {
    /// Reads the catalog from `start` to `end` (one query per label).
    pub async fn read(
        client: &LokiClient,
        start: DateTime<Utc>,
        end: DateTime<Utc>,
    ) -> Result<Self, UpstreamError> {
        let labels = client.labels(start, end).await?;
        let has = |l: &&str| labels.iter().any(|x| x == l);
        let host = HOST_LABELS.into_iter().find(|h| has(h));
        let names: Vec<&'static str> = SERVICE_LABELS
            .into_iter()
            .chain([POD_LABEL])
            .filter(|l| has(l) && Some(*l) != host)
            .collect();
        let wanted: Vec<&'static str> = host.into_iter().chain(names.iter().copied()).collect();
        let values =
            futures::future::join_all(wanted.iter().map(|l| client.label_values(l, start, end)))
                .await;
        let mut catalog = Self::default();
        for (l, v) in wanted.into_iter().zip(values) {
            let v = v?;
            match Some(l) == host {
                true => catalog.host = Some((l, v)),
                false => catalog.services.push((l, v)),
            }
        }
        Ok(catalog)
    }

    /// The label that names services: of [`SERVICE_LABELS`], the one with most values
    /// (the first on a tie), as [`super::service_label`] chooses it.
    pub fn service_label(&self) -> Option<&'static str> {
        let mut best: Option<(&'static str, usize)> = None;
        for (l, values) in self.services.iter().filter(|(l, _)| *l != POD_LABEL) {
            if best.is_none_or(|(_, n)| values.len() > n) {
                best = Some((l, values.len()));
            }
        }
        best.map(|(l, _)| l)
    }

    /// The host label's value that is `name` (a domain suffix on either side, an
    /// instance's port, case aside).
    pub fn host_named(&self, name: &str) -> Option<(&'static str, String)> {
        let (label, values) = self.host.as_ref()?;
        values
            .iter()
            .find(|v| same_host(v, name))
            .map(|v| (*label, v.clone()))
    }

    /// The service (or pod) label values that are one of `names` (case, a `.service`
    /// suffix and a domain suffix aside), the label of `prefer` first.
    pub fn services_named(&self, names: &[String], prefer: &[&str]) -> Vec<(&'static str, String)> {
        let wanted: Vec<String> = names.iter().map(|n| service_key(n)).collect();
        let mut found: Vec<(&'static str, String)> = self
            .services
            .iter()
            .flat_map(|(l, values)| values.iter().map(move |v| (*l, v)))
            .filter(|(_, v)| wanted.contains(&service_key(v)))
            .map(|(l, v)| (l, v.clone()))
            .collect();
        found.sort_by_key(|(l, _)| !prefer.contains(l));
        found
    }
}

/// Whether two spellings name one host: equal but for case and a port, or one is the
/// other's first label (`brokerpi`, `brokerpi.lan`). Addresses only equal.
pub(crate) fn same_host(a: &str, b: &str) -> bool {
    let (a, b) = (host_of(a).to_lowercase(), host_of(b).to_lowercase());
    let (a, b) = (a.trim_end_matches('.'), b.trim_end_matches('.'));
    if a.is_empty() || b.is_empty() {
        return false;
    }
    if a == b {
        return true;
    }
    let ip = |s: &str| s.parse::<std::net::IpAddr>().is_ok();
    if ip(a) || ip(b) {
        return false;
    }
    let short = |s: &str| s.split('.').next().unwrap_or(s).to_string();
    (!a.contains('.') && short(b) == a) || (!b.contains('.') && short(a) == b)
}

/// A service's name as compared: lower case, without a systemd unit's type suffix.
fn service_key(name: &str) -> String {
    let n = name.trim().to_lowercase();
    [".service", ".socket", ".scope"]
        .into_iter()
        .find_map(|s| n.strip_suffix(s).map(str::to_string))
        .unwrap_or(n)
}

/// One pattern's lines in the range.
#[derive(Clone, Debug)]
pub(crate) struct Said {
    pub grade: Signal,
    pub first: DateTime<Utc>,
    /// The order its first line was read in (ties in time keep the log's order).
    pub order: usize,
    /// The stream's labels other than its host's (empty when one stream is read).
    pub stream: String,
    pub count: usize,
    pub example: String,
}

/// Counts `line` under `pattern`, keeping the earliest line as its example and the order
/// patterns were first read in.
pub(crate) fn tally(
    seen: &mut HashMap<String, Said>,
    pattern: String,
    (grade, at): (Signal, DateTime<Utc>),
    stream: &str,
    line: String,
) {
    let order = seen.len();
    let e = seen.entry(pattern).or_insert_with(|| Said {
        grade,
        first: at,
        order,
        stream: stream.to_string(),
        count: 0,
        example: line.clone(),
    });
    e.count += 1;
    if at < e.first {
        e.first = at;
        e.example = line;
    }
}

/// What a read around a time found.
#[derive(Debug, Default)]
pub(crate) struct Near {
    /// Lines read.
    pub lines: usize,
    /// The patterns picked, in time order.
    pub picked: Vec<Said>,
}

/// How many patterns to pick and whether rare lines that do not look bad count.
#[derive(Clone, Copy)]
pub(crate) struct Pick {
    pub max: usize,
    pub rare_too: bool,
}

/// The lines of `selector` from `from` to `to` (clamped to `now`), those picked as the
/// ones that tell most about `at`: the worst first (the earliest of a grade), then, when
/// `pick.rare_too`, lines that do not look bad but occur at most twice, nearest before
/// `at` first.
pub(crate) async fn read_near(
    client: &LokiClient,
    selector: &str,
    (from, to): (DateTime<Utc>, DateTime<Utc>),
    at: DateTime<Utc>,
    pick: Pick,
) -> Result<Near, UpstreamError> {
    if from >= to {
        return Ok(Near::default());
    }
    let streams = client.query_logs(selector, from, to, LINES).await?;
    let mut by: HashMap<String, Said> = HashMap::new();
    let mut lines = 0;
    for s in &streams {
        for (ns, line, grade) in fold_entries(&s.entries) {
            lines += 1;
            let t = DateTime::from_timestamp_nanos(ns);
            tally(&mut by, line_pattern(&line), (grade, t), "", line);
        }
    }
    Ok(Near {
        lines,
        picked: picked(by.into_values().collect(), at, pick),
    })
}

/// The patterns [`read_near`] quotes, in time order.
fn picked(all: Vec<Said>, at: DateTime<Utc>, pick: Pick) -> Vec<Said> {
    let (mut bad, quiet): (Vec<Said>, Vec<Said>) =
        all.into_iter().partition(|s| s.grade > Signal::None);
    bad.sort_by_key(|s| (std::cmp::Reverse(s.grade), s.first, s.order));
    let mut out: Vec<Said> = bad.into_iter().take(pick.max).collect();
    if pick.rare_too && out.len() < pick.max {
        let mut rare: Vec<Said> = quiet.into_iter().filter(|s| s.count <= RARE).collect();
        // Nearest to `at`, those before it first at equal distance; the lines logged
        // with the nearest (a restart's burst) in the log's order, from its first.
        rare.sort_by_key(|s| ((s.first - at).abs(), s.first > at, s.order));
        if let Some(anchor) = rare.first().map(|s| s.first) {
            let (mut burst, rest): (Vec<Said>, Vec<Said>) = rare
                .into_iter()
                .partition(|s| (s.first - anchor).abs() <= BURST);
            burst.sort_by_key(|s| (s.first, s.order));
            rare = burst.into_iter().chain(rest).collect();
        }
        let room = pick.max - out.len();
        out.extend(rare.into_iter().take(room));
    }
    out.sort_by_key(|s| (s.first, s.order));
    out
}

/// "20:01 (3×) line | line | 20:02 line": each line made readable, without the timestamp
/// it begins with (its minute is shown once), cut to `chars`.
pub(crate) fn quote(said: &[Said], chars: usize) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut minute = String::new();
    for s in said {
        let at = s.first.format("%H:%M").to_string();
        let times = match s.count {
            1 => String::new(),
            n => format!("({n}×) "),
        };
        let line = readable_line(&s.example);
        let line = quote_line(without_stamp(&line), chars);
        match at == minute {
            true => out.push(format!("{times}{line}")),
            false => out.push(format!("{at} {times}{line}")),
        }
        minute = at;
    }
    out.join(" | ")
}

/// `line` without the timestamp it begins with (`1732737601: `, `2026-11-27 20:01:02.123
/// `, `2026-11-27T20:01:02Z `), when something follows it.
fn without_stamp(line: &str) -> &str {
    let stamp = |t: &str| {
        t.starts_with(|c: char| c.is_ascii_digit())
            && t.chars().all(|c| {
                c.is_ascii_digit() || matches!(c, '-' | ':' | '.' | '/' | 'T' | 'Z' | ',' | '+')
            })
    };
    let mut rest = line;
    let mut digits = 0;
    while let Some((token, after)) = rest.split_once(' ') {
        if !stamp(token) {
            break;
        }
        digits += token.chars().filter(char::is_ascii_digit).count();
        rest = after.trim_start();
    }
    match digits >= 8 && !rest.is_empty() {
        true => rest,
        false => line,
    }
}

/// `at - before` to `at + after`, within `[.., now]`.
pub(crate) fn range_around(
    at: DateTime<Utc>,
    before: TimeDelta,
    after: TimeDelta,
    now: DateTime<Utc>,
) -> (DateTime<Utc>, DateTime<Utc>) {
    let from = at.checked_sub_signed(before).unwrap_or(at);
    let to = at.checked_add_signed(after).unwrap_or(now).min(now);
    (from, to)
}

/// The selector of one label value, and of a host besides when given.
pub(crate) fn stream_selector(stream: (&str, &str), host: Option<(&str, &str)>) -> String {
    let mut pairs = vec![stream];
    pairs.extend(host);
    selector(&pairs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_host_is_itself_with_or_without_its_domain_or_port_and_an_address_only_itself() {
        assert!(same_host("brokerpi", "brokerpi.lan"));
        assert!(same_host("BrokerPi.lan.", "brokerpi"));
        assert!(same_host("brokerpi:9100", "brokerpi"));
        assert!(!same_host("db1.a.example", "db1.b.example"));
        assert!(!same_host("db1", "db10"));
        assert!(!same_host("10.0.0.5", "10.0.0.50"));
        assert!(same_host("10.0.0.5:9100", "10.0.0.5"));
        assert!(!same_host("", "x"));
    }

    #[test]
    fn a_service_is_named_whatever_its_case_or_unit_suffix() {
        let catalog = Catalog {
            host: None,
            services: vec![
                ("unit", vec!["Caddy.service".into(), "sshd.service".into()]),
                ("container", vec!["caddy".into()]),
            ],
        };
        assert_eq!(
            catalog.services_named(&["caddy".into()], &["container"]),
            [
                ("container", "caddy".into()),
                ("unit", "Caddy.service".into())
            ]
        );
        assert!(catalog.services_named(&["cad".into()], &[]).is_empty());
    }

    #[test]
    fn the_worst_lines_come_first_then_rare_ones_nearest_the_time() {
        let t = |m: i64| DateTime::<Utc>::UNIX_EPOCH + TimeDelta::minutes(100 + m);
        let said = |grade, m, count, example: &str| Said {
            grade,
            first: t(m),
            order: 0,
            stream: String::new(),
            count,
            example: example.into(),
        };
        let all = vec![
            said(Signal::None, -20, 40, "routine"),
            said(Signal::None, -3, 1, "listening on 127.0.0.1:1883"),
            said(Signal::None, -15, 1, "far rare"),
            said(Signal::Warning, 2, 4, "warn"),
        ];
        let got = picked(
            all.clone(),
            t(0),
            Pick {
                max: 3,
                rare_too: true,
            },
        );
        let ex: Vec<&str> = got.iter().map(|s| s.example.as_str()).collect();
        assert_eq!(ex, ["far rare", "listening on 127.0.0.1:1883", "warn"]);
        let got = picked(
            all,
            t(0),
            Pick {
                max: 2,
                rare_too: false,
            },
        );
        assert_eq!(got.len(), 1);
        assert_eq!(quote(&got, 40), "01:42 (4×) warn");
        let two = vec![
            said(
                Signal::None,
                1,
                1,
                "1732737601: mosquitto version 2.0.18 starting",
            ),
            said(
                Signal::None,
                1,
                1,
                "2026-11-27 01:41:00.000 UTC [812] LOG:  shut down",
            ),
            said(
                Signal::None,
                2,
                1,
                "Zigbee2MQTT:error 2026-11-27 01:42:00: x",
            ),
        ];
        assert_eq!(
            quote(&two, 60),
            "01:41 mosquitto version 2.0.18 starting | UTC [812] LOG:  shut down | \
             01:42 Zigbee2MQTT:error 2026-11-27 01:42:00: x"
        );
    }
}
