//! Building the report's [`Document`] once from the data, section by section; the
//! markdown, text and HTML writers all render it.
//!
//! The report is the list [`SECTIONS`]: a section is a function that appends its heading,
//! notes and blocks. Adding one is a function (here or in its own file, like `hygiene`)
//! and a line in that list.

use super::block::{Block, Document};
use super::chart;
use super::number::fixed;
use crate::report::model::Report;
use crate::report::narrative::Narrative;

fn pct(v: f64) -> String {
    format!("{}%", fixed(v * 100.0, 3))
}

/// Appends one section of `r` to the document.
pub type SectionWriter = fn(&Report, &mut Document);

/// The sections of the report, in order.
pub const SECTIONS: &[SectionWriter] = &[
    executive_summary,
    alerts,
    super::hygiene::section,
    slos,
    agent,
    cost,
    logs,
    backups,
    recurring,
    changes,
];

pub fn build(r: &Report) -> Document {
    let mut doc = Document::new(r.title());
    for section in SECTIONS {
        section(r, &mut doc);
    }
    doc
}

/// The model's markdown (or the automatic summary), or a JSON answer read into prose
/// and a list of actions.
fn executive_summary(r: &Report, d: &mut Document) {
    d.push(Block::Heading("Executive summary".into()));
    if let Some(reason) = &r.summary.fallback_reason {
        d.push(Block::Note(format!(
            "LLM unavailable: {reason} — automatic summary"
        )));
    }
    match Narrative::from_answer(&r.summary.text) {
        Some(n) => {
            // One markdown text: the prose, then the actions as a list.
            let mut md = n.summary;
            if !n.actions.is_empty() {
                if !md.is_empty() {
                    md.push_str("\n\n");
                }
                md.push_str("Worth acting on:\n");
                for a in &n.actions {
                    md.push_str(&format!("\n- {}", a.replace('\n', " ")));
                }
            }
            d.push(Block::Markdown(md));
        }
        None => d.push(Block::Markdown(r.summary.text.clone())),
    }
}

fn alerts(r: &Report, d: &mut Document) {
    let data = &r.data;
    d.push(Block::Heading("Alerts".into()));
    d.notes(&data.alerts);
    let a = &data.alerts.data;
    d.push(Block::Para(format!(
        "{} firing episodes, {} minutes firing in total.",
        a.total_episodes,
        fixed(a.total_firing_minutes, 0)
    )));
    if !a.alerts.is_empty() {
        d.push(Block::Table(
            vec!["Alert", "Severity", "Episodes", "Firing (min)", "Instances"],
            a.alerts
                .iter()
                .map(|x| {
                    vec![
                        x.alertname.clone(),
                        x.severity.clone(),
                        x.episodes.to_string(),
                        fixed(x.firing_minutes, 0),
                        x.instances.join(", "),
                    ]
                })
                .collect(),
        ));
    }
    if !a.per_day.is_empty() {
        d.chart(chart::alerts_per_day(&a.per_day));
    }
    if let Some(g) = &a.grafana {
        d.push(Block::Para(format!(
            "Grafana: {} alert rules, {} firing now{}, {} state changes this week.",
            g.rules,
            g.firing_now.len(),
            if g.firing_now.is_empty() {
                String::new()
            } else {
                format!(" ({})", g.firing_now.join(", "))
            },
            g.state_changes
        )));
    }
}

fn slos(r: &Report, d: &mut Document) {
    let data = &r.data;
    d.push(Block::Heading("SLO status".into()));
    d.notes(&data.slos);
    let s = &data.slos.data;
    if !s.slos.is_empty() {
        d.push(Block::Table(
            vec![
                "SLO",
                "Objective",
                "Achieved",
                "Status",
                "Error budget left",
            ],
            s.slos
                .iter()
                .map(|x| {
                    vec![
                        x.name.clone(),
                        pct(x.objective),
                        x.achieved.map_or("no data".into(), pct),
                        match x.met {
                            Some(true) => "met".into(),
                            Some(false) => "missed".into(),
                            None => "unknown".into(),
                        },
                        x.budget_left
                            .map_or("–".into(), |v| format!("{}%", fixed(v * 100.0, 1))),
                    ]
                })
                .collect(),
        ));
    }
    for (title, rows) in [("Probes", &s.probes), ("Scrape targets", &s.targets)] {
        if rows.is_empty() {
            continue;
        }
        d.push(Block::Para(format!("{title}:")));
        d.push(Block::Table(
            vec!["Job", "Instance", "Availability", "Down (min)"],
            rows.iter()
                .map(|x| {
                    vec![
                        x.job.clone(),
                        x.instance.clone(),
                        pct(x.ratio),
                        fixed(x.downtime_minutes, 0),
                    ]
                })
                .collect(),
        ));
    }
    if !s.per_day.is_empty() {
        d.chart(chart::availability_per_day(&s.per_day));
    }
}

fn agent(r: &Report, d: &mut Document) {
    let data = &r.data;
    d.push(Block::Heading("Agent activity and tool usage".into()));
    d.notes(&data.agent);
    let ag = &data.agent.data;
    d.push(Block::Para(format!(
        "{} investigations{}.",
        fixed(ag.investigations, 0),
        counted_by(&ag.investigations_source)
    )));
    if !ag.by_trigger_status.is_empty() {
        d.push(Block::List(
            ag.by_trigger_status
                .iter()
                .map(|(k, v)| format!("{k}: {}", fixed(*v, 0)))
                .collect(),
        ));
    }
    if !ag.top_findings.is_empty() {
        d.push(Block::List(ag.top_findings.clone()));
    }
    if !ag.tools.is_empty() {
        d.push(Block::Table(
            vec!["Tool", "Calls", "Errors"],
            ag.tools
                .iter()
                .map(|t| vec![t.tool.clone(), fixed(t.calls, 0), fixed(t.errors, 0)])
                .collect(),
        ));
    }
}

fn cost(r: &Report, d: &mut Document) {
    let data = &r.data;
    d.push(Block::Heading("Cost and tokens".into()));
    d.notes(&data.cost);
    let c = &data.cost.data;
    d.push(Block::Para(format!(
        "Estimated LLM cost: ${}{}.",
        fixed(c.dollars_total, 4),
        counted_by(&c.source)
    )));
    let mut rows: Vec<Vec<String>> = c
        .tokens
        .iter()
        .map(|(k, v)| vec![format!("{k} tokens"), fixed(*v, 0)])
        .collect();
    rows.extend(
        c.dollars_by_model
            .iter()
            .map(|(m, v)| vec![format!("{m} (USD)"), fixed(*v, 4)]),
    );
    if !rows.is_empty() {
        d.push(Block::Table(vec!["Item", "Value"], rows));
    }
}

fn logs(r: &Report, d: &mut Document) {
    let data = &r.data;
    d.push(Block::Heading("Log errors".into()));
    d.notes(&data.logs);
    let l = &data.logs.data;
    if !l.jobs.is_empty() {
        d.push(Block::Table(
            vec!["Job", "Error lines", "Week before", "Change"],
            l.jobs
                .iter()
                .map(|j| {
                    vec![
                        j.job.clone(),
                        fixed(j.this_week, 0),
                        fixed(j.last_week, 0),
                        j.change_pct
                            .map_or("new".into(), |p| format!("{}%", signed(p, 0))),
                    ]
                })
                .collect(),
        ));
    }
    if !l.patterns.is_empty() {
        d.push(Block::Para(format!(
            "Top patterns in {} sampled lines:",
            l.sampled_lines
        )));
        d.push(Block::Table(
            vec!["Count", "Pattern"],
            l.patterns
                .iter()
                .map(|p| vec![p.count.to_string(), p.pattern.clone()])
                .collect(),
        ));
    }
}

fn backups(r: &Report, d: &mut Document) {
    if let Some(h) = &r.data.backups {
        super::backups::blocks(&mut d.blocks, h);
    }
}

/// Recurring incidents and feedback counts (incident memory).
fn recurring(r: &Report, d: &mut Document) {
    super::recurring::blocks(&mut d.blocks, &r.data.memory);
}

fn changes(r: &Report, d: &mut Document) {
    let data = &r.data;
    d.push(Block::Heading("Changes since last week".into()));
    d.notes(&data.changes);
    let ch = &data.changes.data;
    match &ch.previous_period {
        None => d.push(Block::Para("No earlier report to compare with.".into())),
        Some(p) => {
            d.push(Block::Para(format!("Compared with the report for {p}:")));
            d.push(Block::Table(
                vec!["Metric", "Previous report", "This report", "Change"],
                ch.deltas
                    .iter()
                    .map(|x| {
                        vec![
                            x.metric.clone(),
                            num(x.previous),
                            num(x.current),
                            signed(x.current - x.previous, decimals(x.current - x.previous)),
                        ]
                    })
                    .collect(),
            ));
        }
    }
}

/// Where a count came from, as the end of a sentence.
fn counted_by(source: &str) -> &'static str {
    match source {
        "prometheus" => " (counted by sre-agent's Prometheus counters)",
        "store" => " (counted from the investigations store)",
        _ => "",
    }
}

/// `v` with a `+` or `-` sign; `+0` when it rounds to zero.
fn signed(v: f64, decimals: usize) -> String {
    let text = fixed(v, decimals);
    if text.starts_with('-') {
        text
    } else {
        format!("+{text}")
    }
}

/// Whole numbers without decimals, others with four.
fn decimals(v: f64) -> usize {
    if v.fract() == 0.0 { 0 } else { 4 }
}

fn num(v: f64) -> String {
    fixed(v, decimals(v))
}
