//! Email-safe HTML: inline CSS, tables, no external resources. Charts are `cid:` images in
//! email and `data:` URIs in the API.

use std::fmt::Write as _;

use base64::Engine as _;

use super::block::{Block, Document};
use crate::text::escape_html;

/// How chart images are referenced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ImageRefs {
    /// `cid:<content-id>` (inline parts of the email).
    ContentId,
    /// `data:image/png;base64,…` (self-contained page).
    DataUri,
}

const TABLE: &str = "border-collapse:collapse;margin:8px 0;font-size:13px";
const CELL: &str = "border:1px solid #d0d7de;padding:4px 8px;text-align:left";
const NOTE: &str = "background:#fff8e1;border-left:4px solid #f0ad4e;padding:6px 10px;margin:8px 0";

pub fn render(doc: &Document, images: ImageRefs) -> String {
    let mut s = String::new();
    let _ = write!(
        s,
        "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>{t}</title></head>\
         <body style=\"font-family:Arial,Helvetica,sans-serif;color:#1f2328;max-width:760px\">\
         <h1 style=\"font-size:20px\">{t}</h1>",
        t = escape_html(&doc.title)
    );
    for block in &doc.blocks {
        match block {
            Block::Heading(h) => {
                let _ = write!(
                    s,
                    "<h2 style=\"font-size:16px;margin-top:20px\">{}</h2>",
                    escape_html(h)
                );
            }
            Block::Para(p) => {
                for line in p.lines().filter(|l| !l.trim().is_empty()) {
                    let _ = write!(s, "<p style=\"margin:4px 0\">{}</p>", escape_html(line));
                }
            }
            Block::List(items) => {
                s.push_str("<ul>");
                for i in items {
                    let _ = write!(s, "<li>{}</li>", escape_html(i));
                }
                s.push_str("</ul>");
            }
            Block::Note(n) => {
                let _ = write!(
                    s,
                    "<p style=\"{NOTE}\"><strong>Note:</strong> {}</p>",
                    escape_html(n)
                );
            }
            Block::Chart(i) => {
                let c = &doc.charts[*i];
                let src = match images {
                    ImageRefs::ContentId => format!("cid:{}", c.content_id),
                    ImageRefs::DataUri => format!(
                        "data:image/png;base64,{}",
                        base64::engine::general_purpose::STANDARD.encode(&c.png)
                    ),
                };
                // The image carries its own title, axes and values; `alt` has them as text.
                let _ = write!(
                    s,
                    "<p><img src=\"{src}\" alt=\"{alt}\" width=\"{w}\" height=\"{h}\" style=\"display:block\"></p>",
                    alt = escape_html(&c.alt),
                    w = super::chart::WIDTH,
                    h = super::chart::HEIGHT,
                );
            }
            Block::Table(headers, rows) => {
                let _ = write!(s, "<table style=\"{TABLE}\"><tr>");
                for h in headers {
                    let _ = write!(
                        s,
                        "<th style=\"{CELL};background:#f6f8fa\">{}</th>",
                        escape_html(h)
                    );
                }
                s.push_str("</tr>");
                for r in rows {
                    s.push_str("<tr>");
                    for c in r {
                        let _ = write!(s, "<td style=\"{CELL}\">{}</td>", escape_html(c));
                    }
                    s.push_str("</tr>");
                }
                s.push_str("</table>");
            }
        }
    }
    s.push_str("</body></html>");
    s
}
