//! The "Alert hygiene" section: rules that flapped, fired for days, never resolved or
//! have no `severity` label, each with the change to make.

use super::block::{Block, Document};
use crate::report::collect::hygiene::{FIRED_FOR_DAYS, FLAP_MIN_SHORT_EPISODES, FLAP_SHORT, human};
use crate::report::model::Report;

pub fn section(r: &Report, d: &mut Document) {
    let s = &r.data.hygiene;
    d.push(Block::Heading("Alert hygiene".into()));
    d.notes(s);
    let h = &s.data;
    let checked = match h.rules_checked {
        0 => String::new(),
        n => format!(" ({n} alerting rules checked)"),
    };
    if h.findings.is_empty() {
        d.push(Block::Para(format!(
            "No rule flapped, fired for days, stayed unresolved or lacks a severity label{checked}."
        )));
        return;
    }
    d.push(Block::Para(format!(
        "Rules worth tuning{checked}: flapping means at least {FLAP_MIN_SHORT_EPISODES} \
         episodes under {} on one series; fired for days means one episode of {} or more.",
        human(FLAP_SHORT.as_secs_f64()),
        human(FIRED_FOR_DAYS.as_secs_f64()),
    )));
    d.push(Block::Table(
        vec!["Rule", "Problem", "What happened", "Suggestion"],
        h.findings
            .iter()
            .map(|f| {
                vec![
                    f.alertname.clone(),
                    f.issue.as_str().to_string(),
                    f.evidence.clone(),
                    f.suggestion.clone(),
                ]
            })
            .collect(),
    ));
    if h.omitted > 0 {
        d.push(Block::Para(format!(
            "{} more findings left out.",
            h.omitted
        )));
    }
}
