//! The report as a list of blocks (headings, paragraphs, tables, notes, charts): what the
//! section builders (`document`, `backups`) produce and the writers (`markdown`, `html`)
//! render.

use super::chart::Chart;

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
}

/// The blocks and charts of a report.
pub struct Document {
    pub title: String,
    pub blocks: Vec<Block>,
    pub charts: Vec<Chart>,
}
