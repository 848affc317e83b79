//! Incident memory: every alert investigation that ended with a finding is remembered by
//! its alert identity (`alertname` plus the key labels, see `identity.rs`) with its summary,
//! probable cause, status, time and the verdict a person gave (feedback). A new
//! investigation of the same alert, or a similar one (same alertname with a key label in
//! common, or alert names, key label values and summaries whose words overlap by
//! [`SIMILAR_WORDS`] or more), starts with a short, fenced account of the earlier ones
//! ([`Recall`]), and its finding carries the [`Recurrence`] counted here, never by the
//! model.
//!
//! Entries live in their own tree keyed `<identity key>\x01<investigation id>` (ids are
//! uuid v7, so per identity they sort oldest first), at most [`PER_IDENTITY`] per identity,
//! with an index from investigation id to identity key for feedback; the retention sweep
//! removes entries older than `store.retention_days`.

mod identity;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

pub use identity::{AlertIdentity, KEY_LABELS, jaccard, words, words_of};

use super::{Investigation, InvestigationStatus};
use crate::store::{Store, StoreError, Tree};
use crate::text::{fence, truncate};

/// The most investigations remembered per alert identity (the newest).
pub const PER_IDENTITY: usize = 10;

/// Word overlap (Jaccard) from which two alerts with different identities count as similar.
pub const SIMILAR_WORDS: f64 = 0.5;

/// The longest feedback note, in characters.
pub const MAX_FEEDBACK_NOTE_CHARS: usize = 1_000;

/// The longest account of earlier investigations given to the model, in characters (small
/// models have 8k tokens for everything).
pub const MAX_RECALL_CHARS: usize = 600;

crate::telemetry::labelled! {
    /// What a person said about a finding (the `verdict` label of `sre_agent_feedback_total`).
    #[derive(Serialize, Deserialize, utoipa::ToSchema)]
    #[serde(rename_all = "lowercase")]
    pub enum Verdict {
        Right => "right",
        Wrong => "wrong",
    }
}

impl Verdict {
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|v| v.label() == s)
    }
}

/// A person's verdict on an investigation's finding; a later one replaces it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Feedback {
    pub verdict: Verdict,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    pub at: DateTime<Utc>,
}

impl Feedback {
    /// Feedback given now, checked: `verdict` must be "right" or "wrong", the note at most
    /// [`MAX_FEEDBACK_NOTE_CHARS`] characters (a blank note is none). The error says what
    /// is wrong, for the person who sent it.
    pub fn given(verdict: Option<&str>, note: Option<&str>) -> Result<Self, String> {
        let verdict = match verdict.map(str::trim) {
            None | Some("") => return Err("\"verdict\" is required: \"right\" or \"wrong\"".into()),
            Some(v) => Verdict::parse(&v.to_ascii_lowercase())
                .ok_or_else(|| format!("\"verdict\" must be \"right\" or \"wrong\", not {v:?}"))?,
        };
        let note = note.map(str::trim).filter(|n| !n.is_empty());
        if let Some(n) = note
            && n.chars().count() > MAX_FEEDBACK_NOTE_CHARS
        {
            return Err(format!(
                "\"note\" is longer than {MAX_FEEDBACK_NOTE_CHARS} characters"
            ));
        }
        Ok(Self {
            verdict,
            note: note.map(str::to_string),
            at: Utc::now(),
        })
    }
}

/// That an alert was investigated before: set on the finding by sre-agent from memory.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Recurrence {
    /// Earlier investigations of this alert or a similar one that are remembered.
    pub count: u32,
    /// How many of them were of a similar alert rather than the same one.
    #[serde(default)]
    pub similar: u32,
    pub last_seen: DateTime<Utc>,
    pub last_investigation: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_verdict: Option<Verdict>,
}

impl Recurrence {
    /// "seen 3 times before, last on 2026-11-20 14:02 UTC (investigation …), marked wrong".
    pub fn describe(&self) -> String {
        let times = if self.count == 1 { "time" } else { "times" };
        let verdict = self
            .last_verdict
            .map(|v| format!(", marked {} by a person", v.label()))
            .unwrap_or_default();
        format!(
            "seen {} {times} before, last on {} (investigation {}){verdict}",
            self.count,
            self.last_seen.format("%Y-%m-%d %H:%M UTC"),
            self.last_investigation
        )
    }
}

/// One remembered investigation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Remembered {
    pub investigation_id: String,
    pub identity: AlertIdentity,
    pub title: String,
    #[serde(default)]
    pub words: Vec<String>,
    pub at: DateTime<Utc>,
    pub status: InvestigationStatus,
    pub summary: String,
    pub probable_cause: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub feedback: Option<Feedback>,
}

/// What memory says about a new investigation: the recurrence for its finding and the
/// account for the model's first message.
#[derive(Clone, Debug, PartialEq)]
pub struct Recall {
    pub recurrence: Recurrence,
    /// Untrusted (earlier findings, label values, notes): give it to the model only fenced.
    pub text: String,
}

impl Recall {
    /// The account fenced as untrusted data.
    pub fn fenced(&self) -> String {
        fence("memory", &self.text)
    }
}

/// The incident memory's trees. Cheap to clone.
#[derive(Clone)]
pub struct IncidentMemory {
    entries: Tree<Remembered>,
    /// investigation id → identity key.
    index: Tree<String>,
}

fn entry_key(identity_key: &str, id: &str) -> String {
    format!("{identity_key}\u{1}{id}")
}

impl IncidentMemory {
    pub fn open(store: &Store) -> Result<Self, StoreError> {
        Ok(Self {
            entries: store.tree("incident_memory")?,
            index: store.tree("incident_memory_index")?,
        })
    }

    /// Remembers `inv` when it is an alert investigation that ended with a finding; keeps
    /// the newest [`PER_IDENTITY`] of its identity. True when remembered.
    pub fn remember(&self, inv: &Investigation) -> Result<bool, StoreError> {
        use InvestigationStatus::{Finished, Inconclusive, LimitReached};
        if !matches!(inv.status, Finished | Inconclusive | LimitReached) {
            return Ok(false);
        }
        let (Some(identity), Some(finding)) = (AlertIdentity::of(inv), &inv.finding) else {
            return Ok(false);
        };
        let key = identity.key();
        let entry = Remembered {
            investigation_id: inv.id.clone(),
            words: words_of(inv),
            identity,
            title: inv.title.clone(),
            at: inv.finished_at.unwrap_or(inv.created_at),
            status: inv.status,
            summary: truncate(finding.summary.trim(), 300),
            probable_cause: truncate(finding.probable_cause.trim(), 300),
            feedback: inv.feedback.clone(),
        };
        self.entries.insert(entry_key(&key, &inv.id), &entry)?;
        self.index.insert(&inv.id, &key)?;
        let kept: Vec<(Vec<u8>, Remembered)> = self
            .entries
            .scan_prefix(format!("{key}\u{1}"))
            .collect::<Result<_, _>>()?;
        for (k, old) in kept.iter().take(kept.len().saturating_sub(PER_IDENTITY)) {
            self.entries.remove(k)?;
            self.index.remove(&old.investigation_id)?;
        }
        Ok(true)
    }

    /// What memory holds about the alert of `inv` (same or similar), newest last; `None`
    /// when nothing, or when `inv` is not an alert investigation.
    pub fn recall(
        &self,
        inv: &Investigation,
        now: DateTime<Utc>,
    ) -> Result<Option<Recall>, StoreError> {
        let Some(identity) = AlertIdentity::of(inv) else {
            return Ok(None);
        };
        let words = words_of(inv);
        let mut same = Vec::new();
        let mut similar = Vec::new();
        for r in self.entries.iter() {
            let (_, e) = r?;
            if e.investigation_id == inv.id {
                continue;
            }
            if e.identity == identity {
                same.push(e);
            } else if identity.overlaps(&e.identity) || jaccard(&words, &e.words) >= SIMILAR_WORDS {
                similar.push(e);
            }
        }
        Ok(account(same, similar, now))
    }

    /// Records `feedback` on the remembered investigation `id`; false when it is not
    /// remembered (not an alert investigation, or swept).
    pub fn set_feedback(&self, id: &str, feedback: &Feedback) -> Result<bool, StoreError> {
        let Some(key) = self.index.get(id)? else {
            return Ok(false);
        };
        let updated = self.entries.update(entry_key(&key, id), |old| {
            old.map(|mut e| {
                e.feedback = Some(feedback.clone());
                e
            })
        })?;
        Ok(updated.is_some())
    }

    /// The remembered investigation `id`.
    pub fn get(&self, id: &str) -> Result<Option<Remembered>, StoreError> {
        match self.index.get(id)? {
            Some(key) => self.entries.get(entry_key(&key, id)),
            None => Ok(None),
        }
    }

    /// Forgets investigations that ended before `cutoff`; returns how many.
    pub fn sweep(&self, cutoff: DateTime<Utc>) -> Result<usize, StoreError> {
        let old: Vec<(Vec<u8>, String)> = self
            .entries
            .iter()
            .filter_map(Result::ok)
            .filter(|(_, e)| e.at < cutoff)
            .map(|(k, e)| (k, e.investigation_id))
            .collect();
        for (k, id) in &old {
            self.entries.remove(k)?;
            self.index.remove(id)?;
        }
        Ok(old.len())
    }

    /// How many investigations are remembered.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// The recurrence and the short account of `same` and `similar` earlier investigations.
fn account(same: Vec<Remembered>, similar: Vec<Remembered>, now: DateTime<Utc>) -> Option<Recall> {
    let (n_same, n_similar) = (same.len(), similar.len());
    let mut all = same;
    all.extend(similar);
    all.sort_by(|a, b| {
        a.at.cmp(&b.at)
            .then(a.investigation_id.cmp(&b.investigation_id))
    });
    let last = all.last()?;
    let first = all.first()?;
    let days = ((now - first.at).num_hours() + 23).div_euclid(24).max(1);
    let times = if all.len() == 1 { "time" } else { "times" };
    let mut text = format!(
        "Earlier investigations from sre-agent's memory: seen {} {times} in the last {days} days \
         ({n_same} the same alert, {n_similar} similar).",
        all.len()
    );
    let cause = if last.probable_cause.is_empty() {
        &last.summary
    } else {
        &last.probable_cause
    };
    text.push_str(&format!(
        " Last on {} ({}, {}): probable cause: {}.",
        last.at.format("%Y-%m-%d %H:%M UTC"),
        truncate(&last.title, 60),
        last.status.as_str(),
        truncate(cause.trim_end_matches('.'), 160)
    ));
    match &last.feedback {
        Some(f) => {
            text.push_str(&format!(" Marked {} by a person", f.verdict.label()));
            match f.note.as_deref().map(str::trim).filter(|n| !n.is_empty()) {
                Some(note) => text.push_str(&format!(": {}.", truncate(note, 120))),
                None => text.push('.'),
            }
        }
        None => text.push_str(" No verdict from a person yet."),
    }
    let confirmed = all.iter().rev().skip(1).find(|e| {
        e.feedback
            .as_ref()
            .is_some_and(|f| f.verdict == Verdict::Right)
    });
    if last.feedback.as_ref().map(|f| f.verdict) != Some(Verdict::Right)
        && let Some(c) = confirmed
    {
        text.push_str(&format!(
            " Cause marked right on {}: {}.",
            c.at.format("%Y-%m-%d"),
            truncate(c.probable_cause.trim_end_matches('.'), 120)
        ));
    }
    let count = |v| {
        all.iter()
            .filter(|e| e.feedback.as_ref().is_some_and(|f| f.verdict == v))
            .count()
    };
    let (right, wrong) = (count(Verdict::Right), count(Verdict::Wrong));
    if right + wrong > 1 {
        text.push_str(&format!(" Verdicts: {right} right, {wrong} wrong."));
    }
    Some(Recall {
        recurrence: Recurrence {
            count: all.len() as u32,
            similar: n_similar as u32,
            last_seen: last.at,
            last_investigation: last.investigation_id.clone(),
            last_verdict: last.feedback.as_ref().map(|f| f.verdict),
        },
        text: truncate(&text, MAX_RECALL_CHARS),
    })
}

#[cfg(test)]
mod tests;
