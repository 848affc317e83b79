//! Tool calls written as text, for servers that did not parse them (llama.cpp and Ollama
//! with many small models): `<tool_call>{…}</tool_call>` (Hermes, Qwen), fenced ```` ```json
//! ```` or ```` ```tool_call ```` blocks, bare `{"name": …, "arguments": …}` objects or lists
//! of them, `"parameters"` for `"arguments"`, Llama 3.x `<|python_tag|>` and
//! `{"type":"function","name":…,"parameters":…}`, OpenAI's `{"function":{…}}` shape, and
//! Mistral `[TOOL_CALLS] [{…}]` or `[TOOL_CALLS]name[ARGS]{…}`.
//!
//! Only objects naming an offered tool count, so a final JSON finding (which has no tool
//! name) is never mistaken for a call, and neither is an echo of the tool definitions.

use std::sync::LazyLock;

use regex_lite::Regex;
use serde_json::{Map, Value};

use super::names::match_tool_name;
use super::repair::{parse_lenient, tool_arguments};

/// Markers that wrap calls in the chat formats of common models; they carry no JSON.
static MARKERS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)</?tool_call>|</?function_call>|<\|python_tag\|>|<\|eom_id\|>|<\|eot_id\|>|\[TOOL_CALLS\]")
        .expect("valid regex")
});

/// Echoes of the tool definitions (`<tools>…</tools>`), which Qwen models sometimes repeat.
pub(super) static TOOLS_ECHO: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?is)<tools>.*?(</tools>|$)").expect("valid regex"));

/// Mistral's newer format: `[TOOL_CALLS]name[ARGS]{…}` (optionally `[CALL_ID]id` between).
static MISTRAL_ARGS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?:\[TOOL_CALLS\])?\s*([A-Za-z0-9_.\-]+)\s*(?:\[CALL_ID\]\s*[A-Za-z0-9]+\s*)?\[ARGS\]",
    )
    .expect("valid regex")
});

/// Code fences left empty once their calls are taken out.
static EMPTY_FENCE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"```[A-Za-z_]*\s*```").expect("valid regex"));

/// Calls are looked for in the first this many bytes of an answer: a call follows at most
/// a few paragraphs, and an 8 MiB answer of brackets must not be scanned for minutes.
const SCAN_BYTES: usize = 64 * 1024;
/// Bracketed text that is not JSON is tried this many times at most (each try reads to the
/// matching bracket, so unclosed ones would make the scan quadratic).
const MAX_FAILED_TRIES: usize = 64;
/// Calls read from one answer at most (a turn runs far fewer).
const MAX_CALLS: usize = 64;

/// Tool calls read from the text of an answer, and the text that is left.
#[derive(Clone, Debug, PartialEq)]
pub struct TextCalls {
    /// Offered tool names (as offered) with arguments read leniently.
    pub calls: Vec<(String, Value)>,
    /// The answer without the calls and their markers; empty when nothing else was said.
    pub rest: String,
}

/// The calls of offered tools written in `content`, or `None` when there are none.
pub fn extract_text_calls(content: &str, offered: &[&str]) -> Option<TextCalls> {
    if offered.is_empty() {
        return None;
    }
    let text = TOOLS_ECHO.replace_all(content, "").into_owned();
    let mut scan_end = text.len().min(SCAN_BYTES);
    while !text.is_char_boundary(scan_end) {
        scan_end -= 1;
    }
    let scan = &text[..scan_end];
    let mut calls = Vec::new();
    let mut taken: Vec<(usize, usize)> = Vec::new();
    for m in MISTRAL_ARGS.captures_iter(scan) {
        let (whole, name) = (m.get(0).expect("match"), &m[1]);
        let args_start = whole.end()
            + scan[whole.end()..]
                .find(|c: char| !c.is_whitespace())
                .unwrap_or(0);
        if !scan[args_start..].starts_with('{') {
            continue;
        }
        let Some(tool) = match_tool_name(name, offered) else {
            continue;
        };
        let end = matching_end(scan.as_bytes(), args_start);
        let args = Value::String(scan[args_start..end].to_string());
        calls.push((tool.to_string(), tool_arguments(Some(args))));
        taken.push((whole.start(), end));
        if calls.len() >= MAX_CALLS {
            break;
        }
    }
    if calls.is_empty() {
        let bytes = scan.as_bytes();
        let (mut i, mut failed) = (0, 0);
        while i < bytes.len() && failed < MAX_FAILED_TRIES && calls.len() < MAX_CALLS {
            if bytes[i] != b'{' && bytes[i] != b'[' {
                i += 1;
                continue;
            }
            let end = matching_end(bytes, i);
            match parse_lenient(&scan[i..end]).map(|v| calls_in(&v, offered)) {
                Some(found) if !found.is_empty() => {
                    calls.extend(found);
                    taken.push((i, end));
                    i = end;
                }
                // JSON but no call (a finding): nothing inside it is a call either.
                Some(_) => i = end,
                // Not JSON: look inside it too, e.g. at a call after a stray bracket.
                None => {
                    failed += 1;
                    i += 1;
                }
            }
        }
    }
    if calls.is_empty() {
        return None;
    }
    calls.truncate(MAX_CALLS);
    let mut rest = String::new();
    let mut at = 0;
    for (start, end) in taken {
        rest.push_str(&text[at..start]);
        at = end;
    }
    rest.push_str(&text[at..]);
    let rest = MARKERS.replace_all(&rest, "");
    let rest = EMPTY_FENCE.replace_all(&rest, "").trim().to_string();
    Some(TextCalls { calls, rest })
}

/// Calls in a parsed JSON value: one call object, a list of them, or `{"tool_calls": […]}`.
fn calls_in(v: &Value, offered: &[&str]) -> Vec<(String, Value)> {
    match v {
        Value::Array(items) => items.iter().flat_map(|i| calls_in(i, offered)).collect(),
        Value::Object(m) => match m.get("tool_calls") {
            Some(list @ Value::Array(_)) => calls_in(list, offered),
            _ => call_in(m, offered).into_iter().collect(),
        },
        _ => Vec::new(),
    }
}

const NAME_KEYS: [&str; 4] = ["name", "tool", "tool_name", "function"];
const ARGUMENT_KEYS: [&str; 5] = ["arguments", "parameters", "args", "input", "tool_input"];

/// One call object, when it names an offered tool and is not a tool definition.
fn call_in(m: &Map<String, Value>, offered: &[&str]) -> Option<(String, Value)> {
    if let Some(Value::Object(f)) = m.get("function") {
        return call_in(f, offered);
    }
    let name = NAME_KEYS.iter().find_map(|k| m.get(*k)?.as_str())?;
    if m.contains_key("description") {
        return None;
    }
    let tool = match_tool_name(name, offered)?;
    let raw = match ARGUMENT_KEYS.iter().find_map(|k| m.get(*k)) {
        Some(a) => Some(a.clone()),
        // Arguments written next to the name: {"name": "prometheus_query", "query": "up"}.
        None => {
            let flat: Map<String, Value> = m
                .iter()
                .filter(|(k, _)| {
                    !NAME_KEYS.contains(&k.as_str()) && !["type", "id"].contains(&k.as_str())
                })
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            (!flat.is_empty()).then_some(Value::Object(flat))
        }
    };
    let args = tool_arguments(raw);
    let is_schema = args.get("properties").is_some() && args.get("type") == Some(&"object".into());
    (!is_schema).then(|| (tool.to_string(), args))
}

/// The index after the bracket matching the one at `start` (strings respected), or the
/// end of the text when it is never closed.
fn matching_end(b: &[u8], start: usize) -> usize {
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    for (k, &c) in b[start..].iter().enumerate() {
        if in_string {
            if escaped {
                escaped = false;
            } else if c == b'\\' {
                escaped = true;
            } else if c == b'"' {
                in_string = false;
            }
            continue;
        }
        match c {
            b'"' => in_string = true,
            b'{' | b'[' => depth += 1,
            b'}' | b']' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return start + k + 1;
                }
            }
            _ => {}
        }
    }
    b.len()
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::llm::fixtures::{SEVEN, sample};
    use crate::llm::normalize::normalize_response;

    /// The text the model wrote in a `*-raw` sample (a `/v1/completions` answer).
    fn raw_text(name: &str) -> String {
        sample(name)["choices"][0]["text"]
            .as_str()
            .unwrap()
            .to_string()
    }

    fn one(content: &str) -> (String, Value) {
        let found = extract_text_calls(content, SEVEN).expect("a call");
        assert_eq!(found.calls.len(), 1, "{found:?}");
        found.calls.into_iter().next().unwrap()
    }

    #[test]
    fn a_fenced_json_call_from_the_real_model_becomes_a_call() {
        let (name, args) = one(&raw_text("1tool-nosystem-raw.response.json"));
        assert_eq!(name, "prometheus_query");
        assert_eq!(
            args,
            json!({"query": "sum(vz_stat_disk_usage{type='root'})", "time": "now"})
        );
        let (name, args) = one(&raw_text("7tools-nosystem-raw.response.json"));
        assert_eq!(
            (name.as_str(), args),
            ("proxmox_storage", json!({"node": "pve1"}))
        );
    }

    #[test]
    fn an_echo_of_the_tool_definitions_is_skipped_and_the_real_call_kept() {
        let text = raw_text("1tool-system-raw.response.json");
        assert!(text.contains("<tools>"));
        let found = extract_text_calls(&text, SEVEN).unwrap();
        assert_eq!(found.calls.len(), 1, "{found:?}");
        assert_eq!(
            found.calls[0].1["query"],
            "topk(10, sum(vzfs_used_bytes{pool='pve1'}))"
        );
        assert_eq!(found.rest, "");
        // The definition itself, outside `<tools>` markers, is not a call either.
        let def = r#"{"type": "function", "function": {"name": "prometheus_query", "description": "d",
            "parameters": {"type": "object", "properties": {"query": {"type": "string"}}}}}"#;
        assert_eq!(extract_text_calls(def, SEVEN), None);
    }

    #[test]
    fn a_json_final_finding_is_not_mistaken_for_a_call() {
        let resp = sample("7tools-system.response.json");
        let content = resp["choices"][0]["message"]["content"].as_str().unwrap();
        assert!(content.contains("\"summary\""));
        assert_eq!(extract_text_calls(content, SEVEN), None);
        let (c, calls, notes) = normalize_response(Some(content.into()), Vec::new(), SEVEN);
        assert_eq!(c.as_deref(), Some(content.trim()));
        assert!(calls.is_empty() && notes.is_empty());
    }

    #[test]
    fn the_common_chat_formats_of_tool_calls_are_read() {
        let cases = [
            // Hermes / Qwen.
            "<tool_call>\n{\"name\": \"prometheus_query\", \"arguments\": {\"query\": \"up\"}}\n</tool_call>",
            // Unclosed tag at the end of the answer.
            "<tool_call>{\"name\": \"prometheus_query\", \"arguments\": {\"query\": \"up\"}}",
            "```tool_call\n{\"name\": \"prometheus_query\", \"parameters\": {\"query\": \"up\"}}\n```",
            "I will check.\n{\"name\": \"prometheus_query\", \"arguments\": \"{\\\"query\\\": \\\"up\\\"}\"}",
            // Llama 3.x.
            "<|python_tag|>{\"type\": \"function\", \"name\": \"prometheus_query\", \"parameters\": {\"query\": \"up\"}}<|eom_id|>",
            // Mistral, old and new.
            "[TOOL_CALLS] [{\"name\": \"prometheus_query\", \"arguments\": {\"query\": \"up\"}}]",
            "[TOOL_CALLS]prometheus_query[ARGS]{\"query\": \"up\"}",
            // OpenAI's own shape, written as text.
            "{\"type\": \"function\", \"function\": {\"name\": \"prometheus_query\", \"arguments\": \"{\\\"query\\\":\\\"up\\\"}\"}}",
            // Python-ish quotes, a lenient name and arguments beside the name.
            "{'name': 'Prometheus-Query', 'query': 'up'}",
            "{\"tool_calls\": [{\"name\": \"functions.prometheus_query\", \"arguments\": {\"query\": \"up\",}}]}",
        ];
        for text in cases {
            let found = extract_text_calls(text, SEVEN).unwrap_or_else(|| panic!("{text}"));
            assert_eq!(
                found.calls,
                vec![("prometheus_query".to_string(), json!({"query": "up"}))],
                "{text}"
            );
        }
    }

    #[test]
    fn several_calls_in_a_list_or_in_several_blocks_are_all_read_in_order() {
        let list = r#"[{"name": "current_time", "arguments": {}},
            {"name": "proxmox_storage", "arguments": {"node": "pve1"}}]"#;
        let blocks = "<tool_call>{\"name\": \"current_time\"}</tool_call>\n\
            <tool_call>{\"name\": \"proxmox_storage\", \"arguments\": {\"node\": \"pve1\"}}</tool_call>";
        for text in [list, blocks] {
            let names: Vec<String> = extract_text_calls(text, SEVEN)
                .unwrap()
                .calls
                .into_iter()
                .map(|(n, _)| n)
                .collect();
            assert_eq!(names, ["current_time", "proxmox_storage"], "{text}");
        }
    }

    #[test]
    fn calls_of_tools_that_were_not_offered_stay_text() {
        let text = "{\"name\": \"kubectl_exec\", \"arguments\": {\"cmd\": \"rm -rf /\"}}";
        assert_eq!(extract_text_calls(text, SEVEN), None);
        assert_eq!(
            extract_text_calls("{\"name\": \"current_time\"}", &[]),
            None
        );
    }

    #[test]
    fn a_call_after_a_stray_bracket_is_found_and_nothing_inside_a_finding_is_a_call() {
        let text = "Use {braces like this. {\"name\": \"current_time\", \"arguments\": {}}";
        assert_eq!(one(text).0, "current_time");
        let finding = r#"{"summary": "s", "evidence": [{"name": "current_time", "claim": "c"}]}"#;
        assert_eq!(extract_text_calls(finding, SEVEN), None);
    }
}
