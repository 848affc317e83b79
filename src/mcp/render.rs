//! Investigations as text for MCP clients. What comes from upstream or from the model that
//! read it (titles, findings, the timeline's tool arguments) is inside the `<data>` fence;
//! the record's own fields (id, status, counts) are outside it. Each text is bounded.

use crate::api::{InvestigationDetail, InvestigationPage};
use crate::text::{fence, truncate};

/// Timeline lines shown at most; the rest is counted.
const MAX_TIMELINE: usize = 40;
/// Longest text of one answer.
pub const MAX_ANSWER_CHARS: usize = 20_000;

/// `investigation`: status, finding with its key figures, and a timeline summary.
pub fn detail(d: &InvestigationDetail) -> String {
    let inv = &d.investigation;
    let mut out = format!(
        "investigation {}\nstatus: {} · trigger: {} · created: {} · {} steps · {} tokens · ${:.4}\n",
        inv.id,
        inv.status.as_str(),
        inv.trigger.label(),
        inv.created_at.to_rfc3339(),
        inv.steps,
        inv.tokens.total(),
        inv.cost_usd,
    );
    if let Some(p) = &inv.parent_id {
        out.push_str(&format!("follows up: {p}\n"));
    }
    if !inv.status.is_final() {
        out.push_str("It has not ended yet: call `investigation` again for its finding.\n");
    }
    let mut body = format!("# {}\n\n", inv.title);
    match &inv.finding {
        Some(f) => body.push_str(&f.to_markdown()),
        None => body.push_str("(no finding yet)\n"),
    }
    if let Some(e) = &inv.error {
        body.push_str(&format!("\nError: {e}\n"));
    }
    for n in &inv.notes {
        body.push_str(&format!("\nNote: {n}\n"));
    }
    body.push_str(&format!("\n## Timeline ({} events)\n\n", d.events.len()));
    for e in d.events.iter().take(MAX_TIMELINE) {
        body.push_str(&format!(
            "- {} {}\n",
            e.at.format("%H:%M:%S"),
            truncate(&e.describe(), 300)
        ));
    }
    if d.events.len() > MAX_TIMELINE {
        body.push_str(&format!(
            "- … and {} more events\n",
            d.events.len() - MAX_TIMELINE
        ));
    }
    out.push_str(&fence("investigation", &truncate(&body, MAX_ANSWER_CHARS)));
    out
}

/// `investigations`: one line each, newest first.
pub fn list(page: &InvestigationPage) -> String {
    if page.items.is_empty() {
        return "no investigations".into();
    }
    let mut ids = String::new();
    let mut titles = String::new();
    for i in &page.items {
        ids.push_str(&format!(
            "{} {} {} {}\n",
            i.id,
            i.status.as_str(),
            i.trigger.label(),
            i.created_at.format("%Y-%m-%dT%H:%M:%SZ"),
        ));
        titles.push_str(&format!("{}: {}\n", i.id, truncate(&i.title, 120)));
    }
    format!(
        "{} investigations (id status trigger created), newest first:\n{ids}Their titles:\n{}",
        page.items.len(),
        fence("investigations", &truncate(&titles, MAX_ANSWER_CHARS))
    )
}

/// The `findings/recent` resource: the ended investigations' findings, newest first.
pub fn findings(page: &InvestigationPage) -> String {
    let mut body = String::new();
    for i in page.items.iter().filter(|i| i.finding.is_some()) {
        let summary = i.finding.as_ref().map_or("", |f| f.summary.as_str());
        body.push_str(&format!(
            "- {} ({}, {}): {} — {}\n",
            i.id,
            i.status.as_str(),
            i.created_at.format("%Y-%m-%d %H:%M UTC"),
            truncate(&i.title, 120),
            truncate(summary, 400)
        ));
    }
    if body.is_empty() {
        return "no findings yet".into();
    }
    format!(
        "Recent findings, newest first (read one with the `investigation` tool):\n{}",
        fence("findings", &truncate(&body, MAX_ANSWER_CHARS))
    )
}
