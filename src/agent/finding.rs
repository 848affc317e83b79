//! The structured result of an investigation, parsed leniently from the model's final
//! answer (JSON, possibly inside a code fence or prose; fallback: the text as summary),
//! and rendered as markdown for email, CLI and reports.

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

/// A claim and the tool calls that support it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Evidence {
    #[serde(default, deserialize_with = "text")]
    pub claim: String,
    #[serde(default, deserialize_with = "texts")]
    pub tool_call_ids: Vec<String>,
}

/// What the investigation concluded.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
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
}

impl Finding {
    /// Parses the model's final answer; anything that is not a JSON finding becomes the
    /// summary as-is.
    pub fn parse(answer: &str) -> Self {
        let trimmed = answer.trim();
        let candidate = match (trimmed.find('{'), trimmed.rfind('}')) {
            (Some(a), Some(b)) if a < b => &trimmed[a..=b],
            _ => "",
        };
        match serde_json::from_str::<Finding>(candidate) {
            Ok(f) if !f.summary.is_empty() || !f.probable_cause.is_empty() => f,
            _ => Finding {
                summary: trimmed.to_string(),
                ..Default::default()
            },
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
        if !self.probable_cause.is_empty() {
            md.push_str(&format!(
                "\n## Probable cause\n\n{}\n",
                self.probable_cause.trim()
            ));
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

#[cfg(test)]
mod tests {
    use super::*;

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
    fn text_that_is_not_a_finding_becomes_the_summary() {
        let f = Finding::parse("The node is fine {maybe}.");
        assert_eq!(f.summary, "The node is fine {maybe}.");
        assert!(f.evidence.is_empty());
    }
}
