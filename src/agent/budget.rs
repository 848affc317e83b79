//! The daily budgets and what one piece of work reserves in them: which budget
//! ([`Limit`]), today's use ([`Budget`]), a refusal naming the key and what was spent
//! ([`OverBudget`]), and the worst-case cost of an investigation
//! ([`investigation_reserve`]). The ledger that keeps them is `spend.rs`.

use super::Trigger;
use crate::config::{Config, price_for};
use crate::llm::{ContextWindow, Usage, cost_of};
use crate::store::StoreError;

crate::telemetry::labelled! {
    /// Which daily budget: the `budget` label of `sre_agent_budget_rejections_total`.
    pub enum Limit {
        /// `alerts.max_investigations_per_day`.
        Count => "count",
        /// `alerts.daily_cost_limit_usd`.
        Cost => "cost",
    }
}

impl Limit {
    /// The configuration key of this budget.
    pub fn key(self) -> &'static str {
        match self {
            Self::Count => "alerts.max_investigations_per_day",
            Self::Cost => "alerts.daily_cost_limit_usd",
        }
    }
}

crate::telemetry::labelled! {
    /// What the daily budgets can refuse: an investigation, by its trigger, or the report's
    /// narrative call (the `trigger` label of `sre_agent_budget_rejections_total`).
    pub enum Spender {
        Ask => "ask",
        Alert => "alert",
        Schedule => "schedule",
        Report => "report",
    }
}

impl From<Trigger> for Spender {
    fn from(t: Trigger) -> Self {
        match t {
            Trigger::Ask => Self::Ask,
            Trigger::Alert => Self::Alert,
            Trigger::Schedule => Self::Schedule,
        }
    }
}

/// Today's use of the daily budgets.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Budget {
    /// Investigations counted today (UTC), alert decisions not yet submitted included.
    pub investigations: u32,
    /// Dollars of work that ended today (by the day it was admitted).
    pub spent_usd: f64,
    /// Dollars reserved by queued and running work.
    pub reserved_usd: f64,
    pub max_per_day: u32,
    /// 0: no cost limit.
    pub cost_limit_usd: f64,
    /// What one more investigation reserves.
    pub reserve_usd: f64,
}

impl Budget {
    /// The budget one more investigation would exceed, if any.
    pub fn exceeded(&self) -> Option<Limit> {
        if self.investigations >= self.max_per_day {
            return Some(Limit::Count);
        }
        self.cost_exceeded(self.reserve_usd).then_some(Limit::Cost)
    }

    pub fn exhausted(&self) -> bool {
        self.exceeded().is_some()
    }

    /// Whether reserving `amount` more would pass the cost limit (or it is reached).
    pub fn cost_exceeded(&self, amount: f64) -> bool {
        let committed = self.spent_usd + self.reserved_usd;
        self.cost_limit_usd > 0.0
            && (committed >= self.cost_limit_usd
                || committed + amount > self.cost_limit_usd * (1.0 + 1e-9))
    }
}

/// Work refused by a daily budget.
#[derive(Clone, Debug, thiserror::Error)]
#[error("{}", self.describe())]
pub struct OverBudget {
    pub limit: Limit,
    pub budget: Budget,
    /// What the refused work would have reserved.
    pub needed_usd: f64,
}

impl OverBudget {
    fn describe(&self) -> String {
        let b = &self.budget;
        match self.limit {
            Limit::Count => format!(
                "the daily investigation budget is used up: {} of {} investigations today \
                 ({}; it resets at 00:00 UTC)",
                b.investigations,
                b.max_per_day,
                self.limit.key()
            ),
            Limit::Cost => format!(
                "the daily cost budget is used up: ${:.4} spent and ${:.4} reserved by running \
                 work today, of ${:.4} ({}); this needs ${:.4} (it resets at 00:00 UTC)",
                b.spent_usd,
                b.reserved_usd,
                b.cost_limit_usd,
                self.limit.key(),
                self.needed_usd
            ),
        }
    }
}

/// Admitting an investigation failed.
#[derive(Debug, thiserror::Error)]
pub enum SubmitError {
    #[error(transparent)]
    OverBudget(#[from] OverBudget),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The most one investigation can cost at the model's price: the least of the bounds set by
/// `llm.max_steps` (+1 for the final call at a limit) with full `llm.context_tokens`
/// requests, `llm.max_tokens_per_investigation` and `llm.max_cost_per_investigation_usd`
/// (each plus the one call that may cross it), capped at `alerts.daily_cost_limit_usd` so
/// a small daily limit still admits one. 0 for a model without a price.
pub fn investigation_reserve(config: &Config) -> f64 {
    let llm = &config.llm;
    let Some(price) = price_for(llm, &llm.model) else {
        return 0.0;
    };
    let answer = ContextWindow::new(llm.context_tokens).reserve();
    let step = cost_of(
        &price,
        Usage {
            prompt: llm.context_tokens.saturating_sub(answer),
            completion: answer,
            cached: 0,
        },
    );
    let mut worst = step * f64::from(llm.max_steps + 1);
    if llm.max_cost_per_investigation_usd > 0.0 {
        worst = worst.min(llm.max_cost_per_investigation_usd + step);
    }
    if llm.max_tokens_per_investigation > 0 {
        let dearest = price.input_per_million.max(price.output_per_million);
        worst = worst.min(llm.max_tokens_per_investigation as f64 * dearest / 1e6 + step);
    }
    cap(config, worst)
}

fn cap(config: &Config, usd: f64) -> f64 {
    cap_at(config.alerts.daily_cost_limit_usd, usd)
}

pub(super) fn cap_at(limit: f64, usd: f64) -> f64 {
    if limit > 0.0 { usd.min(limit) } else { usd }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_investigation_reserves_its_worst_case_capped_at_the_daily_limit() {
        let mut config = Config::default();
        config.llm.max_cost_per_investigation_usd = 0.0;
        config.llm.max_tokens_per_investigation = 0;
        config.alerts.daily_cost_limit_usd = 0.0;
        // gpt-4o-mini, 8192 tokens, 10 steps: 11 full calls.
        let step = (7168.0 * 0.15 + 1024.0 * 0.60) / 1e6;
        let worst = investigation_reserve(&config);
        assert!((worst - 11.0 * step).abs() < 1e-12, "{worst}");
        config.llm.max_cost_per_investigation_usd = 0.001;
        let bounded = investigation_reserve(&config);
        assert!((bounded - (0.001 + step)).abs() < 1e-12, "{bounded}");
        config.alerts.daily_cost_limit_usd = 0.0005;
        assert_eq!(investigation_reserve(&config), 0.0005);
        config.llm.model = "some-local-model".into();
        assert_eq!(investigation_reserve(&config), 0.0);
    }

    #[test]
    fn the_cost_limit_counts_reservations_and_0_means_no_limit() {
        let b = Budget {
            investigations: 0,
            spent_usd: 0.5,
            reserved_usd: 0.4,
            max_per_day: 10,
            cost_limit_usd: 1.0,
            reserve_usd: 0.2,
        };
        assert_eq!(b.exceeded(), Some(Limit::Cost));
        assert_eq!(
            Budget {
                reserved_usd: 0.3,
                ..b
            }
            .exceeded(),
            None
        );
        assert_eq!(
            Budget {
                cost_limit_usd: 0.0,
                ..b
            }
            .exceeded(),
            None
        );
    }
}
