//! Test helpers shared by sre-agent's unit tests (`src/**/tests`) and its integration tests
//! (`tests/it/`): a dev-dependency of the crate, so both reach them by name and none is
//! included by path.

pub mod json_mutation;
