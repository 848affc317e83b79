//! The structured result of an investigation, parsed leniently from the model's final
//! answer (JSON, possibly broken, inside a code fence or prose), or built from the evidence
//! gathered when the model gave no usable answer; rendered as markdown for email, CLI and
//! reports. A finding never has an empty summary.

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

use super::call_log::CallRecord;
use super::memory::Recurrence;

/// A claim and the tool calls that support it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Evidence {
    #[serde(default, deserialize_with = "text")]
    pub claim: String,
    #[serde(default, deserialize_with = "texts")]
    pub tool_call_ids: Vec<String>,
}

/// What the investigation concluded.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Finding {
    #[serde(default, deserialize_with = "text")]
    pub summary: String,
    #[serde(default, deserialize_with = "text")]
    pub probable_cause: String,
    /// critical | warning | info (as the model said it).
    #[serde(default, deserialize_with = "text")]
    pub severity: String,
    /// high | medium | low (as the model said it).
    #[serde(default, deserialize_with = "text")]
    pub confidence: String,
    #[serde(default, deserialize_with = "evidence")]
    pub evidence: Vec<Evidence>,
    #[serde(default, deserialize_with = "texts")]
    pub next_steps: Vec<String>,
    /// Key figures computed by the tools (how full, how fast, when full), taken from the
    /// results of the calls behind the finding by sre-agent, never from the model
    /// (`figures.rs`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub figures: Vec<Evidence>,
    /// Earlier investigations of the same or a similar alert, set by sre-agent from its
    /// incident memory (`memory.rs`), never from the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recurrence: Option<Recurrence>,
}

impl Finding {
    /// The finding in the model's final answer: a JSON object (repaired when broken, also
    /// inside a code fence or prose, also wrapped as `{"finding": {…}}`) with something to
    /// say. Placeholders copied from the prompt (`"str"`, `"..."`) count as nothing. An
    /// empty summary is filled from the probable cause or the first claim.
    pub fn from_answer(answer: &str) -> Option<Self> {
        let trimmed = answer.trim();
        // Several objects (a tool call written as text, then the finding): the last one
        // that is a finding.
        let objects = json_objects(trimmed);
        if objects.len() > 1
            && let Some(f) = objects.iter().rev().find_map(|o| Self::from_object(o))
        {
            return Some(f);
        }
        let candidate = match (trimmed.find('{'), trimmed.rfind('}')) {
            (Some(a), Some(b)) if a < b => &trimmed[a..=b],
            (Some(a), _) => &trimmed[a..],
            _ => return None,
        };
        Self::from_object(candidate)
    }

    /// The finding in one JSON object's text (repaired when broken).
    fn from_object(candidate: &str) -> Option<Self> {
        let mut v = crate::llm::parse_lenient(candidate)?;
        if let Some(inner) = v
            .as_object()
            .filter(|m| m.len() == 1)
            .and_then(|m| m.values().next())
            .filter(|i| i.get("summary").is_some())
        {
            v = inner.clone();
        }
        let mut f: Finding = serde_json::from_value(v).ok()?;
        // Figures come from tool output and recurrence from memory, never from the model.
        f.figures.clear();
        f.recurrence = None;
        for field in [&mut f.summary, &mut f.probable_cause] {
            if is_placeholder(field) {
                field.clear();
            }
        }
        f.evidence.retain(|e| !is_placeholder(&e.claim));
        f.next_steps.retain(|s| !is_placeholder(s));
        if f.summary.trim().is_empty() {
            f.summary = [f.probable_cause.as_str()]
                .into_iter()
                .chain(f.evidence.iter().map(|e| e.claim.as_str()))
                .find(|t| !t.trim().is_empty())?
                .to_string();
        }
        Some(f)
    }

    /// Parses the model's final answer; anything that is not a JSON finding becomes the
    /// summary as-is.
    pub fn parse(answer: &str) -> Self {
        Self::from_answer(answer).unwrap_or_else(|| Finding {
            summary: answer.trim().to_string(),
            ..Default::default()
        })
    }

    /// The finding of an investigation the model could not conclude: says what went wrong,
    /// and lists what the calls in `gathered` returned (excerpts) as the evidence, at low
    /// confidence.
    pub fn inconclusive(what_went_wrong: &str, gathered: &[&CallRecord]) -> Self {
        let with_data = gathered.iter().filter(|g| g.ok).count();
        let summary = match (gathered.len(), with_data) {
            (0, _) => format!(
                "Inconclusive: {what_went_wrong}. No tool was called, so no data from your \
                 systems supports an answer."
            ),
            (n, 0) => format!(
                "Inconclusive: {what_went_wrong}. None of the {n} tool calls returned data; \
                 their errors are listed below."
            ),
            (n, k) => format!(
                "Inconclusive: {what_went_wrong}. {k} of {n} tool calls returned data; what \
                 they returned is listed below as evidence, without a conclusion."
            ),
        };
        let evidence = gathered
            .iter()
            .rev()
            .take(MAX_GATHERED)
            .rev()
            .map(|r| Evidence {
                claim: format!(
                    "{} {}: {}",
                    r.describe(),
                    if r.ok { "returned" } else { "failed" },
                    one_line(&r.output, GATHERED_EXCERPT_CHARS)
                ),
                tool_call_ids: vec![r.id.clone()],
            })
            .collect();
        Finding {
            summary,
            probable_cause: "Not determined: the model gave no usable conclusion.".into(),
            severity: String::new(),
            confidence: "low".into(),
            evidence,
            next_steps: vec![
                "Read the evidence above and check the affected system by hand.".into(),
                "If this happens often, try a larger model or a more specific question.".into(),
            ],
            figures: Vec::new(),
            recurrence: None,
        }
    }

    /// Markdown for humans: summary first, then cause, evidence and next steps.
    pub fn to_markdown(&self) -> String {
        let mut md = format!("## Summary\n\n{}\n", self.summary.trim());
        let mut meta = Vec::new();
        if !self.severity.is_empty() {
            meta.push(format!("**Severity:** {}", self.severity));
        }
        if !self.confidence.is_empty() {
            meta.push(format!("**Confidence:** {}", self.confidence));
        }
        if !meta.is_empty() {
            md.push_str(&format!("\n{}\n", meta.join(" · ")));
        }
        if let Some(r) = &self.recurrence {
            md.push_str(&format!("\n**Recurrence:** {}\n", r.describe()));
        }
        if !self.probable_cause.is_empty() {
            md.push_str(&format!(
                "\n## Probable cause\n\n{}\n",
                self.probable_cause.trim()
            ));
        }
        if !self.figures.is_empty() {
            md.push_str("\n## Key figures (computed from the tool results)\n\n");
            for f in &self.figures {
                md.push_str(&format!(
                    "- {} (tool call: {})\n",
                    f.claim,
                    f.tool_call_ids.join(", ")
                ));
            }
        }
        if !self.evidence.is_empty() {
            md.push_str("\n## Evidence\n\n");
            for e in &self.evidence {
                if e.tool_call_ids.is_empty() {
                    md.push_str(&format!("- {}\n", e.claim));
                } else {
                    md.push_str(&format!(
                        "- {} (tool calls: {})\n",
                        e.claim,
                        e.tool_call_ids.join(", ")
                    ));
                }
            }
        }
        if !self.next_steps.is_empty() {
            md.push_str("\n## Next steps\n\n");
            for (i, s) in self.next_steps.iter().enumerate() {
                md.push_str(&format!("{}. {s}\n", i + 1));
            }
        }
        md
    }
}

/// The most tool results listed in an inconclusive finding (the latest ones).
const MAX_GATHERED: usize = 8;

/// The longest excerpt of one tool result in an inconclusive finding.
const GATHERED_EXCERPT_CHARS: usize = 300;

/// Text that only repeats the prompt's schema ("str", "...") instead of saying something.
fn is_placeholder(s: &str) -> bool {
    matches!(
        s.trim().trim_matches('.').to_lowercase().as_str(),
        // The last one is the system prompt's own example summary, copied by small models.
        "" | "str" | "string" | "…" | "text" | "what is wrong, with the exact numbers"
    )
}

/// `text` on one line (whitespace runs become one space), at most `max` characters.
fn one_line(text: &str, max: usize) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    crate::text::truncate(&flat, max)
}

fn value_text(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn text<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    Ok(value_text(&Value::deserialize(d)?))
}

fn texts<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    Ok(match Value::deserialize(d)? {
        Value::Array(items) => items.iter().map(value_text).collect(),
        Value::Null => Vec::new(),
        one => vec![value_text(&one)],
    })
}

fn evidence<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Evidence>, D::Error> {
    let items = match Value::deserialize(d)? {
        Value::Array(items) => items,
        Value::Null => Vec::new(),
        one => vec![one],
    };
    Ok(items
        .into_iter()
        .map(|v| match v {
            Value::Object(_) => serde_json::from_value(v).unwrap_or_default(),
            other => Evidence {
                claim: value_text(&other),
                tool_call_ids: Vec::new(),
            },
        })
        .collect())
}

/// The balanced top-level `{…}` objects of `text`, in order (braces inside JSON strings
/// do not count). Offsets are those of ASCII braces, so every slice is on char boundaries.
fn json_objects(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0usize, 0usize);
    let (mut in_string, mut escaped) = (false, false);
    for (i, c) in text.char_indices() {
        if in_string {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' if depth > 0 => in_string = true,
            '{' => {
                if depth == 0 {
                    start = i;
                }
                depth += 1;
            }
            '}' if depth > 0 => {
                depth -= 1;
                if depth == 0
                    && let Some(o) = text.get(start..=i)
                {
                    out.push(o);
                }
            }
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn an_answer_cut_at_the_token_limit_keeps_what_it_said() {
        let cut = r#"{"summary":"disk /srv on nas1 is 97 % full","probable_cause":"backups pile up","severity":"critical","evidence":[{"claim":"free 3 GiB","tool_call_ids":["fact_1"]}],"next_steps":["prune old snap"#;
        let f = Finding::from_answer(cut).expect("a cut answer is read");
        assert_eq!(f.summary, "disk /srv on nas1 is 97 % full");
        assert_eq!(f.evidence.len(), 1);
        let mid_summary = r#"{"summary":"disk /srv on nas1 is 97 % fu"#;
        assert!(Finding::from_answer(mid_summary).is_some_and(|f| f.summary.contains("97 %")));
    }

    use super::*;

    #[test]
    fn of_a_tool_call_written_as_text_then_the_finding_the_finding_is_read() {
        let answer = r#"{"name": "proxmox_tasks", "arguments": {"node": "hv-7"}} {"summary":"backups of hv-7 fail","probable_cause":"the storage is inactive: \"}\" in a string","evidence":[{"claim":"inactive","tool_call_ids":["fact_1"]}]}"#;
        let f = Finding::from_answer(answer).expect("the finding");
        assert_eq!(f.summary, "backups of hv-7 fail");
        assert_eq!(
            f.probable_cause,
            "the storage is inactive: \"}\" in a string"
        );
        assert_eq!(f.evidence[0].tool_call_ids, vec!["fact_1".to_string()]);
        // A tool call alone is no finding; one object is read as before.
        assert!(Finding::from_answer(r#"{"name": "x", "arguments": {}}"#).is_none());
        assert_eq!(
            json_objects("é {\"a\": {\"b\": 1}} x {\"c\": \"{\"} {"),
            vec!["{\"a\": {\"b\": 1}}", "{\"c\": \"{\"}"]
        );
    }

    #[test]
    fn a_json_finding_inside_a_code_fence_is_parsed_leniently() {
        let answer = "Here you go:\n```json\n{\"summary\":\"Disk full\",\"probable_cause\":\"logs\",\
            \"severity\":\"critical\",\"confidence\":0.8,\"evidence\":[{\"claim\":\"95% used\",\
            \"tool_call_ids\":[\"call_1\"]},\"plain claim\"],\"next_steps\":\"rotate logs\"}\n```";
        let f = Finding::parse(answer);
        assert_eq!(f.summary, "Disk full");
        assert_eq!(f.confidence, "0.8");
        assert_eq!(f.evidence[0].tool_call_ids, vec!["call_1"]);
        assert_eq!(f.evidence[1].claim, "plain claim");
        assert_eq!(f.next_steps, vec!["rotate logs"]);
        let md = f.to_markdown();
        assert!(md.contains("## Summary\n\nDisk full") && md.contains("(tool calls: call_1)"));
    }

    #[test]
    fn the_real_small_model_answer_is_read_despite_its_fence() {
        let sample: Value =
            serde_json::from_str(include_str!("../llm/testdata/7tools-system.response.json"))
                .unwrap();
        let answer = sample["choices"][0]["message"]["content"].as_str().unwrap();
        let f = Finding::from_answer(answer).unwrap();
        assert_eq!(f.confidence, "high");
        assert_eq!(
            f.evidence[0].tool_call_ids,
            ["proxmox_storage", "current_time"]
        );
    }

    #[test]
    fn a_finding_whose_object_closed_before_next_steps_is_read_whole() {
        // Qwen2.5-Coder-1.5B on the disk-filling scenario (eval notes), twice in a row: a
        // stray `}` after `evidence` ended two investigations `inconclusive`.
        let answer = r#"{"summary":"the filesystem /var/lib/vz on pve1 is filling up","probable_cause":"the filesystem is running out of space","severity":"critical","confidence":"high","evidence":[{"claim":"node_filesystem_avail_bytes{device=\"/dev/mapper/pve-data\",fstype=\"ext4\",instance=\"pve1:9100\",job=\"node\",mountpoint=\"/var/lib/vz\"} min=60GiB avg=66.1GiB max=72.1GiB last=60GiB trend=falling (181 points)","tool_call_ids":["evidence_3"]},{"claim":"node_filesystem_size_bytes{device=\"/dev/mapper/pve-data\",fstype=\"ext4\",instance=\"pve1:9100\",job=\"node\",mountpoint=\"/var/lib/vz\"} min=1TiB avg=1TiB max=1TiB last=1TiB trend=flat (181 points)","tool_call_ids":["evidence_4"]}]},"next_steps":["check disk usage, consider adding more storage, or optimize disk usage"]}"#;
        let f = Finding::from_answer(answer).expect("read despite the stray brace");
        assert_eq!(f.severity, "critical");
        assert_eq!(f.evidence.len(), 2);
        assert_eq!(f.evidence[1].tool_call_ids, ["evidence_4"]);
        assert_eq!(f.next_steps.len(), 1);
    }

    #[test]
    fn broken_or_wrapped_json_findings_are_read_and_empty_ones_are_not() {
        let broken = "{'summary': 'Disk 87.3% full', 'confidence': 'low',}";
        assert_eq!(
            Finding::from_answer(broken).unwrap().summary,
            "Disk 87.3% full"
        );
        let wrapped = r#"{"finding": {"summary": "ok", "severity": "info"}}"#;
        assert_eq!(Finding::from_answer(wrapped).unwrap().summary, "ok");
        let cause_only = r#"{"summary": "", "probable_cause": "logs grow"}"#;
        assert_eq!(
            Finding::from_answer(cause_only).unwrap().summary,
            "logs grow"
        );
        for nothing in [
            "",
            "   ",
            "The disk is probably full.",
            "{}",
            r#"{"summary": "str", "probable_cause": "str", "evidence": [{"claim": "str"}]}"#,
            r#"{"summary": ""}"#,
        ] {
            assert_eq!(Finding::from_answer(nothing), None, "{nothing:?}");
        }
    }

    #[test]
    fn an_inconclusive_finding_says_what_went_wrong_and_lists_the_evidence() {
        let record = |id: &str, name: &str, args: Value, ok: bool, output: &str| CallRecord {
            id: id.into(),
            name: name.into(),
            arguments: args,
            ok,
            output: output.into(),
            repeat_of: None,
            facts: Vec::new(),
        };
        let gathered = [
            record(
                "call_1",
                "prometheus_query",
                serde_json::json!({"query": "up"}),
                true,
                "1 series:\n{instance=\"pve1:9100\"} = 1",
            ),
            record(
                "call_2",
                "loki_query",
                serde_json::json!({}),
                false,
                "error: missing query",
            ),
        ];
        let gathered: Vec<&CallRecord> = gathered.iter().collect();
        let f = Finding::inconclusive("the model answered with an empty message", &gathered);
        assert!(
            f.summary
                .starts_with("Inconclusive: the model answered with an empty message. 1 of 2"),
            "{}",
            f.summary
        );
        assert_eq!(f.confidence, "low");
        assert_eq!(f.evidence.len(), 2);
        assert_eq!(f.evidence[0].tool_call_ids, ["call_1"]);
        assert!(
            f.evidence[0]
                .claim
                .contains("prometheus_query {\"query\":\"up\"} returned: 1 series: {instance=\"pve1:9100\"} = 1"),
            "{}",
            f.evidence[0].claim
        );
        assert!(f.evidence[1].claim.starts_with("loki_query failed: error"));
        let none = Finding::inconclusive("garbage", &[]);
        assert!(none.summary.contains("No tool was called"));
        assert!(!none.summary.is_empty());
    }

    #[test]
    fn text_that_is_not_a_finding_becomes_the_summary() {
        let f = Finding::parse("The node is fine {maybe}.");
        assert_eq!(f.summary, "The node is fine {maybe}.");
        assert!(f.evidence.is_empty());
    }
}
