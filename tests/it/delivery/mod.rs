//! Durable delivery through the outbox: findings recovered from the store however far the
//! notifier lags, the weekly report through the outbox (an SMTP outage outlasted without
//! a restart, at most once across a crash, one email per period however reports race),
//! Grafana annotations of findings, and alert text made inert for each channel (`markup`).

mod findings;
mod grafana;
mod markup;
mod report;
mod report_cli;

use crate::support::fake_llm::{self, answer, finding_json, tool_calls};

/// One tool call, then the finding (a conclusion without any tool result is inconclusive).
pub fn finding_llm(summary: &str) -> Vec<fake_llm::Reply> {
    vec![
        tool_calls(&[("call_1", "current_time", "{}")], (50, 10, 0)),
        answer(&finding_json(summary, "call_1"), (100, 20, 0)),
    ]
}
