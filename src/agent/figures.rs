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
/// An overview's disk at or above this share of time busy with I/O is saturated (its line
/// is a problem line).
const SATURATED_PERCENT: f64 = 80.0;
/// Most log lines (the most frequent patterns of a log summary) kept as problem lines.
const MAX_LOG_LINES: usize = 2;
/// Longest problem line kept.
const MAX_LINE_CHARS: usize = 300;
/// Longest query quoted in a figure.
const MAX_QUERY_CHARS: usize = 80;

/// The key figures of `finding`, from `records`: alert-first evidence and what it cites.
pub fn for_finding(finding: &Finding, records: &[CallRecord]) -> Vec<Evidence> {
    let cited: Vec<String> = finding
        .evidence
        .iter()
        .flat_map(|e| e.tool_call_ids.iter().cloned())
        .collect();
    let mentions = [&finding.summary, &finding.probable_cause]
        .into_iter()
        .chain(finding.evidence.iter().map(|e| &e.claim))
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join("\n");
    figures(records, &cited, &mentions)
}

/// The figures in `records` (alert-first evidence and the calls the finding cites), in
/// call order, without repeats. Of the dated values (`when_lines`), only those about a
/// series `mentions` (the finding's text) names, when it names any: a finding about the
/// wrong series then shows that series' own figures, which contradict it.
pub fn figures(records: &[CallRecord], cited: &[String], mentions: &str) -> Vec<Evidence> {
    // (what a dated value is about, or None for other figures; claim; call id)
    let mut found: Vec<(Option<String>, String, &str)> = Vec::new();
    let relevant = records.iter().filter(|r| {
        r.ok && r.repeat_of.is_none() && (r.id.starts_with("evidence_") || cited.contains(&r.id))
    });
    for r in relevant {
        let id = r.id.as_str();
        found.extend(figure_lines(&r.output).into_iter().map(|c| (None, c, id)));
        let query = r.arguments.get("query").and_then(|q| q.as_str());
        found.extend(
            when_lines(&r.output, query.unwrap_or(""))
                .into_iter()
                .map(|(about, c)| (Some(about), c, id)),
        );
        if r.id.starts_with("evidence_") {
            found.extend(problem_lines(&r.output).into_iter().map(|c| (None, c, id)));
        }
    }
    let named = |about: &Option<String>| {
        about
            .as_ref()
            .is_some_and(|a| mentions.contains(a) || mentions.contains(host(a)))
    };
    let any_named = found.iter().any(|(about, _, _)| named(about));
    let mut out: Vec<Evidence> = Vec::new();
    for (about, claim, id) in found {
        if out.len() == MAX_FIGURES {
            break;
        }
        let kept = about.is_none() || !any_named || named(&about);
        if kept && !out.iter().any(|f| f.claim == claim) {
            out.push(Evidence {
                claim,
                tool_call_ids: vec![id.to_string()],
            });
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

/// The values a Prometheus result dated or measured in time (`tools::format::value_note`:
/// `431999 (5.0 days)`, `last=1795938231 (2026-11-29 07:43 UTC, in 5.0 days)`), each as
/// (instance, "instance: query = value (note)"; ", last value (note)" for a range).
fn when_lines(output: &str, query: &str) -> Vec<(String, String)> {
    let query = crate::text::truncate(query, MAX_QUERY_CHARS);
    output
        .lines()
        .filter(|l| !l.starts_with(' '))
        .filter_map(|line| {
            let about = identity(line);
            let range = line.split_once(" last=");
            let (value, note) = match range {
                Some((_, rest)) => rest.split(" trend=").next()?.split_once(" (")?,
                None => {
                    let (head, note) = line.rsplit_once(" (")?;
                    (head.rsplit_once(' ')?.1, note)
                }
            };
            let note = note.strip_suffix(')')?;
            let timed = [" days", " h", " min", " s"]
                .iter()
                .any(|u| note.ends_with(u) || note.contains(&format!("{u} ago")));
            let subject = if query.is_empty() {
                about.clone()
            } else {
                format!("{about}: {query}")
            };
            let claim = if range.is_some() {
                format!("{subject}, last {value} ({note})")
            } else {
                format!("{subject} = {value} ({note})")
            };
            (timed && value.parse::<f64>().is_ok() && !about.is_empty()).then_some((about, claim))
        })
        .collect()
}

/// Lines of an overview tool's output that state a problem (`PROBLEM_WORDS`, a saturated
/// disk: "disk sdb busy: last 98.0 %, …"), and the first `MAX_LOG_LINES` of a log
/// summary's most frequent error lines (`tools::compact::compact_logs`: "28× [job=pihole]
/// last …: reply error is SERVFAIL api.thetvdb.com from 1.1.1.1#53").
fn problem_lines(output: &str) -> Vec<String> {
    let mut logs = 0;
    output
        .lines()
        .map(str::trim)
        .filter(|l| {
            let log = l
                .split_once("× [")
                .is_some_and(|(n, _)| n.parse::<u64>().is_ok());
            if log {
                logs += 1;
                return logs <= MAX_LOG_LINES;
            }
            let saturated = l
                .strip_prefix("disk ")
                .and_then(|r| r.split_once(" busy: last "))
                .and_then(|(_, r)| r.split(' ').next()?.parse::<f64>().ok())
                .is_some_and(|busy| busy >= SATURATED_PERCENT);
            saturated || (!l.contains("linear fit") && PROBLEM_WORDS.iter().any(|w| l.contains(w)))
        })
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

/// The host of an instance as people write it: `nas.home.lan` of `https://nas.home.lan`,
/// `pve1` of `pve1:9100`.
fn host(instance: &str) -> &str {
    let rest = instance.split_once("://").map_or(instance, |(_, r)| r);
    rest.split([':', '/', ' ']).next().unwrap_or(rest)
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
        let figs = figures(&[record("evidence_2", RANGE)], &[], "");
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
        assert!(figures(&records, &[], "").is_empty());
        let figs = figures(&records, &["call_1".into()], "");
        assert_eq!(
            figs[0].claim,
            "filesystem /var/lib/vz: used 94.1 %; falling 48.8 GiB/day; full in ~1.2 days (2026-11-25 05:32 UTC)"
        );
    }

    #[test]
    fn a_step_change_says_since_when_for_its_series() {
        let out = "{instance=\"pve2:9100\",job=\"node\"} min=0 max=1 last=0 trend=falling (181 points)\n  1 → 0 at 2026-11-24 00:25 UTC, down since 00:25 UTC (48 min)";
        let figs = figures(&[record("evidence_1", out)], &[], "");
        assert_eq!(
            figs[0].claim,
            "pve2:9100: 1 → 0 at 2026-11-24 00:25 UTC, down since 00:25 UTC (48 min)"
        );
    }

    #[test]
    fn problem_lines_of_evidence_are_kept_and_those_of_the_models_calls_are_not() {
        let out = "tank: DEGRADED, 2 vdevs\n  sdb: FAULTED (too many errors)\n  sdc: ONLINE";
        let figs = figures(&[record("evidence_1", out)], &[], "");
        let claims: Vec<&str> = figs.iter().map(|f| f.claim.as_str()).collect();
        assert_eq!(
            claims,
            vec!["tank: DEGRADED, 2 vdevs", "sdb: FAULTED (too many errors)"]
        );
        assert!(figures(&[record("call_1", out)], &["call_1".into()], "").is_empty());
    }

    #[test]
    fn the_most_frequent_error_lines_of_a_log_summary_are_kept() {
        // loki_error_summary of dns-failures (the 1.5B model wrote "the TVDB API").
        let out = "error lines per job, last 1h (sum by (job) (…)):\n{job=\"sonarr\"} 28\n\
                   56 lines in 2 streams, 3 patterns (count, stream, newest example):\n\
                   28× [job=sonarr] last 11-25 01:02:00: [Warn] SkyHookProxy: Unable to connect to api.thetvdb.com: getaddrinfo EAI_AGAIN api.thetvdb.com\n\
                   27× [job=pihole] last 11-25 01:02:00: reply error is SERVFAIL api.thetvdb.com from 1.1.1.1#53\n\
                   1× [job=sonarr] last 11-25 00:10:00: [Warn] Rss sync: 0 reports";
        let figs = figures(&[record("evidence_1", out)], &[], "");
        let claims: Vec<&str> = figs.iter().map(|f| f.claim.as_str()).collect();
        assert_eq!(claims.len(), 2, "{claims:?}");
        assert!(claims[0].starts_with("28× [job=sonarr]") && claims[0].contains("EAI_AGAIN"));
        assert!(claims[1].starts_with("27× [job=pihole]"));
    }

    #[test]
    fn a_saturated_disk_of_an_overview_is_a_problem_line() {
        let out = "docker1:8080, docker1:9100 over the last 6h\ncpu used: last 12.0 %, avg 11.0 %, max 14.0 %\n\
                   disk sdb busy: last 98.0 %, avg 21.4 %, max 98.0 %\n\
                   disk sda busy: last 2.0 %, avg 2.0 %, max 2.0 %";
        let figs = figures(&[record("evidence_3", out)], &[], "");
        let claims: Vec<&str> = figs.iter().map(|f| f.claim.as_str()).collect();
        assert_eq!(
            claims,
            ["disk sdb busy: last 98.0 %, avg 21.4 %, max 98.0 %"]
        );
    }

    #[test]
    fn output_without_computed_trends_gives_no_figures() {
        assert!(figures(&[record("evidence_1", "up{instance=\"a\"} 1")], &[], "").is_empty());
    }

    #[test]
    fn dated_values_become_figures_about_the_series_the_finding_names() {
        let instant = "2 series; common labels {job=\"blackbox\"}\n{instance=\"https://photos.home.lan\"} 6911999 (80.0 days)\n{instance=\"https://nas.home.lan\"} 431999 (5.0 days)";
        let mut r = record("evidence_1", instant);
        r.arguments = json!({"query": "probe_ssl_earliest_cert_expiry - time()"});
        let claims = |mentions: &str| -> Vec<String> {
            figures(std::slice::from_ref(&r), &[], mentions)
                .into_iter()
                .map(|f| f.claim)
                .collect()
        };
        assert_eq!(
            claims("the certificate of https://nas.home.lan expires soon"),
            ["https://nas.home.lan: probe_ssl_earliest_cert_expiry - time() = 431999 (5.0 days)"]
        );
        assert_eq!(
            claims("no firing alerts").len(),
            2,
            "names none: all of them"
        );
        let range = "1 series\nprobe_ssl_earliest_cert_expiry{instance=\"https://nas.home.lan\",job=\"blackbox\"} min=1795938231 avg=1795938231 max=1795938231 last=1795938231 (2026-11-29 07:43 UTC, in 5.0 days) trend=flat (61 points)";
        let figs = figures(&[record("evidence_2", range)], &[], "");
        assert_eq!(
            figs[0].claim,
            "https://nas.home.lan, last 1795938231 (2026-11-29 07:43 UTC, in 5.0 days)"
        );
        let plain = "1 series\nup{instance=\"a\"} min=1 avg=1 max=1 last=1 trend=flat (5 points)";
        assert!(figures(&[record("evidence_3", plain)], &[], "").is_empty());
    }
}
