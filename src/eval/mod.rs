//! `sre-agent eval`: scenarios (a trigger, a world, an expectation) loaded from
//! directories (`scenario`), a world built on a real Prometheus with backfilled series and
//! small fakes for the other upstreams (`world`, `series`, `prometheus`, `fakes`), captured
//! real exporter output as a world's background (`background`), consistent renaming of
//! every user-chosen name by a seed (`rename`),
//! deterministic scoring of the stored finding (`score`), and per-run figures and their
//! rendering (`outcome`). The daemon never needs this part; `cli::eval` runs the real
//! daemon against each world.

pub mod background;
pub mod fakes;
pub mod outcome;
pub mod prometheus;
pub mod rename;
pub mod scenario;
pub mod score;
pub mod series;
pub mod world;

use std::path::{Path, PathBuf};

pub use outcome::{RunOutcome, ScenarioOutcome, SuiteOutcome};
pub use scenario::Scenario;
pub use score::{Verdict, score};
pub use world::World;

/// Why a scenario could not be loaded or its world not built.
#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: {reason}")]
    Scenario { path: PathBuf, reason: String },
    #[error("{tool}: {reason}")]
    Tool { tool: &'static str, reason: String },
}

impl EvalError {
    pub(crate) fn io(path: &Path, source: std::io::Error) -> Self {
        Self::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}
