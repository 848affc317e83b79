//! The analyzers over Loki. A service is a value of the stream label of
//! [`SERVICE_LABELS`] with the most values in Loki (a `job` that is the same for every
//! journal stream names no service; its `unit` does), on the host of the first of
//! [`HOST_LABELS`] Loki has, when there is one;
//! every query is built from those constant lists and from label values and lines found in
//! Loki, escaped, never from the trigger's text.
//!
//! - `changes.rs`: what changed in each service's logs, whatever words they use: a sharp
//!   rise or a fall to silence of its line rate, and line patterns that are new in the
//!   recent part of the window; and, for the services the trigger is about, their recent
//!   rate and most frequent patterns as context; `facts.rs` builds their facts;
//! - `volume.rs`: where a series of line counts rises sharply or falls silent;
//! - `novelty.rs`: the patterns of sampled lines, which are new, and a regex per pattern;
//! - `signal.rs`: how bad a line looks (its level field, syslog priority, HTTP status,
//!   words), used for severity only;
//! - `traces.rs`: a stack trace (Python, JVM, Go, Rust, Node) as one line, its
//!   exception, whether it came as one entry or one entry per line; every analyzer reads
//!   lines through it;
//! - `errors.rs`: bursts of lines matching a generic error pattern;
//! - `mentions.rs`: around the trigger's start, bad-looking lines of other hosts and
//!   services that name the host, pod or node in focus;
//! - `merge.rs`: the log facts of all analyzers that quote the same patterns about one
//!   service or host as one fact (the sweep calls it);
//! - `admin.rs`: what people ran as root on each host (sudo's and doas's lines), latest
//!   first, routine automation left out: the hand-made changes behind many incidents;
//! - `access.rs`: an HTTP access log line (combined, HAProxy, JSON) as its status and
//!   request; `access_bursts.rs`: a burst of one client-error status (413, 429, 401…)
//!   that was rare before the trigger's start;
//! - `at_start.rs`: the lines that look bad around the trigger's start on what it is about,
//!   new since the hours before; `elsewhere.rs`: in a small fleet, the new lines the other
//!   hosts logged within minutes of an alert's start (a switch, a router, a tunnel);
//! - `joins.rs` (the sweep calls it after the analyzers): log lines joined to other
//!   analyzers' facts: a failed reload's, unit's or restart loop's service's own lines at
//!   its failure, and, from `peers.rs`, the other end of a failing connection (`peer.rs`
//!   reads it from the line) and what it logged as the failures began; `around.rs` finds
//!   an entity's streams and reads its worst or rare lines around a time.

mod access;
mod access_bursts;
mod admin;
mod around;
mod at_start;
mod changes;
mod coincide;
mod elsewhere;
mod errors;
mod facts;
mod first_seen;
mod joins;
mod mentions;
mod merge;
mod novelty;
mod peer;
mod peers;
mod signal;
mod traces;
mod volume;

use std::sync::Arc;

pub use changes::LogChanges;
pub use coincide::join_coinciding;
pub use errors::LogErrorBursts;
pub use joins::join_logs;
pub use merge::merge_same;
pub use signal::{Signal, signal};
pub use traces::fold_log;

use super::{Analyzer, Scope};
use crate::analyze::prom::escape;
use crate::integrations::prometheus::Series;
use crate::integrations::{LokiClient, UpstreamError};

/// Stream labels that name a service, by preference when as many values.
pub(crate) const SERVICE_LABELS: [&str; 6] =
    ["service_name", "service", "app", "job", "container", "unit"];
/// Stream labels that name the host a stream comes from, by preference.
pub(crate) const HOST_LABELS: [&str; 5] = ["host", "hostname", "nodename", "node", "instance"];

/// The analyzers over Loki.
pub fn analyzers(client: Arc<LokiClient>) -> Vec<Arc<dyn Analyzer>> {
    vec![
        Arc::new(LogErrorBursts(client.clone())),
        Arc::new(at_start::LogsAtStart(client.clone())),
        Arc::new(mentions::LogsMentioning(client.clone())),
        Arc::new(elsewhere::LogsElsewhere(client.clone())),
        Arc::new(access_bursts::AccessStatusBursts(client.clone())),
        Arc::new(admin::AdminCommands(client.clone())),
        Arc::new(LogChanges::new(client)),
    ]
}

/// The label that names services in Loki over the scope's window, and the labels Loki has
/// (`None`: no label of [`SERVICE_LABELS`]).
async fn service_label(
    client: &LokiClient,
    scope: &Scope,
) -> Result<Option<(&'static str, Vec<String>)>, UpstreamError> {
    let labels = client.labels(scope.window_start, scope.now).await?;
    let present: Vec<&'static str> = SERVICE_LABELS
        .into_iter()
        .filter(|l| labels.iter().any(|x| x == l))
        .collect();
    if present.len() < 2 {
        return Ok(present.first().map(|l| (*l, labels)));
    }
    let counts = futures::future::join_all(
        present
            .iter()
            .map(|l| client.label_values(l, scope.window_start, scope.now)),
    )
    .await;
    let mut best: Option<(&'static str, usize)> = None;
    for (l, values) in present.iter().zip(counts) {
        let n = values?.len();
        if best.is_none_or(|(_, m)| n > m) {
            best = Some((l, n));
        }
    }
    Ok(best.map(|(l, _)| (l, labels)))
}

/// The stream selector `{label="value", …}` of `pairs`, values escaped.
fn selector(pairs: &[(&str, &str)]) -> String {
    let inner: Vec<String> = pairs
        .iter()
        .map(|(k, v)| format!("{k}=\"{}\"", escape(v)))
        .collect();
    format!("{{{}}}", inner.join(", "))
}

/// The values of the metric query `query` over the scope's window, one point per `step`
/// seconds.
async fn over_window(
    client: &LokiClient,
    query: &str,
    scope: &Scope,
    step: i64,
) -> Result<Vec<Series>, UpstreamError> {
    let step = std::time::Duration::from_secs(step.max(1).unsigned_abs());
    client
        .query_range_matrix(query, scope.window_start, scope.now, step)
        .await
}

/// `s`'s values as one count per `step` seconds over the scope's window (point `i` at
/// `window_start + i·step`; missing points are zero, as Loki omits empty steps).
fn per_step(s: &Series, scope: &Scope, step: i64) -> Vec<f64> {
    let start = scope.window_start.timestamp();
    let n = ((scope.now.timestamp() - start) / step.max(1)).max(0) as usize + 1;
    let mut counts = vec![0.0; n];
    for (t, v) in &s.values {
        let i = ((*t as i64 - start) as f64 / step.max(1) as f64).round();
        if i >= 0.0 && (i as usize) < n && v.is_finite() && *v >= 0.0 {
            counts[i as usize] = *v;
        }
    }
    counts
}

/// The split of `counts` into a before and an after whose means differ most (after
/// higher), with at least two points after: `(index, mean before, mean after)`.
fn split(counts: &[f64]) -> Option<(usize, f64, f64)> {
    let n = counts.len();
    if n < 3 {
        return None;
    }
    let total: f64 = counts.iter().sum();
    let mut sum_before = 0.0;
    let mut best: Option<(usize, f64, f64)> = None;
    for k in 1..n - 1 {
        sum_before += counts[k - 1];
        let before = sum_before / k as f64;
        let after = (total - sum_before) / (n - k) as f64;
        if best.is_none_or(|(_, b, a)| after - before > a - b) {
            best = Some((k, before, after));
        }
    }
    best.filter(|(_, b, a)| a > b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_split_is_where_a_quiet_before_turns_into_a_loud_after() {
        let mut c = vec![0.0, 1.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0];
        c.extend([30.0, 28.0, 35.0, 31.0]);
        let (k, before, after) = split(&c).unwrap();
        assert_eq!(k, 8);
        assert!(before < 0.3 && after > 30.0);
        assert_eq!(split(&[5.0, 5.0]), None);
        assert_eq!(split(&[9.0, 9.0, 9.0, 9.0]), None);
    }

    #[tokio::test]
    async fn the_service_label_is_the_one_with_most_values_and_the_first_on_a_tie() {
        crate::install_crypto_provider();
        let labels = |pairs: &[(&str, &str)]| -> std::collections::BTreeMap<String, String> {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        let journal = |unit: &str| labels(&[("job", "systemd-journal"), ("unit", unit)]);
        let streams = vec![
            (journal("postfix.service"), vec![]),
            (journal("sshd.service"), vec![]),
            (labels(&[("job", "nginx"), ("app", "web")]), vec![]),
            (labels(&[("job", "gitea"), ("app", "gitea")]), vec![]),
        ];
        let server =
            crate::eval::fakes::FakeServer::start(crate::eval::fakes::loki_router(streams))
                .await
                .unwrap();
        let mut config = crate::config::Config::default();
        config.loki.url = Some(server.url.parse().unwrap());
        let upstreams = crate::integrations::Upstreams::from_config(&config).unwrap();
        let client = upstreams.loki.expect("a Loki client");
        let scope = Scope::new(chrono::Utc::now(), None);
        let (label, _) = service_label(&client, &scope).await.unwrap().unwrap();
        // job: 3 values, unit 2, app 2.
        assert_eq!(label, "job");
    }

    #[test]
    fn a_selector_escapes_quotes_and_backslashes_in_values() {
        assert_eq!(
            selector(&[("unit", r#"a "b" \ c"#), ("host", "relay1")]),
            r#"{unit="a \"b\" \\ c", host="relay1"}"#
        );
    }
}
