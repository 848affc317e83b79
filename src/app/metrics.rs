//! The daemon's metric registry with every known series at 0. The label values that are a
//! domain type's variants (triggers, statuses, outcomes, budgets, channels, collectors and
//! their runs, verdicts, token kinds) are taken from those types, each declared with
//! `labelled!`, so a new variant has its series from the start and no list here can miss
//! it.

use crate::agent::{InvestigationStatus, Limit, Spender, Trigger, Verdict};
use crate::alerts::AlertSource;
use crate::alerts::store::Outcome;
use crate::llm::TokenKind;
use crate::notify::{Channel, Delivered};
use crate::report::collect::{Collector, CollectorRun};
use crate::report::model::{ReportStatus, ReportTrigger};
use crate::telemetry::{Labelled, Metrics};

/// The registry of a daemon whose LLM is `model`, every known series at 0.
pub fn daemon_metrics(model: &str) -> Metrics {
    let m = Metrics::new(model);
    let finals: Vec<&str> = InvestigationStatus::ALL
        .into_iter()
        .filter(|s| s.is_final())
        .map(InvestigationStatus::as_str)
        .collect();
    let counted: Vec<&str> = ReportStatus::ALL
        .iter()
        .filter(|s| s.counted())
        .map(|s| s.label())
        .collect();
    Metrics::init_series(&m.investigations, &[&Trigger::labels(), &finals]);
    Metrics::init_series(
        &m.alerts_received,
        &[&AlertSource::labels(), &Outcome::labels()],
    );
    Metrics::init_series(&m.alerts_capped, &[&AlertSource::labels()]);
    Metrics::init_series(
        &m.budget_rejections,
        &[&Limit::labels(), &Spender::labels()],
    );
    Metrics::init_series(&m.reports, &[&ReportTrigger::labels(), &counted]);
    Metrics::init_series(&m.feedback, &[&Verdict::labels()]);
    Metrics::init_series(&m.llm_tokens, &[&TokenKind::labels()]);
    Metrics::init_series(
        &m.notifications,
        &[&Channel::labels(), &Delivered::labels()],
    );
    Metrics::init_series(&m.report_collector_duration, &[&Collector::labels()]);
    Metrics::init_series(
        &m.report_collector_runs,
        &[&Collector::labels(), &CollectorRun::labels()],
    );
    m
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    /// The values `label` takes in the series of `family` that `text` exports.
    fn values(text: &str, family: &str, label: &str) -> BTreeSet<String> {
        let needle = format!("{label}=\"");
        text.lines()
            .filter_map(|l| l.strip_prefix(family)?.strip_prefix('{'))
            .filter_map(|l| Some(l.split_once(&needle)?.1.split('"').next()?.to_string()))
            .collect()
    }

    fn set(labels: impl IntoIterator<Item = &'static str>) -> BTreeSet<String> {
        labels.into_iter().map(str::to_string).collect()
    }

    fn of<T: Labelled>() -> BTreeSet<String> {
        set(T::labels())
    }

    #[test]
    fn every_domain_labelled_family_has_exactly_the_series_of_its_types_variants() {
        let text = daemon_metrics("m").encode();
        let v = |family: &str, label: &str| values(&text, &format!("sre_agent_{family}"), label);
        let finals = InvestigationStatus::ALL
            .into_iter()
            .filter(|s| s.is_final());
        let finals = set(finals.map(InvestigationStatus::as_str));
        // A queued report is counted by the outbox when its delivery ends.
        let counted = ReportStatus::ALL.iter().filter(|s| s.counted());
        let counted = set(counted.map(|s| s.label()));
        assert!(!counted.contains("queued"));
        let expected = [
            ("investigations_total", "trigger", of::<Trigger>()),
            ("investigations_total", "status", finals),
            ("alerts_received_total", "source", of::<AlertSource>()),
            ("alerts_received_total", "outcome", of::<Outcome>()),
            ("alerts_capped_total", "source", of::<AlertSource>()),
            ("budget_rejections_total", "budget", of::<Limit>()),
            ("budget_rejections_total", "trigger", of::<Spender>()),
            ("reports_total", "trigger", of::<ReportTrigger>()),
            ("reports_total", "status", counted),
            ("feedback_total", "verdict", of::<Verdict>()),
            ("llm_tokens_total", "type", of::<TokenKind>()),
            ("notifications_total", "channel", of::<Channel>()),
            ("notifications_total", "status", of::<Delivered>()),
            (
                "report_collector_runs_total",
                "collector",
                of::<Collector>(),
            ),
            (
                "report_collector_runs_total",
                "status",
                of::<CollectorRun>(),
            ),
            (
                "report_collector_duration_seconds_count",
                "collector",
                of::<Collector>(),
            ),
        ];
        for (family, label, want) in expected {
            assert_eq!(v(family, label), want, "{family}{{{label}}}");
        }
        // Every combination, not only every value.
        let series = |family: &str| {
            let prefix = format!("sre_agent_{family}{{");
            text.lines().filter(|l| l.starts_with(&prefix)).count()
        };
        assert_eq!(
            series("budget_rejections_total"),
            Limit::ALL.len() * Spender::ALL.len()
        );
        assert_eq!(
            series("notifications_total"),
            Channel::ALL.len() * Delivered::ALL.len()
        );
    }

    #[test]
    fn every_trigger_counts_against_the_budgets_under_its_own_label() {
        for &t in Trigger::ALL {
            assert_eq!(Spender::from(t).label(), t.label());
        }
    }
}
