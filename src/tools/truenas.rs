//! TrueNAS tools: pools (health, usage), active alerts, disks with temperature and the
//! last SMART test.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Value, json};

use super::format::{human_age, human_bytes, percent};
use super::{Tool, ToolError};
use crate::integrations::truenas::TruenasClient;

const ROLE: &str = "an API key whose user has the READONLY_ADMIN role";

#[derive(Clone, Copy, Debug)]
pub enum TruenasKind {
    Pools,
    Alerts,
    Disks,
}

impl TruenasKind {
    pub const ALL: [TruenasKind; 3] = [Self::Pools, Self::Alerts, Self::Disks];

    /// The name the tool registers under.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Pools => "truenas_pools",
            Self::Alerts => "truenas_alerts",
            Self::Disks => "truenas_disks",
        }
    }
}

/// One TrueNAS tool.
pub struct TruenasTool {
    pub kind: TruenasKind,
    pub client: Arc<TruenasClient>,
}

#[async_trait]
impl Tool for TruenasTool {
    fn name(&self) -> &'static str {
        self.kind.name()
    }

    fn description(&self) -> &'static str {
        match self.kind {
            TruenasKind::Pools => "TrueNAS ZFS pools: status, health, usage, last scrub.",
            TruenasKind::Alerts => "Active (not dismissed) TrueNAS alerts, most severe first.",
            TruenasKind::Disks => {
                "TrueNAS disks: model, pool, temperature and last SMART test result where available."
            }
        }
    }

    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {}})
    }

    async fn call(&self, _args: Value) -> Result<String, ToolError> {
        let c = &self.client;
        let mut out = Vec::new();
        match self.kind {
            TruenasKind::Pools => {
                for p in c.pools().await.map_err(|e| ToolError::upstream(e, ROLE))? {
                    let used = p.allocated;
                    out.push(format!(
                        "{} status={}{}{} used={}/{} ({}){}",
                        p.name,
                        p.status,
                        // Not "healthy=false": a 1.5B model read the word and wrote
                        // "pool is healthy" of a DEGRADED pool.
                        match p.healthy {
                            Some(true) => ", healthy",
                            Some(false) => ", has a problem",
                            None => "",
                        },
                        p.status_detail
                            .as_deref()
                            .map(|d| format!(" ({d})"))
                            .unwrap_or_default(),
                        human_bytes(used.unwrap_or(0)),
                        human_bytes(p.size.unwrap_or(0)),
                        percent(used, p.size),
                        p.scan
                            .as_ref()
                            .map(|s| format!(
                                " last {}: {} errors={}",
                                s.function.as_deref().unwrap_or("scan").to_lowercase(),
                                s.state.as_deref().unwrap_or("?").to_lowercase(),
                                s.errors.unwrap_or(0)
                            ))
                            .unwrap_or_default(),
                    ));
                    for (disk, status, read, write, checksum) in p.unhealthy_devices() {
                        out.push(format!(
                            "  device {disk}: {status} ({read} read, {write} write, {checksum} checksum errors)"
                        ));
                    }
                }
            }
            TruenasKind::Alerts => {
                let rank = |l: &str| match l {
                    "EMERGENCY" => 0,
                    "ALERT" => 1,
                    "CRITICAL" => 2,
                    "ERROR" => 3,
                    "WARNING" => 4,
                    "NOTICE" => 5,
                    _ => 6,
                };
                let mut alerts: Vec<_> = c
                    .alerts()
                    .await
                    .map_err(|e| ToolError::upstream(e, ROLE))?
                    .into_iter()
                    .filter(|a| !a.dismissed)
                    .collect();
                alerts.sort_by_key(|a| rank(&a.level));
                let now = chrono::Utc::now().timestamp();
                for a in alerts {
                    let text = a
                        .formatted
                        .as_deref()
                        .or(a.text.as_deref())
                        .unwrap_or("")
                        .split_whitespace()
                        .collect::<Vec<_>>()
                        .join(" ");
                    out.push(format!(
                        "{} {}{}: {text}",
                        a.level,
                        a.klass,
                        a.datetime
                            .map(|d| format!(" ({} ago)", human_age(now - d.millis / 1000)))
                            .unwrap_or_default(),
                    ));
                }
                if out.is_empty() {
                    out.push("no active alerts".into());
                }
            }
            TruenasKind::Disks => {
                let disks = c.disks().await.map_err(|e| ToolError::upstream(e, ROLE))?;
                // Both are optional: VMs and some controllers report neither.
                let temps = c.temperatures().await.unwrap_or_default();
                let smart = c.smart_results().await.unwrap_or_default();
                for d in disks {
                    let temp = temps.get(&d.name).copied().flatten();
                    let last = smart
                        .iter()
                        .find(|s| s.disk == d.name)
                        .and_then(|s| s.tests.first());
                    out.push(format!(
                        "{} {} {} {}{} temperature={} last SMART test={}",
                        d.name,
                        d.kind.as_deref().unwrap_or("?"),
                        d.model.as_deref().unwrap_or("?"),
                        human_bytes(d.size.unwrap_or(0)),
                        d.pool
                            .as_deref()
                            .map(|p| format!(" pool={p}"))
                            .unwrap_or_default(),
                        temp.map(|t| format!("{t:.0}°C")).unwrap_or("n/a".into()),
                        last.map(|t| format!(
                            "{} {}{}",
                            t.description,
                            t.status,
                            t.status_verbose
                                .as_deref()
                                .filter(|v| !v.is_empty())
                                .map(|v| format!(" ({v})"))
                                .unwrap_or_default()
                        ))
                        .unwrap_or("n/a".into()),
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
