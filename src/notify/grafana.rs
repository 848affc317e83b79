//! Grafana write-back (`grafana.annotate`): a finished investigation of a Grafana alert
//! becomes an annotation on the alert's dashboard and panel (from the alert's
//! `__dashboardUid__`/`__panelId__` annotations, or its `dashboardURL` `/d/<uid>` and
//! `panelURL` `viewPanel=<id>`), at the alert's start, tagged `sre-agent` and the
//! alertname, with the finding's summary and a link back.

use serde::{Deserialize, Serialize};

use super::templates::Subject;
use crate::alerts::Alert;
use crate::integrations::UpstreamError;
use crate::integrations::grafana::{GrafanaClient, NewAnnotation};
use crate::text::{escape_html, truncate};

/// The tag every annotation of sre-agent carries.
pub const TAG: &str = "sre-agent";

/// A stored `POST /api/annotations` body.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AnnotationRequest {
    pub annotation: NewAnnotation,
}

/// The dashboard UID and panel id `alert` is linked to, when it is.
pub fn target(alert: &Alert) -> Option<(String, Option<i64>)> {
    let from_annotations = alert
        .annotations
        .get("__dashboardUid__")
        .filter(|u| !u.trim().is_empty())
        .map(|u| u.trim().to_string());
    let uid = from_annotations.or_else(|| {
        [&alert.dashboard_url, &alert.panel_url]
            .into_iter()
            .flatten()
            .find_map(|u| dashboard_uid(u))
    })?;
    let panel = alert
        .annotations
        .get("__panelId__")
        .and_then(|p| p.trim().parse().ok())
        .or_else(|| alert.panel_url.as_deref().and_then(panel_id));
    Some((uid, panel))
}

/// `<uid>` of `…/d/<uid>[/<slug>][?…]`.
fn dashboard_uid(url: &str) -> Option<String> {
    let parsed = url::Url::parse(url).ok()?;
    let mut segments = parsed.path_segments()?;
    segments.by_ref().find(|s| *s == "d")?;
    segments
        .next()
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

/// `viewPanel=4` (or Grafana 11's `viewPanel=panel-4`).
fn panel_id(url: &str) -> Option<i64> {
    let parsed = url::Url::parse(url).ok()?;
    parsed
        .query_pairs()
        .find(|(k, _)| k == "viewPanel")
        .and_then(|(_, v)| v.trim_start_matches("panel-").parse().ok())
}

/// The annotation for `subject`, when its alert is linked to a dashboard; it links to the
/// investigation's console page (`<public_url>/investigations/<id>`) when
/// `server.public_url` is set.
pub fn render(subject: &Subject) -> Option<AnnotationRequest> {
    let alert = subject.alert?;
    let (dashboard_uid, panel_id) = target(alert)?;
    let mut text = format!(
        "sre-agent: {}",
        escape_html(&truncate(&subject.summary(), 500))
    );
    match subject.investigation_url() {
        Some(url) => text.push_str(&format!(
            " <a href=\"{}\">investigation {}</a>",
            escape_html(&url),
            escape_html(&subject.inv.id)
        )),
        None => text.push_str(&format!(
            " (investigation {})",
            escape_html(&subject.inv.id)
        )),
    }
    let mut tags = vec![TAG.to_string()];
    if !alert.name.is_empty() {
        tags.push(alert.name.clone());
    }
    Some(AnnotationRequest {
        annotation: NewAnnotation {
            dashboard_uid,
            panel_id,
            time: alert
                .starts_at
                .unwrap_or(subject.inv.created_at)
                .timestamp_millis(),
            tags,
            text,
        },
    })
}

/// One POST; the error names Grafana, the redacted URL and the status.
pub(super) async fn send(
    client: &GrafanaClient,
    req: &AnnotationRequest,
) -> Result<(), UpstreamError> {
    client.create_annotation(&req.annotation).await.map(|_| ())
}

/// 429, 5xx and transport errors are worth retrying; other answers (401, 403, 404: a
/// token without the Editor role, an unknown dashboard) are not.
pub(super) fn is_retryable(e: &UpstreamError) -> bool {
    e.status().is_none_or(|s| s == 429 || s >= 500)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_dashboard_and_panel_come_from_grafana_urls() {
        assert_eq!(
            dashboard_uid(
                "https://grafana.example.com/d/sre-sli?from=1748769300000&orgId=1&to=1748772960000"
            ),
            Some("sre-sli".into())
        );
        assert_eq!(
            dashboard_uid("https://g.example.com/grafana/d/abc123/node-exporter?orgId=1"),
            Some("abc123".into())
        );
        assert_eq!(dashboard_uid("https://g.example.com/alerting/list"), None);
        assert_eq!(
            panel_id("https://g.example.com/d/sre-sli?orgId=1&viewPanel=4"),
            Some(4)
        );
        assert_eq!(
            panel_id("https://g.example.com/d/sre-sli?orgId=1&viewPanel=panel-12"),
            Some(12)
        );
        assert_eq!(panel_id("https://g.example.com/d/sre-sli?orgId=1"), None);
    }
}
