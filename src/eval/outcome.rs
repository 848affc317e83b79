//! The figures of eval runs (verdict, steps, tokens, seconds, dollars) per run, per
//! scenario (pass rate over `--repeat` runs) and for the suite, as a text table or JSON.

use std::fmt::Write;

use serde::Serialize;

use super::Verdict;

/// One run of one scenario.
#[derive(Clone, Debug, Serialize)]
pub struct RunOutcome {
    pub verdict: Verdict,
    /// The investigation's final status (or "error" when the run itself failed).
    pub status: String,
    pub investigation_id: Option<String>,
    pub steps: u32,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// From the trigger being sent to the finding being stored.
    pub seconds: f64,
    pub cost_usd: f64,
    pub tools_called: Vec<String>,
    /// `name: first part of the output` of each tool call that failed.
    pub tool_errors: Vec<String>,
    /// The investigation's notes (why a model's answer was not taken, limits reached);
    /// the text table shows them under a failed run.
    pub notes: Vec<String>,
    pub summary: String,
}

/// Every run of one scenario.
#[derive(Clone, Debug, Serialize)]
pub struct ScenarioOutcome {
    pub name: String,
    pub runs: Vec<RunOutcome>,
    pub passed: usize,
    pub pass_rate: f64,
}

/// The whole suite.
#[derive(Clone, Debug, Serialize)]
pub struct SuiteOutcome {
    pub model: String,
    pub scenarios: Vec<ScenarioOutcome>,
    pub runs: usize,
    pub passed: usize,
    pub pass_rate: f64,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub seconds: f64,
    pub median_seconds: f64,
    pub cost_usd: f64,
}

fn rate(passed: usize, total: usize) -> f64 {
    if total == 0 {
        0.0
    } else {
        passed as f64 / total as f64
    }
}

impl ScenarioOutcome {
    pub fn new(name: &str, runs: Vec<RunOutcome>) -> Self {
        let passed = runs.iter().filter(|r| r.verdict.passed).count();
        Self {
            name: name.to_string(),
            pass_rate: rate(passed, runs.len()),
            passed,
            runs,
        }
    }
}

impl SuiteOutcome {
    pub fn new(model: &str, scenarios: Vec<ScenarioOutcome>) -> Self {
        let runs: Vec<&RunOutcome> = scenarios.iter().flat_map(|s| &s.runs).collect();
        let passed = runs.iter().filter(|r| r.verdict.passed).count();
        let mut secs: Vec<f64> = runs.iter().map(|r| r.seconds).collect();
        secs.sort_by(f64::total_cmp);
        let median_seconds = match secs.len() {
            0 => 0.0,
            n if n % 2 == 1 => secs[n / 2],
            n => (secs[n / 2 - 1] + secs[n / 2]) / 2.0,
        };
        Self {
            model: model.to_string(),
            runs: runs.len(),
            passed,
            pass_rate: rate(passed, runs.len()),
            prompt_tokens: runs.iter().map(|r| r.prompt_tokens).sum(),
            completion_tokens: runs.iter().map(|r| r.completion_tokens).sum(),
            seconds: secs.iter().sum(),
            median_seconds,
            cost_usd: runs.iter().map(|r| r.cost_usd).sum(),
            scenarios,
        }
    }

    /// Whether every run of every scenario passed.
    pub fn all_passed(&self) -> bool {
        self.runs > 0 && self.passed == self.runs
    }

    /// A table: one line per run, failure reasons indented under it, then the totals.
    pub fn to_text(&self) -> String {
        let mut out = format!(
            "{:<28} {:<6} {:>5} {:>8} {:>8} {:>7} {:>9}\n",
            "scenario", "result", "steps", "prompt", "compl.", "secs", "dollars"
        );
        for s in &self.scenarios {
            for (i, r) in s.runs.iter().enumerate() {
                let name = if s.runs.len() > 1 {
                    format!("{} #{}", s.name, i + 1)
                } else {
                    s.name.clone()
                };
                let _ = writeln!(
                    out,
                    "{name:<28} {:<6} {:>5} {:>8} {:>8} {:>7.1} {:>9.4}",
                    if r.verdict.passed { "PASS" } else { "FAIL" },
                    r.steps,
                    r.prompt_tokens,
                    r.completion_tokens,
                    r.seconds,
                    r.cost_usd
                );
                for reason in &r.verdict.reasons {
                    let _ = writeln!(out, "    - {reason}");
                }
                if !r.verdict.passed {
                    for note in &r.notes {
                        let _ = writeln!(out, "      note: {note}");
                    }
                }
            }
            if s.runs.len() > 1 {
                let _ = writeln!(
                    out,
                    "{:<28} pass rate {}/{} ({:.0} %)",
                    s.name,
                    s.passed,
                    s.runs.len(),
                    s.pass_rate * 100.0
                );
            }
        }
        let _ = writeln!(
            out,
            "\ntotal ({}): {}/{} passed ({:.0} %) · {} prompt + {} completion tokens · {:.1} s (median {:.1} s) · ${:.4}",
            self.model,
            self.passed,
            self.runs,
            self.pass_rate * 100.0,
            self.prompt_tokens,
            self.completion_tokens,
            self.seconds,
            self.median_seconds,
            self.cost_usd
        );
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(passed: bool) -> RunOutcome {
        RunOutcome {
            verdict: Verdict {
                passed,
                reasons: if passed {
                    Vec::new()
                } else {
                    vec!["status inconclusive, expected finished".into()]
                },
            },
            status: if passed { "finished" } else { "inconclusive" }.into(),
            investigation_id: None,
            steps: 2,
            prompt_tokens: 10,
            completion_tokens: 5,
            seconds: 1.0,
            cost_usd: 0.0,
            tools_called: Vec::new(),
            tool_errors: Vec::new(),
            notes: vec![format!("asked once more ({passed})")],
            summary: String::new(),
        }
    }

    #[test]
    fn the_table_shows_the_notes_of_a_failed_run_only() {
        let suite = SuiteOutcome::new(
            "m",
            vec![
                ScenarioOutcome::new("a", vec![run(false)]),
                ScenarioOutcome::new("b", vec![run(true)]),
            ],
        );
        let text = suite.to_text();
        assert!(text.contains("note: asked once more (false)"), "{text}");
        assert!(!text.contains("(true)"), "{text}");
    }
}
