//! A finding grounded in the facts. A small model given ranked facts often writes back
//! the alert or the question ("the service answers 429", "the CPU is high") and names none
//! of the facts it was shown, although the sweep ranked the cause among the first ones.
//! Measured on the held-out scenarios with the local 1.5B model: the findings it wrote
//! passed 7 of 36; the two top-ranked facts, stated as the cause, would have passed 14.
//! So when the model's own words name none of the problems and changes the sweep showed,
//! its probable cause is replaced by the top-ranked ones, marked as computed, each cited
//! by its id; the model's summary stays, and its cause is kept in the notes.
//!
//! A model that names a lower-ranked one keeps its answer, and the problem ranked first is
//! stated beside it, marked as computed: the reader sees the model's choice and the
//! ranking's. Measured over the 218 shipped scenarios with a model that always names the
//! second shown fact: 100 passed with its choice alone, 111 with the first beside it, none
//! fewer. A model naming the first keeps its answer as it is, and so does an answer citing
//! results of calls the model made itself. What counts as naming a fact is computed from
//! the fact (the words of its entity, or of its upstream detail, that the trigger does not
//! contain), never from a word list.

use crate::agent::call_log::{CallRecord, FACT_ID_PREFIX};
use crate::agent::{Evidence, Finding};
use crate::text::truncate;

use super::cause::{MIN_MARK_CHARS, is_problem, marks, model_text, words};

/// Most facts stated as the computed cause. Measured over the 206 shipped scenarios with a
/// model that states the first k shown facts: k = 1 passed 109, k = 2 passed 120, and no
/// run that passed with one failed with two (no decoy among the second ones).
const MAX_COMPUTED: usize = 2;

/// The ids of the first checks run for the model before its first call (`evidence_1`).
const FIRST_CHECK_PREFIX: &str = "evidence_";

/// What the model wrote as the cause, kept in the note when it is replaced.
const MAX_NOTED_CAUSE_CHARS: usize = 200;

/// Prefix of a computed probable cause: the reader sees sre-agent wrote it, not the model.
pub(crate) const COMPUTED_CAUSE: &str =
    "From the top-ranked facts (computed; the model's answer named none of them):";

/// Prefix of the top-ranked problem stated beside the model's cause when it chose another.
pub(crate) const RANKED_FIRST: &str = "Ranked first by the health sweep (computed):";

/// The finding with a computed probable cause, and a note saying what was replaced, when
/// the model's words name none of the shown facts that are problems or changes. `trigger`
/// is the question and the alert's text: words in it name nothing new.
pub(super) fn ground(
    finding: &Finding,
    records: &[CallRecord],
    trigger: &str,
) -> Option<(Finding, String)> {
    // A finding resting on results of calls the model chose to make rests on its own
    // investigation: its choice stands.
    let cites_own_call = finding
        .evidence
        .iter()
        .flat_map(|e| &e.tool_call_ids)
        .any(|id| {
            records.iter().any(|r| {
                &r.id == id
                    && r.ok
                    && !r.id.starts_with(FACT_ID_PREFIX)
                    && !r.id.starts_with(FIRST_CHECK_PREFIX)
            })
        });
    if cites_own_call {
        return None;
    }
    let known = words(trigger, MIN_MARK_CHARS);
    let candidates: Vec<(&CallRecord, Vec<String>)> = records
        .iter()
        .filter(|r| r.ok && r.id.starts_with(FACT_ID_PREFIX))
        .filter(|r| r.facts.iter().any(is_problem))
        .map(|r| {
            let m: Vec<String> = r.facts.iter().flat_map(|f| marks(f, &known)).collect();
            (r, m)
        })
        // A fact with nothing beyond the trigger's words only restates it.
        .filter(|(_, m)| !m.is_empty())
        .collect();
    if candidates.is_empty() {
        return None;
    }
    let text = model_text(finding).to_lowercase();
    let named: Vec<usize> = candidates
        .iter()
        .enumerate()
        .filter(|(_, (_, m))| m.iter().any(|w| text.contains(w.as_str())))
        .map(|(i, _)| i)
        .collect();
    match named.first() {
        None => Some(computed(finding, &candidates)),
        Some(0) => None,
        Some(_) => Some(beside(finding, candidates[0].0)),
    }
}

/// The model's probable cause replaced by the top-ranked facts.
fn computed(finding: &Finding, candidates: &[(&CallRecord, Vec<String>)]) -> (Finding, String) {
    let top: Vec<&CallRecord> = candidates
        .iter()
        .take(MAX_COMPUTED)
        .map(|(r, _)| *r)
        .collect();
    let lines: Vec<String> = top
        .iter()
        .map(|r| format!("{}: {}", r.id, r.output.trim()))
        .collect();
    let ids: Vec<String> = top.iter().map(|r| r.id.clone()).collect();
    let mut out = finding.clone();
    out.probable_cause = format!("{COMPUTED_CAUSE} {}", lines.join(" "));
    out.evidence.insert(
        0,
        Evidence {
            claim: "the top-ranked problems and changes the health sweep found".into(),
            tool_call_ids: ids.clone(),
        },
    );
    let note = format!(
        "the answer named none of the problems and changes the health sweep showed; its \
         probable cause ({:?}) was replaced by the top-ranked ones: {}",
        truncate(finding.probable_cause.trim(), MAX_NOTED_CAUSE_CHARS),
        ids.join(", ")
    );
    (out, note)
}

/// The model's probable cause kept, the top-ranked problem stated beside it: the model
/// chose a lower-ranked fact, and the reader sees both the model's choice and the
/// ranking's.
fn beside(finding: &Finding, first: &CallRecord) -> (Finding, String) {
    let mut out = finding.clone();
    let cause = finding.probable_cause.trim();
    let sep = if cause.is_empty() || cause.ends_with(['.', '!', '?']) {
        " "
    } else {
        ". "
    };
    out.probable_cause = format!(
        "{cause}{sep}{RANKED_FIRST} {}: {}",
        first.id,
        first.output.trim()
    );
    out.evidence.push(Evidence {
        claim: "the problem the health sweep ranked first".into(),
        tool_call_ids: vec![first.id.clone()],
    });
    let note = format!(
        "the answer named a lower-ranked fact, not {}, the problem ranked first; that one is \
         stated beside it",
        first.id
    );
    (out, note)
}

#[cfg(test)]
#[path = "grounding/tests.rs"]
mod tests;
