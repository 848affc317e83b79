//! Durable delivery through the outbox: findings recovered from the store however far the
//! notifier lags, the weekly report through the outbox (an SMTP outage outlasted without
//! a restart, at most once across a crash), and Grafana annotations of findings.

mod findings;
mod grafana;
mod report;

use crate::support::fake_llm::{self, answer, finding_json, tool_calls};

/// One tool call, then the finding (a conclusion without any tool result is inconclusive).
pub fn finding_llm(summary: &str) -> Vec<fake_llm::Reply> {
    vec![
        tool_calls(&[("call_1", "current_time", "{}")], (50, 10, 0)),
        answer(&finding_json(summary, "call_1"), (100, 20, 0)),
    ]
}
