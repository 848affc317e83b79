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

use super::ToolCall;
use super::names::match_tool_name;
use super::repair::{parse_lenient, tool_arguments};

/// Markers that wrap calls in the chat formats of common models; they carry no JSON.
static MARKERS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)</?tool_call>|</?function_call>|<\|python_tag\|>|<\|eom_id\|>|<\|eot_id\|>|\[TOOL_CALLS\]")
        .expect("valid regex")
});

/// Echoes of the tool definitions (`<tools>…</tools>`), which Qwen models sometimes repeat.
static TOOLS_ECHO: LazyLock<Regex> =
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
    let mut calls = Vec::new();
    let mut taken: Vec<(usize, usize)> = Vec::new();
    for m in MISTRAL_ARGS.captures_iter(&text) {
        let (whole, name) = (m.get(0).expect("match"), &m[1]);
        let args_start = whole.end()
            + text[whole.end()..]
                .find(|c: char| !c.is_whitespace())
                .unwrap_or(0);
        if !text[args_start..].starts_with('{') {
            continue;
        }
        let end = matching_end(text.as_bytes(), args_start);
        let args = Value::String(text[args_start..end].to_string());
        if let Some(tool) = match_tool_name(name, offered) {
            calls.push((tool.to_string(), tool_arguments(Some(args))));
            taken.push((whole.start(), end));
        }
    }
    if calls.is_empty() {
        let bytes = text.as_bytes();
        let mut i = 0;
        while i < bytes.len() {
            if bytes[i] != b'{' && bytes[i] != b'[' {
                i += 1;
                continue;
            }
            let end = matching_end(bytes, i);
            match parse_lenient(&text[i..end]).map(|v| calls_in(&v, offered)) {
                Some(found) if !found.is_empty() => {
                    calls.extend(found);
                    taken.push((i, end));
                    i = end;
                }
                // JSON but no call (a finding): nothing inside it is a call either.
                Some(_) => i = end,
                // Not JSON: look inside it too, e.g. at a call after a stray bracket.
                None => i += 1,
            }
        }
    }
    if calls.is_empty() {
        return None;
    }
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

/// Makes one response usable: structured calls get the offered name they meant and lose
/// an empty-argument duplicate of a call made with arguments (a llama.cpp artefact), and
/// when the server parsed no call, calls written in the text become tool calls. Returns
/// the content, the calls and one note per repair.
pub(super) fn normalize_response(
    content: Option<String>,
    mut calls: Vec<ToolCall>,
    offered: &[&str],
) -> (Option<String>, Vec<ToolCall>, Vec<String>) {
    let mut notes = Vec::new();
    if offered.is_empty() {
        return (content, calls, notes);
    }
    let content = content
        .map(|c| TOOLS_ECHO.replace_all(&c, "").trim().to_string())
        .filter(|c| !c.is_empty());
    for call in &mut calls {
        if !offered.contains(&call.name.as_str())
            && let Some(tool) = match_tool_name(&call.name, offered)
        {
            notes.push(format!("tool name {:?} read as {tool}", call.name));
            call.name = tool.to_string();
        }
    }
    let empty = |c: &ToolCall| c.arguments.as_object().is_some_and(Map::is_empty);
    let with_args: Vec<String> = calls
        .iter()
        .filter(|c| !empty(c))
        .map(|c| c.name.clone())
        .collect();
    let before = calls.len();
    calls.retain(|c| !(empty(c) && with_args.contains(&c.name)));
    if calls.len() < before {
        notes.push(format!(
            "{} empty-argument duplicate call(s) dropped",
            before - calls.len()
        ));
    }
    if !calls.is_empty() {
        return (content, calls, notes);
    }
    let Some(found) = content
        .as_deref()
        .and_then(|c| extract_text_calls(c, offered))
    else {
        return (content, calls, notes);
    };
    notes.push(format!(
        "{} tool call(s) read from the text of the answer",
        found.calls.len()
    ));
    let calls = found
        .calls
        .into_iter()
        .enumerate()
        .map(|(n, (name, arguments))| ToolCall {
            id: format!("call_{}", n + 1),
            name,
            arguments,
        })
        .collect();
    let rest = (!found.rest.is_empty()).then_some(found.rest);
    (rest, calls, notes)
}

#[cfg(test)]
#[path = "text_calls_tests.rs"]
mod tests;
