//! The report as a list of blocks (headings, paragraphs, tables, notes, charts): what the
//! section writers (`document`, `backups`, `hygiene`) produce and the writers (`markdown`,
//! `text`, `html`) render.

use super::chart::Chart;
use crate::report::model::Section;

/// One block of the rendered report.
pub enum Block {
    Heading(String),
    Para(String),
    List(Vec<String>),
    Table(Vec<&'static str>, Vec<Vec<String>>),
    /// A collector failure note.
    Note(String),
    /// Index into the charts.
    Chart(usize),
    /// Markdown written by the model (untrusted): rendered to sanitised HTML or plain
    /// text, kept as written in the markdown output.
    Markdown(String),
}

/// The blocks and charts of a report.
pub struct Document {
    pub title: String,
    pub blocks: Vec<Block>,
    pub charts: Vec<Chart>,
}

impl Document {
    pub fn new(title: String) -> Self {
        Self {
            title,
            blocks: Vec::new(),
            charts: Vec::new(),
        }
    }

    pub fn push(&mut self, block: Block) {
        self.blocks.push(block);
    }

    /// Adds `chart` and a block showing it.
    pub fn chart(&mut self, chart: Chart) {
        self.charts.push(chart);
        self.blocks.push(Block::Chart(self.charts.len() - 1));
    }

    /// A note for each thing the section's collector could not get.
    pub fn notes<T>(&mut self, s: &Section<T>) {
        self.blocks
            .extend(s.notes.iter().map(|n| Block::Note(n.clone())));
    }
}
