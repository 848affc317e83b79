//! Text through the lenient JSON reader the LLM client uses for tool arguments, and the
//! `Retry-After` reader of its endpoint's answers.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use sre_agent::llm::{parse_lenient, parse_retry_after, tool_arguments};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = parse_lenient(text);
    let args = tool_arguments(Some(Value::String(text.to_string())));
    assert!(args.is_object() || args.is_string(), "arguments: {args}");
    if let Ok(v) = serde_json::from_str::<Value>(text) {
        let _ = tool_arguments(Some(v));
    }
    let _ = parse_retry_after(text);
});
