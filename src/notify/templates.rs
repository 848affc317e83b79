//! Rendering a finished investigation for humans: email (text + escaped HTML), chat
//! markdown (Slack/Mattermost/Discord, escaped per service in `webhook.rs`) and ntfy
//! (markdown + Title/Priority/Tags). Alert data is untrusted: it is escaped in HTML and
//! never interpreted, and its links are kept only when they are web URLs (`safe_url`).

use std::fmt::Write;

use super::markup::{markdown_url, safe_url};
use crate::agent::Investigation;
use crate::alerts::Alert;
use crate::text::{escape_html, truncate};

/// What a notification is about.
pub struct Subject<'a> {
    pub inv: &'a Investigation,
    /// The group's latest alert, when the investigation came from one.
    pub alert: Option<&'a Alert>,
    /// `server.public_url`: links to the investigation's console page and its feedback.
    pub public_url: Option<&'a str>,
}

impl Subject<'_> {
    pub fn severity(&self) -> &str {
        self.inv
            .finding
            .as_ref()
            .map(|f| f.severity.as_str())
            .filter(|s| !s.is_empty())
            .or_else(|| {
                self.alert
                    .and_then(|a| a.labels.get("severity"))
                    .map(String::as_str)
            })
            .unwrap_or("info")
    }

    pub fn summary(&self) -> String {
        match (&self.inv.finding, &self.inv.error) {
            (Some(f), _) if !f.summary.trim().is_empty() => first_line(&f.summary),
            (_, Some(e)) => format!("investigation {}: {e}", self.inv.status.as_str()),
            _ => format!("investigation {}", self.inv.status.as_str()),
        }
    }

    /// "[sre-agent] HighErrorRate (job=checkout): 5xx from a bad deploy".
    pub fn title(&self) -> String {
        truncate(
            &format!("[sre-agent] {}: {}", self.inv.title, self.summary()),
            200,
        )
    }

    /// The investigation's page in the console (`<public_url>/investigations/<id>`).
    pub fn investigation_url(&self) -> Option<String> {
        self.public_url.map(|base| {
            format!(
                "{}/investigations/{}",
                base.trim_end_matches('/'),
                self.inv.id
            )
        })
    }

    /// The investigation's feedback endpoint in the API
    /// (`<public_url>/api/v1/investigations/<id>/feedback`).
    fn feedback_api_url(&self) -> Option<String> {
        self.public_url.map(|base| {
            format!(
                "{}/api/v1/investigations/{}/feedback",
                base.trim_end_matches('/'),
                self.inv.id
            )
        })
    }

    /// How to say whether the finding was right: the CLI command, and the page's form and
    /// the API call when the daemon's address is known.
    pub fn feedback_hint(&self) -> String {
        let cli = format!(
            "sre-agent investigations feedback {} right|wrong --note \"…\"",
            self.inv.id
        );
        match (self.investigation_url(), self.feedback_api_url()) {
            (Some(page), Some(api)) => format!(
                "Was this right? Say so on {page}#feedback, with `{cli}`, or POST {{\"verdict\": \"right\"|\"wrong\", \"note\": \"…\"}} to {api}"
            ),
            _ => format!("Was this right? `{cli}`"),
        }
    }

    fn links(&self) -> Vec<(&'static str, String)> {
        let mut links: Vec<(&'static str, String)> = self
            .investigation_url()
            .map(|u| ("Investigation", u))
            .into_iter()
            .collect();
        let Some(a) = self.alert else {
            return links;
        };
        links.extend(
            [
                ("Alert rule", &a.generator_url),
                ("Dashboard", &a.dashboard_url),
                ("Panel", &a.panel_url),
                ("Silence", &a.silence_url),
            ]
            .into_iter()
            .filter_map(|(name, url)| {
                let url = url.as_deref().and_then(safe_url)?;
                Some((name, url.trim().to_string()))
            }),
        );
        links
    }

    /// Markdown: the finding (or the error), the alert, links, the investigation id.
    pub fn markdown(&self) -> String {
        let mut md = format!("# {}\n\n", self.inv.title);
        match &self.inv.finding {
            Some(f) => md.push_str(&f.to_markdown()),
            None => {
                let _ = writeln!(md, "Investigation {}.", self.inv.status.as_str());
                if let Some(e) = &self.inv.error {
                    let _ = writeln!(md, "\nError: {e}");
                }
            }
        }
        if let Some(a) = self.alert {
            let _ = write!(md, "\n## Alert\n\n**{}** ({:?})", a.name, a.status);
            if let Some(v) = &a.value {
                let _ = write!(md, " — value {v}");
            }
            md.push('\n');
            for (k, v) in &a.labels {
                let _ = writeln!(md, "- {k} = {v}");
            }
            if let Some(s) = a.annotations.get("summary") {
                let _ = writeln!(md, "\n{s}");
            }
        }
        let links = self.links();
        if !links.is_empty() {
            md.push_str("\n## Links\n\n");
            for (name, url) in links {
                let _ = writeln!(md, "- [{name}]({})", markdown_url(&url));
            }
        }
        if !self.inv.notes.is_empty() {
            md.push_str("\n## Notes\n\n");
            for n in &self.inv.notes {
                let _ = writeln!(md, "- {n}");
            }
        }
        if self.inv.finding.is_some() {
            let _ = writeln!(md, "\n{}", self.feedback_hint());
        }
        let _ = write!(
            md,
            "\nInvestigation {} · {} · ${:.4}\n",
            self.inv.id,
            self.inv.status.as_str(),
            self.inv.cost_usd
        );
        md
    }

    /// HTML for email: escaped text, lists and links back to Grafana.
    pub fn html(&self) -> String {
        let mut h = String::from(
            "<!doctype html><html><body style=\"font-family:sans-serif;max-width:760px\">",
        );
        let _ = write!(h, "<h2>{}</h2>", escape_html(&self.inv.title));
        match &self.inv.finding {
            Some(f) => {
                let _ = write!(h, "<p><b>{}</b></p>", escape_html(&f.summary));
                if !f.probable_cause.is_empty() {
                    let _ = write!(
                        h,
                        "<p><b>Probable cause:</b> {}</p>",
                        escape_html(&f.probable_cause)
                    );
                }
                let _ = write!(
                    h,
                    "<p>Severity: {} · Confidence: {}</p>",
                    escape_html(&f.severity),
                    escape_html(&f.confidence)
                );
                if let Some(r) = &f.recurrence {
                    let _ = write!(
                        h,
                        "<p><b>Recurrence:</b> {}</p>",
                        escape_html(&r.describe())
                    );
                }
                list(
                    &mut h,
                    "Evidence",
                    f.evidence.iter().map(|e| e.claim.as_str()),
                );
                list(
                    &mut h,
                    "Next steps",
                    f.next_steps.iter().map(String::as_str),
                );
            }
            None => {
                let _ = write!(h, "<p>{}</p>", escape_html(&self.summary()));
            }
        }
        if let Some(a) = self.alert {
            let _ = write!(h, "<h3>Alert: {}</h3><table>", escape_html(&a.name));
            for (k, v) in &a.labels {
                let _ = write!(
                    h,
                    "<tr><td>{}</td><td>{}</td></tr>",
                    escape_html(k),
                    escape_html(v)
                );
            }
            h.push_str("</table>");
        }
        let links = self.links();
        if !links.is_empty() {
            h.push_str("<p>");
            for (name, url) in links {
                let _ = write!(h, "<a href=\"{}\">{}</a> ", escape_html(&url), name);
            }
            h.push_str("</p>");
        }
        if self.inv.finding.is_some() {
            let _ = write!(
                h,
                "<p style=\"color:#666\">{}</p>",
                escape_html(&self.feedback_hint().replace('`', ""))
            );
        }
        let _ = write!(
            h,
            "<p style=\"color:#666\">Investigation {} · {}</p></body></html>",
            escape_html(&self.inv.id),
            self.inv.status.as_str()
        );
        h
    }

    /// ntfy priority 1–5 from the severity.
    pub fn ntfy_priority(&self) -> &'static str {
        match self.severity().to_ascii_lowercase().as_str() {
            "critical" | "page" => "5",
            "warning" | "high" => "4",
            _ => "3",
        }
    }

    pub fn ntfy_tags(&self) -> String {
        let icon = match self.ntfy_priority() {
            "5" => "rotating_light",
            "4" => "warning",
            _ => "mag",
        };
        format!("{icon},sre-agent,{}", self.inv.status.as_str())
    }
}

fn list<'a>(h: &mut String, title: &str, items: impl Iterator<Item = &'a str>) {
    let items: Vec<_> = items.filter(|i| !i.trim().is_empty()).collect();
    if items.is_empty() {
        return;
    }
    let _ = write!(h, "<h3>{title}</h3><ul>");
    for i in items {
        let _ = write!(h, "<li>{}</li>", escape_html(i));
    }
    h.push_str("</ul>");
}

fn first_line(s: &str) -> String {
    truncate(s.trim().lines().next().unwrap_or(""), 160)
}
