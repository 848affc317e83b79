//! Building the report's [`Document`] once from the data, section by section; the
//! markdown and the HTML writers both render it.

use super::block::{Block, Document};
use super::chart;
use super::number::fixed;
use crate::report::model::{Report, Section};
use crate::report::narrative::Narrative;

fn pct(v: f64) -> String {
    format!("{}%", fixed(v * 100.0, 3))
}

fn notes<T>(blocks: &mut Vec<Block>, s: &Section<T>) {
    blocks.extend(s.notes.iter().map(|n| Block::Note(n.clone())));
}

pub fn build(r: &Report) -> Document {
    let d = &r.data;
    let mut b = Vec::new();
    let mut charts = Vec::new();

    b.push(Block::Heading("Executive summary".into()));
    if let Some(reason) = &r.summary.fallback_reason {
        b.push(Block::Note(format!(
            "LLM unavailable: {reason} — automatic summary"
        )));
    }
    match Narrative::from_answer(&r.summary.text) {
        Some(n) => {
            if !n.summary.is_empty() {
                b.push(Block::Para(n.summary));
            }
            if !n.actions.is_empty() {
                b.push(Block::Para("Worth acting on:".into()));
                b.push(Block::List(n.actions));
            }
        }
        None => b.push(Block::Para(r.summary.text.clone())),
    }

    b.push(Block::Heading("Alerts".into()));
    notes(&mut b, &d.alerts);
    let a = &d.alerts.data;
    b.push(Block::Para(format!(
        "{} firing episodes, {} minutes firing in total.",
        a.total_episodes,
        fixed(a.total_firing_minutes, 0)
    )));
    if !a.alerts.is_empty() {
        b.push(Block::Table(
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
        charts.push(chart::alerts_per_day(&a.per_day));
        b.push(Block::Chart(charts.len() - 1));
    }
    if let Some(g) = &a.grafana {
        b.push(Block::Para(format!(
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

    b.push(Block::Heading("SLO status".into()));
    notes(&mut b, &d.slos);
    let s = &d.slos.data;
    if !s.slos.is_empty() {
        b.push(Block::Table(
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
        b.push(Block::Para(format!("{title}:")));
        b.push(Block::Table(
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
        charts.push(chart::availability_per_day(&s.per_day));
        b.push(Block::Chart(charts.len() - 1));
    }

    b.push(Block::Heading("Agent activity and tool usage".into()));
    notes(&mut b, &d.agent);
    let ag = &d.agent.data;
    b.push(Block::Para(format!(
        "{} investigations{}.",
        fixed(ag.investigations, 0),
        counted_by(&ag.investigations_source)
    )));
    if !ag.by_trigger_status.is_empty() {
        b.push(Block::List(
            ag.by_trigger_status
                .iter()
                .map(|(k, v)| format!("{k}: {}", fixed(*v, 0)))
                .collect(),
        ));
    }
    if !ag.top_findings.is_empty() {
        b.push(Block::List(ag.top_findings.clone()));
    }
    if !ag.tools.is_empty() {
        b.push(Block::Table(
            vec!["Tool", "Calls", "Errors"],
            ag.tools
                .iter()
                .map(|t| vec![t.tool.clone(), fixed(t.calls, 0), fixed(t.errors, 0)])
                .collect(),
        ));
    }

    b.push(Block::Heading("Cost and tokens".into()));
    notes(&mut b, &d.cost);
    let c = &d.cost.data;
    b.push(Block::Para(format!(
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
        b.push(Block::Table(vec!["Item", "Value"], rows));
    }

    b.push(Block::Heading("Log errors".into()));
    notes(&mut b, &d.logs);
    let l = &d.logs.data;
    if !l.jobs.is_empty() {
        b.push(Block::Table(
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
        b.push(Block::Para(format!(
            "Top patterns in {} sampled lines:",
            l.sampled_lines
        )));
        b.push(Block::Table(
            vec!["Count", "Pattern"],
            l.patterns
                .iter()
                .map(|p| vec![p.count.to_string(), p.pattern.clone()])
                .collect(),
        ));
    }

    if let Some(h) = &d.homelab {
        super::backups::blocks(&mut b, h);
    }
    super::recurring::blocks(&mut b, &d.memory);

    b.push(Block::Heading("Changes since last week".into()));
    notes(&mut b, &d.changes);
    let ch = &d.changes.data;
    match &ch.previous_period {
        None => b.push(Block::Para("No earlier report to compare with.".into())),
        Some(p) => {
            b.push(Block::Para(format!("Compared with the report for {p}:")));
            b.push(Block::Table(
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
    Document {
        title: r.title(),
        blocks: b,
        charts,
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
