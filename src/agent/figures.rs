//! Key figures: the numbers the tools computed (how full, how fast, when full, since when)
//! taken from the results of the calls behind a finding, and the lines of the alert-first
//! evidence that state a problem (a pod OOMKilled, a disk FAULTED, a task failed), so the
//! finding states them even when a small model paraphrases them away. They come from tool
//! output only (never from the model), each with the call it comes from, and are shown
//! apart from the model's own claims.

use super::call_log::CallRecord;
use super::{Evidence, Finding};

/// Most figures a finding carries.
const MAX_FIGURES: usize = 4;
/// Words of a state worth a person's attention in an overview tool's line (a pod's last
/// termination, a faulted disk, a failed task, a stopped guest).
const PROBLEM_WORDS: &[&str] = &[
    "OOMKilled",
    "exit code",
    "exit=",
    "reason=Error",
    "FAULTED",
    "DEGRADED",
    "UNAVAIL",
    "REMOVED",
    "failed",
    "FAILED",
    "error:",
    "stopped",
    "limits[",
    "top processes by CPU",
];
/// Longest problem line kept.
const MAX_LINE_CHARS: usize = 300;

/// The key figures of `finding`, from `records`: alert-first evidence and what it cites.
pub fn for_finding(finding: &Finding, records: &[CallRecord]) -> Vec<Evidence> {
    let cited: Vec<String> = finding
        .evidence
        .iter()
        .flat_map(|e| e.tool_call_ids.iter().cloned())
        .collect();
    figures(records, &cited)
}

/// The figures in `records` (alert-first evidence and the calls the finding cites), in
/// call order, without repeats.
pub fn figures(records: &[CallRecord], cited: &[String]) -> Vec<Evidence> {
    let mut out: Vec<Evidence> = Vec::new();
    let relevant = records.iter().filter(|r| {
        r.ok && r.repeat_of.is_none() && (r.id.starts_with("evidence_") || cited.contains(&r.id))
    });
    for r in relevant {
        let mut claims = figure_lines(&r.output);
        if r.id.starts_with("evidence_") {
            claims.extend(problem_lines(&r.output));
        }
        for claim in claims {
            if out.len() == MAX_FIGURES {
                return out;
            }
            if !out.iter().any(|f| f.claim == claim) {
                out.push(Evidence {
                    claim,
                    tool_call_ids: vec![r.id.clone()],
                });
            }
        }
    }
    out
}

/// The computed trend lines of a tool output (`tools::trend`: "… (… linear fit) …"),
/// each reduced to what a person reads first (used share, rate, time until full) and
/// prefixed with what it is about (instance and mountpoint of the series above it, or the
/// overview's "filesystem /x:" label).
fn figure_lines(output: &str) -> Vec<String> {
    let mut lines = Vec::new();
    let mut about = String::new();
    for line in output.lines() {
        if !line.starts_with(' ') && !line.contains("linear fit") {
            about = identity(line);
            continue;
        }
        if let Some(step) = step_line(line) {
            lines.push(if about.is_empty() {
                step.to_string()
            } else {
                format!("{about}: {step}")
            });
            continue;
        }
        if !line.contains("linear fit") {
            continue;
        }
        let (label, rest) = match line.trim().split_once(": ") {
            Some((l, r)) if l.starts_with("filesystem ") => (l.to_string(), r),
            _ => (about.clone(), line.trim()),
        };
        let parts: Vec<&str> = rest
            .split("; ")
            .map(str::trim)
            .filter(|p| {
                ["used ", "falling ", "rising ", "full in ", "empty in "]
                    .iter()
                    .any(|k| p.starts_with(k))
            })
            .map(|p| p.split(" (").next().unwrap_or(p).trim())
            .collect();
        let when = rest
            .split("; ")
            .find(|p| p.trim().starts_with("full in ") || p.trim().starts_with("empty in "))
            .and_then(|p| p.split_once(" (").map(|(_, d)| d))
            .and_then(|d| d.split(',').next())
            .map(|d| d.trim_end_matches(')').to_string());
        if parts.is_empty() {
            continue;
        }
        let mut text = parts.join("; ");
        if let Some(when) = when {
            text.push_str(&format!(" ({when})"));
        }
        lines.push(if label.is_empty() {
            text
        } else {
            format!("{label}: {text}")
        });
    }
    lines
}

/// Lines of an overview tool's output that state a problem (`PROBLEM_WORDS`).
fn problem_lines(output: &str) -> Vec<String> {
    output
        .lines()
        .map(str::trim)
        .filter(|l| !l.contains("linear fit") && PROBLEM_WORDS.iter().any(|w| l.contains(w)))
        .map(|l| crate::text::truncate(l, MAX_LINE_CHARS))
        .collect()
}

/// A step-change line of `tools::trend` ("1 → 0 at …, down since 00:25 UTC (48 min)",
/// "200 → 502 at …, 502 for the last 30 min", "no samples since 00:29 UTC (…)").
fn step_line(line: &str) -> Option<&str> {
    let t = line.trim();
    let step = t.contains(" → ")
        && (t.contains("down since") || t.contains("up since") || t.contains(" for the last "));
    (step || t.starts_with("no samples since")).then_some(t)
}

/// `pve1:9100 /var/lib/vz` from a series line `name{…instance="pve1:9100",…mountpoint=
/// "/var/lib/vz"…} min=…`; empty when it names neither.
fn identity(line: &str) -> String {
    let value = |label: &str| {
        let start = line.find(&format!("{label}=\""))? + label.len() + 2;
        let end = line[start..].find('"')? + start;
        Some(line[start..end].to_string())
    };
    [value("instance"), value("mountpoint")]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn record(id: &str, output: &str) -> CallRecord {
        CallRecord {
            id: id.into(),
            name: "prometheus_query_range".into(),
            arguments: json!({}),
            ok: true,
            output: output.into(),
            repeat_of: None,
        }
    }

    const RANGE: &str = "2026-11-17 01:43 to 2026-11-24 01:43 UTC step 1h\n1 series\nnode_filesystem_avail_bytes{device=\"/dev/mapper/pve-data\",instance=\"pve1:9100\",job=\"node\",mountpoint=\"/var/lib/vz\"} min=60.5GiB max=397GiB last=60.5GiB trend=falling (166 points)\n  used 94.1 % (60.5 GiB free of 1 TiB; 64973906829 bytes free); first 397 GiB → last 60.5 GiB over 6days22h (-336 GiB); falling 48.6 GiB/day (2.02 GiB/h, linear fit); full in ~1.2 days (2026-11-25 05:36 UTC, from the last point)";

    #[test]
    fn a_trend_line_becomes_a_short_figure_naming_its_series_and_call() {
        let figs = figures(&[record("evidence_2", RANGE)], &[]);
        assert_eq!(figs.len(), 1);
        assert_eq!(
            figs[0].claim,
            "pve1:9100 /var/lib/vz: used 94.1 %; falling 48.6 GiB/day; full in ~1.2 days (2026-11-25 05:36 UTC)"
        );
        assert_eq!(figs[0].tool_call_ids, vec!["evidence_2"]);
    }

    #[test]
    fn overview_lines_keep_their_own_label_and_uncited_model_calls_give_none() {
        let overview = "pve1:9100 over the last 6h\nfilesystem /var/lib/vz: used 94.1 % (60 GiB free of 1 TiB; 1 bytes free); first 81 GiB → last 60 GiB over 10h20m (-21 GiB); falling 48.8 GiB/day (2.03 GiB/h, linear fit); full in ~1.2 days (2026-11-25 05:32 UTC, from the last point)";
        let records = [record("call_1", overview), record("call_2", RANGE)];
        assert!(figures(&records, &[]).is_empty());
        let figs = figures(&records, &["call_1".into()]);
        assert_eq!(
            figs[0].claim,
            "filesystem /var/lib/vz: used 94.1 %; falling 48.8 GiB/day; full in ~1.2 days (2026-11-25 05:32 UTC)"
        );
    }

    #[test]
    fn a_step_change_says_since_when_for_its_series() {
        let out = "{instance=\"pve2:9100\",job=\"node\"} min=0 max=1 last=0 trend=falling (181 points)\n  1 → 0 at 2026-11-24 00:25 UTC, down since 00:25 UTC (48 min)";
        let figs = figures(&[record("evidence_1", out)], &[]);
        assert_eq!(
            figs[0].claim,
            "pve2:9100: 1 → 0 at 2026-11-24 00:25 UTC, down since 00:25 UTC (48 min)"
        );
    }

    #[test]
    fn problem_lines_of_evidence_are_kept_and_those_of_the_models_calls_are_not() {
        let out = "tank: DEGRADED, 2 vdevs\n  sdb: FAULTED (too many errors)\n  sdc: ONLINE";
        let figs = figures(&[record("evidence_1", out)], &[]);
        let claims: Vec<&str> = figs.iter().map(|f| f.claim.as_str()).collect();
        assert_eq!(
            claims,
            vec!["tank: DEGRADED, 2 vdevs", "sdb: FAULTED (too many errors)"]
        );
        assert!(figures(&[record("call_1", out)], &["call_1".into()]).is_empty());
    }

    #[test]
    fn output_without_computed_trends_gives_no_figures() {
        assert!(figures(&[record("evidence_1", "up{instance=\"a\"} 1")], &[]).is_empty());
    }
}
