//! Markdown written by the model as clean plain text, for the text part of the email: no
//! `#`, `*` or backtick markers; lists keep their bullets and numbers, headings are
//! underlined with `~` (below the report's own `=` title and `-` sections), tables become aligned columns, links show their `http(s)` address.

use pulldown_cmark::{Event, HeadingLevel, Tag, TagEnd};

use super::prose::{parser, web_link};

/// `markdown` as plain text (ends without a newline).
pub fn to_text(markdown: &str) -> String {
    let mut w = TextWriter::default();
    for event in parser(markdown) {
        w.event(event);
    }
    let mut out = String::new();
    for line in w.out.lines().map(str::trim_end) {
        // At most one blank line in a row.
        if line.is_empty() && (out.is_empty() || out.ends_with("\n\n")) {
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    out.trim_end().to_string()
}

#[derive(Default)]
struct TextWriter {
    out: String,
    /// Open lists, innermost last: the next number of an ordered one.
    lists: Vec<Option<u64>>,
    quotes: usize,
    /// Open links: where their text started and their address when it is kept.
    links: Vec<(usize, Option<String>)>,
    /// Rows of the open table, the cell being written last.
    table: Option<Vec<Vec<String>>>,
    in_code: bool,
    heading_start: usize,
}

impl TextWriter {
    /// Where text goes: the current table cell or the output.
    fn sink(&mut self) -> &mut String {
        match self
            .table
            .as_mut()
            .and_then(|rows| rows.last_mut())
            .and_then(|r| r.last_mut())
        {
            Some(cell) => cell,
            None => &mut self.out,
        }
    }

    /// What starts a continuation line here: list indentation and quote markers.
    fn indent(&self) -> String {
        format!(
            "{}{}",
            "  ".repeat(self.lists.len()),
            "> ".repeat(self.quotes)
        )
    }

    fn newline(&mut self) {
        if !self.out.is_empty() && !self.out.ends_with('\n') {
            self.out.push('\n');
        }
    }

    /// Ends the current line and leaves a blank one (none between tight list items).
    fn block(&mut self) {
        self.newline();
        if self.lists.is_empty() && !self.out.is_empty() {
            self.out.push('\n');
        }
        if !self.out.ends_with("- ") && !self.out.ends_with(". ") {
            let indent = self.indent();
            self.out.push_str(&indent);
        }
    }

    fn text(&mut self, t: &str) {
        if self.table.is_some() {
            self.sink().push_str(&t.replace('\n', " "));
            return;
        }
        let indent = if self.in_code {
            format!("{}    ", self.indent())
        } else {
            self.indent()
        };
        let mut lines = t.split('\n').peekable();
        while let Some(line) = lines.next() {
            if self.in_code && (self.out.is_empty() || self.out.ends_with('\n')) {
                self.out.push_str(&indent);
            }
            self.out.push_str(line);
            if lines.peek().is_some() {
                self.out.push('\n');
                if !self.in_code {
                    self.out.push_str(&indent);
                }
            }
        }
    }

    fn event(&mut self, event: Event<'_>) {
        match event {
            Event::Start(tag) => self.start(tag),
            Event::End(tag) => self.end(tag),
            Event::Text(t)
            | Event::Code(t)
            | Event::Html(t)
            | Event::InlineHtml(t)
            | Event::InlineMath(t)
            | Event::DisplayMath(t)
            | Event::FootnoteReference(t) => self.text(&t),
            Event::SoftBreak | Event::HardBreak => self.text("\n"),
            Event::Rule => {
                self.block();
                self.out.push_str("----------\n");
            }
            Event::TaskListMarker(done) => self.text(if done { "[x] " } else { "[ ] " }),
        }
    }

    fn start(&mut self, tag: Tag<'_>) {
        match tag {
            Tag::Paragraph => self.block(),
            Tag::Heading { .. } => {
                self.block();
                self.heading_start = self.out.len();
            }
            Tag::BlockQuote(_) => {
                self.quotes += 1;
            }
            Tag::CodeBlock(_) => {
                self.block();
                self.out.truncate(self.out.trim_end_matches(' ').len());
                self.in_code = true;
            }
            Tag::List(first) => {
                self.newline();
                if self.lists.is_empty() && !self.out.is_empty() {
                    self.out.push('\n');
                }
                self.lists.push(first);
            }
            Tag::Item => {
                self.newline();
                let depth = self.lists.len().saturating_sub(1);
                let marker = match self.lists.last_mut() {
                    Some(Some(n)) => {
                        *n += 1;
                        format!("{}. ", *n - 1)
                    }
                    _ => "- ".to_string(),
                };
                let quotes = "> ".repeat(self.quotes);
                self.out
                    .push_str(&format!("{}{quotes}{marker}", "  ".repeat(depth)));
            }
            Tag::Table(_) => {
                self.block();
                self.table = Some(Vec::new());
            }
            Tag::TableHead | Tag::TableRow => {
                if let Some(rows) = &mut self.table {
                    rows.push(Vec::new());
                }
            }
            Tag::TableCell => {
                if let Some(row) = self.table.as_mut().and_then(|r| r.last_mut()) {
                    row.push(String::new());
                }
            }
            Tag::Link { dest_url, .. } => {
                let start = self.sink().len();
                self.links
                    .push((start, web_link(&dest_url).map(str::to_string)));
            }
            _ => {}
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Paragraph | TagEnd::Item => self.newline(),
            TagEnd::Heading(level) => {
                let width = self.out[self.heading_start..].chars().count();
                let indent = self.indent();
                if matches!(level, HeadingLevel::H1 | HeadingLevel::H2) {
                    self.out
                        .push_str(&format!("\n{indent}{}\n", "~".repeat(width.max(3))));
                } else {
                    self.out.push('\n');
                }
            }
            TagEnd::BlockQuote(_) => self.quotes = self.quotes.saturating_sub(1),
            TagEnd::CodeBlock => {
                self.in_code = false;
                self.newline();
            }
            TagEnd::List(_) => {
                self.lists.pop();
                self.newline();
            }
            TagEnd::Table => {
                if let Some(rows) = self.table.take() {
                    let indent = self.indent();
                    self.out.push_str(&columns(&rows, &indent));
                }
            }
            TagEnd::Link => {
                if let Some((start, Some(url))) = self.links.pop() {
                    let sink = self.sink();
                    if sink.get(start..) != Some(url.as_str()) {
                        sink.push_str(&format!(" ({url})"));
                    }
                }
            }
            _ => {}
        }
    }
}

/// Table rows as aligned columns, a dashed line under the header.
pub fn columns(rows: &[Vec<String>], indent: &str) -> String {
    let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..cols)
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(|s| s.trim().chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |cells: Vec<String>| {
        let padded: Vec<String> = cells
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        format!("{indent}{}\n", padded.join("  ").trim_end())
    };
    let mut s = String::new();
    for (i, r) in rows.iter().enumerate() {
        let cells = (0..cols)
            .map(|c| r.get(c).map_or("", |s| s.trim()).to_string())
            .collect();
        if i == 0 {
            s.push_str(&line(cells));
            s.push_str(&line(widths.iter().map(|w| "-".repeat(*w)).collect()));
        } else {
            s.push_str(&line(cells));
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_becomes_plain_text_without_markers() {
        let md = "# Weekly report\n\nA **calm** week, _mostly_. See `pve1`.\n\n## Act on\n\n\
                  - Free space on pve1\n- Tune [NodeDown](https://wiki.example/nd)\n  - nested\n\n\
                  1. first\n2. second\n\n\
                  | Alert | Episodes |\n|---|--:|\n| NodeDown | 3 |\n\n\
                  ```\nrate(x[5m])\n```\n\n> quoted";
        assert_eq!(
            to_text(md),
            "Weekly report\n~~~~~~~~~~~~~\n\nA calm week, mostly. See pve1.\n\n\
             Act on\n~~~~~~\n\n- Free space on pve1\n\
             - Tune NodeDown (https://wiki.example/nd)\n  - nested\n\n\
             1. first\n2. second\n\n\
             Alert     Episodes\n--------  --------\nNodeDown  3\n\n    rate(x[5m])\n\n> quoted"
        );
    }

    #[test]
    fn raw_html_and_bad_links_stay_inert_text() {
        let t = to_text("Hi <b>there</b> [x](javascript:alert(1)) [y](https://y.example)");
        assert_eq!(t, "Hi <b>there</b> x y (https://y.example)");
        assert_eq!(to_text("<https://a.example>"), "https://a.example");
    }

    #[test]
    fn no_line_starts_with_a_markdown_marker() {
        let t = to_text("# A\n\n**b**\n\n### c\n\n* d\n\n---\n\n`e`");
        for line in t.lines() {
            assert!(!line.starts_with('#') && !line.contains("**") && !line.contains('`'));
        }
    }
}
