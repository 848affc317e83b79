//! Proxmox Backup Server tools: datastores (usage, GC), last snapshot per backup group,
//! tasks.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Value, json};

use super::args::arg_bool;
use super::format::{human_age, human_bytes, percent};
use super::{Tool, ToolError};
use crate::integrations::pbs::PbsClient;

const AUDIT: &str = "the Audit role (Datastore.Audit on /datastore, Sys.Audit on /system/tasks)";

#[derive(Clone, Copy, Debug)]
pub enum PbsKind {
    Datastores,
    Backups,
    Tasks,
}

impl PbsKind {
    pub const ALL: [PbsKind; 3] = [Self::Datastores, Self::Backups, Self::Tasks];

    /// The name the tool registers under.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Datastores => "pbs_datastores",
            Self::Backups => "pbs_backups",
            Self::Tasks => "pbs_tasks",
        }
    }
}

/// One Proxmox Backup Server tool.
pub struct PbsTool {
    pub kind: PbsKind,
    pub client: Arc<PbsClient>,
}

#[async_trait]
impl Tool for PbsTool {
    fn name(&self) -> &'static str {
        self.kind.name()
    }

    fn description(&self) -> &'static str {
        match self.kind {
            PbsKind::Datastores => {
                "Proxmox Backup Server datastores: usage, estimated full date, last garbage collection."
            }
            PbsKind::Backups => {
                "Proxmox Backup Server backup groups with their last snapshot and its age, oldest first."
            }
            PbsKind::Tasks => {
                "Recent Proxmox Backup Server tasks (backup, verify, prune, GC, sync); errors_only=true for failed ones."
            }
        }
    }

    fn parameters(&self) -> Value {
        match self.kind {
            PbsKind::Tasks => {
                json!({"type": "object", "properties": {"errors_only": {"type": "boolean"}}})
            }
            _ => json!({"type": "object", "properties": {}}),
        }
    }

    async fn call(&self, args: Value) -> Result<String, ToolError> {
        let c = &self.client;
        let now = chrono::Utc::now().timestamp();
        let mut out = Vec::new();
        match self.kind {
            PbsKind::Datastores => {
                for d in c
                    .datastores()
                    .await
                    .map_err(|e| ToolError::upstream(e, AUDIT))?
                {
                    let pos = |v: Option<i64>| v.filter(|v| *v >= 0).map(|v| v as u64);
                    let mut line = format!(
                        "{} used={}/{} ({})",
                        d.store,
                        human_bytes(pos(d.used).unwrap_or(0)),
                        human_bytes(pos(d.total).unwrap_or(0)),
                        percent(pos(d.used), pos(d.total)),
                    );
                    if let Some(full) = d.estimated_full_date.filter(|f| *f > now) {
                        line.push_str(&format!(" full in ~{}", human_age(full - now)));
                    }
                    match &d.gc_status {
                        Some(gc) if gc.upid.is_some() => line.push_str(&format!(
                            " last GC: removed {} pending {}{}",
                            human_bytes(gc.removed_bytes.unwrap_or(0)),
                            human_bytes(gc.pending_bytes.unwrap_or(0)),
                            gc.still_bad
                                .filter(|b| *b > 0)
                                .map(|b| format!(" {b} bad chunks"))
                                .unwrap_or_default()
                        )),
                        _ => line.push_str(" last GC: never"),
                    }
                    if let Some(err) = &d.error {
                        line.push_str(&format!(" ERROR: {err}"));
                    }
                    out.push(line);
                }
            }
            PbsKind::Backups => {
                for d in c
                    .datastores()
                    .await
                    .map_err(|e| ToolError::upstream(e, AUDIT))?
                {
                    let mut groups = c
                        .groups(&d.store)
                        .await
                        .map_err(|e| ToolError::upstream(e, AUDIT))?;
                    groups.sort_by_key(|g| g.last_backup);
                    for g in groups {
                        out.push(format!(
                            "{}:{}/{} last snapshot {} ago ({}) snapshots={}{}",
                            d.store,
                            g.backup_type,
                            g.backup_id,
                            human_age(now - g.last_backup),
                            chrono::DateTime::from_timestamp(g.last_backup, 0)
                                .map(|t| t.format("%Y-%m-%d %H:%M UTC").to_string())
                                .unwrap_or_default(),
                            g.backup_count.unwrap_or(0),
                            g.comment
                                .as_deref()
                                .filter(|c| !c.is_empty())
                                .map(|c| format!(" ({c})"))
                                .unwrap_or_default(),
                        ));
                    }
                }
            }
            PbsKind::Tasks => {
                let errors_only = arg_bool(&args, "errors_only");
                for t in c
                    .tasks(errors_only, None)
                    .await
                    .map_err(|e| ToolError::upstream(e, AUDIT))?
                {
                    let status = t.status.as_deref().unwrap_or("running");
                    if errors_only && status == "OK" {
                        continue;
                    }
                    out.push(format!(
                        "{} {} by {} started {} ago, status: {}",
                        t.kind,
                        t.id.as_deref().unwrap_or(""),
                        t.user.as_deref().unwrap_or("?"),
                        human_age(now - t.starttime.unwrap_or(now)),
                        status
                    ));
                }
            }
        }
        if out.is_empty() {
            out.push("nothing found".into());
        }
        Ok(out.join("\n"))
    }
}
