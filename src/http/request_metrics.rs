//! Request metrics middleware, labelled by the matched route's template (never the raw
//! path), so the label takes one value per route of the router; a request no route
//! matched counts as `other`. The in-progress gauge is
//! decremented by a guard, so a request dropped mid-way (its client hung up, its time ran
//! out) does not leave it counted forever.

use std::time::Instant;

use axum::extract::{MatchedPath, Request, State};
use axum::middleware::Next;
use axum::response::Response;

use crate::app::AppState;
use crate::telemetry::OTHER_ENDPOINT;

pub async fn track(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let matched = req.extensions().get::<MatchedPath>().cloned();
    let endpoint = matched.as_ref().map_or(OTHER_ENDPOINT, MatchedPath::as_str);
    let m = &state.metrics;
    let in_progress = InProgress::start(m.http_in_progress.with_label_values(&[endpoint]));
    let start = Instant::now();
    let resp = next.run(req).await;
    drop(in_progress);
    m.http_request_duration
        .with_label_values(&[endpoint])
        .observe(start.elapsed().as_secs_f64());
    m.http_requests
        .with_label_values(&[endpoint, resp.status().as_str()])
        .inc();
    resp
}

/// One request counted in the in-progress gauge until dropped.
struct InProgress(prometheus::IntGauge);

impl InProgress {
    fn start(gauge: prometheus::IntGauge) -> Self {
        gauge.inc();
        Self(gauge)
    }
}

impl Drop for InProgress {
    fn drop(&mut self) {
        self.0.dec();
    }
}
