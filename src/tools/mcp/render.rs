//! An MCP tool result as text for the model: text blocks and embedded text resources as
//! they are (JSON re-serialized compactly), structured content when there is no text,
//! binary blocks named but not included, the whole fitted to the tool output limit line by
//! line, saying what was dropped.

use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};
use serde_json::Value;

use crate::text::truncate;
use crate::tools::compact::fit_lines;

/// The result's text, at most `max_chars` characters; `Err` when the server says it failed.
pub fn result_text(result: &CallToolResult, max_chars: usize) -> Result<String, String> {
    let mut parts: Vec<String> = result.content.iter().map(block_text).collect();
    if parts.iter().all(|p| p.trim().is_empty())
        && let Some(structured) = &result.structured_content
    {
        parts = vec![structured.to_string()];
    }
    // A single line longer than the limit is cut rather than dropped whole.
    let longest = max_chars.saturating_sub(80).max(20);
    let lines: Vec<String> = parts
        .iter()
        .flat_map(|p| p.lines().map(|l| truncate(l, longest)).collect::<Vec<_>>())
        .collect();
    let text = if lines.is_empty() {
        "(the tool returned nothing)".to_string()
    } else {
        fit_lines("", &lines, "lines", max_chars)
            .trim_start_matches('\n')
            .to_string()
    };
    if result.is_error == Some(true) {
        Err(text)
    } else {
        Ok(text)
    }
}

fn block_text(block: &ContentBlock) -> String {
    match block {
        ContentBlock::Text(t) => compact_json(&t.text),
        ContentBlock::Resource(r) => match &r.resource {
            ResourceContents::TextResourceContents { uri, text, .. } => {
                format!("[resource {uri}]\n{}", compact_json(text))
            }
            ResourceContents::BlobResourceContents { uri, mime_type, .. } => format!(
                "[binary resource {uri} ({}) not included]",
                mime_type.as_deref().unwrap_or("unknown type")
            ),
            _ => "[resource of an unknown kind not included]".to_string(),
        },
        ContentBlock::ResourceLink(r) => format!("[resource link {} ({})]", r.uri, r.name),
        ContentBlock::Image(i) => format!("[image ({}) not included]", i.mime_type),
        ContentBlock::Audio(a) => format!("[audio ({}) not included]", a.mime_type),
        _ => "[content of an unknown kind not included]".to_string(),
    }
}

/// JSON text without its indentation (the characters are better spent on values); other text as is.
fn compact_json(text: &str) -> String {
    let trimmed = text.trim_start();
    if (trimmed.starts_with('{') || trimmed.starts_with('['))
        && let Ok(v) = serde_json::from_str::<Value>(text)
    {
        return v.to_string();
    }
    text.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(blocks: Vec<ContentBlock>, error: bool) -> CallToolResult {
        if error {
            CallToolResult::error(blocks)
        } else {
            CallToolResult::success(blocks)
        }
    }

    #[test]
    fn text_blocks_join_json_is_compacted_and_binary_is_named_only() {
        let r = result(
            vec![
                ContentBlock::text(
                    "{\n  \"timezone\": \"UTC\",\n  \"datetime\": \"2026-11-26T21:00:00\"\n}",
                ),
                ContentBlock::image("aGVsbG8=", "image/png"),
                ContentBlock::text("second"),
            ],
            false,
        );
        let text = result_text(&r, 1000).unwrap();
        assert_eq!(
            text,
            "{\"datetime\":\"2026-11-26T21:00:00\",\"timezone\":\"UTC\"}\n[image (image/png) not included]\nsecond"
        );
        assert!(!text.contains("aGVsbG8"), "{text}");
    }

    #[test]
    fn an_error_result_is_an_error_and_an_oversized_one_fits_the_limit() {
        let r = result(vec![ContentBlock::text("unknown timezone")], true);
        assert_eq!(result_text(&r, 1000).unwrap_err(), "unknown timezone");
        let big = (0..10_000)
            .map(|i| format!("line {i}"))
            .collect::<Vec<_>>()
            .join("\n");
        let text = result_text(&result(vec![ContentBlock::text(big)], false), 500).unwrap();
        assert!(text.chars().count() <= 500, "{}", text.chars().count());
        assert!(text.contains("more lines"), "{text}");
    }

    #[test]
    fn structured_content_stands_in_for_missing_text() {
        let mut r = result(vec![], false);
        r.structured_content = Some(serde_json::json!({"ok": true}));
        assert_eq!(result_text(&r, 100).unwrap(), "{\"ok\":true}");
        assert_eq!(
            result_text(&result(vec![], false), 100).unwrap(),
            "(the tool returned nothing)"
        );
    }
}
