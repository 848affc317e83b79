//! Email-safe HTML: inline CSS only (mail clients drop `<style>`), a centred 720-pixel
//! layout table, no external resources. Charts are `cid:` images in email and `data:` URIs
//! in the API and the preview. The model's markdown goes through `prose` (sanitised).

use std::fmt::Write as _;

use base64::Engine as _;

use super::block::{Block, Document};
use super::prose::{self, CELL, HEAD_CELL, ITEM, LIST, PARA, TABLE};
use crate::text::escape_html;

/// How chart images are referenced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ImageRefs {
    /// `cid:<content-id>` (inline parts of the email).
    ContentId,
    /// `data:image/png;base64,…` (self-contained page).
    DataUri,
}

const PAGE: &str = "margin:0;padding:0;background:#f3f4f6";
const CARD: &str = "max-width:720px;background:#ffffff;border:1px solid #e1e4e8;\
                    border-radius:6px;padding:20px 28px;text-align:left";
const BODY_TEXT: &str = "font-family:-apple-system,'Segoe UI',Helvetica,Arial,sans-serif;\
                         font-size:14px;line-height:1.5;color:#1f2328";
const H1: &str = "font-size:22px;line-height:1.3;margin:0 0 12px;color:#1f2328";
const H2: &str = "font-size:17px;margin:24px 0 8px;padding-bottom:4px;\
                  border-bottom:1px solid #e1e4e8;color:#1f2328";
const NOTE: &str = "background:#fff8e1;border-left:4px solid #f0ad4e;padding:6px 10px;margin:8px 0";
const NARRATIVE: &str = "background:#f6f8fa;border-radius:6px;padding:4px 14px;margin:8px 0";

pub fn render(doc: &Document, images: ImageRefs) -> String {
    let mut s = String::new();
    let _ = write!(
        s,
        "<!DOCTYPE html><html><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\
         <title>{t}</title></head><body style=\"{PAGE}\">\
         <table role=\"presentation\" width=\"100%\" cellpadding=\"0\" cellspacing=\"0\" \
         style=\"{PAGE}\"><tr><td align=\"center\" style=\"padding:16px 8px\">\
         <div style=\"{CARD};{BODY_TEXT}\"><h1 style=\"{H1}\">{t}</h1>",
        t = escape_html(&doc.title)
    );
    for block in &doc.blocks {
        match block {
            Block::Heading(h) => {
                let _ = write!(s, "<h2 style=\"{H2}\">{}</h2>", escape_html(h));
            }
            Block::Para(p) => {
                for line in p.lines().filter(|l| !l.trim().is_empty()) {
                    let _ = write!(s, "<p style=\"{PARA}\">{}</p>", escape_html(line));
                }
            }
            Block::List(items) => {
                let _ = write!(s, "<ul style=\"{LIST}\">");
                for i in items {
                    let _ = write!(s, "<li style=\"{ITEM}\">{}</li>", escape_html(i));
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
            Block::Markdown(md) => {
                let _ = write!(s, "<div style=\"{NARRATIVE}\">{}</div>", prose::to_html(md));
            }
            Block::Chart(i) => {
                let c = &doc.charts[*i];
                let src = match images {
                    ImageRefs::ContentId => format!("cid:{}", c.content_id),
                    ImageRefs::DataUri => data_uri(&c.png),
                };
                // The image carries its own title, axes and values; `alt` has them as text.
                let _ = write!(
                    s,
                    "<p style=\"margin:8px 0\"><img src=\"{src}\" alt=\"{alt}\" width=\"{w}\" \
                     height=\"{h}\" style=\"display:block;max-width:100%;height:auto;border:0\"></p>",
                    alt = escape_html(&c.alt),
                    w = super::chart::WIDTH,
                    h = super::chart::HEIGHT,
                );
            }
            Block::Table(headers, rows) => {
                let _ = write!(s, "<table style=\"{TABLE}\"><tr>");
                for h in headers {
                    let _ = write!(s, "<th style=\"{HEAD_CELL}\">{}</th>", escape_html(h));
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
    s.push_str("</div></td></tr></table></body></html>");
    s
}

/// A PNG as a `data:` URI.
pub fn data_uri(png: &[u8]) -> String {
    format!(
        "data:image/png;base64,{}",
        base64::engine::general_purpose::STANDARD.encode(png)
    )
}
