//! Model prices: `[llm.pricing."<model>"]` from the configuration, else a built-in price for
//! common hosted models. A model with neither has no known cost, so no cost limit can hold
//! for it: [`unpriced_model_warning`] says so at start and in `check-config`.
//!
//! The built-in table lists the providers' published list prices in USD per million tokens
//! as of [`BUILT_IN_PRICES_DATE`]; a `[llm.pricing]` entry for the same name always wins.
//! Local models (Ollama, llama.cpp, vLLM) have no built-in price: give them
//! `input_per_million = 0` and `output_per_million = 0` to say they cost nothing.

use super::{LlmConfig, ModelPricing};

/// When the built-in prices were taken from the providers' price lists.
pub const BUILT_IN_PRICES_DATE: &str = "2025-08-01";

/// (model, input, cached input, output), USD per million tokens.
const BUILT_IN: &[(&str, f64, f64, f64)] = &[
    // OpenAI
    ("gpt-4o", 2.50, 1.25, 10.00),
    ("gpt-4o-2024-08-06", 2.50, 1.25, 10.00),
    ("gpt-4o-2024-11-20", 2.50, 1.25, 10.00),
    ("gpt-4o-mini", 0.15, 0.075, 0.60),
    ("gpt-4o-mini-2024-07-18", 0.15, 0.075, 0.60),
    ("gpt-4.1", 2.00, 0.50, 8.00),
    ("gpt-4.1-2025-04-14", 2.00, 0.50, 8.00),
    ("gpt-4.1-mini", 0.40, 0.10, 1.60),
    ("gpt-4.1-mini-2025-04-14", 0.40, 0.10, 1.60),
    ("gpt-4.1-nano", 0.10, 0.025, 0.40),
    ("gpt-4.1-nano-2025-04-14", 0.10, 0.025, 0.40),
    ("o3", 2.00, 0.50, 8.00),
    ("o3-mini", 1.10, 0.55, 4.40),
    ("o4-mini", 1.10, 0.275, 4.40),
    // Anthropic, by the names its OpenAI-compatible endpoint accepts
    ("claude-3-5-haiku-latest", 0.80, 0.08, 4.00),
    ("claude-3-5-haiku-20241022", 0.80, 0.08, 4.00),
    ("claude-3-5-sonnet-latest", 3.00, 0.30, 15.00),
    ("claude-3-7-sonnet-latest", 3.00, 0.30, 15.00),
    ("claude-3-7-sonnet-20250219", 3.00, 0.30, 15.00),
    ("claude-sonnet-4-0", 3.00, 0.30, 15.00),
    ("claude-sonnet-4-20250514", 3.00, 0.30, 15.00),
    ("claude-opus-4-0", 15.00, 1.50, 75.00),
    ("claude-opus-4-20250514", 15.00, 1.50, 75.00),
    ("claude-opus-4-1", 15.00, 1.50, 75.00),
    ("claude-opus-4-1-20250805", 15.00, 1.50, 75.00),
    // Mistral
    ("mistral-large-latest", 2.00, 2.00, 6.00),
    ("mistral-medium-latest", 0.40, 0.40, 2.00),
    ("mistral-small-latest", 0.10, 0.10, 0.30),
    ("ministral-8b-latest", 0.10, 0.10, 0.10),
    ("open-mistral-nemo", 0.15, 0.15, 0.15),
    ("codestral-latest", 0.30, 0.30, 0.90),
    // Groq
    ("llama-3.3-70b-versatile", 0.59, 0.59, 0.79),
    ("llama-3.1-8b-instant", 0.05, 0.05, 0.08),
    (
        "meta-llama/llama-4-scout-17b-16e-instruct",
        0.11,
        0.11,
        0.34,
    ),
    (
        "meta-llama/llama-4-maverick-17b-128e-instruct",
        0.20,
        0.20,
        0.60,
    ),
];

/// Every built-in price (the table `README.md` points to).
pub fn built_in_prices() -> impl Iterator<Item = (&'static str, ModelPricing)> {
    BUILT_IN.iter().map(|&(model, input, cached, output)| {
        (
            model,
            ModelPricing {
                input_per_million: input,
                output_per_million: output,
                cached_input_per_million: cached,
            },
        )
    })
}

fn built_in(model: &str) -> Option<ModelPricing> {
    built_in_prices().find(|(m, _)| *m == model).map(|(_, p)| p)
}

/// The price of `model`: its `[llm.pricing]` entry, else the built-in price of that name,
/// else (for a routed name such as `openai/gpt-4o`) the built-in price of the part after
/// the last `/`. `None` when the cost of its tokens is unknown.
pub fn price_for(config: &LlmConfig, model: &str) -> Option<ModelPricing> {
    if let Some(p) = config.pricing.get(model) {
        return Some(p.clone());
    }
    built_in(model).or_else(|| {
        let (_, last) = model.rsplit_once('/')?;
        built_in(last)
    })
}

/// The warning for a model without a price, naming it; `None` when its price is known.
pub fn unpriced_model_warning(config: &LlmConfig) -> Option<String> {
    let model = &config.model;
    price_for(config, model).is_none().then(|| {
        format!(
            "cost limits cannot hold for model {model}: it has no [llm.pricing.\"{model}\"] \
             entry and no built-in price, so its calls count as $0 against \
             alerts.daily_cost_limit_usd and llm.max_cost_per_investigation_usd (set its \
             prices; 0 for a local model)"
        )
    })
}

/// Checks every `[llm.pricing]` entry; the error names the key.
pub fn validate_pricing(config: &LlmConfig) -> Result<(), String> {
    for (model, p) in &config.pricing {
        for (field, v) in [
            ("input_per_million", p.input_per_million),
            ("output_per_million", p.output_per_million),
            ("cached_input_per_million", p.cached_input_per_million),
        ] {
            if !(v.is_finite() && v >= 0.0) {
                return Err(format!(
                    "llm.pricing.\"{model}\".{field}: {v} must be a price of 0 or more"
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn llm(model: &str) -> LlmConfig {
        LlmConfig {
            model: model.into(),
            pricing: Default::default(),
            ..LlmConfig::default()
        }
    }

    #[test]
    fn common_hosted_models_have_built_in_prices_and_the_config_overrides_them() {
        for model in [
            "gpt-4o",
            "gpt-4o-mini",
            "gpt-4.1",
            "gpt-4.1-mini",
            "o3",
            "o4-mini",
            "claude-sonnet-4-0",
            "mistral-small-latest",
            "llama-3.3-70b-versatile",
            "openai/gpt-4.1-nano",
        ] {
            assert!(price_for(&llm(model), model).is_some(), "{model}");
            assert!(unpriced_model_warning(&llm(model)).is_none(), "{model}");
        }
        let mut own = llm("gpt-4o");
        own.pricing.insert("gpt-4o".into(), ModelPricing::default());
        assert_eq!(
            price_for(&own, "gpt-4o"),
            Some(ModelPricing::default()),
            "a [llm.pricing] entry wins"
        );
    }

    #[test]
    fn a_model_without_a_price_is_named_in_the_warning_until_it_gets_one() {
        let mut config = llm("qwen2.5:7b");
        let warning = unpriced_model_warning(&config).expect("unpriced");
        assert!(
            warning.contains("cost limits cannot hold for model qwen2.5:7b"),
            "{warning}"
        );
        config
            .pricing
            .insert("qwen2.5:7b".into(), ModelPricing::default());
        assert!(unpriced_model_warning(&config).is_none());
    }

    #[test]
    fn a_negative_price_is_refused_naming_the_key() {
        let mut config = llm("m");
        config.pricing.insert(
            "m".into(),
            ModelPricing {
                output_per_million: -1.0,
                ..ModelPricing::default()
            },
        );
        let err = validate_pricing(&config).unwrap_err();
        assert!(
            err.contains("llm.pricing.\"m\".output_per_million"),
            "{err}"
        );
    }
}
