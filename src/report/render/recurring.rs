//! The "Recurring incidents" blocks: alerts investigated more than once in the period, and
//! how many findings people marked right or wrong.

use super::block::Block;
use crate::report::model::{MemoryData, Section};
use crate::text::truncate;

/// Appends the section's heading, notes, feedback counts and table to `b`.
pub fn blocks(b: &mut Vec<Block>, s: &Section<MemoryData>) {
    b.push(Block::Heading("Recurring incidents".into()));
    b.extend(s.notes.iter().map(|n| Block::Note(n.clone())));
    let m = &s.data;
    b.push(Block::Para(format!(
        "Feedback from people: {} findings marked right, {} marked wrong, {} without a verdict.",
        m.feedback_right, m.feedback_wrong, m.unreviewed
    )));
    if m.recurring.is_empty() {
        b.push(Block::Para(
            "No alert was investigated more than once this period.".into(),
        ));
        return;
    }
    b.push(Block::Table(
        vec![
            "Alert",
            "Investigations",
            "Last seen",
            "Last probable cause",
            "Verdicts",
        ],
        m.recurring
            .iter()
            .map(|r| {
                vec![
                    r.alert.clone(),
                    r.investigations.to_string(),
                    r.last_seen.format("%Y-%m-%d %H:%M UTC").to_string(),
                    truncate(&r.last_probable_cause, 160),
                    match (r.right, r.wrong) {
                        (0, 0) => "none".to_string(),
                        (right, wrong) => format!("{right} right, {wrong} wrong"),
                    },
                ]
            })
            .collect(),
    ));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::model::RecurringIncident;

    #[test]
    fn recurring_incidents_become_a_table_with_counts_and_verdicts() {
        let s = Section {
            data: MemoryData {
                recurring: vec![RecurringIncident {
                    alert: "DiskFull (instance=nas)".into(),
                    investigations: 3,
                    last_probable_cause: "logs grow".into(),
                    right: 1,
                    wrong: 1,
                    ..Default::default()
                }],
                feedback_right: 4,
                feedback_wrong: 1,
                unreviewed: 2,
            },
            notes: Vec::new(),
        };
        let mut b = Vec::new();
        blocks(&mut b, &s);
        assert!(matches!(&b[0], Block::Heading(h) if h == "Recurring incidents"));
        assert!(
            matches!(&b[1], Block::Para(p) if p.contains("4 findings marked right, 1 marked wrong, 2 without"))
        );
        let Block::Table(head, rows) = &b[2] else {
            panic!("a table")
        };
        assert_eq!(head[0], "Alert");
        assert_eq!(rows[0][0], "DiskFull (instance=nas)");
        assert_eq!(rows[0][1], "3");
        assert_eq!(rows[0][4], "1 right, 1 wrong");
    }
}
