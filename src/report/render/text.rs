//! Plain text: the text part of the email. No markdown markers: the title and headings
//! are underlined, tables are aligned columns, the model's markdown is rendered as text.

use std::fmt::Write as _;

use super::block::{Block, Document};
use super::prose_text;

pub fn render(doc: &Document) -> String {
    let mut s = format!("{}\n{}\n", doc.title, "=".repeat(doc.title.chars().count()));
    for block in &doc.blocks {
        s.push('\n');
        match block {
            Block::Heading(h) => {
                let _ = writeln!(s, "{h}\n{}", "-".repeat(h.chars().count()));
            }
            Block::Para(p) => {
                let _ = writeln!(s, "{}", p.trim_end());
            }
            Block::List(items) => {
                for i in items {
                    let _ = writeln!(s, "- {i}");
                }
            }
            Block::Note(n) => {
                let _ = writeln!(s, "Note: {n}");
            }
            Block::Chart(i) => {
                let _ = writeln!(s, "[chart] {}", doc.charts[*i].alt);
            }
            Block::Table(headers, rows) => {
                let mut all = vec![headers.iter().map(|h| h.to_string()).collect()];
                all.extend(rows.iter().cloned());
                s.push_str(&prose_text::columns(&all, ""));
            }
            Block::Markdown(md) => {
                let _ = writeln!(s, "{}", prose_text::to_text(md));
            }
        }
    }
    s
}
