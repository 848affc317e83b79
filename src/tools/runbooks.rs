//! `runbook_search`: BM25 over the `##` sections of the markdown files in `runbooks.dir`,
//! loaded once when the registry is built; headings count extra.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use async_trait::async_trait;
use serde_json::{Value, json};

use super::args::required;
use super::{Tool, ToolError};
use crate::text::truncate;

/// One `##` section of a runbook file.
#[derive(Clone, Debug)]
pub struct Section {
    pub file: String,
    pub heading: String,
    pub text: String,
    tf: HashMap<String, f64>,
    len: f64,
}

/// How much a heading token weighs compared with a body token.
const TITLE_BOOST: f64 = 3.0;
const K1: f64 = 1.2;
const B: f64 = 0.75;
/// Sections returned per search.
const TOP: usize = 3;

fn tokens(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|t| t.len() > 1)
        .map(str::to_lowercase)
}

impl Section {
    fn new(file: &str, heading: &str, text: &str) -> Self {
        let mut tf: HashMap<String, f64> = HashMap::new();
        let mut len = 0.0;
        for t in tokens(text) {
            *tf.entry(t).or_default() += 1.0;
            len += 1.0;
        }
        for t in tokens(heading).chain(tokens(file)) {
            *tf.entry(t).or_default() += TITLE_BOOST;
            len += TITLE_BOOST;
        }
        Self {
            file: file.to_string(),
            heading: heading.to_string(),
            text: text.trim().to_string(),
            tf,
            len,
        }
    }
}

/// The runbook sections of a directory, ranked with BM25.
#[derive(Clone, Debug)]
pub struct RunbookIndex {
    pub dir: PathBuf,
    pub sections: Vec<Section>,
}

/// Splits markdown into sections at `##` headings; text before the first `##` is a
/// section under the `#` title (or the file name).
fn split_sections(file: &str, markdown: &str) -> Vec<Section> {
    let mut out = Vec::new();
    let mut heading = file.trim_end_matches(".md").to_string();
    let mut body = String::new();
    for line in markdown.lines() {
        if let Some(h) = line.strip_prefix("## ") {
            if !body.trim().is_empty() {
                out.push(Section::new(file, &heading, &body));
            }
            heading = h.trim().to_string();
            body.clear();
        } else if let Some(h) = line
            .strip_prefix("# ")
            .filter(|_| out.is_empty() && body.trim().is_empty())
        {
            heading = h.trim().to_string();
        } else {
            body.push_str(line);
            body.push('\n');
        }
    }
    if !body.trim().is_empty() {
        out.push(Section::new(file, &heading, &body));
    }
    out
}

fn markdown_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            markdown_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "md") {
            out.push(p);
        }
    }
}

impl RunbookIndex {
    /// Loads every `*.md` under `dir` (recursively); a missing dir gives an empty index.
    pub fn load(dir: &Path) -> Self {
        let mut files = Vec::new();
        markdown_files(dir, &mut files);
        files.sort();
        let mut sections = Vec::new();
        for path in files {
            let name = path
                .strip_prefix(dir)
                .unwrap_or(&path)
                .display()
                .to_string();
            match std::fs::read_to_string(&path) {
                Ok(text) => sections.extend(split_sections(&name, &text)),
                Err(e) => tracing::warn!(file = %path.display(), error = %e, "cannot read runbook"),
            }
        }
        Self {
            dir: dir.to_path_buf(),
            sections,
        }
    }

    /// The best sections for `query`, best first, with their scores.
    pub fn search(&self, query: &str) -> Vec<(f64, &Section)> {
        let n = self.sections.len() as f64;
        if n == 0.0 {
            return Vec::new();
        }
        let avg_len = self.sections.iter().map(|s| s.len).sum::<f64>() / n;
        let mut terms: Vec<String> = tokens(query).collect();
        terms.sort();
        terms.dedup();
        let idf: Vec<f64> = terms
            .iter()
            .map(|t| {
                let df = self
                    .sections
                    .iter()
                    .filter(|s| s.tf.contains_key(t))
                    .count() as f64;
                ((n - df + 0.5) / (df + 0.5) + 1.0).ln()
            })
            .collect();
        let mut scored: Vec<(f64, &Section)> = self
            .sections
            .iter()
            .map(|s| {
                let score = terms
                    .iter()
                    .zip(&idf)
                    .map(|(t, idf)| {
                        let f = s.tf.get(t).copied().unwrap_or(0.0);
                        idf * f * (K1 + 1.0) / (f + K1 * (1.0 - B + B * s.len / avg_len))
                    })
                    .sum::<f64>();
                (score, s)
            })
            .filter(|(score, _)| *score > 0.0)
            .collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0));
        scored.truncate(TOP);
        scored
    }
}

/// `runbook_search`: the best 3 runbook sections for a query.
pub struct RunbookSearch {
    pub index: RunbookIndex,
    pub max_chars: usize,
}

impl RunbookSearch {
    /// The name the tool registers under.
    pub const NAME: &'static str = "runbook_search";
}

#[async_trait]
impl Tool for RunbookSearch {
    fn name(&self) -> &'static str {
        Self::NAME
    }
    fn description(&self) -> &'static str {
        "Search the team's runbooks; returns the 3 best sections."
    }
    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]})
    }
    async fn call(&self, args: Value) -> Result<String, ToolError> {
        let query = required(&args, "query")?;
        if self.index.sections.is_empty() {
            return Ok(format!("no runbooks found in {}", self.index.dir.display()));
        }
        let hits = self.index.search(query);
        if hits.is_empty() {
            return Ok(format!("no runbook section matches {query:?}"));
        }
        let per = self.max_chars / hits.len();
        let parts: Vec<String> = hits
            .iter()
            .map(|(_, s)| {
                let head = format!("### {} — {}\n", s.file, s.heading);
                let room = per.saturating_sub(head.chars().count() + 2);
                head + &truncate(&s.text, room)
            })
            .collect();
        Ok(truncate(&parts.join("\n\n"), self.max_chars))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections_split_at_level_two_headings_under_the_title() {
        let s = split_sections(
            "disk.md",
            "# Disk\nintro text\n## Disk full\nfree space\n## Slow IO\niostat\n",
        );
        let h: Vec<&str> = s.iter().map(|s| s.heading.as_str()).collect();
        assert_eq!(h, ["Disk", "Disk full", "Slow IO"]);
        assert_eq!(s[1].text, "free space");
    }
}
