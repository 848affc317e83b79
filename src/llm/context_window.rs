//! The model's context window: an estimate of a request's prompt tokens (characters / 3.5, scaled
//! by what the server counted for earlier requests), and fitting a conversation into the
//! model's window by summarising the fenced data of older messages. Only the inside of a
//! `<data …>` … `</data>` fence is ever shortened, by whole lines, so no fence is cut, no
//! tool call loses its answer and every call id stays.

use std::sync::LazyLock;

use regex_lite::Regex;

use super::ChatMessage;
use crate::text::first_chars;
use crate::tools::ToolDefinition;

/// Characters per token assumed before the server has counted any: English prose and JSON
/// average 3.5–4 with the common BPE vocabularies; 3.5 errs on the safe side.
pub const CHARS_PER_TOKEN: f64 = 3.5;

/// Tokens a chat template adds around each message (role markers).
const MESSAGE_OVERHEAD: u64 = 4;

/// Characters of a fence's inside kept at each step of summarising; 0 leaves a marker only.
const SUMMARY_STEPS: [usize; 3] = [600, 200, 0];

/// The longest line kept in a summary.
const SUMMARY_LINE_CHARS: usize = 160;

/// Said where lines were left out, so the model knows the data is incomplete.
const LEFT_OUT: &str = "to fit the context window]";

static FENCED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?s)(<data source="[^"\n]*">\n)(.*?)(\n</data>)"#).expect("valid regex")
});

/// Prompt tokens of `messages` and `tools` by characters (unscaled).
pub fn estimate_tokens(messages: &[ChatMessage], tools: &[ToolDefinition]) -> u64 {
    let message_chars: usize = messages.iter().map(message_chars).sum();
    let tool_chars: usize = tools
        .iter()
        .map(|t| t.name.len() + t.description.len() + t.parameters.to_string().len() + 40)
        .sum();
    ((message_chars + tool_chars) as f64 / CHARS_PER_TOKEN).ceil() as u64
        + MESSAGE_OVERHEAD * messages.len() as u64
}

fn message_chars(m: &ChatMessage) -> usize {
    match m {
        ChatMessage::System(c) | ChatMessage::User(c) => c.len(),
        ChatMessage::Assistant {
            content,
            tool_calls,
        } => {
            content.as_ref().map_or(0, String::len)
                + tool_calls
                    .iter()
                    .map(|c| c.id.len() + c.name.len() + c.arguments.to_string().len() + 20)
                    .sum::<usize>()
        }
        ChatMessage::Tool {
            tool_call_id,
            content,
        } => tool_call_id.len() + content.len(),
    }
}

/// What fitting a conversation did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fit {
    /// The scaled estimate after fitting.
    pub estimate: u64,
    /// Messages whose fenced data was summarised.
    pub summarised: usize,
    /// Whether the estimate is within the prompt limit.
    pub fits: bool,
}

/// A model's context window and how full a request would make it.
#[derive(Clone, Debug)]
pub struct ContextWindow {
    context_tokens: u64,
    /// Measured prompt tokens per estimated token (from the server's usage); 1 at first.
    scale: f64,
}

impl ContextWindow {
    pub fn new(context_tokens: u64) -> Self {
        Self {
            context_tokens,
            scale: 1.0,
        }
    }

    /// Tokens left free for the answer: an eighth of the window, 256 to 2048.
    pub fn reserve(&self) -> u64 {
        (self.context_tokens / 8).clamp(256, 2048)
    }

    /// The most prompt tokens a request may have.
    pub fn prompt_limit(&self) -> u64 {
        self.context_tokens.saturating_sub(self.reserve())
    }

    /// The estimate of a request, scaled by what the server counted so far.
    pub fn estimate(&self, messages: &[ChatMessage], tools: &[ToolDefinition]) -> u64 {
        (estimate_tokens(messages, tools) as f64 * self.scale).ceil() as u64
    }

    /// Learns from a request whose unscaled estimate was `estimated` and for which the
    /// server counted `measured` prompt tokens (0: the server did not say).
    pub fn calibrate(&mut self, estimated: u64, measured: u64) {
        if estimated > 0 && measured > 0 {
            // Barely below 1: some servers (Ollama) count only the uncached prompt tokens.
            self.scale = (measured as f64 / estimated as f64).clamp(0.8, 4.0);
        }
    }

    /// After the server said a request did not fit: assume tokens are a quarter bigger.
    pub fn tighten(&mut self) {
        self.scale = (self.scale * 1.25).min(8.0);
    }

    /// Summarises the fenced data of older messages, oldest first and in steps, until the
    /// request fits: tool results first, then (at the later steps) data in user messages.
    /// The system prompt and everything outside fences are kept as they are.
    pub fn fit(&self, messages: &mut [ChatMessage], tools: &[ToolDefinition]) -> Fit {
        let limit = self.prompt_limit();
        let mut estimate = self.estimate(messages, tools);
        let mut touched = vec![false; messages.len()];
        'steps: for (step, &keep) in SUMMARY_STEPS.iter().enumerate() {
            for i in 0..messages.len() {
                if estimate <= limit {
                    break 'steps;
                }
                let text = match &mut messages[i] {
                    ChatMessage::Tool { content, .. } => content,
                    ChatMessage::User(content) if step > 0 => content,
                    _ => continue,
                };
                if let Some(short) = summarise_fenced(text, keep) {
                    *text = short;
                    touched[i] = true;
                    estimate = self.estimate(messages, tools);
                }
            }
        }
        Fit {
            estimate,
            summarised: touched.iter().filter(|t| **t).count(),
            fits: estimate <= limit,
        }
    }
}

/// `text` with the inside of each `<data>` fence cut to about `keep` characters of whole
/// lines (see [`summarise_lines`]); `None` when nothing needed cutting.
pub fn summarise_fenced(text: &str, keep: usize) -> Option<String> {
    let mut changed = false;
    let out = FENCED.replace_all(text, |c: &regex_lite::Captures| {
        let inner = &c[2];
        if inner.len() <= keep.max(LEFT_OUT.len() + 40) {
            return c[0].to_string();
        }
        changed = true;
        format!("{}{}{}", &c[1], summarise_lines(inner, keep), &c[3])
    });
    changed.then(|| out.into_owned())
}

/// About `keep` characters of `text` in whole lines, in their order: the first line (a
/// header such as "3 series:"), then lines with computed figures (first/last/min/max,
/// rates, time until full), then other lines with numbers, then the rest; each line cut to
/// 160 characters. Ends with how many lines were left out.
pub fn summarise_lines(text: &str, keep: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    if keep == 0 {
        return format!("[{} lines left out {LEFT_OUT}", lines.len());
    }
    let rank = |i: usize, l: &str| -> u8 {
        let lower = l.to_lowercase();
        let has_digit = l.bytes().any(|b| b.is_ascii_digit());
        if i == 0 {
            0
        } else if has_digit
            && [
                "first", "last", "min", "max", "avg", "mean", "change", "per hour", "per day",
                "/h", "/d", "until", "full", "rate", "total", "%",
            ]
            .iter()
            .any(|k| lower.contains(k))
        {
            1
        } else if has_digit {
            2
        } else {
            3
        }
    };
    let mut order: Vec<usize> = (0..lines.len()).collect();
    order.sort_by_key(|&i| rank(i, lines[i]));
    let mut kept = vec![false; lines.len()];
    let mut used = 0;
    for i in order {
        let len = lines[i].len().min(SUMMARY_LINE_CHARS) + 1;
        if used + len > keep {
            continue;
        }
        used += len;
        kept[i] = true;
    }
    let mut out: Vec<String> = lines
        .iter()
        .zip(&kept)
        .filter(|(_, k)| **k)
        .map(|(l, _)| {
            let short = first_chars(l, SUMMARY_LINE_CHARS);
            if short.len() < l.len() {
                format!("{short}…")
            } else {
                short.to_string()
            }
        })
        .collect();
    let left = lines.len() - out.len();
    if left > 0 {
        out.push(format!(
            "[… {left} of {} lines left out {LEFT_OUT}",
            lines.len()
        ));
    }
    out.join("\n")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::llm::ToolCall;
    use crate::text::fence;

    fn range_output(series: usize) -> String {
        let mut s = format!("{series} series:\n");
        for i in 0..series {
            s.push_str(&format!(
                "{{instance=\"pve{i}:9100\", mountpoint=\"/var/lib/vz\"}} first=400 GiB last=60 GiB \
                 min=60 max=400 change per day -48.6 GiB, full in 1.2 days\n"
            ));
            for k in 0..20 {
                s.push_str(&format!("  sample {k}: value {}\n", 400 - k));
            }
            s.push_str("  no figures on this line\n");
        }
        s
    }

    fn conversation(results: usize) -> Vec<ChatMessage> {
        let mut m = vec![
            ChatMessage::System("be brief".into()),
            ChatMessage::User(format!(
                "How full is /var/lib/vz?\n\n{}",
                fence("alert", "labels")
            )),
        ];
        for i in 1..=results {
            let id = format!("call_{i}");
            m.push(ChatMessage::Assistant {
                content: None,
                tool_calls: vec![ToolCall {
                    id: id.clone(),
                    name: "prometheus_query_range".into(),
                    arguments: json!({"query": "node_filesystem_avail_bytes"}),
                }],
            });
            m.push(ChatMessage::Tool {
                tool_call_id: id.clone(),
                content: format!(
                    "{}\nCite this result as {id}.",
                    fence("tool", &range_output(3))
                ),
            });
        }
        m
    }

    #[test]
    fn the_estimate_is_characters_over_three_and_a_half_plus_message_overhead() {
        let m = [ChatMessage::User("x".repeat(35))];
        assert_eq!(estimate_tokens(&m, &[]), 10 + MESSAGE_OVERHEAD);
        let mut b = ContextWindow::new(8192);
        assert_eq!(b.prompt_limit(), 8192 - 1024);
        b.calibrate(100, 150);
        assert_eq!(b.estimate(&m, &[]), 21);
    }

    #[test]
    fn a_conversation_that_fits_is_left_alone() {
        let mut m = conversation(1);
        let before = m.clone();
        let fit = ContextWindow::new(8192).fit(&mut m, &[]);
        assert!(fit.fits && fit.summarised == 0);
        assert_eq!(m, before);
    }

    #[test]
    fn older_tool_output_is_summarised_first_keeping_ids_fences_and_computed_figures() {
        let mut m = conversation(6);
        let window = ContextWindow::new(2048);
        assert!(window.estimate(&m, &[]) > window.prompt_limit());
        let fit = window.fit(&mut m, &[]);
        assert!(fit.fits, "{fit:?}");
        assert!(fit.summarised >= 1);
        // The oldest result was summarised, the newest kept whole.
        let ChatMessage::Tool {
            content: first,
            tool_call_id,
        } = &m[3]
        else {
            panic!()
        };
        assert_eq!(tool_call_id, "call_1");
        assert!(
            first.starts_with("<data source=\"tool\">\n3 series:\n"),
            "{first}"
        );
        assert!(first.contains("full in 1.2 days"), "{first}");
        assert!(
            first.contains("lines left out to fit the context window]\n</data>"),
            "{first}"
        );
        assert!(first.ends_with("Cite this result as call_1."));
        let ChatMessage::Tool { content: last, .. } = &m[m.len() - 1] else {
            panic!()
        };
        assert!(!last.contains("left out"));
        // Every call still has its answer.
        let answers = m
            .iter()
            .filter(|x| matches!(x, ChatMessage::Tool { .. }))
            .count();
        assert_eq!(answers, 6);
    }

    #[test]
    fn when_summaries_are_not_enough_the_data_is_left_out_but_the_fences_stay() {
        let mut m = conversation(6);
        let fit = ContextWindow::new(1024).fit(&mut m, &[]);
        for msg in &m {
            if let ChatMessage::Tool { content, .. } = msg {
                assert!(content.starts_with("<data source=\"tool\">\n"), "{content}");
                assert!(content.contains("\n</data>"), "{content}");
            }
        }
        assert!(fit.estimate < estimate_tokens(&conversation(6), &[]));
    }

    #[test]
    fn a_summary_keeps_whole_lines_in_order() {
        let text = "header\nalpha 1\nbeta\ngamma max=3\n";
        let s = summarise_lines(text, 30);
        assert_eq!(
            s,
            "header\nalpha 1\ngamma max=3\n[… 1 of 4 lines left out to fit the context window]"
        );
    }
}
