//! The console's question forms: `GET|POST /ask` and `POST /investigations/{id}/followup`.
//! Both are plain HTML forms (no script needed) answered with a redirect to the new
//! investigation's page, which follows it live.

use axum::Extension;
use axum::extract::{Form, Path, State};
use axum::http::header::LOCATION;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use maud::{Markup, html};
use serde::Deserialize;

use super::login::csrf_refused;
use super::page::{Chrome, Csrf, PageError, layout, respond};
use crate::agent::InvestigationRequest;
use crate::api::MAX_QUESTION_CHARS;
use crate::app::AppState;
use crate::http::follow_up::{submit, validate_question};
use crate::http::session::ConsoleKeys;

#[derive(Deserialize)]
pub struct QuestionForm {
    #[serde(default)]
    question: String,
    #[serde(rename = "_csrf", default)]
    csrf: String,
}

pub async fn ask_page(
    Extension(csrf): Extension<Csrf>,
    Extension(keys): Extension<ConsoleKeys>,
) -> Response {
    let chrome = Chrome {
        csrf: &csrf,
        login: keys.login_required(),
    };
    respond(StatusCode::OK, ask_document(&chrome, "", None))
}

pub async fn ask(
    State(state): State<AppState>,
    Extension(csrf): Extension<Csrf>,
    Extension(keys): Extension<ConsoleKeys>,
    headers: HeaderMap,
    Form(f): Form<QuestionForm>,
) -> Result<Response, PageError> {
    if !keys.csrf_ok(&headers, &f.csrf) {
        return Err(csrf_refused());
    }
    let question = match validate_question(&f.question) {
        Ok(q) => q,
        Err(e) => {
            let chrome = Chrome {
                csrf: &csrf,
                login: keys.login_required(),
            };
            let body = ask_document(&chrome, &f.question, Some(&e.to_string()));
            return Ok(respond(StatusCode::BAD_REQUEST, body));
        }
    };
    let inv = state
        .dispatcher
        .submit(InvestigationRequest::ask(question))
        .await?;
    Ok(see_other(&inv.id))
}

pub async fn follow_up(
    State(state): State<AppState>,
    Extension(keys): Extension<ConsoleKeys>,
    Path(id): Path<String>,
    headers: HeaderMap,
    Form(f): Form<QuestionForm>,
) -> Result<Response, PageError> {
    if !keys.csrf_ok(&headers, &f.csrf) {
        return Err(csrf_refused());
    }
    let queued = submit(&state, &id, &f.question).await?;
    Ok(see_other(&queued.id))
}

fn see_other(id: &str) -> Response {
    (
        StatusCode::SEE_OTHER,
        [(LOCATION, format!("/investigations/{id}"))],
    )
        .into_response()
}

fn ask_document(chrome: &Chrome<'_>, question: &str, error: Option<&str>) -> Markup {
    layout(
        chrome,
        "Ask",
        "/ask",
        html! {
            h1 { "Ask a question" }
            p.muted {
                "The agent investigates with its read-only tools and answers with a finding "
                "that cites the calls behind it."
            }
            @if let Some(e) = error { p.error role="alert" { (e) } }
            (question_form(chrome.csrf, "/ask", ("question", "Question"), question, "Ask"))
        },
    )
}

/// A labelled question form posting to `action` (also the follow-up form of a timeline).
/// `field` is the textarea's (id, label).
pub fn question_form(
    csrf: &Csrf,
    action: &str,
    (field_id, label): (&str, &str),
    value: &str,
    submit: &str,
) -> Markup {
    html! {
        form.question method="post" action=(action) {
            input type="hidden" name="_csrf" value=(csrf.0);
            p {
                label for=(field_id) { (label) }
                textarea id=(field_id) name="question" required
                    maxlength=(MAX_QUESTION_CHARS) { (value) }
            }
            p { button.primary type="submit" { (submit) } }
        }
    }
}
