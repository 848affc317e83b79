//! One chat answer made usable: structured tool calls get the offered name they meant, a
//! llama.cpp empty-argument duplicate is dropped, an echo of the tool definitions is cut
//! from the content, and calls written as text become tool calls when the server parsed
//! none (see `text_calls`).

use serde_json::Map;

use super::ToolCall;
use super::names::match_tool_name;
use super::text_calls::{TOOLS_ECHO, extract_text_calls};

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
mod tests {
    use serde_json::json;

    use super::*;
    use crate::llm::fixtures::{SEVEN, sample};

    #[test]
    fn the_real_empty_argument_artefact_is_dropped_and_the_junk_content_cleaned() {
        let body = serde_json::to_vec(&sample("1tool-system.response.json")).unwrap();
        let (content, calls, _) = crate::llm::wire::parse_response(&body).unwrap();
        assert_eq!(calls.len(), 2);
        assert_eq!(calls[0].arguments, json!({}));
        let (content, calls, notes) = normalize_response(content, calls, SEVEN);
        assert_eq!(content, None);
        assert_eq!(calls.len(), 1);
        assert!(calls[0].arguments["query"].is_string());
        assert_eq!(notes.len(), 1, "{notes:?}");
    }

    #[test]
    fn a_text_call_replaces_an_empty_tool_call_list_and_structured_names_are_matched() {
        let (content, calls, notes) = normalize_response(
            Some(
                "Let me look.\n```json\n{\"name\": \"current_time\", \"arguments\": {}}\n```"
                    .into(),
            ),
            Vec::new(),
            SEVEN,
        );
        assert_eq!(content.as_deref(), Some("Let me look."));
        assert_eq!(calls[0].name, "current_time");
        assert_eq!(calls[0].id, "call_1");
        assert_eq!(notes, ["1 tool call(s) read from the text of the answer"]);
        let structured = vec![ToolCall {
            id: "x".into(),
            name: "Proxmox-Storage".into(),
            arguments: json!({"node": "pve1"}),
        }];
        let (_, calls, notes) = normalize_response(None, structured, SEVEN);
        assert_eq!(calls[0].name, "proxmox_storage");
        assert_eq!(notes.len(), 1);
    }
}
