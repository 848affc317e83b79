//! The data of a report: one struct per section, each collected independently. A section
//! whose collector failed keeps its note (service, URL, error) and whatever it did get.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::period::ReportWindow;
use crate::config::TimeZone;
pub use crate::notify::report::{ReportStatus, ReportTrigger};

/// A section's data plus the notes of what could not be collected.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Section<T> {
    pub data: T,
    pub notes: Vec<String>,
}

impl<T: Default> Section<T> {
    /// A section that could not be collected at all.
    pub fn failed(note: impl Into<String>) -> Self {
        Self {
            data: T::default(),
            notes: vec![note.into()],
        }
    }
}

/// One alert's firing over the period.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct AlertStat {
    pub alertname: String,
    pub severity: String,
    pub episodes: u32,
    pub firing_minutes: f64,
    pub instances: Vec<String>,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct AlertsData {
    /// Noisiest first (episodes, then firing time).
    pub alerts: Vec<AlertStat>,
    pub total_episodes: u32,
    pub total_firing_minutes: f64,
    /// Episodes started per day (report time zone), oldest first: ("Mon 16", n).
    pub per_day: Vec<(String, u32)>,
    /// Grafana-managed alerting, when Grafana is configured.
    pub grafana: Option<GrafanaAlerting>,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct GrafanaAlerting {
    pub rules: usize,
    pub firing_now: Vec<String>,
    pub state_changes: usize,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct SloStatus {
    pub name: String,
    pub objective: f64,
    pub achieved: Option<f64>,
    pub met: Option<bool>,
    /// 1 - (1 - achieved) / (1 - objective); negative when overspent.
    pub budget_left: Option<f64>,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct Availability {
    pub job: String,
    pub instance: String,
    pub ratio: f64,
    pub downtime_minutes: f64,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct SlosData {
    pub slos: Vec<SloStatus>,
    /// `avg_over_time(up[..])` per target, worst first.
    pub targets: Vec<Availability>,
    /// `avg_over_time(probe_success[..])` per probe, worst first.
    pub probes: Vec<Availability>,
    /// Mean availability of probes (or targets) per day, oldest first.
    pub per_day: Vec<(String, f64)>,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct ToolUsage {
    pub tool: String,
    pub calls: f64,
    pub errors: f64,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct AgentData {
    pub investigations: f64,
    /// What counted them: "prometheus" (sre-agent's counters) or "store".
    #[serde(default)]
    pub investigations_source: String,
    /// "trigger/status" → count.
    pub by_trigger_status: BTreeMap<String, f64>,
    pub top_findings: Vec<String>,
    pub tools: Vec<ToolUsage>,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct CostData {
    /// prompt, completion, cached → tokens.
    pub tokens: BTreeMap<String, f64>,
    /// model → dollars.
    pub dollars_by_model: BTreeMap<String, f64>,
    pub dollars_total: f64,
    /// "prometheus" or "store".
    pub source: String,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct JobErrors {
    pub job: String,
    pub this_week: f64,
    pub last_week: f64,
    /// None when last week had none.
    pub change_pct: Option<f64>,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct ErrorPattern {
    pub pattern: String,
    pub count: usize,
    pub example: String,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct LogsData {
    pub jobs: Vec<JobErrors>,
    pub patterns: Vec<ErrorPattern>,
    pub sampled_lines: usize,
}

/// A number compared with the previous stored report.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Delta {
    pub metric: String,
    pub previous: f64,
    pub current: f64,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct ChangesData {
    pub previous_period: Option<String>,
    pub deltas: Vec<Delta>,
}

/// Everything the collectors gathered.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct ReportData {
    pub alerts: Section<AlertsData>,
    pub slos: Section<SlosData>,
    pub agent: Section<AgentData>,
    pub cost: Section<CostData>,
    pub logs: Section<LogsData>,
    pub changes: Section<ChangesData>,
    /// Alert rules that flapped, fired for days, never resolved or lack `severity`
    /// (absent from reports stored before it existed).
    #[serde(default)]
    pub hygiene: Section<HygieneData>,
    /// Recurring incidents and people's verdicts (from the investigations store).
    #[serde(default)]
    pub memory: Section<MemoryData>,
    /// The backups section (PBS backups, Proxmox VE tasks and guests); present only when
    /// `[pbs]` or `[proxmox]` is set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backups: Option<Section<BackupsData>>,
}

/// What is wrong with an alert rule's behaviour or definition.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
pub enum HygieneIssue {
    /// Many short episodes of one series.
    Flapping,
    /// One episode lasted days before it resolved.
    FiredForDays,
    /// Still firing at the end of the period, for a long time.
    NeverResolved,
    /// No `severity` label, so routing and ranking cannot use it.
    NoSeverity,
}

impl HygieneIssue {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Flapping => "flapping",
            Self::FiredForDays => "fired for days",
            Self::NeverResolved => "never resolved",
            Self::NoSeverity => "no severity label",
        }
    }
}

/// One rule with one hygiene problem, what showed it and what to change.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct HygieneFinding {
    pub alertname: String,
    pub issue: HygieneIssue,
    /// What was seen, with numbers ("9 episodes under 10 min on pve1:9100").
    pub evidence: String,
    /// The concrete change ("raise for: from 1m to 10m").
    pub suggestion: String,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct HygieneData {
    /// Alerting rules known from Prometheus' rules API (0 when not reachable).
    pub rules_checked: usize,
    /// Rules with an episode in the period (Prometheus ALERTS and received alerts).
    pub rules_fired: usize,
    /// By issue, then rule name.
    pub findings: Vec<HygieneFinding>,
    /// Findings left out to keep the section short.
    pub omitted: usize,
}

/// A backup group whose newest snapshot is older than `pbs.backup_interval`.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct OverdueBackup {
    pub store: String,
    /// `vm/100`, `ct/200`, `host/nas`.
    pub group: String,
    pub comment: Option<String>,
    pub last_backup: DateTime<Utc>,
    pub age_hours: f64,
}

/// A failed Proxmox VE or Backup Server task in the period.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct FailedTask {
    /// "pbs" or the Proxmox VE node.
    pub source: String,
    pub kind: String,
    pub id: String,
    pub status: String,
    pub started_at: DateTime<Utc>,
}

/// A Proxmox VE guest not running at report time.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct GuestDown {
    pub node: String,
    /// "qemu" or "lxc".
    pub kind: String,
    pub vmid: String,
    pub name: String,
    pub status: String,
}

/// The backups section: PBS backup groups and failed tasks, Proxmox VE guests down.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct BackupsData {
    pub backup_groups: usize,
    pub overdue_backups: Vec<OverdueBackup>,
    pub failed_tasks: Vec<FailedTask>,
    pub guests_down: Vec<GuestDown>,
}

/// An alert investigated more than once in the period.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct RecurringIncident {
    /// "DiskFull (instance=nas)": the alert identity of incident memory.
    pub alert: String,
    pub investigations: u32,
    pub last_seen: DateTime<Utc>,
    pub last_probable_cause: String,
    /// People's verdicts on these investigations.
    pub right: u32,
    pub wrong: u32,
}

/// Incident memory over the period: recurring alerts and feedback counts.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct MemoryData {
    /// Most investigated first.
    pub recurring: Vec<RecurringIncident>,
    /// Investigations of the period whose finding a person marked right or wrong.
    pub feedback_right: u32,
    pub feedback_wrong: u32,
    /// Investigations of the period with a finding and no verdict yet.
    pub unreviewed: u32,
}

/// The executive summary and where it came from.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Summary {
    pub text: String,
    /// The model that wrote it, or None for the automatic summary.
    pub model: Option<String>,
    /// Why the LLM was not used, when it was not.
    pub fallback_reason: Option<String>,
}

/// A generated report, as stored and served by the API.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Report {
    pub id: String,
    pub trigger: ReportTrigger,
    pub window: ReportWindow,
    pub timezone: TimeZone,
    pub created_at: DateTime<Utc>,
    pub status: ReportStatus,
    pub delivery_error: Option<String>,
    pub summary: Summary,
    pub data: ReportData,
}

impl Report {
    /// "sre-agent weekly report 2026-W47 (Nov 16 – Nov 23)".
    pub fn title(&self) -> String {
        let tz = self.timezone.0;
        format!(
            "sre-agent weekly report {} ({})",
            self.window.period,
            self.window.human(tz)
        )
    }
}

/// Sum of `values`, 0 for none. (`Iterator::sum` of f64 starts at -0.0 and printed "-0".)
pub fn total(values: impl IntoIterator<Item = f64>) -> f64 {
    values.into_iter().fold(0.0, |a, b| a + b)
}

#[cfg(test)]
mod tests {
    use super::{ReportStatus, ReportTrigger, total};

    #[test]
    fn every_trigger_and_status_is_stored_by_its_label() {
        for t in ReportTrigger::ALL {
            assert_eq!(serde_json::to_value(t).unwrap(), t.label());
        }
        for s in ReportStatus::ALL {
            assert_eq!(serde_json::to_value(s).unwrap(), s.label());
        }
    }

    #[test]
    fn the_total_of_nothing_is_a_positive_zero_that_prints_as_0() {
        // What `total` is for: the standard sum of no f64 is -0.0, printed "-0".
        assert_eq!(
            format!("{:.0}", std::iter::empty::<f64>().sum::<f64>()),
            "-0"
        );
        let t = total(std::iter::empty());
        assert!(t == 0.0 && t.is_sign_positive());
        assert_eq!(format!("{t:.0} {t:.4}"), "0 0.0000");
        assert_eq!(total([-0.0, -0.0]), 0.0);
        assert!(total([-0.0]).is_sign_positive());
        assert_eq!(total([1.5, 2.0]), 3.5);
    }
}
