//! The `[llm]` section: the OpenAI-compatible endpoint, the limits of one investigation
//! (steps, tokens, cost, time, answer length, tool output) and per-model prices.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::secrets::secret_fields;
use super::sections::secs;
use super::values::{HttpUrl, HumanDuration, Secret};

/// USD per million tokens for one model.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct ModelPricing {
    pub input_per_million: f64,
    pub output_per_million: f64,
    pub cached_input_per_million: f64,
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct LlmConfig {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base_url: Option<HttpUrl>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_key: Option<Secret>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_key_file: Option<PathBuf>,
    pub model: String,
    pub timeout: HumanDuration,
    pub max_retries: u32,
    pub max_steps: u32,
    pub max_tokens_per_investigation: u64,
    pub max_cost_per_investigation_usd: f64,
    pub max_tool_output_chars: usize,
    /// The most tokens the model may write in one answer (`max_tokens` of each request):
    /// a small model that rambles on a CPU costs a minute per 600 tokens; 0 sends no limit.
    pub max_answer_tokens: u32,
    /// After this long an investigation starts no more tool calls: the model answers from
    /// what it gathered (a small model on a CPU takes 15-40 s a step); 0s: no limit.
    pub answer_after: HumanDuration,
    /// When the health sweep found a problem (warning or worse) with what the trigger is
    /// about, the first call asks for the answer from those facts (without the tools);
    /// tools follow only if that answer is not usable. A small model restates
    /// facts well and spends a minute per tool step.
    pub answer_first: bool,
    pub max_parallel_tools: usize,
    /// The model's context window in tokens; requests are fitted into it, and at 8192 or
    /// less only the tools relevant to the question are offered.
    pub context_tokens: u64,
    pub pricing: BTreeMap<String, ModelPricing>,
}

impl Default for LlmConfig {
    fn default() -> Self {
        Self {
            base_url: None,
            api_key: None,
            api_key_file: None,
            model: "gpt-4o-mini".into(),
            timeout: secs(60),
            max_retries: 3,
            max_steps: 10,
            max_tokens_per_investigation: 60_000,
            max_cost_per_investigation_usd: 0.25,
            max_tool_output_chars: 4_000,
            max_answer_tokens: 600,
            answer_after: secs(90),
            answer_first: true,
            max_parallel_tools: 4,
            context_tokens: 8192,
            pricing: BTreeMap::from([(
                "gpt-4o-mini".to_string(),
                ModelPricing {
                    input_per_million: 0.15,
                    output_per_million: 0.60,
                    cached_input_per_million: 0.075,
                },
            )]),
        }
    }
}

secret_fields!(LlmConfig {
    api_key: api_key_file
});
