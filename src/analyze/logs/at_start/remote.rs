//! The hosts that log about an alert's remote target. An alert on a probe of `1.1.1.1`, a
//! website or a NAS's export names a thing that keeps no logs here; the machine whose
//! lines name it (the router pinging it, the client mounting it) is where what changed
//! as the trouble began was logged. Its lines are then read as the trigger's own.

use std::collections::BTreeSet;

use chrono::{DateTime, Utc};

use crate::analyze::prom::escape;
use crate::analyze::{Focus, host_of};
use crate::integrations::LokiClient;

/// Alert labels that name a remote target.
const TARGET_LABELS: [&str; 4] = ["instance", "target", "host", "hostname"];
/// Fewest characters of a name looked for in lines (a short one is in every line).
const MIN_NAME_CHARS: usize = 6;
/// Lines read, and most hosts taken.
const LINES: u32 = 200;
const MAX_HOSTS: usize = 2;

/// The values of `host_label` of the streams whose lines name the alert's target within
/// `start..end`, those with the most such lines first.
pub(super) async fn hosts_logging_about(
    loki: &LokiClient,
    focus: &Focus,
    host_label: &str,
    start: DateTime<Utc>,
    end: DateTime<Utc>,
) -> Vec<String> {
    let names: BTreeSet<String> = TARGET_LABELS
        .iter()
        .filter_map(|k| focus.label(k))
        .map(host_of)
        .filter(|n| n.chars().count() >= MIN_NAME_CHARS)
        .collect();
    if names.is_empty() || start >= end {
        return Vec::new();
    }
    let alternatives: Vec<String> = names.iter().map(|n| regex_lite::escape(n)).collect();
    let query = format!(
        "{{{host_label}=~\".+\"}} |~ \"{}\"",
        escape(&alternatives.join("|"))
    );
    let Ok(streams) = loki.query_logs(&query, start, end, LINES).await else {
        return Vec::new();
    };
    let mut by: Vec<(String, usize)> = Vec::new();
    for s in &streams {
        let Some(h) = s.labels.get(host_label) else {
            continue;
        };
        // The target's own streams are already read as the trigger's.
        if focus.names_host(&host_of(h)) {
            continue;
        }
        match by.iter_mut().find(|(x, _)| x == h) {
            Some((_, n)) => *n += s.entries.len(),
            None => by.push((h.clone(), s.entries.len())),
        }
    }
    by.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    by.into_iter().take(MAX_HOSTS).map(|(h, _)| h).collect()
}
