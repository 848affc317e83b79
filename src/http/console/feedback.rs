//! What people and memory say about a finding, on its timeline: the recurrence (seen
//! before, when, which investigation, its verdict), the verdict a person gave, and the
//! feedback form, `POST /investigations/{id}/feedback`, which stores it like the API does
//! (`POST /api/v1/investigations/{id}/feedback`) and goes back to the timeline.

use axum::Extension;
use axum::extract::{Form, Path, State};
use axum::http::header::LOCATION;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use maud::{Markup, html};
use serde::Deserialize;

use super::login::csrf_refused;
use super::page::{Csrf, PageError, time};
use crate::agent::memory::MAX_FEEDBACK_NOTE_CHARS;
use crate::agent::{Feedback, Investigation, Recurrence, Verdict};
use crate::app::AppState;
use crate::http::investigations::give_feedback;
use crate::http::session::ConsoleKeys;

#[derive(Deserialize)]
pub struct FeedbackForm {
    #[serde(default)]
    verdict: Option<String>,
    #[serde(default)]
    note: Option<String>,
    #[serde(rename = "_csrf", default)]
    csrf: String,
}

/// Stores the verdict of the form (CSRF-checked) and sends the browser back to the page.
pub async fn submit(
    State(state): State<AppState>,
    Extension(keys): Extension<ConsoleKeys>,
    Path(id): Path<String>,
    headers: HeaderMap,
    Form(f): Form<FeedbackForm>,
) -> Result<Response, PageError> {
    if !keys.csrf_ok(&headers, &f.csrf) {
        return Err(csrf_refused());
    }
    give_feedback(&state, &id, f.verdict.as_deref(), f.note.as_deref()).await?;
    Ok((
        StatusCode::SEE_OTHER,
        [(LOCATION, format!("/investigations/{id}#feedback"))],
    )
        .into_response())
}

/// "Seen N times before": the recurrence memory set on a finding.
pub fn recurrence(r: &Recurrence) -> Markup {
    let times = if r.count == 1 { "time" } else { "times" };
    html! {
        section.recurrence id="recurrence" aria-labelledby="recurrence-h" {
            h3 id="recurrence-h" { "Seen before" }
            dl.facts {
                dt { "Seen" } dd {
                    (r.count) " " (times) " before"
                    @if r.similar > 0 { " (" (r.similar) " of a similar alert)" }
                }
                dt { "Last seen" } dd { (time(r.last_seen)) }
                dt { "Last investigation" } dd {
                    a href={ "/investigations/" (r.last_investigation) } { code { (r.last_investigation) } }
                }
                dt { "Its verdict" } dd {
                    @match r.last_verdict {
                        Some(v) => { (verdict_badge(v)) " (given by a person)" }
                        None => { "none given" }
                    }
                }
            }
        }
    }
}

/// The verdict given on `inv` and, once it has ended, the form to give or change it.
pub fn section(inv: &Investigation, csrf: &Csrf) -> Markup {
    html! {
        section id="feedback" aria-labelledby="feedback-h" {
            h2 id="feedback-h" { "Feedback" }
            @if let Some(fb) = &inv.feedback { (given(fb)) }
            @if inv.status.is_final() {
                (form(inv, csrf))
            } @else {
                p.muted { "Feedback can be given once the investigation has ended." }
            }
        }
    }
}

fn given(fb: &Feedback) -> Markup {
    html! {
        dl.facts id="feedback-given" {
            dt { "Verdict" } dd { (verdict_badge(fb.verdict)) " on " (time(fb.at)) }
            @if let Some(note) = &fb.note { dt { "Note" } dd { p.note { (note) } } }
        }
    }
}

fn form(inv: &Investigation, csrf: &Csrf) -> Markup {
    let current = inv.feedback.as_ref().map(|f| f.verdict);
    let note = inv
        .feedback
        .as_ref()
        .and_then(|f| f.note.as_deref())
        .unwrap_or("");
    html! {
        form.feedback method="post" action={ "/investigations/" (inv.id) "/feedback" } {
            input type="hidden" name="_csrf" value=(csrf.0);
            fieldset.verdict {
                legend { "Was this finding right?" }
                @for &v in Verdict::ALL {
                    @let id = format!("verdict-{}", v.label());
                    input type="radio" id=(id) name="verdict" value=(v.label()) required
                        checked[current == Some(v)];
                    label for=(id) { (v.label()) }
                }
            }
            p {
                label for="feedback-note" { "Note (optional)" }
                textarea id="feedback-note" name="note" maxlength=(MAX_FEEDBACK_NOTE_CHARS) { (note) }
            }
            p {
                button.primary type="submit" {
                    @if current.is_some() { "Change feedback" } @else { "Send feedback" }
                }
            }
            p.muted { "Incident memory keeps the verdict: the next investigation of this alert is told." }
        }
    }
}

fn verdict_badge(v: Verdict) -> Markup {
    html! { span class={ "badge v-" (v.label()) } { (v.label()) } }
}

#[cfg(test)]
mod tests {
    use chrono::{TimeZone, Utc};

    use super::*;
    use crate::agent::{InvestigationRequest, InvestigationStatus, Trigger};

    #[test]
    fn a_recurrence_links_the_last_investigation_and_shows_its_verdict() {
        let r = Recurrence {
            count: 3,
            similar: 1,
            last_seen: Utc.with_ymd_and_hms(2026, 11, 20, 14, 2, 0).unwrap(),
            last_investigation: "inv-<1>".into(),
            last_verdict: Some(Verdict::Wrong),
        };
        let html = recurrence(&r).into_string();
        assert!(
            html.contains("3 times before (1 of a similar alert)"),
            "{html}"
        );
        assert!(html.contains("2026-11-20 14:02:00 UTC"), "{html}");
        assert!(
            html.contains("href=\"/investigations/inv-&lt;1&gt;\""),
            "{html}"
        );
        assert!(html.contains("badge v-wrong\">wrong</span>"), "{html}");
        let once = Recurrence {
            count: 1,
            similar: 0,
            last_verdict: None,
            ..r
        };
        let html = recurrence(&once).into_string();
        assert!(html.contains("1 time before") && !html.contains("similar"));
        assert!(html.contains("none given"), "{html}");
    }

    fn investigation(status: InvestigationStatus) -> Investigation {
        let mut inv = Investigation::new(
            InvestigationRequest {
                trigger: Trigger::Ask,
                title: "t".into(),
                prompt: "q".into(),
                context: None,
                group_key: None,
            },
            "m",
        );
        inv.status = status;
        inv
    }

    #[test]
    fn the_form_shows_once_ended_with_the_given_verdict_checked_and_the_note_escaped() {
        let csrf = Csrf("tok".into());
        let running = section(&investigation(InvestigationStatus::Running), &csrf).into_string();
        assert!(!running.contains("<form"), "{running}");
        let mut inv = investigation(InvestigationStatus::Finished);
        let html = section(&inv, &csrf).into_string();
        assert!(html.contains(&format!("action=\"/investigations/{}/feedback\"", inv.id)));
        assert!(html.contains("name=\"_csrf\" value=\"tok\""), "{html}");
        assert!(
            html.contains("<label for=\"verdict-right\">right</label>"),
            "{html}"
        );
        assert!(html.contains("<label for=\"feedback-note\">"), "{html}");
        assert!(!html.contains("checked") && !html.contains("feedback-given"));
        inv.feedback = Some(Feedback::given(Some("wrong"), Some("<b>DNS</b>")).unwrap());
        let html = section(&inv, &csrf).into_string();
        assert!(html.contains("value=\"wrong\" required checked"), "{html}");
        assert!(
            html.contains("&lt;b&gt;DNS&lt;/b&gt;") && !html.contains("<b>"),
            "{html}"
        );
        assert!(html.contains("Change feedback"));
    }
}
