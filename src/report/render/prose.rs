//! Markdown written by the model (the executive summary) as email-safe HTML.
//!
//! The text is untrusted: it is parsed with pulldown-cmark (CommonMark plus tables and
//! strikethrough) and written back from the parse events through a strict allow-list:
//! paragraphs, headings (demoted below the report's own), lists, emphasis, code, quotes,
//! tables, rules and links. Every tag carries inline CSS (mail clients drop `<style>`);
//! all text is escaped; raw HTML in the answer (`<script>`, `<img onerror>`, look-alikes)
//! is shown as text, never passed through; links keep their `href` only for `http(s)`;
//! images are never loaded (their alt text is shown), so a report cannot track its reader.

use std::fmt::Write as _;

use pulldown_cmark::{Alignment, Event, HeadingLevel, Options, Parser, Tag, TagEnd};

use crate::text::escape_html;

pub const PARA: &str = "margin:6px 0;line-height:1.5";
pub const LIST: &str = "margin:6px 0;padding-left:24px;line-height:1.5";
pub const ITEM: &str = "margin:2px 0";
pub const TABLE: &str = "border-collapse:collapse;margin:8px 0;font-size:13px";
pub const CELL: &str = "border:1px solid #d0d7de;padding:4px 8px;text-align:left";
pub const HEAD_CELL: &str =
    "border:1px solid #d0d7de;padding:4px 8px;text-align:left;background:#f6f8fa";
const CODE: &str = "font-family:Menlo,Consolas,'Courier New',monospace;font-size:12px;\
                    background:#f6f8fa;border-radius:3px;padding:1px 4px";
const PRE: &str = "font-family:Menlo,Consolas,'Courier New',monospace;font-size:12px;\
                   background:#f6f8fa;border:1px solid #d0d7de;border-radius:4px;\
                   padding:8px 10px;margin:8px 0;white-space:pre-wrap;word-break:break-word";
const QUOTE: &str = "margin:8px 0;padding:2px 12px;border-left:3px solid #d0d7de;color:#57606a";
const LINK: &str = "color:#0969da;text-decoration:underline";
const RULE: &str = "border:0;border-top:1px solid #d0d7de;margin:12px 0";

/// The markdown the report accepts from the model: CommonMark, tables, strikethrough.
pub fn parser(markdown: &str) -> Parser<'_> {
    Parser::new_ext(
        markdown,
        Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH,
    )
}

/// `url` when it is an absolute `http:` or `https:` URL, the only links kept.
pub fn web_link(url: &str) -> Option<&str> {
    let url = url.trim();
    let scheme = url.split_once(':')?.0;
    (scheme.eq_ignore_ascii_case("http") || scheme.eq_ignore_ascii_case("https")).then_some(url)
}

/// The model's heading levels moved below the report's `<h1>` title and `<h2>` sections.
fn heading(level: HeadingLevel) -> (&'static str, &'static str) {
    match level {
        HeadingLevel::H1 => ("h3", "font-size:16px;margin:14px 0 6px"),
        HeadingLevel::H2 => ("h4", "font-size:15px;margin:12px 0 4px"),
        _ => ("h5", "font-size:14px;margin:10px 0 4px"),
    }
}

/// `markdown` as sanitised HTML with inline CSS.
pub fn to_html(markdown: &str) -> String {
    let mut w = HtmlWriter::default();
    for event in parser(markdown) {
        w.event(event);
    }
    w.out
}

#[derive(Default)]
struct HtmlWriter {
    out: String,
    /// Whether each open link became an `<a>` (only http(s) ones do).
    links: Vec<bool>,
    alignments: Vec<Alignment>,
    in_head: bool,
    column: usize,
}

impl HtmlWriter {
    fn text(&mut self, t: &str) {
        self.out.push_str(&escape_html(t));
    }

    fn event(&mut self, event: Event<'_>) {
        match event {
            Event::Start(tag) => self.start(tag),
            Event::End(tag) => self.end(tag),
            Event::Text(t) => self.text(&t),
            Event::Code(t) => {
                let _ = write!(
                    self.out,
                    "<code style=\"{CODE}\">{}</code>",
                    escape_html(&t)
                );
            }
            // Raw HTML from the model is shown as the text it is.
            Event::Html(t) | Event::InlineHtml(t) => self.text(&t),
            Event::InlineMath(t) | Event::DisplayMath(t) | Event::FootnoteReference(t) => {
                self.text(&t)
            }
            Event::SoftBreak => self.out.push('\n'),
            Event::HardBreak => self.out.push_str("<br>"),
            Event::Rule => {
                let _ = write!(self.out, "<hr style=\"{RULE}\">");
            }
            Event::TaskListMarker(done) => self.text(if done { "[x] " } else { "[ ] " }),
        }
    }

    fn start(&mut self, tag: Tag<'_>) {
        let o = &mut self.out;
        match tag {
            Tag::Paragraph => {
                let _ = write!(o, "<p style=\"{PARA}\">");
            }
            Tag::Heading { level, .. } => {
                let (h, style) = heading(level);
                let _ = write!(o, "<{h} style=\"{style}\">");
            }
            Tag::BlockQuote(_) => {
                let _ = write!(o, "<blockquote style=\"{QUOTE}\">");
            }
            Tag::CodeBlock(_) => {
                let _ = write!(o, "<pre style=\"{PRE}\"><code>");
            }
            Tag::List(Some(first)) => {
                let _ = write!(o, "<ol start=\"{first}\" style=\"{LIST}\">");
            }
            Tag::List(None) => {
                let _ = write!(o, "<ul style=\"{LIST}\">");
            }
            Tag::Item => {
                let _ = write!(o, "<li style=\"{ITEM}\">");
            }
            Tag::Table(alignments) => {
                self.alignments = alignments;
                let _ = write!(o, "<table style=\"{TABLE}\">");
            }
            Tag::TableHead => {
                self.in_head = true;
                self.column = 0;
                o.push_str("<tr>");
            }
            Tag::TableRow => {
                self.column = 0;
                o.push_str("<tr>");
            }
            Tag::TableCell => {
                let (cell, style) = if self.in_head {
                    ("th", HEAD_CELL)
                } else {
                    ("td", CELL)
                };
                let align = match self.alignments.get(self.column) {
                    Some(Alignment::Center) => ";text-align:center",
                    Some(Alignment::Right) => ";text-align:right",
                    _ => "",
                };
                let _ = write!(o, "<{cell} style=\"{style}{align}\">");
            }
            Tag::Emphasis => o.push_str("<em>"),
            Tag::Strong => o.push_str("<strong>"),
            Tag::Strikethrough => o.push_str("<del>"),
            Tag::Link { dest_url, .. } => {
                let href = web_link(&dest_url).map(escape_html);
                if let Some(href) = &href {
                    let _ = write!(o, "<a href=\"{href}\" style=\"{LINK}\">");
                }
                self.links.push(href.is_some());
            }
            // Images are not loaded: their alt text comes as text events. Footnotes, definition lists, super/subscript, metadata: their text only.
            _ => {}
        }
    }

    fn end(&mut self, tag: TagEnd) {
        let o = &mut self.out;
        match tag {
            TagEnd::Paragraph => o.push_str("</p>"),
            TagEnd::Heading(level) => {
                let _ = write!(o, "</{}>", heading(level).0);
            }
            TagEnd::BlockQuote(_) => o.push_str("</blockquote>"),
            TagEnd::CodeBlock => o.push_str("</code></pre>"),
            TagEnd::List(true) => o.push_str("</ol>"),
            TagEnd::List(false) => o.push_str("</ul>"),
            TagEnd::Item => o.push_str("</li>"),
            TagEnd::Table => o.push_str("</table>"),
            TagEnd::TableHead => {
                self.in_head = false;
                o.push_str("</tr>");
            }
            TagEnd::TableRow => o.push_str("</tr>"),
            TagEnd::TableCell => {
                o.push_str(if self.in_head { "</th>" } else { "</td>" });
                self.column += 1;
            }
            TagEnd::Emphasis => o.push_str("</em>"),
            TagEnd::Strong => o.push_str("</strong>"),
            TagEnd::Strikethrough => o.push_str("</del>"),
            TagEnd::Link if self.links.pop() == Some(true) => o.push_str("</a>"),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headings_lists_emphasis_code_and_tables_become_styled_html() {
        let md = "# Weekly report\n\nA **calm** week, _mostly_.\n\n## Act on\n\n\
                  - Free space on `pve1`\n- Tune ~~NodeDown~~ DiskFull\n\n\
                  1. first\n2. second\n\n\
                  | Alert | Episodes |\n|---|--:|\n| NodeDown | 3 |\n\n\
                  ```\nrate(x[5m])\n```\n";
        let html = to_html(md);
        for want in [
            "<h3 style=\"font-size:16px;margin:14px 0 6px\">Weekly report</h3>",
            "A <strong>calm</strong> week, <em>mostly</em>.</p>",
            "<h4 style=",
            &format!("<ul style=\"{LIST}\"><li style=\"{ITEM}\">Free space on <code style="),
            ">pve1</code></li>",
            "<del>NodeDown</del> DiskFull",
            &format!("<ol start=\"1\" style=\"{LIST}\">"),
            &format!("<th style=\"{HEAD_CELL}\">Alert</th>"),
            &format!("<td style=\"{CELL};text-align:right\">3</td>"),
            "<code>rate(x[5m])\n</code></pre>",
        ] {
            assert!(html.contains(want), "{want} not in {html}");
        }
        // Nothing of the markdown syntax is left as text.
        for raw in ["# ", "**", "`", "|---", "~~"] {
            assert!(!html.contains(raw), "{raw} in {html}");
        }
        // Every tag is from the allow-list and styled inline.
        assert!(!html.contains("<h1") && !html.contains("<h2") && !html.contains("class="));
    }

    #[test]
    fn raw_html_from_the_model_is_shown_as_text_never_run() {
        for (md, must_not) in [
            ("<script>alert(1)</script>", "<script"),
            ("Hi <img src=x onerror=alert(1)> there", "<img"),
            ("<iframe src=\"https://evil\"></iframe>", "<iframe"),
            ("<a href=\"javascript:alert(1)\">x</a>", "<a "),
            ("<style>body{display:none}</style>", "<style"),
            ("x <!-- hidden --> y", "<!--"),
            ("<div onclick=\"x()\">\n\ntext\n</div>", "<div"),
            ("&lt;script&gt; and </data> <DATA>", "</data>"),
        ] {
            let html = to_html(md);
            assert!(!html.contains(must_not), "{md:?} gave {html}");
            assert!(html.contains("&lt;"), "{md:?} lost its text: {html}");
        }
        let html = to_html("<script>alert(1)</script>");
        assert!(
            html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
            "{html}"
        );
    }

    #[test]
    fn only_http_links_keep_an_href_and_images_are_never_loaded() {
        let html = to_html(
            "[runbook](https://wiki.example/disk \"t\") [bad](javascript:alert(1)) \
             [data](data:text/html,x) [mail](mailto:a@b) [rel](/x) <http://ok.example/a?b=\"c\">\n\n\
             ![tracker](https://evil.example/pixel.png)",
        );
        assert!(
            html.contains(&format!(
                "<a href=\"https://wiki.example/disk\" style=\"{LINK}\">runbook</a>"
            )),
            "{html}"
        );
        assert!(
            html.contains("<a href=\"http://ok.example/a?b=&quot;c&quot;\""),
            "{html}"
        );
        assert_eq!(html.matches("<a ").count(), 2, "{html}");
        for text in ["bad", "data", "mail", "rel", "tracker"] {
            assert!(html.contains(text), "{text} dropped: {html}");
        }
        assert!(!html.contains("javascript") || !html.contains("href=\"javascript"));
        assert!(
            !html.contains("<img") && !html.contains("pixel.png\""),
            "{html}"
        );
        assert_eq!(web_link(" HTTPS://x "), Some("HTTPS://x"));
        assert_eq!(web_link("javascript:x"), None);
        assert_eq!(web_link("//x"), None);
    }

    #[test]
    fn garbage_answers_render_as_escaped_text() {
        for md in [
            "",
            "{\"summary\": ",
            "]]>\0\u{202e}<<<>>>&&&",
            "* * *\n- \n1.\n#\n>",
            &"[".repeat(2000),
            &"> ".repeat(500),
        ] {
            let html = to_html(md);
            assert!(!html.contains("<script") && !html.contains("&&"), "{html}");
        }
    }
}
