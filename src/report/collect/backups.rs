//! The weekly report's backups section: PBS backup groups whose newest snapshot is older
//! than `pbs.backup_interval`, failed PBS and Proxmox VE tasks in the period, and Proxmox
//! VE guests that are not running (templates excluded).

use chrono::{DateTime, Utc};

use super::CollectContext;
use crate::config::Config;
use crate::integrations::pbs::PbsClient;
use crate::integrations::proxmox::ProxmoxClient;
use crate::report::model::{BackupsData, FailedTask, GuestDown, OverdueBackup, Section};

/// Whether this section applies.
pub fn configured(config: &Config) -> bool {
    config.pbs.url.is_some() || config.proxmox.url.is_some()
}

fn at(unix: i64) -> DateTime<Utc> {
    DateTime::from_timestamp(unix, 0).unwrap_or_default()
}

pub async fn collect(ctx: &CollectContext) -> Section<BackupsData> {
    let mut s = Section::<BackupsData>::default();
    let start = ctx.window.start.timestamp();
    let end = ctx.window.end;
    if let Some(client) = &ctx.upstreams.pbs
        && let Err(note) = pbs(ctx, client, &mut s.data, start, end).await
    {
        s.notes.push(note);
    }
    if let Some(client) = &ctx.upstreams.proxmox
        && let Err(note) = proxmox(client, &mut s.data, start).await
    {
        s.notes.push(note);
    }
    s.data.failed_tasks.sort_by_key(|t| t.started_at);
    s
}

async fn pbs(
    ctx: &CollectContext,
    client: &PbsClient,
    data: &mut BackupsData,
    start: i64,
    end: DateTime<Utc>,
) -> Result<(), String> {
    let limit = chrono::Duration::from_std(ctx.config.pbs.backup_interval.get())
        .unwrap_or(chrono::Duration::hours(26));
    for store in client.datastores().await.map_err(|e| e.to_string())? {
        let groups = client
            .groups(&store.store)
            .await
            .map_err(|e| e.to_string())?;
        data.backup_groups += groups.len();
        for g in groups {
            let last = at(g.last_backup);
            if end - last > limit {
                data.overdue_backups.push(OverdueBackup {
                    store: store.store.clone(),
                    group: format!("{}/{}", g.backup_type, g.backup_id),
                    comment: g.comment,
                    last_backup: last,
                    age_hours: (end - last).num_minutes() as f64 / 60.0,
                });
            }
        }
    }
    data.overdue_backups.sort_by_key(|o| o.last_backup);
    for t in client
        .tasks(true, Some(start))
        .await
        .map_err(|e| e.to_string())?
    {
        let status = t.status.unwrap_or_default();
        if status.is_empty() || status == "OK" || t.starttime.is_some_and(|s| s < start) {
            continue;
        }
        data.failed_tasks.push(FailedTask {
            source: "pbs".into(),
            kind: t.kind,
            id: t.id.unwrap_or_default(),
            status,
            started_at: at(t.starttime.unwrap_or_default()),
        });
    }
    Ok(())
}

async fn proxmox(client: &ProxmoxClient, data: &mut BackupsData, start: i64) -> Result<(), String> {
    for node in client.nodes().await.map_err(|e| e.to_string())? {
        if node.status != "online" {
            data.guests_down.push(GuestDown {
                node: node.node.clone(),
                kind: "node".into(),
                vmid: "-".into(),
                name: node.node.clone(),
                status: node.status.clone(),
            });
            continue;
        }
        for (kind, g) in client.guests(&node.node).await.map_err(|e| e.to_string())? {
            let template = g.template.as_ref().is_some_and(|t| t == 1 || t == "1");
            if template || g.status == "running" {
                continue;
            }
            data.guests_down.push(GuestDown {
                node: node.node.clone(),
                kind: kind.into(),
                vmid: match &g.vmid {
                    serde_json::Value::String(s) => s.clone(),
                    other => other.to_string(),
                },
                name: g.name.unwrap_or_default(),
                status: g.status,
            });
        }
        let tasks = client
            .tasks(&node.node, true, Some(start))
            .await
            .map_err(|e| e.to_string())?;
        for t in tasks {
            let status = t.status.unwrap_or_default();
            if status.is_empty() || status == "OK" || t.starttime.is_some_and(|s| s < start) {
                continue;
            }
            data.failed_tasks.push(FailedTask {
                source: t.node,
                kind: t.kind,
                id: t.id.unwrap_or_default(),
                status,
                started_at: at(t.starttime.unwrap_or_default()),
            });
        }
    }
    Ok(())
}
