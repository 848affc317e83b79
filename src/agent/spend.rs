//! The daily budgets every LLM use answers to: `alerts.max_investigations_per_day` and
//! `alerts.daily_cost_limit_usd`, for alert, ask and scheduled investigations and the
//! weekly report's narrative call alike.
//!
//! A running ledger keeps today's totals (UTC): one small record per day in sled (the
//! investigations admitted and the dollars settled), cached in memory, so checking the
//! budget costs a mutex and some arithmetic whatever is stored. It is built from the stored
//! investigations once, on the first start that finds no ledger.
//!
//! Admitting work reserves its worst-case cost (`budget::investigation_reserve`) as a [`Claim`];
//! the claim is settled to the real cost when the work ends, or released by its drop guard
//! on any other path (error, panic, cancellation, shutdown). Reservations live in memory
//! only: after a restart, resumed work reserves again. So N investigations at once cannot
//! overshoot the limit by N: each one's worst case is counted before it starts.

use std::sync::{Arc, Mutex, MutexGuard};

use chrono::{DateTime, NaiveDate, Utc};
use serde::{Deserialize, Serialize};

use super::budget::{
    Budget, Limit, OverBudget, Spender, SubmitError, cap_at, investigation_reserve,
};
use super::store::InvestigationStore;
use super::{InvestigationStatus, Trigger};
use crate::config::{Config, ModelPricing, price_for};
use crate::llm::{CHARS_PER_TOKEN, Usage, cost_of};
use crate::store::{Store, StoreError, Tree};
use crate::telemetry::Metrics;

/// Marks a ledger built from the stored investigations (the key sorts after every day).
const BUILT_KEY: &str = "~built";

/// Tokens reserved for the answer of a call not fitted to a context window (the report's).
const CALL_ANSWER_TOKENS: u64 = 1024;

/// One day's totals as stored.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DayTotals {
    pub investigations: u32,
    pub cost_usd: f64,
}

fn day_key(day: NaiveDate) -> String {
    day.format("%Y-%m-%d").to_string()
}

/// Today's budget and its reservations. Cheap to clone.
#[derive(Clone)]
pub struct SpendLedger {
    inner: Arc<Inner>,
}

struct Inner {
    days: Tree<DayTotals>,
    state: Mutex<State>,
    max_per_day: u32,
    cost_limit_usd: f64,
    reserve_usd: f64,
    /// The model's price, for single calls.
    price: Option<ModelPricing>,
    metrics: Arc<Metrics>,
}

/// Reservations are added and taken back in whole nanodollars, so they return to exactly 0.
const NANOS: f64 = 1e9;

fn nanos(usd: f64) -> u64 {
    (usd * NANOS).round() as u64
}

struct State {
    today: NaiveDate,
    totals: DayTotals,
    /// Reserved by live claims, in nanodollars.
    reserved: u64,
    /// Alert decisions taken at intake and not yet submitted (each counts as one
    /// investigation with its reservation).
    held: u32,
}

impl SpendLedger {
    /// Opens the ledger; on the first start without one, builds today's totals from the
    /// stored investigations (the only time they are read for the budget).
    pub fn open(
        store: &Store,
        investigations: &InvestigationStore,
        config: &Config,
        metrics: Arc<Metrics>,
    ) -> Result<Self, StoreError> {
        let days: Tree<DayTotals> = store.tree("spend_ledger")?;
        let today = Utc::now().date_naive();
        if !days.contains(BUILT_KEY)? {
            let since = today.and_hms_opt(0, 0, 0).expect("midnight").and_utc();
            let mut totals = DayTotals::default();
            for inv in investigations.between(since, DateTime::<Utc>::MAX_UTC)? {
                if inv.status != InvestigationStatus::Cancelled {
                    totals.investigations += 1;
                }
                if inv.status.is_final() {
                    totals.cost_usd += inv.cost_usd;
                }
            }
            days.insert(day_key(today), &totals)?;
            days.insert(BUILT_KEY, &DayTotals::default())?;
            tracing::info!(
                investigations = totals.investigations,
                cost_usd = totals.cost_usd,
                "spend ledger built from today's stored investigations"
            );
        }
        let totals = days.get(day_key(today))?.unwrap_or_default();
        let ledger = Self {
            inner: Arc::new(Inner {
                days,
                state: Mutex::new(State {
                    today,
                    totals,
                    reserved: 0,
                    held: 0,
                }),
                max_per_day: config.alerts.max_investigations_per_day,
                cost_limit_usd: config.alerts.daily_cost_limit_usd,
                reserve_usd: investigation_reserve(config),
                price: price_for(&config.llm, &config.llm.model),
                metrics,
            }),
        };
        ledger.publish(&ledger.lock());
        Ok(ledger)
    }

    /// Today's budget.
    pub fn budget(&self) -> Budget {
        let state = self.lock();
        self.budget_of(&state)
    }

    /// What one investigation reserves.
    pub fn reserve_usd(&self) -> f64 {
        self.inner.reserve_usd
    }

    /// The most one call without tools of `prompt_chars` characters can cost (the
    /// report's narrative), capped like an investigation's reservation.
    pub fn call_reserve(&self, prompt_chars: usize) -> f64 {
        let Some(price) = &self.inner.price else {
            return 0.0;
        };
        let usage = Usage {
            prompt: (prompt_chars as f64 / CHARS_PER_TOKEN).ceil() as u64 + 64,
            completion: CALL_ANSWER_TOKENS,
            cached: 0,
        };
        cap_at(self.inner.cost_limit_usd, cost_of(price, usage))
    }

    /// Admits one investigation created on `day` if both budgets allow it: counts it
    /// (durably once the caller flushes) and reserves its worst case.
    pub fn admit(&self, trigger: Trigger, day: NaiveDate) -> Result<Claim, SubmitError> {
        let mut state = self.lock();
        let budget = self.budget_of(&state);
        if let Some(limit) = budget.exceeded() {
            return Err(self
                .refuse(limit, budget, budget.reserve_usd, trigger.into())
                .into());
        }
        self.count(&mut state, day, 1)?;
        Ok(self.reserve(&mut state, day, self.inner.reserve_usd))
    }

    /// Admits an investigation the alert intake already decided within the budget: the
    /// place its decision held (`hold`) becomes its count in the same step, so no reader
    /// of the budget sees both (a decision at the edge of the budget was refused in that
    /// moment). Give the place back with `hold` if the investigation is then not stored.
    pub fn admit_decided(&self, day: NaiveDate) -> Result<Claim, StoreError> {
        let mut state = self.lock();
        self.count(&mut state, day, 1)?;
        state.held = state.held.saturating_sub(1);
        Ok(self.reserve(&mut state, day, self.inner.reserve_usd))
    }

    /// Reserves again for an investigation admitted before a restart (already counted).
    pub fn resume(&self, day: NaiveDate) -> Claim {
        let mut state = self.lock();
        self.reserve(&mut state, day, self.inner.reserve_usd)
    }

    /// Reserves `estimate_usd` for one call that is not an investigation (the report's
    /// narrative): only the cost limit applies.
    pub fn reserve_call(&self, spender: Spender, estimate_usd: f64) -> Result<Claim, OverBudget> {
        let mut state = self.lock();
        let budget = self.budget_of(&state);
        if budget.cost_exceeded(estimate_usd) {
            return Err(self.refuse(Limit::Cost, budget, estimate_usd, spender));
        }
        let today = state.today;
        Ok(self.reserve(&mut state, today, estimate_usd))
    }

    /// Counts an alert decision not yet submitted, with its reservation.
    pub fn hold(&self) {
        let mut state = self.lock();
        state.held += 1;
        self.publish(&state);
    }

    /// The decision was submitted (now admitted), or dropped.
    pub fn release_hold(&self) {
        let mut state = self.lock();
        state.held = state.held.saturating_sub(1);
        self.publish(&state);
    }

    fn refuse(
        &self,
        limit: Limit,
        budget: Budget,
        needed_usd: f64,
        spender: Spender,
    ) -> OverBudget {
        self.inner
            .metrics
            .budget_rejections
            .with_label_values(&[limit.label(), spender.label()])
            .inc();
        OverBudget {
            limit,
            budget,
            needed_usd,
        }
    }

    fn reserve(&self, state: &mut State, day: NaiveDate, usd: f64) -> Claim {
        state.reserved += nanos(usd);
        self.publish(state);
        Claim {
            ledger: self.clone(),
            reserved_usd: usd,
            day,
            open: true,
        }
    }

    /// Adds `n` investigations (or takes them back) on `day`, durably.
    fn count(&self, state: &mut State, day: NaiveDate, n: i64) -> Result<(), StoreError> {
        self.update_day(state, day, |t| {
            t.investigations = (i64::from(t.investigations) + n).max(0) as u32;
        })
    }

    fn update_day(
        &self,
        state: &mut State,
        day: NaiveDate,
        f: impl Fn(&mut DayTotals),
    ) -> Result<(), StoreError> {
        let new = self.inner.days.update(day_key(day), |old| {
            let mut t = old.unwrap_or_default();
            f(&mut t);
            Some(t)
        })?;
        if day == state.today
            && let Some(t) = new
        {
            state.totals = t;
        }
        self.publish(state);
        Ok(())
    }

    fn close(&self, claim: &Claim, cost_usd: f64, refund: bool) -> Result<(), StoreError> {
        let mut state = self.lock();
        state.reserved = state.reserved.saturating_sub(nanos(claim.reserved_usd));
        if refund {
            return self.count(&mut state, claim.day, -1);
        }
        if cost_usd > 0.0 {
            return self.update_day(&mut state, claim.day, |t| t.cost_usd += cost_usd);
        }
        self.publish(&state);
        Ok(())
    }

    /// The state, rolled over to a new UTC day if one began.
    fn lock(&self) -> MutexGuard<'_, State> {
        let mut state = self
            .inner
            .state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let today = Utc::now().date_naive();
        if today != state.today {
            state.totals = match self.inner.days.get(day_key(today)) {
                Ok(t) => t.unwrap_or_default(),
                Err(e) => {
                    tracing::error!(error = %e, "cannot read today's spend; counting from 0");
                    DayTotals::default()
                }
            };
            state.today = today;
            self.publish(&state);
        }
        state
    }

    fn budget_of(&self, state: &State) -> Budget {
        let reserve = self.inner.reserve_usd;
        Budget {
            investigations: state.totals.investigations + state.held,
            spent_usd: state.totals.cost_usd,
            reserved_usd: state.reserved as f64 / NANOS + f64::from(state.held) * reserve,
            max_per_day: self.inner.max_per_day,
            cost_limit_usd: self.inner.cost_limit_usd,
            reserve_usd: reserve,
        }
    }

    fn publish(&self, state: &State) {
        let b = self.budget_of(state);
        let m = &self.inner.metrics;
        m.budget_today_dollars.set(b.spent_usd + b.reserved_usd);
        m.budget_today_investigations
            .set(i64::from(b.investigations));
    }
}

/// A reservation held while work runs. Settle it with the real cost; dropped unsettled
/// (an error path, a panic, a cancelled task) it releases its reservation.
#[must_use = "a claim releases its reservation when dropped"]
pub struct Claim {
    ledger: SpendLedger,
    reserved_usd: f64,
    day: NaiveDate,
    open: bool,
}

impl Claim {
    /// Replaces the reservation with the real cost, counted on the day it was admitted.
    pub fn settle(mut self, cost_usd: f64) -> Result<(), StoreError> {
        self.open = false;
        self.ledger.close(&self, cost_usd, false)
    }

    /// The work never ran (cancelled while queued, or not stored): releases the
    /// reservation and takes back its count.
    pub fn refund(mut self) -> Result<(), StoreError> {
        self.open = false;
        self.ledger.close(&self, 0.0, true)
    }

    pub fn reserved_usd(&self) -> f64 {
        self.reserved_usd
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        if self.open {
            let _ = self.ledger.close(self, 0.0, false);
        }
    }
}

#[cfg(test)]
mod tests;
