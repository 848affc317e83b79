//! Rendering: the report as markdown, plain text (the email's text part) or email-safe
//! HTML with PNG charts; the model's markdown narrative is rendered, never shown raw.

pub mod backups;
pub mod block;
pub mod chart;
pub mod document;
pub mod font;
pub mod html;
pub mod hygiene;
pub mod markdown;
pub mod number;
pub mod prose;
pub mod prose_text;
pub mod recurring;
pub mod text;

pub use chart::Chart;
pub use html::ImageRefs;

use super::model::Report;

/// A report rendered for email: text, HTML with `cid:` images, and the images.
pub struct Rendered {
    /// The report as markdown (API and CLI format).
    pub markdown: String,
    /// Plain text: the text part of the email.
    pub text: String,
    pub html: String,
    pub charts: Vec<Chart>,
}

impl Rendered {
    /// The email's HTML part with every `cid:` image replaced by its `data:` URI: what a
    /// browser shows as the mail client would (`sre-agent report preview`, the tests).
    pub fn preview_html(&self) -> String {
        self.charts.iter().fold(self.html.clone(), |html, c| {
            html.replace(
                &format!("src=\"cid:{}\"", c.content_id),
                &format!("src=\"{}\"", html::data_uri(&c.png)),
            )
        })
    }
}

pub fn for_email(report: &Report) -> Rendered {
    let doc = document::build(report);
    Rendered {
        markdown: markdown::render(&doc),
        text: text::render(&doc),
        html: html::render(&doc, ImageRefs::ContentId),
        charts: doc.charts,
    }
}

pub fn to_markdown(report: &Report) -> String {
    markdown::render(&document::build(report))
}

/// A self-contained HTML page (charts as data: URIs).
pub fn to_html(report: &Report) -> String {
    html::render(&document::build(report), ImageRefs::DataUri)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::config::TimeZone;
    use crate::report::model::{
        Availability, Delta, JobErrors, ReportData, ReportStatus, ReportTrigger, Summary, ToolUsage,
    };
    use crate::report::period::{PeriodSpec, ReportWindow};

    pub(super) fn report(summary: &str, data: ReportData) -> Report {
        let now = chrono::DateTime::from_timestamp(1_795_000_000, 0).unwrap();
        Report {
            id: "r".into(),
            trigger: ReportTrigger::Cli,
            window: ReportWindow::resolve(
                PeriodSpec::Last,
                now,
                Duration::from_secs(7 * 86_400),
                chrono_tz::UTC,
            ),
            timezone: TimeZone::default(),
            created_at: now,
            status: ReportStatus::Generated,
            delivery_error: None,
            summary: Summary {
                text: summary.into(),
                model: Some("m".into()),
                fallback_reason: None,
            },
            data,
        }
    }

    #[test]
    fn a_json_summary_renders_as_prose_and_bullets_in_markdown_and_html() {
        let answer = "```json\n{\"summary\": \"A calm week.\", \"actions\": [\"Free space on pve1\", \"Tune <NodeDown>\"]}\n```";
        let r = report(answer, ReportData::default());
        let md = to_markdown(&r);
        assert!(
            md.contains(
                "## Executive summary\n\nA calm week.\n\nWorth acting on:\n\n- Free space on pve1\n- Tune <NodeDown>\n"
            ),
            "{md}"
        );
        let html = to_html(&r);
        assert!(html.contains(">A calm week.</p>"), "{html}");
        assert!(html.contains(">Worth acting on:</p>"), "{html}");
        assert!(
            html.contains(&format!(
                "<li style=\"{item}\">Free space on pve1</li><li style=\"{item}\">Tune &lt;NodeDown&gt;</li></ul>",
                item = prose::ITEM
            )),
            "{html}"
        );
        for text in [&md, &html] {
            assert!(
                !text.contains("```")
                    && !text.contains("summary\"")
                    && !text.contains("summary&quot;")
            );
        }
    }

    #[test]
    fn a_prose_summary_is_kept_as_written() {
        let answer = "The week was mostly calm.\n- DiskFillingUp on pve1 needs space.";
        let md = to_markdown(&report(answer, ReportData::default()));
        assert!(
            md.contains(&format!("## Executive summary\n\n{answer}\n")),
            "{md}"
        );
    }

    /// A number printed as "-0", "-0.0", "-0%" (a minus not inside a word or date).
    fn minus_zero(text: &str) -> Option<String> {
        text.match_indices("-0").find_map(|(i, _)| {
            let before = text[..i].chars().last().unwrap_or(' ');
            let zeros_after = text[i + 1..]
                .chars()
                .take_while(|c| *c == '0' || *c == '.')
                .count();
            let next = text[i + 1 + zeros_after..].chars().next().unwrap_or(' ');
            (!before.is_ascii_alphanumeric() && !next.is_ascii_digit()).then(|| {
                // Up to 30 characters before and 10 after, on character boundaries.
                let before: String = text[..i].chars().rev().take(30).collect();
                let after: String = text[i..].chars().take(10).collect();
                before.chars().rev().chain(after.chars()).collect()
            })
        })
    }

    #[test]
    fn empty_sums_and_negative_zeros_never_print_as_minus_zero() {
        let mut d = ReportData::default();
        d.alerts.data.total_firing_minutes = -0.0;
        d.slos.data.targets = vec![Availability {
            job: "node".into(),
            instance: "a".into(),
            ratio: 1.0,
            downtime_minutes: -0.0,
        }];
        d.agent.data.investigations = -0.0;
        d.agent
            .data
            .by_trigger_status
            .insert("alert/finished".into(), -0.0);
        d.agent.data.tools = vec![ToolUsage {
            tool: "prometheus_query".into(),
            calls: -0.0,
            errors: -0.0,
        }];
        d.cost.data.dollars_total = std::iter::empty::<f64>().sum();
        d.cost.data.tokens.insert("prompt".into(), -0.0);
        d.cost.data.dollars_by_model.insert("m".into(), -0.00001);
        d.logs.data.jobs = vec![JobErrors {
            job: "nas".into(),
            this_week: -0.0,
            last_week: 3.0,
            change_pct: Some(-0.3),
        }];
        d.changes.data.previous_period = Some("2026-W46".into());
        d.changes.data.deltas = vec![Delta {
            metric: "investigations".into(),
            previous: 0.0,
            current: -0.0,
        }];
        d.slos.data.per_day = vec![("Mon 16".into(), 1.0)];
        d.alerts.data.per_day = vec![("Mon 16".into(), 0)];
        let r = report("All quiet.", d);
        let md = to_markdown(&r);
        let html = to_html(&r);
        for text in [&md, &html] {
            assert_eq!(minus_zero(text), None);
        }
        assert!(
            md.contains("0 minutes firing in total") && md.contains("| +0 |"),
            "{md}"
        );
        assert_eq!(
            minus_zero("x -0 y"),
            Some("x -0 y".into()),
            "the check itself works"
        );
        assert_eq!(minus_zero("2026-05-04 and -0.5"), None);
    }

    #[test]
    fn charts_are_images_with_their_values_as_alt_text_and_a_line_in_markdown() {
        let mut d = ReportData::default();
        d.alerts.data.per_day = vec![("Mon 16".into(), 2), ("Tue 17".into(), 0)];
        let r = report("x", d);
        let alt = "Alert episodes per day: Mon 16: 2, Tue 17: 0";
        let html = to_html(&r);
        assert!(
            html.contains(&format!(
                "alt=\"{alt}\" width=\"{}\" height=\"{}\"",
                chart::WIDTH,
                chart::HEIGHT
            )),
            "{html}"
        );
        assert!(html.contains("src=\"data:image/png;base64,"));
        let email = for_email(&r);
        assert!(email.html.contains("src=\"cid:alerts-per-day\""));
        assert_eq!(email.charts.len(), 1);
        assert!(email.markdown.contains(&format!("_{alt}_")));
    }

    #[test]
    fn agent_activity_and_cost_say_what_counted_them() {
        let mut d = ReportData::default();
        d.agent.data.investigations = 2.0;
        d.agent.data.investigations_source = "store".into();
        d.cost.data.source = "prometheus".into();
        let md = to_markdown(&report("x", d.clone()));
        assert!(
            md.contains("2 investigations (counted from the investigations store)."),
            "{md}"
        );
        assert!(
            md.contains(
                "Estimated LLM cost: $0.0000 (counted by sre-agent's Prometheus counters)."
            ),
            "{md}"
        );
        d.agent.data.investigations_source = "prometheus".into();
        let md = to_markdown(&report("x", d));
        assert!(md.contains("2 investigations (counted by sre-agent's Prometheus counters)."));
    }
}

#[cfg(test)]
mod narrative_tests {
    use super::tests::report;
    use super::*;
    use crate::report::model::{HygieneData, HygieneFinding, HygieneIssue, ReportData};

    const ANSWER: &str = "# Weekly summary\n\nA **busy** week: `DiskFillingUp` fired 9 times.\n\n\
                          ## Worth acting on\n\n- Free space on *pve1*\n- <script>alert(1)</script>";

    #[test]
    fn a_markdown_narrative_is_rendered_in_html_and_text_never_shown_raw() {
        let mut d = ReportData::default();
        d.alerts.data.per_day = vec![("Mon 16".into(), 2), ("Tue 17".into(), 0)];
        let email = for_email(&report(ANSWER, d));
        assert!(
            email.html.contains(">Weekly summary</h3>"),
            "{}",
            email.html
        );
        assert!(email.html.contains("A <strong>busy</strong> week"));
        assert!(email.html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
        assert!(!email.html.contains("<script"));
        for part in [&email.html, &email.text] {
            assert!(!part.contains("**") && !part.contains("# Weekly"), "{part}");
            assert!(part.lines().all(|l| !l.trim_start().starts_with('#')));
        }
        assert!(
            email.text.contains("Weekly summary\n~~~~~~~~~~~~~~"),
            "{}",
            email.text
        );
        assert!(email.text.contains("- Free space on pve1\n"));
        // The markdown format keeps the model's markdown as written.
        assert!(email.markdown.contains(ANSWER));
    }

    #[test]
    fn the_preview_has_every_cid_image_as_a_data_uri() {
        let mut d = ReportData::default();
        d.alerts.data.per_day = vec![("Mon 16".into(), 2)];
        d.slos.data.per_day = vec![("Mon 16".into(), 0.99)];
        let email = for_email(&report("x", d));
        assert_eq!(email.charts.len(), 2);
        for c in &email.charts {
            assert!(
                email
                    .html
                    .contains(&format!("src=\"cid:{}\"", c.content_id))
            );
        }
        let preview = email.preview_html();
        assert!(!preview.contains("cid:"));
        assert_eq!(preview.matches("src=\"data:image/png;base64,").count(), 2);
    }

    #[test]
    fn the_hygiene_section_lists_each_rule_with_its_suggestion() {
        let mut d = ReportData::default();
        d.hygiene.data = HygieneData {
            rules_checked: 4,
            rules_fired: 2,
            findings: vec![HygieneFinding {
                alertname: "CpuHigh".into(),
                issue: HygieneIssue::Flapping,
                evidence: "9 of 10 episodes on a:9100 were shorter than 10m (median 2m)".into(),
                suggestion:
                    "Raise for: from 1m to 5m: it would have held back 9 of these 9 short episodes."
                        .into(),
            }],
            omitted: 0,
        };
        let r = report("x", d);
        let html = to_html(&r);
        assert!(html.contains(">Alert hygiene</h2>"));
        assert!(html.contains(">CpuHigh</td>") && html.contains(">flapping</td>"));
        assert!(html.contains("Raise for: from 1m to 5m"));
        let text = for_email(&r).text;
        assert!(text.contains("Alert hygiene\n-------------"), "{text}");
        assert!(text.contains("CpuHigh  flapping"), "{text}");
        let empty = to_markdown(&report("x", ReportData::default()));
        assert!(
            empty.contains("## Alert hygiene\n\nNo rule flapped"),
            "{empty}"
        );
    }
}
