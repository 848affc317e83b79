//! Markdown: the API's and the CLI's `markdown` format (the email's text part is `text`).

use std::fmt::Write as _;

use super::block::{Block, Document};

pub fn render(doc: &Document) -> String {
    let mut s = format!("# {}\n", doc.title);
    for block in &doc.blocks {
        s.push('\n');
        match block {
            Block::Heading(h) => {
                let _ = writeln!(s, "## {h}");
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
                let _ = writeln!(s, "> **Note:** {n}");
            }
            Block::Chart(i) => {
                let _ = writeln!(s, "_{}_", doc.charts[*i].alt);
            }
            Block::Markdown(md) => {
                let _ = writeln!(s, "{}", md.trim_end());
            }
            Block::Table(headers, rows) => {
                let _ = writeln!(s, "| {} |", headers.join(" | "));
                let _ = writeln!(s, "|{}", " --- |".repeat(headers.len()));
                for r in rows {
                    let cells: Vec<String> = r.iter().map(|c| c.replace('|', "\\|")).collect();
                    let _ = writeln!(s, "| {} |", cells.join(" | "));
                }
            }
        }
    }
    s
}
