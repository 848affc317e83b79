//! Rendering: the report as markdown (and email text) or email-safe HTML with PNG charts.

pub mod backups;
pub mod chart;
pub mod document;
pub mod font;
pub mod html;
pub mod markdown;
pub mod number;

pub use chart::Chart;
pub use html::ImageRefs;

use super::model::Report;

/// A report rendered for email: text, HTML with `cid:` images, and the images.
pub struct Rendered {
    pub markdown: String,
    pub html: String,
    pub charts: Vec<Chart>,
}

pub fn for_email(report: &Report) -> Rendered {
    let doc = document::build(report);
    Rendered {
        markdown: markdown::render(&doc),
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
