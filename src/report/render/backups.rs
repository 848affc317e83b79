//! The "Backups and virtualisation" blocks: overdue PBS backup groups, failed Proxmox
//! tasks, and guests that are down.

use super::block::Block;
use crate::report::model::{BackupsData, Section};

/// Appends the section's heading, notes and tables to `b`.
pub fn blocks(b: &mut Vec<Block>, s: &Section<BackupsData>) {
    b.push(Block::Heading("Backups and virtualisation".into()));
    b.extend(s.notes.iter().map(|n| Block::Note(n.clone())));
    let h = &s.data;
    b.push(Block::Para(format!(
        "{} of {} backup groups overdue, {} failed tasks, {} guests down.",
        h.overdue_backups.len(),
        h.backup_groups,
        h.failed_tasks.len(),
        h.guests_down.len()
    )));
    if !h.overdue_backups.is_empty() {
        b.push(Block::Table(
            vec!["Datastore", "Group", "Last snapshot", "Age (h)"],
            h.overdue_backups
                .iter()
                .map(|o| {
                    vec![
                        o.store.clone(),
                        match &o.comment {
                            Some(c) if !c.is_empty() => format!("{} ({c})", o.group),
                            _ => o.group.clone(),
                        },
                        o.last_backup.format("%Y-%m-%d %H:%M UTC").to_string(),
                        super::number::fixed(o.age_hours, 0),
                    ]
                })
                .collect(),
        ));
    }
    if !h.failed_tasks.is_empty() {
        b.push(Block::Table(
            vec!["Where", "Task", "Object", "Started", "Status"],
            h.failed_tasks
                .iter()
                .map(|t| {
                    vec![
                        t.source.clone(),
                        t.kind.clone(),
                        t.id.clone(),
                        t.started_at.format("%Y-%m-%d %H:%M UTC").to_string(),
                        t.status.clone(),
                    ]
                })
                .collect(),
        ));
    }
    if !h.guests_down.is_empty() {
        b.push(Block::Table(
            vec!["Node", "Guest", "Name", "Status"],
            h.guests_down
                .iter()
                .map(|g| {
                    vec![
                        g.node.clone(),
                        format!("{}/{}", g.kind, g.vmid),
                        g.name.clone(),
                        g.status.clone(),
                    ]
                })
                .collect(),
        ));
    }
}
