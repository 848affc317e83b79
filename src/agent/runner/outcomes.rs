//! How an investigation ends: the model's answer (a finding, or a correction and another
//! turn), the inconclusive end built from the evidence, a failure, and the last call
//! without tools when a limit stopped the loop or the model kept repeating calls.

use super::{Session, cause, general, grounding};
use crate::agent::figures;
use crate::agent::prompt;
use crate::agent::prose;
use crate::agent::{EventKind, Finding, Investigation, InvestigationStatus};
use crate::llm::{ChatMessage, LlmError};
use crate::text::truncate;

impl Session<'_> {
    /// Keeps the model's answer `text` in the conversation and asks `ask` of it.
    fn reply_to(&mut self, text: String, ask: String) {
        self.messages.push(ChatMessage::Assistant {
            content: Some(text),
            tool_calls: Vec::new(),
        });
        self.messages.push(ChatMessage::User(ask));
    }

    /// Handles an answer without tool calls: the finding, or a correction (then `None`:
    /// the loop goes on), or the inconclusive end.
    pub(super) async fn conclude(&mut self, content: Option<String>) -> Option<Investigation> {
        let text = content.unwrap_or_default();
        if let Some(first) = self.trouble.restated.take() {
            let (finding, changed) = cause::apply(first, &text, self.log.records());
            self.note(if changed {
                "asked which fact caused the alert, the model named one: it is the probable cause"
                    .into()
            } else {
                "asked which fact caused the alert, the model named none; its answer stands".into()
            });
            return Some(self.finish(InvestigationStatus::Finished, finding));
        }
        let json = Finding::from_answer(&text);
        let prose = json.is_none();
        let Some(finding) = json.or_else(|| prose::from_prose(&text)) else {
            if self.trouble.asked_for_json && self.answer_first {
                // The facts did not make an answer: the tools it may need.
                self.answer_first = false;
                self.trouble.asked_for_json = false;
                self.note(
                    "no usable answer from the facts, also after one correction; tools offered"
                        .into(),
                );
                self.reply_to(text, prompt::CALL_TOOLS_NOW.into());
                return None;
            }
            if self.trouble.asked_for_json {
                if !text.trim().is_empty() {
                    self.note(format!(
                        "the model's last answer (not a JSON finding): {}",
                        truncate(text.trim(), 300)
                    ));
                }
                let what = if text.trim().is_empty() {
                    "empty"
                } else {
                    "not the JSON finding"
                };
                return Some(self.inconclusive(format!(
                    "the model's final answer was {what}, also after one correction"
                )));
            }
            self.trouble.asked_for_json = true;
            let empty = text.trim().is_empty();
            self.record(EventKind::Note {
                message: "the answer was empty or not the JSON finding; asked once more".into(),
            });
            self.reply_to(text, prompt::answer_again(empty));
            return None;
        };
        if self.log.is_empty() && !self.tools.is_empty() && !self.trouble.asked_for_tools {
            self.trouble.asked_for_tools = true;
            self.record(EventKind::Note {
                message: "the model answered before calling any tool; asked it to call tools first"
                    .into(),
            });
            self.reply_to(text, prompt::CALL_TOOLS_FIRST.into());
            return None;
        }
        if !self.tools.is_empty() && !self.log.records().iter().any(|r| r.ok) {
            if !self.trouble.ran_general {
                self.trouble.ran_general = true;
                let calls = general::calls(&self.tools);
                if !calls.is_empty() {
                    let names: Vec<&str> = calls.iter().map(|c| c.name.as_str()).collect();
                    self.note(format!(
                        "the model called no tool when asked; ran the general tools for it ({})",
                        names.join(", ")
                    ));
                    self.run_turn(None, calls).await;
                    self.messages
                        .push(ChatMessage::User(prompt::ANSWER_FROM_GENERAL.into()));
                    return None;
                }
            }
            // A conclusion no tool result supports claims more than its evidence.
            return Some(
                self.inconclusive(
                    "the model concluded without any tool result to support it".into(),
                ),
            );
        }
        if !self.trouble.asked_cause {
            let trigger = self.trigger_text();
            if let Some(ask) = cause::request(
                &finding,
                self.log.records(),
                &self.symptoms,
                &trigger,
                self.alert_start,
                chrono::Utc::now(),
            ) {
                self.trouble.asked_cause = true;
                self.record(EventKind::Note {
                    message: "the probable cause restated the trigger while facts that began \
                              before it were not cited; asked once which caused it"
                        .into(),
                });
                self.trouble.restated = Some(finding);
                self.reply_to(text, ask);
                return None;
            }
        }
        if prose {
            self.record(EventKind::Note {
                message: "the model answered in prose; its text is the finding".into(),
            });
        }
        Some(self.finish(InvestigationStatus::Finished, finding))
    }

    /// The question and the alert's text: what the trigger already says.
    fn trigger_text(&self) -> String {
        match &self.inv.context {
            Some(c) => format!("{}\n{}", self.inv.prompt, c.render()),
            None => self.inv.prompt.clone(),
        }
    }

    /// A finding checked against the calls that ran and grounded in the sweep's facts,
    /// stored with `status`.
    pub(super) fn finish(
        &mut self,
        status: InvestigationStatus,
        mut finding: Finding,
    ) -> Investigation {
        for n in self.log.check_citations(&mut finding) {
            self.note(n);
        }
        if let Some((grounded, note)) =
            grounding::ground(&finding, self.log.records(), &self.trigger_text())
        {
            self.note(note);
            finding = grounded;
        }
        finding.figures = figures::for_finding(&finding, self.log.records(), &self.pinned);
        self.inv.finding = Some(finding);
        self.inv.status = status;
        self.inv.clone()
    }

    /// Ends with the finding built from the evidence gathered.
    pub(super) fn inconclusive(&mut self, what_went_wrong: String) -> Investigation {
        self.record(EventKind::Note {
            message: format!("inconclusive: {what_went_wrong}"),
        });
        let mut finding = prose::rule_based(&what_went_wrong, self.log.records())
            .unwrap_or_else(|| self.log.inconclusive_finding(&what_went_wrong));
        finding.figures = figures::for_finding(&finding, self.log.records(), &self.pinned);
        self.inv.finding = Some(finding);
        self.inv.status = InvestigationStatus::Inconclusive;
        self.inv.clone()
    }

    pub(super) fn fail(&mut self, e: &LlmError) -> Investigation {
        let message = e.to_string();
        if matches!(e, LlmError::NotConfigured) {
            self.record(EventKind::Error {
                message: message.clone(),
            });
        }
        self.inv.status = InvestigationStatus::Failed;
        self.inv.error = Some(message);
        self.inv.clone()
    }

    /// The model kept making calls that could not run. When calls did return data, one
    /// last call without tools asks for the finding from it: a small model often loops on
    /// a call it already made instead of answering (measured: the degraded pool and the
    /// failing probe were in the results, and the investigation ended inconclusive).
    /// Without data, or when that answer is unusable, the investigation is inconclusive.
    pub(super) async fn answer_without_tools(mut self, why: String) -> Investigation {
        if !self.log.records().iter().any(|r| r.ok) {
            return self.inconclusive(why);
        }
        self.note(format!("{why}; asked for the finding without tools"));
        self.messages
            .push(ChatMessage::User(prompt::answer_from_results()));
        self.fit();
        match self.chat(false).await {
            Ok(resp) => match read_answer(resp.content.as_deref().unwrap_or("")) {
                Some(f) => self.finish(InvestigationStatus::Finished, f),
                None => self.inconclusive(format!(
                    "{why}, and the answer asked for without tools was empty or not the JSON \
                     finding"
                )),
            },
            Err(e) => self.inconclusive(format!(
                "{why}, and the call for the answer without tools failed: {e}"
            )),
        }
    }

    /// A limit stopped the loop: one last call without tools asks for the finding.
    pub(super) async fn at_limit(mut self, limit: super::Limit) -> Investigation {
        let why = limit.why;
        self.note(why.clone());
        self.messages
            .push(ChatMessage::User(prompt::final_answer_now(&why)));
        self.fit();
        match self.chat(false).await {
            Ok(resp) => match read_answer(resp.content.as_deref().unwrap_or("")) {
                Some(f) => self.finish(limit.status, f),
                None => self.inconclusive(format!(
                    "{why}, and the final answer was empty or not the JSON finding"
                )),
            },
            Err(e) => {
                self.inv.error = Some(e.to_string());
                self.inv.finding = Some(
                    self.log
                        .inconclusive_finding(&format!("{why}, and the final call failed")),
                );
                self.inv.status = InvestigationStatus::LimitReached;
                self.inv.clone()
            }
        }
    }
}

/// The finding in a final answer: the JSON object, else the prose.
fn read_answer(text: &str) -> Option<Finding> {
    Finding::from_answer(text).or_else(|| prose::from_prose(text))
}
