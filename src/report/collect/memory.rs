//! Incident memory over the period: alerts investigated at least twice (by the alert
//! identity of `agent::memory`), with the last probable cause and people's verdicts, and
//! how many findings people marked right or wrong. Read from the investigations store, so
//! the counts are not capped by what memory keeps per alert.

use std::collections::BTreeMap;

use super::CollectContext;
use crate::agent::memory::AlertIdentity;
use crate::agent::{Investigation, InvestigationStatus, Verdict};
use crate::report::model::{MemoryData, RecurringIncident, Section};

/// The most recurring incidents listed.
const MAX_RECURRING: usize = 10;

pub async fn collect(ctx: &CollectContext) -> Section<MemoryData> {
    match super::agent::stored(ctx) {
        Ok(Some(list)) => Section {
            data: summarise(&list),
            notes: Vec::new(),
        },
        // Without the store (a report built outside the daemon and CLI) there is nothing
        // to count, and nothing failed.
        Ok(None) => Section::default(),
        Err(e) => Section::failed(e),
    }
}

/// `list`: the period's investigations, oldest first.
pub fn summarise(list: &[Investigation]) -> MemoryData {
    let mut data = MemoryData::default();
    let mut by_alert: BTreeMap<String, RecurringIncident> = BTreeMap::new();
    for inv in list {
        match inv.feedback.as_ref().map(|f| f.verdict) {
            Some(Verdict::Right) => data.feedback_right += 1,
            Some(Verdict::Wrong) => data.feedback_wrong += 1,
            None if inv.finding.is_some() => data.unreviewed += 1,
            None => {}
        }
        if inv.status == InvestigationStatus::Cancelled {
            continue;
        }
        let Some(identity) = AlertIdentity::of(inv) else {
            continue;
        };
        let r = by_alert
            .entry(identity.key())
            .or_insert_with(|| RecurringIncident {
                alert: identity.display(),
                ..Default::default()
            });
        r.investigations += 1;
        let at = inv.finished_at.unwrap_or(inv.created_at);
        if at >= r.last_seen {
            r.last_seen = at;
            if let Some(f) = inv
                .finding
                .as_ref()
                .filter(|f| !f.probable_cause.is_empty())
            {
                r.last_probable_cause = f.probable_cause.clone();
            }
        }
        match inv.feedback.as_ref().map(|f| f.verdict) {
            Some(Verdict::Right) => r.right += 1,
            Some(Verdict::Wrong) => r.wrong += 1,
            None => {}
        }
    }
    let mut recurring: Vec<RecurringIncident> = by_alert
        .into_values()
        .filter(|r| r.investigations >= 2)
        .collect();
    recurring.sort_by(|a, b| {
        b.investigations
            .cmp(&a.investigations)
            .then(b.last_seen.cmp(&a.last_seen))
    });
    recurring.truncate(MAX_RECURRING);
    data.recurring = recurring;
    data
}

#[cfg(test)]
mod tests {
    use chrono::{Duration, Utc};

    use super::*;
    use crate::agent::{
        AlertContext, AlertSample, AlertScope, Context, Feedback, Finding, GroupKey, GroupSummary,
        InvestigationRequest, Trigger,
    };

    fn inv(
        name: &str,
        instance: &str,
        cause: &str,
        verdict: Option<Verdict>,
        ago_h: i64,
    ) -> Investigation {
        let labels = [("alertname", name), ("instance", instance)]
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .into();
        let ctx = AlertContext {
            scope: AlertScope::Group(GroupSummary {
                key: GroupKey::Fingerprint("fp".into()),
                received: 1,
                firing: 1,
            }),
            alerts: vec![AlertSample {
                firing: true,
                labels,
                ..AlertSample::default()
            }],
        };
        let mut i = Investigation::new(
            InvestigationRequest {
                trigger: Trigger::Alert,
                title: name.into(),
                prompt: "p".into(),
                context: Some(Context::Alert(ctx)),
                group_key: None,
            },
            "m",
        );
        i.status = InvestigationStatus::Finished;
        i.finished_at = Some(Utc::now() - Duration::hours(ago_h));
        i.finding = Some(Finding {
            summary: "s".into(),
            probable_cause: cause.into(),
            ..Default::default()
        });
        i.feedback = verdict.map(|verdict| Feedback {
            verdict,
            note: None,
            at: Utc::now(),
        });
        i
    }

    #[test]
    fn alerts_investigated_twice_or_more_are_recurring_with_the_last_cause_and_verdicts() {
        let list = [
            inv("DiskFull", "nas", "old cause", Some(Verdict::Wrong), 50),
            inv("DiskFull", "nas", "logs grow", Some(Verdict::Right), 10),
            inv("DiskFull", "nas", "logs grow again", None, 5),
            inv("NodeDown", "web", "power", Some(Verdict::Right), 8),
            inv("NodeDown", "web", "power", None, 2),
            inv("DiskFull", "other", "once only", None, 1),
        ];
        let mut ask = inv("x", "y", "z", Some(Verdict::Wrong), 1);
        ask.trigger = Trigger::Ask;
        let mut list = list.to_vec();
        list.push(ask);
        let d = summarise(&list);
        assert_eq!(
            (d.feedback_right, d.feedback_wrong, d.unreviewed),
            (2, 2, 3)
        );
        assert_eq!(d.recurring.len(), 2, "{:?}", d.recurring);
        let disk = &d.recurring[0];
        assert_eq!(disk.alert, "DiskFull (instance=nas)");
        assert_eq!(disk.investigations, 3);
        assert_eq!(disk.last_probable_cause, "logs grow again");
        assert_eq!((disk.right, disk.wrong), (1, 1));
        assert_eq!(d.recurring[1].alert, "NodeDown (instance=web)");
        assert_eq!(d.recurring[1].investigations, 2);
    }
}
