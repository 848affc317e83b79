//! The ledger: limits, claims, persistence and the first-start build.

use super::*;
use crate::agent::{Investigation, InvestigationRequest, Trigger};

/// A ledger for gpt-4o-mini with the default limits per investigation (it reserves
/// about $0.019) and these daily limits.
fn ledger(dir: &std::path::Path, max_per_day: u32, limit: f64) -> (SpendLedger, Store) {
    let store = Store::open(dir).unwrap();
    let mut config = Config::default();
    config.alerts.max_investigations_per_day = max_per_day;
    config.alerts.daily_cost_limit_usd = limit;
    let invs = InvestigationStore::open(&store).unwrap();
    let metrics = Arc::new(Metrics::new("gpt-4o-mini"));
    (
        SpendLedger::open(&store, &invs, &config, metrics).unwrap(),
        store,
    )
}

fn today() -> NaiveDate {
    Utc::now().date_naive()
}

#[test]
fn concurrent_claims_cannot_overshoot_the_cost_limit() {
    let dir = tempfile::tempdir().unwrap();
    let (l, _store) = ledger(dir.path(), 50, 0.1);
    let reserve = l.reserve_usd();
    assert!(reserve > 0.0 && reserve < 0.1, "{reserve}");
    let fits = (0.1 / reserve).floor() as usize;
    let mut claims = Vec::new();
    for _ in 0..fits {
        claims.push(l.admit(Trigger::Ask, today()).unwrap());
    }
    let Err(SubmitError::OverBudget(e)) = l.admit(Trigger::Ask, today()) else {
        panic!("one more than fits was admitted");
    };
    assert_eq!(e.limit, Limit::Cost);
    assert!(e.to_string().contains("alerts.daily_cost_limit_usd"), "{e}");
    // Settled at their real cost, the claims give the rest back.
    for c in claims {
        c.settle(0.001).unwrap();
    }
    let b = l.budget();
    assert!((b.spent_usd - 0.001 * fits as f64).abs() < 1e-9, "{b:?}");
    assert_eq!(b.reserved_usd, 0.0);
    assert!(l.admit(Trigger::Ask, today()).is_ok());
}

#[test]
fn a_dropped_claim_releases_its_reservation_and_a_refund_its_count() {
    let dir = tempfile::tempdir().unwrap();
    let (l, _store) = ledger(dir.path(), 2, 1.0);
    let claim = l.admit(Trigger::Ask, today()).unwrap();
    assert!(l.budget().reserved_usd > 0.0);
    drop(claim); // an error path, a panic, a cancelled task
    assert_eq!(l.budget().reserved_usd, 0.0);
    assert_eq!(l.budget().investigations, 1);
    l.admit(Trigger::Schedule, today())
        .unwrap()
        .refund()
        .unwrap();
    assert_eq!(l.budget().investigations, 1);
    let _second = l.admit(Trigger::Ask, today()).unwrap();
    let Err(SubmitError::OverBudget(e)) = l.admit(Trigger::Ask, today()) else {
        panic!("the count limit did not hold");
    };
    assert_eq!(e.limit, Limit::Count);
    assert!(
        e.to_string()
            .contains("2 of 2 investigations today (alerts.max_investigations_per_day"),
        "{e}"
    );
}

#[test]
fn held_alert_decisions_count_until_released() {
    let dir = tempfile::tempdir().unwrap();
    let (l, _store) = ledger(dir.path(), 1, 0.0);
    l.hold();
    assert_eq!(l.budget().exceeded(), Some(Limit::Count));
    assert!(l.admit(Trigger::Ask, today()).is_err());
    l.release_hold();
    assert!(l.admit(Trigger::Ask, today()).is_ok());
}

#[test]
fn an_admitted_decision_takes_over_its_held_place_in_one_step() {
    let dir = tempfile::tempdir().unwrap();
    let (l, _store) = ledger(dir.path(), 2, 0.0);
    l.hold();
    l.hold();
    let _first = l.admit_decided(today()).unwrap();
    // Counted once: one admitted and one still held, never three.
    assert_eq!(l.budget().investigations, 2);
    let _second = l.admit_decided(today()).unwrap();
    assert_eq!(l.budget().investigations, 2);
    assert_eq!(l.budget().exceeded(), Some(Limit::Count));
}

#[test]
fn settled_spend_survives_a_restart_and_reservations_do_not() {
    let dir = tempfile::tempdir().unwrap();
    {
        let (l, _store) = ledger(dir.path(), 50, 2.0);
        l.admit(Trigger::Ask, today()).unwrap().settle(0.5).unwrap();
        // Running when the process stops: nothing of its reservation is stored.
        let _running = l.admit(Trigger::Ask, today()).unwrap();
    }
    let (l, _store) = ledger(dir.path(), 50, 2.0);
    let b = l.budget();
    assert_eq!(
        (b.investigations, b.spent_usd, b.reserved_usd),
        (2, 0.5, 0.0)
    );
}

#[test]
fn the_first_start_builds_today_from_the_stored_investigations_once() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = Store::open(dir.path()).unwrap();
        let invs = InvestigationStore::open(&store).unwrap();
        for (status, cost) in [
            (InvestigationStatus::Finished, 0.25),
            (InvestigationStatus::Cancelled, 0.0),
            (InvestigationStatus::Running, 0.1),
        ] {
            let mut inv = Investigation::new(
                InvestigationRequest {
                    trigger: Trigger::Ask,
                    title: "t".into(),
                    prompt: "p".into(),
                    context: None,
                    group_key: None,
                },
                "m",
            );
            inv.status = status;
            inv.cost_usd = cost;
            invs.put(&inv).unwrap();
        }
    }
    let (l, _store) = ledger(dir.path(), 50, 2.0);
    let b = l.budget();
    // Cancelled ones do not count; a running one's cost settles when it ends.
    assert_eq!((b.investigations, b.spent_usd), (2, 0.25));
    l.admit(Trigger::Ask, today()).unwrap().settle(0.1).unwrap();
    drop(l);
    drop(_store);
    let (l, _store) = ledger(dir.path(), 50, 2.0);
    assert_eq!(l.budget().investigations, 3, "not built a second time");
}

#[test]
fn a_call_that_does_not_fit_the_cost_limit_is_refused_and_counted() {
    let dir = tempfile::tempdir().unwrap();
    let (l, _store) = ledger(dir.path(), 50, 0.5);
    l.admit(Trigger::Ask, today()).unwrap().settle(0.5).unwrap();
    let estimate = l.call_reserve(6_000);
    assert!(estimate > 0.0);
    let e = l
        .reserve_call(Spender::Report, estimate)
        .err()
        .expect("refused");
    assert_eq!(e.limit, Limit::Cost);
    assert_eq!(
        l.inner
            .metrics
            .budget_rejections
            .with_label_values(&["cost", "report"])
            .get(),
        1
    );
}
