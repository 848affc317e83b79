//! `GET /api/v1/investigations/{id}/events`: the timeline as Server-Sent Events while the
//! investigation runs. Each stored event is sent once, in order, as `event: step` with its
//! index as `id` (a reconnect's `Last-Event-ID` resumes after it); the stream ends with one
//! `event: status` carrying the final status. New events are read from the store, so a
//! stream started after a restart sees everything. Bearer `server.api_token`, or a console
//! session.

use std::convert::Infallible;
use std::time::Duration;

use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::routing::get;
use futures::Stream;
use futures::stream::{self, StreamExt};
use serde_json::json;

use super::ApiError;
use crate::agent::Dispatcher;
use crate::app::AppState;
use crate::http::routes::Routes;

/// How often a running investigation's store is read for new events.
const POLL: Duration = Duration::from_millis(200);

pub fn router() -> Routes {
    Routes::new().route("/api/v1/investigations/{id}/events", get(events))
}

/// The timeline as Server-Sent Events (`event: step`, JSON data, index as `id`) until one
/// `event: status` with the final status.
#[utoipa::path(get, path = "/api/v1/investigations/{id}/events", tag = "investigations",
    security(("api_token" = [])),
    params(
        ("id" = String, Path, description = "Investigation id"),
        ("Last-Event-ID" = Option<String>, Header, description = "Resume after this event index"),
    ),
    responses(
        (status = 200, description = "An event stream", content_type = "text/event-stream", body = TimelineEvent),
        (status = 400, description = "Bad input", body = crate::api::ErrorBody),
        (status = 401, description = "Missing or wrong credentials", body = crate::api::ErrorBody),
        (status = 404, description = "Not found", body = crate::api::ErrorBody),
        (status = 431, description = "Headers over the limit", body = crate::api::ErrorBody)
    ))]
pub(super) async fn events(
    State(state): State<AppState>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Sse<impl Stream<Item = Result<SseEvent, Infallible>>>, ApiError> {
    if state.dispatcher.get(&id)?.is_none() {
        return Err(ApiError::NotFound(format!("no investigation {id}")));
    }
    let next = match headers.get("last-event-id") {
        None => 0,
        Some(v) => {
            v.to_str()
                .ok()
                .and_then(|s| s.trim().parse::<usize>().ok())
                .ok_or_else(|| {
                    ApiError::BadRequest(format!(
                        "Last-Event-ID {v:?} is not an event index (a whole number)"
                    ))
                })?
                + 1
        }
    };
    let tail = Tail {
        dispatcher: state.dispatcher.clone(),
        tasks: state.tasks.clone(),
        id,
        next,
        done: false,
    };
    let stream = stream::unfold(tail, |mut tail| async move {
        let batch = tail.next_batch().await?;
        Some((stream::iter(batch.into_iter().map(Ok)), tail))
    })
    .flatten();
    Ok(Sse::new(stream).keep_alive(KeepAlive::new().interval(Duration::from_secs(15))))
}

/// The reading position of one stream.
struct Tail {
    dispatcher: Dispatcher,
    tasks: tokio_util::task::TaskTracker,
    id: String,
    next: usize,
    done: bool,
}

impl Tail {
    /// The next events to send (waiting until there are some), `None` when the stream ends:
    /// after the final status, when the investigation is deleted, or at shutdown.
    async fn next_batch(&mut self) -> Option<Vec<SseEvent>> {
        while !self.done && !self.tasks.is_closed() {
            // The record first: once it is final, every event is already stored.
            let inv = match self.dispatcher.get(&self.id) {
                Ok(Some(inv)) => inv,
                Ok(None) => return None,
                Err(e) => {
                    tracing::warn!(id = %self.id, error = %e, "event stream cannot read the store");
                    return None;
                }
            };
            let events = self.dispatcher.events(&self.id).unwrap_or_default();
            let mut out: Vec<SseEvent> = events
                .iter()
                .enumerate()
                .skip(self.next)
                .map(|(i, e)| {
                    SseEvent::default()
                        .event("step")
                        .id(i.to_string())
                        .json_data(e)
                        .unwrap_or_else(|_| SseEvent::default().comment("unencodable event"))
                })
                .collect();
            self.next = self.next.max(events.len());
            if inv.status.is_final() {
                self.done = true;
                let status = json!({
                    "id": inv.id,
                    "status": inv.status,
                    "finished_at": inv.finished_at,
                    "steps": inv.steps,
                    "cost_usd": inv.cost_usd,
                });
                out.push(
                    SseEvent::default()
                        .event("status")
                        .json_data(status)
                        .expect("a JSON value encodes"),
                );
            }
            if !out.is_empty() {
                return Some(out);
            }
            tokio::time::sleep(POLL).await;
        }
        None
    }
}

/// One Server-Sent Event of `GET /api/v1/investigations/{id}/events`.
#[derive(serde::Serialize, utoipa::ToSchema)]
pub struct TimelineEvent {
    /// "step" (one timeline entry) or "status" (the final status; the stream ends).
    event: String,
    /// The entry's index in the timeline (`step` events), for `Last-Event-ID`.
    id: Option<String>,
    /// JSON: the timeline entry (an `Event`), or `{"status": …}`.
    data: String,
}
