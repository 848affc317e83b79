//! The Chat Completions wire format: the request body, and lenient parsing of responses
//! and error bodies across providers (missing `usage`, object or broken `arguments`,
//! missing tool call ids, null or empty `content`, integer error `code`s, non-JSON error
//! pages).

use async_openai::types::chat::{ChatCompletionTool, ChatCompletionTools, FunctionObject};
use serde::Deserialize;
use serde_json::{Value, json};

use super::repair::tool_arguments;
use super::{ChatMessage, ToolCall, Usage};
use crate::text::first_chars;
use crate::tools::ToolDefinition;

/// Content, tool calls and usage of one response.
pub(super) type Parsed = (Option<String>, Vec<ToolCall>, Usage);

/// The JSON request body. `temperature` is always sent (Ollama otherwise forces 1.0);
/// `max_tokens` when not 0 (every OpenAI-compatible server reads it; without it a local
/// server's own default applies, often far more than a finding needs). `answer_only`
/// keeps the tools in the request but forbids calling them (`tool_choice: "none"`): a
/// local server keeps the prompt it has cached, whose start the tools are part of, where
/// a request without them is read again from the beginning.
pub fn request_body(
    model: &str,
    messages: &[ChatMessage],
    tools: &[ToolDefinition],
    max_tokens: u32,
    answer_only: bool,
) -> Value {
    let mut body = json!({
        "model": model,
        "messages": messages.iter().map(message_json).collect::<Vec<_>>(),
        "temperature": 0.1,
    });
    if max_tokens > 0 {
        body["max_tokens"] = json!(max_tokens);
    }
    if !tools.is_empty() {
        let tools: Vec<ChatCompletionTools> = tools
            .iter()
            .map(|t| {
                ChatCompletionTools::Function(ChatCompletionTool {
                    function: FunctionObject {
                        name: t.name.to_string(),
                        description: Some(t.description.to_string()),
                        parameters: Some(t.parameters.clone()),
                        strict: None,
                    },
                })
            })
            .collect();
        body["tools"] = json!(tools);
        if answer_only {
            body["tool_choice"] = json!("none");
        }
    }
    body
}

fn message_json(m: &ChatMessage) -> Value {
    match m {
        ChatMessage::System(c) => json!({"role": "system", "content": c}),
        ChatMessage::User(c) => json!({"role": "user", "content": c}),
        ChatMessage::Assistant {
            content,
            tool_calls,
        } => {
            let mut v = json!({"role": "assistant", "content": content});
            if !tool_calls.is_empty() {
                v["tool_calls"] = tool_calls
                    .iter()
                    .map(|c| {
                        json!({"id": c.id, "type": "function", "function": {
                            "name": c.name, "arguments": arguments_text(&c.arguments)}})
                    })
                    .collect();
            }
            v
        }
        ChatMessage::Tool {
            tool_call_id,
            content,
        } => json!({"role": "tool", "tool_call_id": tool_call_id, "content": content}),
    }
}

/// Arguments as the JSON text servers expect; invalid raw text is sent as `{}` because
/// some servers (Ollama) reject a history whose arguments are not JSON.
fn arguments_text(args: &Value) -> String {
    match args {
        Value::String(raw) => match serde_json::from_str::<Value>(raw) {
            Ok(v) => v.to_string(),
            Err(_) => "{}".into(),
        },
        other => other.to_string(),
    }
}

#[derive(Deserialize)]
struct Response {
    #[serde(default)]
    choices: Vec<Choice>,
    #[serde(default)]
    usage: Option<WireUsage>,
}

#[derive(Deserialize)]
struct Choice {
    message: Message,
}

#[derive(Deserialize)]
struct Message {
    #[serde(default)]
    content: Option<Value>,
    #[serde(default)]
    tool_calls: Option<Vec<WireToolCall>>,
}

#[derive(Deserialize)]
struct WireToolCall {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<WireFunction>,
}

#[derive(Deserialize)]
struct WireFunction {
    #[serde(default)]
    name: String,
    #[serde(default)]
    arguments: Option<Value>,
}

#[derive(Deserialize, Default)]
struct WireUsage {
    #[serde(default)]
    prompt_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens: Option<u64>,
    #[serde(default)]
    prompt_tokens_details: Option<Details>,
}

#[derive(Deserialize, Default)]
struct Details {
    #[serde(default)]
    cached_tokens: Option<u64>,
}

/// Parses a successful response body.
pub(crate) fn parse_response(bytes: &[u8]) -> Result<Parsed, String> {
    let resp: Response = serde_json::from_slice(bytes).map_err(|e| {
        let text: String = String::from_utf8_lossy(&bytes[..bytes.len().min(200)])
            .chars()
            .flat_map(char::escape_debug)
            .take(300)
            .collect();
        // serde quotes an unexpected string whole: keep the start and where it failed.
        let e = e.to_string();
        let e = match e.rsplit_once(" at line ") {
            Some((what, at)) if e.chars().count() > 300 => {
                format!("{}… at line {at}", first_chars(what, 240))
            }
            _ => e,
        };
        format!("{e} (body starts: \"{text}\")")
    })?;
    let Some(choice) = resp.choices.into_iter().next() else {
        return Err("no choices in the response".into());
    };
    let content = match choice.message.content {
        Some(Value::String(s)) if !s.trim().is_empty() => Some(s),
        Some(Value::Array(parts)) => {
            let text: String = parts
                .iter()
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect();
            (!text.trim().is_empty()).then_some(text)
        }
        _ => None,
    };
    let tool_calls = choice
        .message
        .tool_calls
        .unwrap_or_default()
        .into_iter()
        .filter_map(|c| c.function.map(|f| (c.id, f)))
        .filter(|(_, f)| !f.name.trim().is_empty())
        .enumerate()
        .map(|(n, (id, f))| ToolCall {
            id: id
                .filter(|i| !i.is_empty())
                .unwrap_or_else(|| format!("call_{n}")),
            name: f.name,
            arguments: tool_arguments(f.arguments),
        })
        .collect();
    let u = resp.usage.unwrap_or_default();
    let usage = Usage {
        prompt: u.prompt_tokens.unwrap_or(0),
        completion: u.completion_tokens.unwrap_or(0),
        cached: u
            .prompt_tokens_details
            .and_then(|d| d.cached_tokens)
            .unwrap_or(0),
    };
    Ok((content, tool_calls, usage))
}

/// The provider's machine-readable error code: `error.code`, else `error.type` (OpenAI
/// sends both, e.g. `insufficient_quota`), or the same keys at the top level; strings only.
pub(super) fn error_code(bytes: &[u8]) -> Option<String> {
    let v: Value = serde_json::from_slice(bytes).ok()?;
    let err = v.get("error").filter(|e| e.is_object()).unwrap_or(&v);
    ["code", "type"]
        .iter()
        .find_map(|k| err.get(k)?.as_str())
        .map(str::to_string)
}

/// The provider's error message: `error.message`, top-level `message`, or the raw text.
pub(super) fn error_message(bytes: &[u8]) -> String {
    let parsed: Option<Value> = serde_json::from_slice(bytes).ok();
    let from_json = parsed.as_ref().and_then(|v| {
        let err = v.get("error");
        let msg = err
            .and_then(|e| e.get("message"))
            .or_else(|| v.get("message"))
            .or(err.filter(|e| e.is_string()))
            .and_then(Value::as_str)?;
        let kind = err
            .and_then(|e| e.get("type").or_else(|| e.get("code")))
            .and_then(|t| t.as_str().map(str::to_string));
        Some(match kind {
            Some(k) => format!("{msg} ({k})"),
            None => msg.to_string(),
        })
    });
    from_json.unwrap_or_else(|| {
        let text = String::from_utf8_lossy(bytes);
        let text = text.trim();
        let short = first_chars(text, 300);
        if short.is_empty() {
            "(empty body)".into()
        } else {
            short.to_string()
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_answer_limit_is_sent_as_max_tokens_unless_it_is_zero() {
        let m = [ChatMessage::User("q".into())];
        assert_eq!(request_body("m", &m, &[], 600, false)["max_tokens"], 600);
        assert!(
            request_body("m", &m, &[], 0, false)
                .get("max_tokens")
                .is_none()
        );
    }

    #[test]
    fn provider_quirks_are_tolerated() {
        let body = br#"{"choices":[{"message":{"content":"","tool_calls":[
            {"function":{"name":"a","arguments":{"x":1}}},
            {"id":"","type":"function","function":{"name":"b","arguments":"{\"y\":2}"}},
            {"id":"k","function":{"name":"c","arguments":"not json"}},
            {"id":"m","function":{"name":"d","arguments":"{'z': 3,}"}}]}}]}"#;
        let (content, calls, usage) = parse_response(body).unwrap();
        assert_eq!(content, None);
        assert_eq!(usage, Usage::default());
        assert_eq!(calls[0].id, "call_0");
        assert_eq!(calls[0].arguments, json!({"x": 1}));
        assert_eq!(calls[1].id, "call_1");
        assert_eq!(calls[1].arguments, json!({"y": 2}));
        assert_eq!(calls[2].arguments, json!("not json"));
        assert_eq!(calls[3].arguments, json!({"z": 3}));
    }

    #[test]
    fn cached_tokens_come_from_prompt_token_details() {
        let body = br#"{"choices":[{"message":{"content":"hi"}}],"usage":{"prompt_tokens":10,
            "completion_tokens":3,"total_tokens":13,"prompt_tokens_details":{"cached_tokens":4}}}"#;
        let (_, _, usage) = parse_response(body).unwrap();
        assert_eq!(
            usage,
            Usage {
                prompt: 10,
                completion: 3,
                cached: 4
            }
        );
    }

    #[test]
    fn error_bodies_of_every_provider_shape_give_a_message() {
        assert_eq!(
            error_message(br#"{"error":{"message":"bad key","type":"invalid_request_error"}}"#),
            "bad key (invalid_request_error)"
        );
        assert_eq!(
            error_message(br#"{"object":"error","message":"nope","code":400}"#),
            "nope"
        );
        assert_eq!(error_message(b"<html>502</html>"), "<html>502</html>");
    }

    #[test]
    fn the_error_code_is_read_from_the_body_not_from_the_message() {
        let quota = br#"{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}"#;
        assert_eq!(error_code(quota).as_deref(), Some("insufficient_quota"));
        let rate = br#"{"error":{"message":"insufficient_quota? no: rate limit","type":"requests","code":"rate_limit_exceeded"}}"#;
        assert_eq!(error_code(rate).as_deref(), Some("rate_limit_exceeded"));
        let type_only = br#"{"error":{"message":"bad key","type":"invalid_request_error"}}"#;
        assert_eq!(
            error_code(type_only).as_deref(),
            Some("invalid_request_error")
        );
        let vllm = br#"{"object":"error","message":"nope","type":"BadRequestError","code":400}"#;
        assert_eq!(error_code(vllm).as_deref(), Some("BadRequestError"));
        assert_eq!(error_code(b"<html>insufficient_quota</html>"), None);
    }
}
