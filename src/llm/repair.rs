//! Reading the almost-JSON that small models write: single-quoted strings, trailing commas,
//! unquoted keys, Python literals, raw newlines in strings, missing closing brackets, an
//! object closed before its last members, code fences, arguments given as a JSON string that
//! contains JSON, and empty arguments.

use serde_json::{Map, Value};

/// Parses `text` as JSON, repairing the common mistakes of small models when strict
/// parsing fails. `None` when even the repaired text is not JSON.
pub fn parse_lenient(text: &str) -> Option<Value> {
    let t = strip_code_fence(text.trim());
    if t.is_empty() {
        return None;
    }
    if let Ok(v) = serde_json::from_str(t) {
        return Some(v);
    }
    serde_json::from_str(&repair(t, false))
        .or_else(|_| serde_json::from_str(&repair(t, true)))
        .ok()
}

/// Tool call arguments as a JSON object when they can be read as one: missing, `null` and
/// empty text are `{}`, text is parsed leniently (also text that is a JSON string holding
/// the object). Anything else is kept (unreadable text as a JSON string) so the agent can
/// tell the model what was wrong.
pub fn tool_arguments(raw: Option<Value>) -> Value {
    match raw {
        None | Some(Value::Null) => Value::Object(Map::new()),
        Some(Value::String(s)) => arguments_from_text(&s, 2),
        Some(other) => other,
    }
}

fn arguments_from_text(s: &str, depth: u8) -> Value {
    if strip_code_fence(s.trim()).is_empty() {
        return Value::Object(Map::new());
    }
    match parse_lenient(s) {
        Some(Value::Object(m)) => Value::Object(m),
        Some(Value::Null) => Value::Object(Map::new()),
        Some(Value::String(inner)) if depth > 0 && inner != s => {
            match arguments_from_text(&inner, depth - 1) {
                Value::Object(m) => Value::Object(m),
                _ => Value::String(s.to_string()),
            }
        }
        _ => Value::String(s.to_string()),
    }
}

/// The inside of a ```` ```lang … ``` ```` block when `text` is one, else `text`.
pub(super) fn strip_code_fence(text: &str) -> &str {
    let Some(rest) = text.strip_prefix("```") else {
        return text;
    };
    let body = rest.split_once('\n').map_or("", |(_, b)| b);
    body.trim_end().strip_suffix("```").unwrap_or(body).trim()
}

/// Rewrites almost-JSON into JSON in one pass: strings in either quote become
/// double-quoted (raw control characters escaped), bare keys are quoted, Python literals
/// become JSON ones, commas before a closing bracket are dropped, a brace that closes the
/// outermost object before more of its members is dropped, and brackets left open at the
/// end are closed. With `loose_quotes`, a double quote inside a string that is not
/// followed by what can follow a string (a model quoting tool output: `"claim": "…
/// {job=~".+"} |~ "(?i)error" …"`) is kept as a character. Text that is far from JSON
/// stays invalid.
fn repair(s: &str, loose_quotes: bool) -> String {
    let chars: Vec<char> = s.chars().collect();
    let mut out = String::with_capacity(s.len() + 8);
    let mut open: Vec<char> = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '"' | '\'' => i = copy_string(&chars, i, loose_quotes, &mut out),
            '{' | '[' => {
                open.push(if c == '{' { '}' } else { ']' });
                out.push(c);
                i += 1;
            }
            '}' | ']' => {
                drop_trailing_comma(&mut out);
                i += 1;
                // The outermost object closed before its last members (`…]}, "next_steps":
                // […]}`): the stray brace is dropped and the members stay in the object.
                if c == '}' && open == ['}'] && member_follows(&chars[i..]) {
                    continue;
                }
                if open.last() == Some(&c) {
                    open.pop();
                }
                out.push(c);
            }
            c if c.is_alphabetic() || c == '_' => {
                let start = i;
                while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                    i += 1;
                }
                let word: String = chars[start..i].iter().collect();
                let next = chars[i..].iter().find(|c| !c.is_whitespace());
                if next == Some(&':') {
                    out.push('"');
                    out.push_str(&word);
                    out.push('"');
                } else {
                    out.push_str(match word.as_str() {
                        "True" => "true",
                        "False" => "false",
                        "None" => "null",
                        w => w,
                    });
                }
            }
            _ => {
                out.push(c);
                i += 1;
            }
        }
    }
    drop_trailing_comma(&mut out);
    while let Some(close) = open.pop() {
        out.push(close);
    }
    out
}

/// Copies the string starting at `chars[start]` (a `"` or `'`) as a JSON string; returns
/// the index after its closing quote. An unterminated string is closed at the end. With
/// `loose`, a `"` closes a double-quoted string only where a string can end (`closes`).
fn copy_string(chars: &[char], start: usize, loose: bool, out: &mut String) -> usize {
    let quote = chars[start];
    out.push('"');
    let mut i = start + 1;
    while i < chars.len() {
        let d = chars[i];
        if d == '\\' && i + 1 < chars.len() {
            match chars[i + 1] {
                // `\'` is not a JSON escape.
                '\'' => out.push('\''),
                e => {
                    out.push('\\');
                    out.push(e);
                }
            }
            i += 2;
            continue;
        }
        if d == quote && !(loose && quote == '"' && !closes(&chars[i + 1..])) {
            i += 1;
            break;
        }
        match d {
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            d => out.push(d),
        }
        i += 1;
    }
    out.push('"');
    i
}

/// Whether a string can end before `rest`: at the end of the text, before a `:`, before a
/// comma and the start of another value or key, or before a closing bracket followed by
/// the end, a comma or another closing bracket.
fn closes(rest: &[char]) -> bool {
    let mut it = rest.iter().copied().filter(|c| !c.is_whitespace());
    match it.next() {
        None | Some(':') => true,
        Some(',') => it
            .next()
            .is_some_and(|c| matches!(c, '"' | '\'' | '{' | '[' | '-') || c.is_alphanumeric()),
        Some('}' | ']') => matches!(it.next(), None | Some(',' | '}' | ']')),
        _ => false,
    }
}

/// Whether `rest` goes on with `, "key":` (or a bare or single-quoted key): another member
/// of an object, not a value.
fn member_follows(rest: &[char]) -> bool {
    let mut it = rest.iter().copied().skip_while(|c| c.is_whitespace());
    if it.next() != Some(',') {
        return false;
    }
    let mut it = it.skip_while(|c| c.is_whitespace()).peekable();
    match it.next() {
        Some(q @ ('"' | '\'')) => {
            let mut escaped = false;
            for c in it.by_ref() {
                match c {
                    _ if escaped => escaped = false,
                    '\\' => escaped = true,
                    c if c == q => break,
                    _ => {}
                }
            }
        }
        Some(c) if c.is_alphabetic() || c == '_' => {
            while it.next_if(|c| c.is_alphanumeric() || *c == '_').is_some() {}
        }
        _ => return false,
    }
    it.find(|c| !c.is_whitespace()) == Some(':')
}

fn drop_trailing_comma(out: &mut String) {
    let kept = out.trim_end().len();
    if out[..kept].ends_with(',') {
        out.truncate(kept - 1);
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_usual_mistakes_of_small_models_are_repaired() {
        let cases = [
            (
                "{'query': 'up', 'time': 'now'}",
                json!({"query": "up", "time": "now"}),
            ),
            ("{\"query\": \"up\",}", json!({"query": "up"})),
            (
                "{query: \"up\", limit: 5}",
                json!({"query": "up", "limit": 5}),
            ),
            (
                "{\"a\": [1, 2,], \"b\": True, \"c\": None}",
                json!({"a": [1, 2], "b": true, "c": null}),
            ),
            (
                "{\"query\": \"rate(x[5m])\"",
                json!({"query": "rate(x[5m])"}),
            ),
            (
                "```json\n{\"node\": \"pve1\"}\n```",
                json!({"node": "pve1"}),
            ),
            (
                "{'msg': 'say \"hi\"', 'it': 'it\\'s'}",
                json!({"msg": "say \"hi\"", "it": "it's"}),
            ),
            ("{\"q\": \"line1\nline2\"}", json!({"q": "line1\nline2"})),
        ];
        for (text, want) in cases {
            assert_eq!(parse_lenient(text), Some(want), "{text}");
        }
    }

    #[test]
    fn an_object_closed_before_its_last_members_keeps_them() {
        // Qwen2.5-Coder-1.5B's finding, as it wrote it: one `}` too many after `evidence`.
        let text = r#"{"summary":"disk filling","evidence":[{"claim":"a{b=\"c\"} 60GiB","tool_call_ids":["e3"]}]},"next_steps":["add storage"]}"#;
        assert_eq!(
            parse_lenient(text),
            Some(json!({"summary": "disk filling",
                "evidence": [{"claim": "a{b=\"c\"} 60GiB", "tool_call_ids": ["e3"]}],
                "next_steps": ["add storage"]}))
        );
        // Two objects in a row are not merged into one, nor is a value after a comma.
        assert_eq!(parse_lenient(r#"{"a": 1}, {"b": 2}"#), None);
        assert_eq!(parse_lenient(r#"{"a": 1}, "b""#), None);
    }

    #[test]
    fn promql_quotes_inside_a_double_quoted_string_are_left_alone() {
        let text = r#"{"query":"sum(vz_stat_disk_usage{type='root'})","time":"now"}"#;
        assert_eq!(
            parse_lenient(text).unwrap()["query"],
            "sum(vz_stat_disk_usage{type='root'})"
        );
    }

    #[test]
    fn double_quotes_of_quoted_tool_output_inside_a_string_are_kept() {
        // Qwen2.5-Coder-1.5B (dns-failures) copied loki_error_summary's header into a claim.
        let text = r#"{"summary":"DNS fails","evidence":[{"claim":"error lines per job, last 1h (sum by (job) (count_over_time({job=~".+"} |~ "(?i)(error|fail)" [3600s]))): {job="pihole"} 28","tool_call_ids":["evidence_1"]}],"next_steps":["check \"DNS\""]}"#;
        let v = parse_lenient(text).unwrap();
        assert_eq!(
            v["evidence"][0]["claim"],
            r#"error lines per job, last 1h (sum by (job) (count_over_time({job=~".+"} |~ "(?i)(error|fail)" [3600s]))): {job="pihole"} 28"#
        );
        assert_eq!(v["evidence"][0]["tool_call_ids"][0], "evidence_1");
        assert_eq!(v["next_steps"][0], r#"check "DNS""#);
        // Strings that end where strings end are read as before.
        let plain = r#"{"a": "x", "b": ["y", "z"], "c": {"d": "e"}}"#;
        assert_eq!(parse_lenient(&repair(plain, true)), parse_lenient(plain));
    }

    #[test]
    fn arguments_are_an_object_when_they_can_be_read_as_one() {
        assert_eq!(tool_arguments(None), json!({}));
        assert_eq!(tool_arguments(Some(json!(""))), json!({}));
        assert_eq!(tool_arguments(Some(json!("  "))), json!({}));
        assert_eq!(tool_arguments(Some(json!({"x": 1}))), json!({"x": 1}));
        assert_eq!(tool_arguments(Some(json!("{'x': 1,}"))), json!({"x": 1}));
        // Arguments double-encoded as a JSON string of JSON.
        let twice = serde_json::to_string(r#"{"query":"up"}"#).unwrap();
        assert_eq!(tool_arguments(Some(json!(twice))), json!({"query": "up"}));
        assert_eq!(tool_arguments(Some(json!("not json"))), json!("not json"));
        assert_eq!(tool_arguments(Some(json!("{not json"))), json!("{not json"));
    }

    #[test]
    fn text_far_from_json_is_not_invented_into_json() {
        assert_eq!(parse_lenient("The disk is full."), None);
        assert_eq!(parse_lenient(""), None);
        assert_eq!(
            parse_lenient("<tools>{\"type\": \"function\", \"function\":}</tools>"),
            None
        );
    }
}
