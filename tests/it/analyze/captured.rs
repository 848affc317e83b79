//! Series of a captured exporter `/metrics` (tests/fixtures/exporters/*.prom) for a world:
//! every sample of the capture, with labels added (the instance and job Prometheus would
//! attach), held over the times a test chooses. Switching a target from one capture to
//! another at a time is how an incident is written (a probe answering 200, then 502).

use std::collections::BTreeMap;
use std::path::Path;
use std::rc::Rc;

use super::world::{SeriesDef, series};

/// One sample of a capture: name, labels, value.
pub type Sample = (String, BTreeMap<String, String>, f64);

/// When a phase holds, as a function of seconds before now.
pub type When = Box<dyn Fn(i64) -> bool>;

/// A phase: when it holds and the capture's values by (name, labels as JSON).
type Phase = (When, BTreeMap<(String, String), f64>);

/// The samples of tests/fixtures/exporters/`file`.
pub fn capture(file: &str) -> Vec<Sample> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/exporters")
        .join(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| parse_line(l).unwrap_or_else(|| panic!("{file}: cannot read {l:?}")))
        .collect()
}

/// `name{k="v",…} value [timestamp]`.
fn parse_line(line: &str) -> Option<Sample> {
    let (name, rest) = match line.find(['{', ' ']) {
        Some(i) => line.split_at(i),
        None => return None,
    };
    let mut labels = BTreeMap::new();
    let mut rest = rest;
    if let Some(mut inner) = rest.strip_prefix('{') {
        loop {
            inner = inner.trim_start_matches([',', ' ']);
            if let Some(after) = inner.strip_prefix('}') {
                rest = after;
                break;
            }
            let (key, after) = inner.split_once("=\"")?;
            let mut value = String::new();
            let mut chars = after.char_indices();
            let end = loop {
                let (i, c) = chars.next()?;
                match c {
                    '\\' => match chars.next()?.1 {
                        'n' => value.push('\n'),
                        c => value.push(c),
                    },
                    '"' => break i,
                    c => value.push(c),
                }
            };
            labels.insert(key.trim().to_string(), value);
            inner = &after[end + 1..];
        }
    }
    let value = rest.split_whitespace().next()?;
    let value = match value {
        "+Inf" => f64::INFINITY,
        "-Inf" => f64::NEG_INFINITY,
        v => v.parse().ok()?,
    };
    Some((name.to_string(), labels, value))
}

/// A target whose scrape returns the capture `phases[i].1` while `phases[i].0(ago)` holds
/// (the first phase that holds wins; none: no sample), with `extra` labels on each series.
pub fn target(extra: &[(&str, &str)], phases: Vec<(When, &str)>) -> Vec<SeriesDef> {
    let phases: Rc<Vec<Phase>> = Rc::new(
        phases
            .into_iter()
            .map(|(when, file)| {
                let values = capture(file)
                    .into_iter()
                    .map(|(name, labels, v)| ((name, key(&labels)), v))
                    .collect();
                (when, values)
            })
            .collect(),
    );
    let mut all: BTreeMap<(String, String), BTreeMap<String, String>> = BTreeMap::new();
    for (_, values) in phases.iter() {
        for (name, labels_key) in values.keys() {
            all.entry((name.clone(), labels_key.clone()))
                .or_insert_with(|| {
                    let mut l: BTreeMap<String, String> = serde_json::from_str(labels_key).unwrap();
                    for (k, v) in extra {
                        l.insert(k.to_string(), v.to_string());
                    }
                    l
                });
        }
    }
    all.into_iter()
        .map(|(id, labels)| {
            let phases = phases.clone();
            let pairs: Vec<(&str, &str)> = labels
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str()))
                .collect();
            let name = id.0.clone();
            series(&name, &pairs, move |ago| {
                let (_, values) = phases.iter().find(|(when, _)| when(ago))?;
                values.get(&id).copied().filter(|v| v.is_finite())
            })
        })
        .collect()
}

fn key(labels: &BTreeMap<String, String>) -> String {
    serde_json::to_string(labels).unwrap()
}
