//! The executive summary as the LLM answered it. Models often answer the narrative call
//! with JSON (`{"summary": "…", "actions": ["…"]}`, bare or in a ```json fence) although
//! asked for prose: such answers are read leniently into prose and a list of actions, so
//! the report never shows raw JSON. Any other answer is prose and is kept as written.

use serde_json::{Map, Value};

/// An executive summary read from a JSON answer.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Narrative {
    /// The overall state of the week.
    pub summary: String,
    /// The things worth acting on.
    pub actions: Vec<String>,
}

/// Keys (compared without case, `_`, `-` or spaces) holding the prose.
const SUMMARY_KEYS: &[&str] = &[
    "executivesummary",
    "summary",
    "overview",
    "overall",
    "overallstate",
    "narrative",
    "state",
    "status",
    "assessment",
    "headline",
    "text",
    "content",
];

/// Keys holding the action items.
const ACTION_KEYS: &[&str] = &[
    "actions",
    "actionitems",
    "recommendations",
    "recommendedactions",
    "thingstoacton",
    "nextsteps",
    "todo",
    "todos",
    "followups",
    "issues",
    "concerns",
    "risks",
    "items",
];

/// In an action given as an object: its main text, its detail and its priority.
const ACTION_TEXT_KEYS: &[&str] = &[
    "action", "title", "item", "task", "summary", "name", "what", "issue", "text",
];
const ACTION_DETAIL_KEYS: &[&str] = &[
    "detail",
    "details",
    "description",
    "reason",
    "why",
    "rationale",
    "impact",
];
const ACTION_PRIORITY_KEYS: &[&str] = &["priority", "severity", "urgency"];

impl Narrative {
    /// The summary and actions of a JSON answer; `None` when the answer is not JSON (or is
    /// JSON without anything to show), so it is kept as written.
    pub fn from_answer(answer: &str) -> Option<Self> {
        let (value, whole) = json_in(answer)?;
        let n = match &value {
            Value::Object(map) => from_object(map).or_else(|| whole.then(|| any_object(map)))?,
            Value::Array(_) => Narrative {
                summary: String::new(),
                actions: items(&value),
            },
            _ => return None,
        };
        (!n.summary.is_empty() || !n.actions.is_empty()).then_some(n)
    }
}

/// The JSON object or array in `answer`, and whether it was the whole answer (bare or
/// alone in a fence) rather than embedded in other text.
fn json_in(answer: &str) -> Option<(Value, bool)> {
    let t = answer.trim();
    if let Some(open) = t.find("```") {
        let after = &t[open + 3..];
        // Skip the info string (`json`, `JSON`, nothing).
        let body = after.split_once('\n').map_or("", |(_, b)| b);
        let body = body.split("```").next().unwrap_or("");
        let whole = open == 0 && t.ends_with("```");
        if let Some(v) = first_value(body) {
            return Some((v, whole));
        }
    }
    if t.starts_with(['{', '[']) {
        return first_value(t).map(|v| (v, true));
    }
    // "Here is the summary: {…}": the outermost braces.
    let (start, end) = (t.find('{')?, t.rfind('}')?);
    let v: Value = serde_json::from_str(t.get(start..=end)?).ok()?;
    v.is_object().then_some((v, false))
}

/// The JSON object or array at the start of `s` (trailing text ignored).
fn first_value(s: &str) -> Option<Value> {
    let v = serde_json::Deserializer::from_str(s.trim())
        .into_iter::<Value>()
        .next()?
        .ok()?;
    (v.is_object() || v.is_array()).then_some(v)
}

fn normalise(key: &str) -> String {
    key.chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

/// The values of `map` under any of `keys`, in the order of `keys` (a JSON object's own
/// order is not kept).
fn under<'a>(map: &'a Map<String, Value>, keys: &[&str]) -> Vec<&'a Value> {
    keys.iter()
        .flat_map(|want| map.iter().filter(move |(k, _)| normalise(k) == *want))
        .map(|(_, v)| v)
        .collect()
}

/// A narrative from the known keys of `map` (looking one level into nested objects).
fn from_object(map: &Map<String, Value>) -> Option<Narrative> {
    let mut n = Narrative::default();
    let mut found = false;
    for v in under(map, SUMMARY_KEYS) {
        found = true;
        match v {
            Value::Object(inner) => {
                if let Some(inner) = from_object(inner) {
                    append(&mut n.summary, &inner.summary);
                    n.actions.extend(inner.actions);
                }
            }
            other => append(&mut n.summary, &prose(other)),
        }
    }
    for v in under(map, ACTION_KEYS) {
        found = true;
        n.actions.extend(items(v));
    }
    found.then_some(n)
}

/// Unknown keys: the strings are the prose, the first list the actions.
fn any_object(map: &Map<String, Value>) -> Narrative {
    let mut n = Narrative::default();
    for v in map.values() {
        match v {
            Value::String(s) => append(&mut n.summary, s.trim()),
            Value::Array(_) if n.actions.is_empty() => n.actions = items(v),
            _ => {}
        }
    }
    n
}

fn append(to: &mut String, text: &str) {
    if text.is_empty() {
        return;
    }
    if !to.is_empty() {
        to.push(' ');
    }
    to.push_str(text);
}

/// A summary given as a string or a list of sentences.
fn prose(v: &Value) -> String {
    match v {
        Value::String(s) => s.trim().to_string(),
        Value::Array(parts) => {
            let mut out = String::new();
            for p in parts {
                append(&mut out, &prose(p));
            }
            out
        }
        _ => String::new(),
    }
}

/// Action items given as a list (of strings or objects) or as one string of lines.
fn items(v: &Value) -> Vec<String> {
    let list: Vec<String> = match v {
        Value::Array(list) => list.iter().map(item).collect(),
        Value::String(s) => s.lines().map(str::to_string).collect(),
        Value::Object(o) => vec![item(&Value::Object(o.clone()))],
        _ => vec![],
    };
    list.iter()
        .map(|i| unbullet(i).to_string())
        .filter(|i| !i.is_empty())
        .collect()
}

fn item(v: &Value) -> String {
    let Value::Object(o) = v else {
        return match v {
            Value::String(s) => s.trim().to_string(),
            Value::Null => String::new(),
            other => other.to_string(),
        };
    };
    let first = |keys: &[&str]| {
        under(o, keys)
            .into_iter()
            .find_map(|v| v.as_str().map(str::trim).filter(|s| !s.is_empty()))
    };
    let main = first(ACTION_TEXT_KEYS);
    let detail = first(ACTION_DETAIL_KEYS).filter(|d| Some(*d) != main);
    let mut text = match (main, detail) {
        (Some(m), Some(d)) => format!("{m}: {d}"),
        (Some(m), None) => m.to_string(),
        (None, Some(d)) => d.to_string(),
        (None, None) => o
            .values()
            .filter_map(Value::as_str)
            .collect::<Vec<_>>()
            .join(" — "),
    };
    if let Some(p) = first(ACTION_PRIORITY_KEYS) {
        text = format!("[{p}] {text}");
    }
    text
}

/// `s` without a leading list marker (`- `, `* `, `• `, `1. `, `2) `).
fn unbullet(s: &str) -> &str {
    let s = s.trim();
    for marker in ["- ", "* ", "• "] {
        if let Some(rest) = s.strip_prefix(marker) {
            return rest.trim();
        }
    }
    let digits = s.chars().take_while(char::is_ascii_digit).count();
    if digits > 0
        && let Some(rest) = s[digits..]
            .strip_prefix(". ")
            .or_else(|| s[digits..].strip_prefix(") "))
    {
        return rest.trim();
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(answer: &str) -> Narrative {
        Narrative::from_answer(answer).unwrap_or_else(|| panic!("not read: {answer}"))
    }

    fn expected(summary: &str, actions: &[&str]) -> Narrative {
        Narrative {
            summary: summary.into(),
            actions: actions.iter().map(|a| a.to_string()).collect(),
        }
    }

    #[test]
    fn a_bare_json_object_with_summary_and_actions_is_read() {
        let n = parsed(
            r#"{"summary": "A calm week.", "actions": ["Free space on pve1", "Check NodeDown"]}"#,
        );
        assert_eq!(
            n,
            expected("A calm week.", &["Free space on pve1", "Check NodeDown"])
        );
    }

    #[test]
    fn a_json_fence_with_chatter_around_it_is_read() {
        let answer = "Here is the summary:\n```json\n{\"executive_summary\": \"Two outages.\",\n \"recommendations\": [\"- Add a probe for nas\"]}\n```\nLet me know!";
        assert_eq!(
            parsed(answer),
            expected("Two outages.", &["Add a probe for nas"])
        );
        let plain_fence = "```\n{\"summary\": \"Quiet.\", \"things_to_act_on\": []}\n```";
        assert_eq!(parsed(plain_fence), expected("Quiet.", &[]));
    }

    #[test]
    fn key_names_differ_in_case_and_separators() {
        let n = parsed(
            r#"{"Executive Summary": "Busy.", "thingsToActOn": ["1. Rotate logs", "2) Patch"], "Next-Steps": "* Review SLOs\n* Add alerts"}"#,
        );
        assert_eq!(
            n,
            expected(
                "Busy.",
                &["Rotate logs", "Patch", "Review SLOs", "Add alerts"]
            )
        );
    }

    #[test]
    fn a_nested_summary_object_and_sentence_lists_are_read() {
        let n = parsed(
            r#"{"executive_summary": {"overview": ["Mostly calm.", "One incident."], "action_items": ["Fix backups"]}}"#,
        );
        assert_eq!(n, expected("Mostly calm. One incident.", &["Fix backups"]));
    }

    #[test]
    fn actions_given_as_objects_become_one_line_each() {
        let n = parsed(
            r#"{"summary": "S.", "actions": [
                {"action": "Free disk on pve1", "reason": "DiskFillingUp fired 9 times", "priority": "high"},
                {"title": "Tune NodeDown"},
                {"note": "look at nas"}
            ]}"#,
        );
        assert_eq!(
            n.actions,
            [
                "[high] Free disk on pve1: DiskFillingUp fired 9 times",
                "Tune NodeDown",
                "look at nas"
            ]
        );
    }

    #[test]
    fn a_top_level_list_is_a_list_of_actions() {
        assert_eq!(
            parsed(r#"["Fix a", "Fix b"]"#),
            expected("", &["Fix a", "Fix b"])
        );
    }

    #[test]
    fn a_whole_json_answer_with_unknown_keys_still_shows_its_text() {
        let n = parsed(r#"{"week": "Calm overall.", "todo_list": ["x"], "score": 7}"#);
        assert_eq!(n, expected("Calm overall.", &["x"]));
    }

    #[test]
    fn prose_answers_are_not_touched() {
        for answer in [
            "The week was mostly calm.\n- DiskFillingUp on pve1 needs space.",
            "Alert {job=\"api\"} fired twice; see {this}.",
            "Mentions a snippet {\"a\": 1} in passing.",
            "{not json at all",
            "{}",
            r#"{"summary": ""}"#,
            "42",
        ] {
            assert_eq!(Narrative::from_answer(answer), None, "{answer}");
        }
    }
}
