//! `GET /investigations/{id}`: one investigation as a timeline. Its facts (status, cost,
//! tokens), its thread (parent and follow-ups), the alert behind it with links back to
//! Grafana, the finding with each piece of evidence linked to the call behind it and its
//! recurrence, the verdict a person gave and the feedback form (`feedback.rs`), every
//! LLM and tool call in order, and the follow-up form. While it runs, the page carries the
//! address of its event stream and the console script appends steps as they arrive.

use axum::Extension;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use maud::{Markup, html};

use super::feedback;
use super::forms::question_form;
use super::page::{
    Chrome, Csrf, PageError, alert_status, layout, respond, safe_url, status_badge, time,
};
use crate::agent::{Event, EventKind, Evidence, Investigation, asked};
use crate::alerts::Alert;
use crate::app::AppState;
use crate::http::ApiError;
use crate::http::session::ConsoleKeys;

pub async fn page(
    State(state): State<AppState>,
    Extension(csrf): Extension<Csrf>,
    Extension(keys): Extension<ConsoleKeys>,
    Path(id): Path<String>,
) -> Result<Response, PageError> {
    let inv = state
        .dispatcher
        .get(&id)?
        .ok_or_else(|| ApiError::NotFound(format!("no investigation {id}")))?;
    let events = state.dispatcher.events(&id)?;
    let parent = match &inv.parent_id {
        Some(p) => state.dispatcher.get(p)?,
        None => None,
    };
    let follow_ups = state.dispatcher.follow_ups(&id)?;
    let alert = match &inv.group_key {
        Some(key) => state.intake.store().group(key)?.map(|g| g.last_alert),
        None => None,
    };
    let chrome = Chrome {
        csrf: &csrf,
        login: keys.login_required(),
    };
    let call_ids: Vec<&str> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ToolCall { id, .. } => Some(id.as_str()),
            _ => None,
        })
        .collect();
    let body = html! {
        h1 { (inv.title) }
        (facts(&inv))
        @if parent.is_some() || !follow_ups.is_empty() {
            (thread(&inv, parent.as_ref(), &follow_ups))
        }
        h2 { "Question" }
        pre.question { (asked(&inv.prompt)) }
        @if let Some(alert) = &alert { (alert_section(alert)) }
        @if let Some(error) = &inv.error { p.error role="alert" { "Error: " (error) } }
        @if let Some(f) = &inv.finding {
            section id="finding" aria-labelledby="finding-h" {
                h2 id="finding-h" { "Finding" }
                p.summary { (f.summary) }
                dl.facts {
                    @if !f.severity.is_empty() { dt { "Severity" } dd { (f.severity) } }
                    @if !f.confidence.is_empty() { dt { "Confidence" } dd { (f.confidence) } }
                    @if !f.probable_cause.is_empty() { dt { "Probable cause" } dd { (f.probable_cause) } }
                }
                @if !f.figures.is_empty() {
                    h3 { "Key figures" }
                    ul { @for e in &f.figures { (evidence(e, &call_ids)) } }
                }
                @if !f.evidence.is_empty() {
                    h3 { "Evidence" }
                    ul.evidence { @for e in &f.evidence { (evidence(e, &call_ids)) } }
                }
                @if !f.next_steps.is_empty() {
                    h3 { "Next steps" }
                    ol { @for s in &f.next_steps { li { (s) } } }
                }
                @if let Some(r) = &f.recurrence { (feedback::recurrence(r)) }
            }
        }
        @if inv.status.is_final() || inv.feedback.is_some() { (feedback::section(&inv, &csrf)) }
        @if !inv.notes.is_empty() {
            h2 { "Notes" }
            ul { @for n in &inv.notes { li { (n) } } }
        }
        h2 { "Timeline" }
        @if !inv.status.is_final() {
            div id="live" class="live" data-events={ "/api/v1/investigations/" (inv.id) "/events" }
                role="status" aria-live="polite" {
                span data-role="status" {
                    (inv.status.as_str()) ": " (events.len()) " events so far. "
                    "This page follows the investigation; without JavaScript, reload it."
                }
            }
        }
        ol id="timeline" class="timeline" {
            @for (seq, e) in events.iter().enumerate() { (event(seq, e)) }
        }
        @if inv.status.is_final() {
            h2 { "Ask a follow-up" }
            p.muted { "A new investigation starts with this one's finding and evidence as context." }
            (question_form(&csrf, &format!("/investigations/{}/followup", inv.id),
                ("follow-up", "Follow-up question"), "", "Ask follow-up"))
        }
    };
    Ok(respond(
        StatusCode::OK,
        layout(&chrome, &inv.title, "", body),
    ))
}

fn facts(inv: &Investigation) -> Markup {
    html! {
        dl.facts {
            dt { "Status" } dd id="status" { (status_badge(inv.status)) }
            dt { "Trigger" } dd { (inv.trigger.label()) }
            dt { "Created" } dd { (time(inv.created_at)) }
            @if let Some(d) = inv.duration() { dt { "Duration" } dd { (format!("{:.1} s", d.as_secs_f64())) } }
            dt { "Model" } dd { (inv.model) }
            dt { "LLM calls" } dd { (inv.steps) }
            dt { "Tokens" } dd {
                (inv.tokens.total()) " (" (inv.tokens.prompt) " prompt, "
                (inv.tokens.completion) " completion, " (inv.tokens.cached) " cached)"
            }
            dt { "Cost" } dd { (format!("${:.4}", inv.cost_usd)) }
            dt { "Id" } dd { code { (inv.id) } }
        }
    }
}

fn thread(
    inv: &Investigation,
    parent: Option<&Investigation>,
    follow_ups: &[Investigation],
) -> Markup {
    html! {
        nav aria-label="Thread" {
            h2 { "Thread" }
            ol.thread {
                @if let Some(p) = parent {
                    li { "Follows up: " a href={ "/investigations/" (p.id) } { (p.title) } " " (status_badge(p.status)) }
                } @else if let Some(pid) = &inv.parent_id {
                    li { "Follows up " code { (pid) } " (deleted)" }
                }
                li aria-current="page" { "This: " (inv.title) }
                @for f in follow_ups {
                    li { "Follow-up: " a href={ "/investigations/" (f.id) } { (f.title) } " " (status_badge(f.status)) }
                }
            }
        }
    }
}

fn alert_section(alert: &Alert) -> Markup {
    let links = [
        ("Alert rule", alert.generator_url.as_deref()),
        ("Dashboard", alert.dashboard_url.as_deref()),
        ("Panel", alert.panel_url.as_deref()),
        ("Silence", alert.silence_url.as_deref()),
    ];
    html! {
        section aria-labelledby="alert-h" {
            h2 id="alert-h" { "Alert" }
            dl.facts {
                dt { "Name" } dd { (alert.name) }
                dt { "Status" } dd { (alert_status(alert.status)) }
                @if let Some(at) = alert.starts_at { dt { "Since" } dd { (time(at)) } }
                @if let Some(v) = &alert.value { dt { "Value" } dd { (v) } }
            }
            table {
                caption.visually-hidden { "Labels and annotations" }
                tbody {
                    @for (k, v) in &alert.labels { tr { th scope="row" { (k) } td { (v) } } }
                    @for (k, v) in &alert.annotations { tr { th scope="row" { (k) } td { (v) } } }
                }
            }
            ul {
                @for (label, url) in links {
                    @if let Some(url) = url.and_then(safe_url) {
                        li { a href=(url) rel="noreferrer" { (label) " in Grafana" } }
                    }
                }
            }
        }
    }
}

fn evidence(e: &Evidence, call_ids: &[&str]) -> Markup {
    html! {
        li {
            (e.claim)
            @if !e.tool_call_ids.is_empty() {
                " (" @for (i, id) in e.tool_call_ids.iter().enumerate() {
                    @if i > 0 { ", " }
                    @if call_ids.contains(&id.as_str()) {
                        a href={ "#call-" (id) } { (id) }
                    } @else { (id) }
                } ")"
            }
        }
    }
}

fn event(seq: usize, e: &Event) -> Markup {
    let kind = match &e.kind {
        EventKind::LlmCall { .. } => "llm_call",
        EventKind::ToolCall { .. } => "tool_call",
        EventKind::Error { .. } => "error",
        EventKind::Note { .. } => "note",
    };
    html! {
        @match &e.kind {
            EventKind::LlmCall { tokens, cost_usd, latency_ms, tool_calls } => {
                li class={ "ev ev-" (kind) } data-seq=(seq) {
                    div.ev-head {
                        "Step " (e.step) " · LLM "
                        @if tool_calls.is_empty() { "answer" } @else { "calls " (tool_calls.join(", ")) }
                        " · " (tokens.total()) " tokens · " (latency_ms) " ms · " (format!("${cost_usd:.4}"))
                    }
                }
            }
            EventKind::ToolCall { id, name, arguments, duration_ms, ok, output_excerpt } => {
                li class={ "ev ev-" (kind) } id={ "call-" (id) } data-seq=(seq) {
                    div.ev-head {
                        "Step " (e.step) " · tool " (name) " (" (id) ") · " (duration_ms) " ms · "
                        @if *ok { "ok" } @else { span.error { "error" } }
                    }
                    div { code { (arguments.to_string()) } pre { (output_excerpt) } }
                }
            }
            EventKind::Error { message } | EventKind::Note { message } => {
                li class={ "ev ev-" (kind) } data-seq=(seq) {
                    div.ev-head { "Step " (e.step) " · " (kind) ": " (message) }
                }
            }
        }
    }
}
