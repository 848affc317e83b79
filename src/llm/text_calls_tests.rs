//! Fixtures in `testdata/` are real answers of Qwen2.5-Coder-1.5B-Instruct (Q4_K_M, llama.cpp
//! b7079, its own chat template) to sre-agent's requests; `*-raw` is the text the model
//! wrote before the server's parser touched it.

use serde_json::{Value, json};

use super::*;

const SEVEN: &[&str] = &[
    "prometheus_query",
    "prometheus_query_range",
    "prometheus_metric_names",
    "proxmox_storage",
    "loki_query",
    "runbook_search",
    "current_time",
];

fn sample(name: &str) -> Value {
    let path = format!("{}/src/llm/testdata/{name}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

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
fn the_real_empty_argument_artefact_is_dropped_and_the_junk_content_cleaned() {
    let body = serde_json::to_vec(&sample("1tool-system.response.json")).unwrap();
    let (content, calls, _) = super::super::wire::parse_response(&body).unwrap();
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
        Some("Let me look.\n```json\n{\"name\": \"current_time\", \"arguments\": {}}\n```".into()),
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

#[test]
fn a_call_after_a_stray_bracket_is_found_and_nothing_inside_a_finding_is_a_call() {
    let text = "Use {braces like this. {\"name\": \"current_time\", \"arguments\": {}}";
    assert_eq!(one(text).0, "current_time");
    let finding = r#"{"summary": "s", "evidence": [{"name": "current_time", "claim": "c"}]}"#;
    assert_eq!(extract_text_calls(finding, SEVEN), None);
}
