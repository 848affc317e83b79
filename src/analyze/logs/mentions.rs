//! What other services logged about the entity in focus: around the trigger's start, the
//! lines in any stream of another host or service that name one of the focus's hosts (as
//! Loki spells them) or the pod or node an alert names, and look bad. A client's
//! "connect to db7:5432: connection refused" tells what the database host's own logs may
//! not. One fact per service and host: "<service> on <host> logged about <name>: <line>".
//!
//! Bounded: at most [`MAX_NAMES`] names of at least [`MIN_NAME_CHARS`] characters, one
//! Loki query with a line filter (names escaped), [`LINES`] lines, [`MAX_FACTS`] facts. A
//! Loki that cannot answer the query leaves nothing (the other analyzers note Loki's
//! errors).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use async_trait::async_trait;
use chrono::DateTime;
use serde_json::json;

use super::signal::Signal;
use super::traces::fold_entries;
use super::{HOST_LABELS, service_label};
use crate::analyze::prom::escape;
use crate::analyze::{
    AnalyzeError, Analyzer, Entity, Fact, FactClass, Scope, Severity, Source, host_of,
    line_pattern, quote_line,
};
use crate::integrations::LokiClient;

pub struct LogsMentioning(pub Arc<LokiClient>);

/// Most names looked for, and the fewest characters a name needs (a short one is in
/// every line).
const MAX_NAMES: usize = 3;
const MIN_NAME_CHARS: usize = 3;
/// Alert labels that name an entity other streams may mention.
const ENTITY_LABELS: [&str; 6] = ["pod", "node", "host", "hostname", "nodename", "instance"];
/// Lines read, facts made, characters per quoted line.
const LINES: u32 = 500;
const MAX_FACTS: usize = 2;
const LINE_CHARS: usize = 160;

/// The lines of one other service and host about a name.
struct About {
    name: String,
    grade: Signal,
    first: i64,
    example: String,
}

#[async_trait]
impl Analyzer for LogsMentioning {
    fn name(&self) -> &'static str {
        "logs_mentioning"
    }

    fn reads_around_start(&self) -> bool {
        true
    }

    async fn run(&self, scope: &Scope) -> Result<Vec<Fact>, AnalyzeError> {
        let Some(focus) = &scope.focus else {
            return Ok(Vec::new());
        };
        if focus.is_question() {
            return Ok(Vec::new());
        }
        let Some((label, labels)) = service_label(&self.0, scope).await? else {
            return Ok(Vec::new());
        };
        let host_label = HOST_LABELS
            .into_iter()
            .find(|h| *h != label && labels.iter().any(|x| x == h));
        let (start, end) = super::at_start::range(scope);
        let mut names: BTreeSet<String> = BTreeSet::new();
        if let Some(h) = host_label {
            names.extend(
                self.0
                    .label_values(h, start, end)
                    .await?
                    .into_iter()
                    .filter(|v| focus.names_host(&host_of(v))),
            );
        }
        for key in ENTITY_LABELS {
            if let Some(v) = focus.label(key) {
                names.insert(host_of(v));
            }
        }
        let names: Vec<String> = names
            .into_iter()
            .filter(|n| n.chars().count() >= MIN_NAME_CHARS)
            .take(MAX_NAMES)
            .collect();
        if names.is_empty() || start >= end {
            return Ok(Vec::new());
        }
        let alternatives: Vec<String> = names.iter().map(|n| regex_lite::escape(n)).collect();
        let query = format!(
            "{{{}=~\".+\"}} |~ \"{}\"",
            host_label.unwrap_or(label),
            escape(&alternatives.join("|"))
        );
        let Ok(streams) = self.0.query_logs(&query, start, end, LINES).await else {
            return Ok(Vec::new());
        };
        let mut by: BTreeMap<(String, Option<String>), About> = BTreeMap::new();
        for s in &streams {
            let service = s.labels.get(label).cloned().unwrap_or_default();
            let host = host_label.and_then(|h| s.labels.get(h).cloned());
            for (ns, line, grade) in fold_entries(&s.entries) {
                // The entity's own logs are `logs_at_start`'s.
                let Some(name) = names.iter().find(|n| line.contains(n.as_str())) else {
                    continue;
                };
                if grade == Signal::None
                    || host.as_deref().is_some_and(|h| host_of(h) == *name)
                    || service == *name
                {
                    continue;
                }
                let e = by
                    .entry((service.clone(), host.clone()))
                    .or_insert_with(|| About {
                        name: name.clone(),
                        grade,
                        first: ns,
                        example: line.clone(),
                    });
                // The worst line, the earliest of it.
                if (grade, std::cmp::Reverse(ns)) > (e.grade, std::cmp::Reverse(e.first)) {
                    *e = About {
                        name: name.clone(),
                        grade,
                        first: ns,
                        example: line,
                    };
                }
            }
        }
        let mut found: Vec<((String, Option<String>), About)> = by.into_iter().collect();
        found.sort_by_key(|(_, a)| (std::cmp::Reverse(a.grade), a.first));
        let since = format!("{}m", (scope.now - start).num_minutes().max(1));
        Ok(found
            .into_iter()
            .take(MAX_FACTS)
            .map(|((service, host), a)| {
                let entity = Entity::new("service", service.clone())
                    .on_host(host.clone())
                    .with_labels(BTreeMap::from([(label.to_string(), service)]));
                Fact::new(
                    FactClass::Logs,
                    "logs_mentioning",
                    entity,
                    format!("logged about {}", a.name),
                    match a.grade {
                        Signal::Error => Severity::Warning,
                        _ => Severity::Info,
                    },
                    Source::new("loki_query", json!({"query": query, "since": since})),
                )
                .since(Some(DateTime::from_timestamp_nanos(a.first)))
                .detail(quote_line(&a.example, LINE_CHARS))
                .patterns(vec![line_pattern(&a.example)])
            })
            .collect())
    }
}

#[cfg(test)]
mod tests;
